# Input functions and params shared by the rules: a run from a job's wildcards, its per-run
# files, its checkpoint, its settings and the digest of the code that runs it.


def searched(run):
    """Whether the run's model has a random search (its trials are jobs, search.json its result)."""
    return cfg.search_trials(config, run.experiment, run.model) != [None]


def run_files(name, runs):
    """Paths of one per-run file for the given runs. A searched run's metrics.json is its
    search.json (the chosen trial's metrics); its other files are analyses of the chosen trial
    in the run's own directory, made by rules that read ``scored_model``."""
    return [
        f"results/runs/{run.path}/"
        + (
            "search.json"
            if name == "metrics.json" and run.trial is None and searched(run)
            else name
        )
        for run in runs
    ]


def without_trials(runs):
    """One run per seed: a searched model's trials folded into the run they search for."""
    return list(dict.fromkeys(replace(run, trial=None) for run in runs))


def run_of(wildcards):
    """The run (stage, trial) a job's wildcards stand for."""
    stagedir = wildcards.get("stagedir", "")
    stage = next(s for s in cfg.STAGES if cfg.stage_dir(s) == stagedir)
    return cfg.Run(
        wildcards.experiment,
        wildcards.dataset,
        wildcards.model,
        int(wildcards.seed),
        stage,
        cfg.trial_from_dir(wildcards.get("trialdir", "")),
    )


def checkpoint_path(wildcards):
    """Per-epoch checkpoint of a run: outside results/runs, so never deleted by Snakemake."""
    # per scale: runs of another scale never overwrite (or resume from) this scale's checkpoints
    return str(
        Path(config["checkpoint_dir"], config["scale"], f"{run_of(wildcards).path}.pt")
    )


def searched_runs():
    """The runs (without their trial) of every model with a random search."""
    return without_trials(run for run in cfg.runs(config) if run.trial is not None)


class Untracked:
    """A param that says where or on what a job runs, or how its output is shown, not what it
    computes (a data mirror, a checkpoint directory, the device, a report caption): as a value of no builtin type, Snakemake leaves it out
    of the params rerun trigger, so moving the mirror or the checkpoints, or changing the
    device, reruns nothing. What a download holds is pinned by its checksums
    (download_content); a run resumed elsewhere records the devices it ran on.
    """

    def __init__(self, value):
        self.value = value or ""

    def __str__(self):
        return self.value


def untracked(function):
    """An input function whose value is ``Untracked``."""
    return lambda wildcards: Untracked(function(wildcards))


def stage_files(name):
    """One per-run file of every later stage (e.g. fine-tuning) configured for any run."""
    return [
        f"results/runs/{run.path}/{name}"
        for run in cfg.jobs(config)
        if run.stage != "train"
    ]


def run_code(script):
    """Input function: digest of ``script``, the model module of the run and what they import
    (params: editing that code reruns exactly the jobs that run it)."""

    def digest(wildcards):
        architecture = cfg.architecture(config, wildcards.experiment, wildcards.model)
        return code_digest(f"scripts/{script}.py", model_module(architecture))

    return digest


def script_code(script):
    """Digest of ``script`` and the package modules it imports (params of data/report rules)."""
    return code_digest(f"scripts/{script}.py")


def run_identity(wildcards):
    """The run's identity as JSON, recorded in its model file and every result read from it."""
    return json.dumps(run_of(wildcards).identity())


def run_params(wildcards):
    """The run's resolved settings as JSON (a change reruns exactly the affected runs)."""
    run = run_of(wildcards)
    settings = cfg.run_config(
        config, run.experiment, run.dataset, run.model, run.stage, run.trial
    )
    return json.dumps(settings, sort_keys=True)
