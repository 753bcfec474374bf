# Shared by all rules: config validation, the checks before the first job starts
# (rnnrepro.preflight), wildcard constraints, a run's paths, identity and code digests, and the
# default targets. Each topic's input functions are in functions/<topic>.smk, included at the end.

import json
import os
from dataclasses import replace
from pathlib import Path

from snakemake.utils import validate

# Jobs run `python -m rnnrepro.scripts.<name>` (the package is installed with `pip install -e .`);
# the Snakefile puts src/ on the path for the DAG.
from rnnrepro import buildcache  # noqa: E402
from rnnrepro import config as cfg  # noqa: E402  (light: no torch import)
from rnnrepro import makers, papers  # noqa: E402
from rnnrepro.data import names, sources  # noqa: E402
from rnnrepro.makers import quoted  # noqa: E402
from rnnrepro.provenance import code_digest, model_module  # noqa: E402
from rnnrepro.resources import run_resources  # noqa: E402

# The compiled recurrences: a build cache of this Python environment's own, which the jobs
# inherit through the environment (rnnrepro/buildcache.py).
buildcache.use_own_cache()

validate(config, schema="../schemas/config.schema.yaml")
try:
    cfg.check(config)
    cfg.check_masked_layers(
        config,
        [
            run
            for output in makers.outputs().values()
            if "feature_mask.csv" in output.files
            for run in output.select(config)
        ],
    )
except cfg.ConfigError as error:
    raise WorkflowError(f"Invalid configuration: {error}") from None

RUNS = "results/runs/{experiment}/{dataset}/{model}/seed{seed}"
SPLITS = ("train", "valid", "test")  # the downloaded corpora's files
# A job's directory below RUNS: a search trial's (cfg.trial_dir: none without a search), then a
# later stage's (cfg.stage_dir: none for the first stage, train).
STAGED = f"{RUNS}{{trialdir}}{{stagedir}}"


wildcard_constraints:
    experiment="[a-z0-9_]+",
    dataset="[a-z0-9_]+",
    model="[a-z0-9_]+",
    seed=r"\d+",
    split="train|val|test",
    stagedir="(?:" + "|".join(cfg.stage_dir(s) for s in cfg.STAGES[1:]) + ")?",
    trialdir=r"(?:/trial\d+)?",


# The rules that train a run (one job each, a checkpoint each).
TRAINING_RULES = ("train", "finetune", "train_translation")


def before_start():
    """Once every job is planned and before the first starts (not in dry runs, nor inside
    cluster jobs): stop at once on a problem ``preflight.plan_problem`` finds in the planned
    jobs, then print their cost. A build lock of the compiled recurrences left by a killed job
    is removed."""
    from snakemake.logging import logger

    from rnnrepro import preflight

    for lock in buildcache.remove_stale_locks(Path(os.environ[buildcache.VARIABLE])):
        logger.warning(
            f"Removed {lock}: left by a build of the compiled recurrences that was killed"
        )
    planned = list(workflow.dag.needrun_jobs())
    jobs = [
        preflight.PlannedJob(
            j.rule.name, dict(j.wildcards.items()), "device" in j.rule.params.keys()
        )
        for j in planned
    ]
    checkpointing = (*TRAINING_RULES, "dynamic_eval")
    error = preflight.plan_problem(config, jobs, workflow.local_exec, checkpointing)
    if error:
        raise WorkflowError(error)
    runs = [run_of(j.wildcards) for j in planned if j.rule.name in TRAINING_RULES]
    logger.info(preflight.cost_summary(config, runs, workflow.basedir))


onstart:
    before_start()


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


# Tables and figures: declared per paper in rnnrepro/papers/<key>.py, made by report.smk's rules.
OUTPUTS = makers.outputs()


def all_targets():
    """The scoreboard, every table and figure the config makes, every later stage and every
    random search."""
    targets = (
        ["results/scoreboard.md"]
        + makers.targets(config)
        + stage_files("metrics.json")
        + [f"results/runs/{run.path}/search.json" for run in searched_runs()]
    )
    return list(dict.fromkeys(targets))


include: "functions/data.smk"
include: "functions/train.smk"
include: "functions/evaluate.smk"
include: "functions/report.smk"
include: "functions/translation.smk"
