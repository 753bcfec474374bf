"""Does the ℓ2 penalty hold memory's LSTM-650 back? The first GPU run (``gpu_check_h200/training``)
reached a validation perplexity of 287 after 16 epochs against the paper's 67.2 (test).

The paper tunes "the RMSprop learning rate and ℓ2 regularization parameter" in [1e-4, 5e-4]
without saying what the ℓ2 term is added to. RMSprop's ``weight_decay`` adds λ·w to the
gradient of the *mean* loss per token. Each reading of the paper's λ is one arm:

- ``mean``: λ beside the mean loss per token (λ as it is);
- ``sequence``: beside the loss summed over a sequence's 35 tokens, averaged over the batch
  (λ / 35);
- ``batch``: beside the loss summed over the batch's 32 × 35 tokens (λ / 1,120);
- ``none``: no ℓ2.

Each arm trains the run of ``--trial`` (the pipeline's own ``rnnrepro.scripts.train``, its
settings from config.yaml's search at ``paper`` scale, the paper's λ range) for one epoch of
``--batches`` batches and reports the full validation perplexity; all else is the trial's.

    python benchmarks/memory_l2.py --data runs/paper_data/results/data/ptb_stream \\
        --out benchmarks/results/memory_l2.csv [--arms mean batch none] [--append]
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
from csvrows import write_rows

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from rnnrepro import config as cfg  # noqa: E402

READINGS = ("mean", "sequence", "batch", "none")


def weight_decay(reading: str, paper_l2: float, batch_size: int, bptt: int) -> float:
    """RMSprop's ``weight_decay`` for the paper's ``paper_l2`` under ``reading``."""
    divisor = {"mean": 1, "sequence": bptt, "batch": batch_size * bptt}.get(reading)
    return 0.0 if divisor is None else paper_l2 / divisor


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
    parser.add_argument("--arms", nargs="+", choices=READINGS, default=["mean", "batch", "none"])
    parser.add_argument("--append", action="store_true", help="add rows to an existing --out")
    parser.add_argument(
        "--paper-l2",
        type=float,
        help="the paper's λ (default: the trial's sample of config.yaml's search, which holds "
        "λ / 35: the 'sequence' reading)",
    )
    args = parser.parse_args()
    config = yaml.safe_load((ROOT / "config.yaml").read_text()) | {"scale": "paper"}
    run = cfg.run_config(config, "memory", "ptb_stream", args.model, trial=args.trial)
    training = run["training"]
    paper_l2 = args.paper_l2 or training["weight_decay"] * training["bptt"]
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for reading in args.arms:
            decay = weight_decay(reading, paper_l2, training["batch_size"], training["bptt"])
            row = arm(run, decay, args.batches, args.data, Path(work))
            rows.append({"reading": reading, "paper_l2": paper_l2, **row})
            print(rows[-1], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_rows(args.out, rows, append=args.append)


if __name__ == "__main__":
    main()
