# Config validation, target lists, input functions and wildcard constraints.

import json
import sys
from pathlib import Path

from snakemake.utils import validate

# Jobs run `python -m rnnrepro.scripts.<name>` (the package is installed with `pip install -e .`);
# the DAG is built from src/ directly so that a dry run works before installing.
sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from rnnrepro import config as cfg  # noqa: E402  (light: no torch import)

validate(config, schema="../schemas/config.schema.yaml")
try:
    cfg.check(config)
except cfg.ConfigError as error:
    raise WorkflowError(f"Invalid configuration: {error}") from None

RUNS = "results/runs/{experiment}/{dataset}/{model}/seed{seed}"
DYCK_EXPERIMENTS = [
    exp for exp, entry in config["experiments"].items() if "dyck" in entry["datasets"]
]


wildcard_constraints:
    experiment="[a-z0-9_]+",
    dataset="[a-z0-9_]+",
    model="[a-z0-9_]+",
    seed=r"\d+",
    split="train|val|test",


def run_files(name, runs):
    """Paths of one per-run file for the given runs."""
    return [f"results/runs/{run.path}/{name}" for run in runs]


def checkpoint_path(wildcards):
    """Per-epoch checkpoint of a run: outside results/runs, so never deleted by Snakemake."""
    run = cfg.Run(
        wildcards.experiment, wildcards.dataset, wildcards.model, int(wildcards.seed)
    )
    return str(Path(config["checkpoint_dir"], f"{run.path}.pt"))


def run_params(wildcards):
    """The run's resolved settings as JSON (a change reruns exactly the affected runs)."""
    settings = cfg.run_config(
        config, wildcards.experiment, wildcards.dataset, wildcards.model
    )
    return json.dumps(settings, sort_keys=True)


DYCK_DATASETS = " ".join(cfg.datasets(config, "seed000"))

# figure name -> (make_figure.py kind, per-run input file, runs it reads)
FIGURE_INPUTS = {
    "fig2_ldpa": ("ldpa", "ldpa.csv", cfg.runs(config, "seed000")),
    "fig3_val_wcpa": ("val_wcpa", "history.csv", cfg.runs(config, "seed000")),
    "fig4_pabs": ("pabs", "pabs.csv", cfg.runs(config, "seed000", "attention_lstm")),
    "fig6_heatmap": (
        "heatmap",
        "heatmap.csv",
        cfg.runs(config, "seed000", "attention_lstm"),
    ),
}


def dyck_floors():
    return [f"results/data/{d}/floor.json" for d in cfg.datasets(config, "seed000")]


def dyck_targets():
    return [
        "results/tables/seed000_table1.md",
        "results/tables/seed001_table2_dyck.md",
        "results/figures/seed000_fig2_ldpa.png",
        "results/figures/seed000_fig3_val_wcpa.png",
        "results/figures/seed000_fig4_pabs.png",
        "results/figures/seed000_fig6_heatmap.png",
    ]


def all_targets():
    return dyck_targets()
