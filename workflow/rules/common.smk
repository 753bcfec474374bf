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
from rnnrepro.config_check import check_config, check_masked_layers  # noqa: E402
from rnnrepro import makers, papers  # noqa: E402
from rnnrepro.data import names, sources  # noqa: E402
from rnnrepro.makers import quoted  # noqa: E402
from rnnrepro.provenance import code_digest, model_module  # noqa: E402
from rnnrepro.reporting.accounts import account_notes  # noqa: E402
from rnnrepro.resources import run_resources  # noqa: E402

# The compiled recurrences: a build cache of this Python environment's own, which the jobs
# inherit through the environment (rnnrepro/buildcache.py).
buildcache.use_own_cache()

validate(config, schema="../schemas/config.schema.yaml")
try:
    check_config(config)
    check_masked_layers(
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


include: "functions/runs.smk"
include: "functions/data.smk"
include: "functions/train.smk"
include: "functions/evaluate.smk"
include: "functions/report.smk"
include: "functions/translation.smk"
