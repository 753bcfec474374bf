"""One paper-scale Dyck run trained and scored outside Snakemake by the pipeline's own scripts,
for the benchmarks that retrain runs under other settings or seeds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def train_and_score(
    run: dict, identity: dict, seed: int, data: Path, out: str, min_events: int
) -> dict:
    """Train ``run`` (``rnnrepro.scripts.train``, checkpointed every epoch: a rerun resumes it)
    on ``data``, score it on validation and test (``evaluate_dyck``) and return its metrics.

    Files are ``<out>.pt``, ``.csv`` (history), ``.ckpt``, ``.log``, ``.metrics.json`` and
    ``.ldpa.csv``; a finished step is not redone.
    """
    if not Path(f"{out}.metrics.json").exists() and not Path(f"{out}.pt").exists():
        with open(f"{out}.log", "a") as log:
            subprocess.run(
                [
                    sys.executable, "-m", "rnnrepro.scripts.train", "--run", json.dumps(run),
                    "--identity", json.dumps(identity), "--seed", str(seed),
                    "--train", str(data / "train.txt"), "--val", str(data / "val.txt"),
                    "--checkpoint", f"{out}.ckpt", "--out-model", f"{out}.pt",
                    "--out-history", f"{out}.csv",
                ],
                check=True,
                stdout=log,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
    metrics = Path(f"{out}.metrics.json")
    if not metrics.exists():
        subprocess.run(
            [
                sys.executable, "-m", "rnnrepro.scripts.evaluate_dyck",
                "--model", f"{out}.pt", "--history", f"{out}.csv",
                "--val", str(data / "val.txt"), "--test", str(data / "test.txt"),
                "--wcpa-min-events", str(min_events),
                "--scale", "paper", "--out-metrics", str(metrics),
                "--out-ldpa", f"{out}.ldpa.csv",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
    return json.loads(metrics.read_text())
