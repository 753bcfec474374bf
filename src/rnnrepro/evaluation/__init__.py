"""Evaluation of trained models: Dyck (``dyck``) and text (``text``)."""

from __future__ import annotations

from pathlib import Path


def run_summary(model_path: str | Path, record: dict) -> dict:
    """The identity and training facts of a run, from its model file (``save_model`` record).

    The model lives at ``results/runs/{experiment}/{dataset}/{model}/seed{seed}/model.pt``.
    """
    parts = Path(model_path).parts
    return {
        "experiment": parts[-5],
        "dataset": parts[-4],
        "model": parts[-3],
        "seed": record["seed"],
        "architecture": record["name"],
        "params": record["params"],
        "epochs": record["epochs"],
        "best_epoch": record["best_epoch"],
        "train_seconds": record["train_seconds"],
        "stopped_because": record["stopped_because"],
    }
