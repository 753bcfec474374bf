"""Does the ℓ2 penalty hold memory's LSTM-650 back? The first GPU run (``gpu_check_h200/training``)
reached a validation perplexity of 287 after 16 epochs against the paper's 67.2 (test).

The paper tunes "the RMSprop learning rate and ℓ2 regularization parameter" in [1e-4, 5e-4]
without saying what the ℓ2 term is added to. The pipeline passes it as RMSprop's ``weight_decay``
(grad += λ·w, the gradient of λ/2·‖w‖² beside the *mean* loss per token). Beside a loss summed
over the batch's 32 × 35 tokens, the same λ is 1,120 times weaker.

Each arm trains the run of ``--trial`` (the pipeline's own ``rnnrepro.scripts.train``, its
settings from the config at ``paper`` scale) for one epoch of ``--batches`` batches with one
``weight_decay`` and reports the full validation perplexity; everything else is the trial's.

    python benchmarks/memory_l2.py --data runs/paper_data/results/data/ptb_stream \\
        --out benchmarks/results/memory_l2.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from rnnrepro import config as cfg  # noqa: E402


def arm(run: dict, weight_decay: float, batches: int, data: Path, work: Path) -> dict:
    """Train ``run`` for one epoch of ``batches`` batches at ``weight_decay``; its history row."""
    run = json.loads(json.dumps(run))
    run["training"] |= {"weight_decay": weight_decay, "max_batches": batches, "max_epochs": 1}
    history = work / f"history_{weight_decay:g}.csv"
    command = [
        sys.executable, "-m", "rnnrepro.scripts.train", "--run", json.dumps(run), "--seed", "1",
        "--threads", "1", "--device", "cpu", "--train", str(data / "train.txt"),
        "--val", str(data / "val.txt"), "--vocab", str(data / "vocab.txt"),
        "--checkpoint", str(work / f"checkpoint_{weight_decay:g}.pt"),
        "--out-model", str(work / f"model_{weight_decay:g}.pt"), "--out-history", str(history),
        "--identity", json.dumps({"experiment": "memory", "dataset": "ptb_stream",
                                  "model": "lstm_650", "seed": 1, "stage": "train"}),
    ]  # fmt: skip
    started = time.monotonic()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    subprocess.run(command, check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    with history.open() as f:
        row = list(csv.DictReader(f))[-1]
    return {
        "weight_decay": weight_decay,
        "lr": run["training"]["lr"],
        "batches": batches,
        "train_loss": row["train_loss"],
        "val_ppl": row["val_ppl"],
        "seconds": round(time.monotonic() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="prepared ptb_stream folder")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--trial", type=int, default=1)
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--model", default="lstm_650")
    args = parser.parse_args()
    config = yaml.safe_load((ROOT / "config.yaml").read_text()) | {"scale": "paper"}
    run = cfg.run_config(config, "memory", "ptb_stream", args.model, trial=args.trial)
    searched = run["training"]["weight_decay"]
    arms = [searched, searched / (run["training"]["batch_size"] * run["training"]["bptt"]), 0.0]
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for weight_decay in arms:
            rows.append(arm(run, weight_decay, args.batches, args.data, Path(work)))
            print(rows[-1], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()
