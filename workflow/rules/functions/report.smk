# What a declared output (rnnrepro/papers/) gives its report job (report.smk): inputs, options,
# caption.


def dynamic_eval_files(runs):
    """dynamic_eval.json of the given runs that configure a dynamic evaluation (their last
    stage's directory)."""
    return [
        f"results/runs/{last_stage(run).path}/dynamic_eval.json"
        for run in runs
        if cfg.dynamic_eval_settings(config, run.experiment, run.dataset, run.model)
    ]


def stage_metrics(runs):
    """Every stage's metrics of the given runs: metrics.json of each training stage, then the
    dynamic evaluation's (a major_minor table row per stage)."""
    files = [
        f"results/runs/{replace(run, stage=stage).path}/metrics.json"
        for run in runs
        for stage in cfg.stages(config, run.experiment, run.model, run.dataset)
    ]
    return files + dynamic_eval_files(runs)


def output_names(figures):
    """Wildcard constraint: the names of the outputs that are (not) figures."""
    chosen = [o.name for o in OUTPUTS.values() if makers.is_figure(o) == figures]
    return "|".join(chosen) or "(?!)"


def output_of(wildcards):
    """The declared output a report job makes."""
    return OUTPUTS[wildcards.get("table") or wildcards.get("figure")]


def output_paper(wildcards):
    """The report category of an output: its paper key."""
    return output_of(wildcards).paper


def output_caption(wildcards):
    """An output's caption (workflow/report/output.rst shows it): not a rerun trigger."""
    return Untracked(output_of(wildcards).caption)


def output_inputs(wildcards):
    """The files a report job's output reads (``output_files``)."""
    return output_files(output_of(wildcards))


def output_files(output):
    """The files an output reads, keyed by its script's option: the per-run files of its runs
    (every stage's metrics for a staged table), those its maker adds (``Maker.inputs``) and the
    downloaded files of the corpus it checks."""
    runs = output.select(config)
    files = {}
    for name in output.files:
        option = makers.MAKERS[output.maker].files.get(name, "inputs")
        found = (
            stage_metrics(runs)
            if output.stages and name == "metrics.json"
            else run_files(name, runs)
        )
        files.setdefault(option, []).extend(found)
    files |= makers.MAKERS[output.maker].inputs(output, config)
    if output.corpus:
        files["corpus"] = [
            f"results/downloads/{output.corpus}/{split}.txt" for split in SPLITS
        ]
    return files


def output_options(wildcards, input):
    """The options of a report job's script (rnnrepro.makers)."""
    files = {key: list(input[key]) for key in input.keys()}
    return makers.options(output_of(wildcards), config, files)


def repository_path(path):
    """A configured path: relative to the repository (the Snakefile's folder) unless absolute."""
    return str(Path(workflow.basedir, path))


def scoreboard_inputs(wildcards):
    """Every table and figure the config makes (the scoreboard links them), the metrics of the
    runs its comparison tables read, the archives' manifests, the notes it links (a study's, an archive's README) and the config
    file (its cost model prices the runs still to do)."""
    targets = makers.targets(config)
    metrics, floors = [], []
    for output in OUTPUTS.values():
        if output.maker == "compare" and makers.path(output) in targets:
            metrics += output_files(output).get("metrics", [])
            floors += output_files(output).get("floors", [])
    archives = Path(repository_path(config["reporting"]["archives"]))
    studies = Path(repository_path(config["reporting"]["studies"]))
    return {
        "outputs": targets,
        "metrics": list(dict.fromkeys(metrics)),
        "floors": list(dict.fromkeys(floors)),
        "archives": sorted(map(str, archives.glob("*/manifest.csv"))),
        "notes": list(map(str, account_notes(studies, archives))),
        "config": str(CONFIG_FILE),
    }
