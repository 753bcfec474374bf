"""Evaluation of trained models: Dyck (``dyck``), text (``text``) and syntax (``syneval``)."""

from __future__ import annotations

from pathlib import Path

# The keys of a run's identity, in order (``rnnrepro.config.Run.identity`` builds it): recorded
# in its model file and the first columns of every result read from it. Defined here, in a
# module that imports nothing of the package and that every training and evaluation job already
# runs: in config.py they would bring config.py and its imports into those jobs' code digests
# (``rnnrepro.provenance``), and every edit of config.py would rerun them.
IDENTITY = ("experiment", "dataset", "model", "seed", "stage")
OPTIONAL_IDENTITY = ("trial",)  # a random-search trial


def run_identity(model_path: str | Path, record: dict) -> dict:
    """experiment, dataset, model, seed, stage (and trial, for a search) of a run, as its
    training job recorded them."""
    identity = record.get("identity") or {}
    if not set(IDENTITY) <= set(identity) <= {*IDENTITY, *OPTIONAL_IDENTITY}:
        raise ValueError(
            f"{model_path}: the model file records no run identity (written by an older "
            "version?); rerun its training"
        )
    return {key: identity[key] for key in (*IDENTITY, *OPTIONAL_IDENTITY) if key in identity}


def run_summary(model_path: str | Path, record: dict) -> dict:
    """The identity and training facts of a run, from its model file (``save_model`` record)."""
    return {
        **run_identity(model_path, record),
        "architecture": record["name"],
        "params": record["params"],
        "epochs": record["epochs"],
        "best_epoch": record["best_epoch"],
        "train_seconds": record["train_seconds"],
        "stopped_because": record["stopped_because"],
        "diverged": record.get("diverged", False),
        "kernels": record.get("kernels"),  # compiled ("native") or Python time loops
        "devices": record.get("devices"),  # where its epochs ran (a run may resume elsewhere)
        "training": record.get("run", {}).get("training"),  # the procedure's settings
    }
