"""Evaluation of trained models: Dyck (``dyck``), text (``text``) and syntax (``syneval``)."""

from __future__ import annotations

from pathlib import Path

IDENTITY = ("experiment", "dataset", "model", "seed", "stage")


def run_identity(model_path: str | Path, record: dict) -> dict:
    """experiment, dataset, model, seed and stage of a run, as its training job recorded them."""
    identity = record.get("identity") or {}
    if set(identity) != set(IDENTITY):
        raise ValueError(
            f"{model_path}: the model file records no run identity (written by an older "
            "version?); rerun its training"
        )
    return {key: identity[key] for key in IDENTITY}


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
    }
