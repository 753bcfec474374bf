"""Memory and time of one WikiText-103 training step at paper size (major_minor Table VI).

Builds the two Table VII models as config.yaml defines them at paper scale (embedding 256, full
softmax over WikiText-103's 267,735 words, tied) and times one training step (forward,
cross-entropy, backward, Adam step) on random tokens, BPTT 70, at several batch sizes, each in
a fresh process whose peak resident memory is read from the kernel (ru_maxrss). The paper's
batch of 128 does not fit this 24 GiB machine; memory grows linearly with the batch (the logits
and their gradient, 70 · B · 267,735 floats each), so the batch-128 figure is the fitted line's.

The fitted batch-128 step time also gives each model's paper-scale epoch (103,227,021 training
tokens; validation's 217,646 tokens forward only, at a third of a training token's cost, as
``rnnrepro.cost`` counts validation): the script writes these rows into
``benchmarks/results/epoch_times.csv``, which the cost estimate reads (``--from-csv`` redoes
only that from an earlier measurement).

    python benchmarks/wt103_memory.py [--batches 4 8 16] [--out benchmarks/results/wt103_memory.csv]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from rnnrepro.fileio import write_rows

V, T, PAPER_BATCH = 267_735, 70, 128
TRAIN_TOKENS, VAL_TOKENS = 103_227_021, 217_646  # major_minor Table I
EPOCH_TIMES = "benchmarks/results/epoch_times.csv"


def step(model_name: str, batch: int) -> dict:
    """One training step in this process: seconds (after a warm-up step) and peak RSS."""
    import torch
    import torch.nn.functional as F
    import yaml

    from rnnrepro import config as cfg
    from rnnrepro.models import build_model

    torch.set_num_threads(1)
    config = yaml.safe_load(Path("config.yaml").read_text())
    config["scale"] = "paper"
    run = cfg.run_config(config, "major_minor", "wikitext103", model_name)
    torch.manual_seed(0)
    model = build_model(run["architecture"], [str(i) for i in range(V)], **run["hparams"])
    optimizer = torch.optim.Adam(model.parameters(), lr=run["training"]["lr"])
    tokens = torch.randint(0, V, (T + 1, batch))
    times = []
    for _ in range(2):
        started = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        logits, _ = model(tokens[:-1])
        F.cross_entropy(logits.view(-1, V), tokens[1:].reshape(-1)).backward()
        optimizer.step()
        times.append(time.perf_counter() - started)
    return {
        "model": model_name,
        "batch": batch,
        "params": model.num_parameters(),
        "seconds_per_batch": round(times[-1], 2),
        "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
    }


def epoch_row(fitted: dict) -> dict:
    """benchmarks/epoch_times.py's row for a model from its fitted batch-128 measurement."""
    from rnnrepro.cost import VAL_COST

    per_token = float(fitted["seconds_per_batch"]) / (PAPER_BATCH * T)
    train, val = per_token * TRAIN_TOKENS, per_token * VAL_COST * VAL_TOKENS
    return {
        "experiment": "major_minor",
        "dataset": "wikitext103",
        "model": fitted["model"],
        "params": fitted["params"],
        "batches_per_epoch": math.ceil(TRAIN_TOKENS / (PAPER_BATCH * T)),
        "seconds_per_batch": fitted["seconds_per_batch"],
        "train_seconds": round(train, 1),
        "val_seconds": round(val, 1),
        "epoch_seconds": round(train + val, 1),
        "load_average": round(os.getloadavg()[0], 2),
    }


def update_epoch_times(rows: list[dict]) -> None:
    """Replace the WikiText-103 rows of EPOCH_TIMES by those of the fitted measurements."""
    fitted = [epoch_row(r) for r in rows if str(r["batch"]).endswith("(fitted)")]
    with open(EPOCH_TIMES, newline="") as f:
        reader = csv.DictReader(f)
        columns, kept = reader.fieldnames, [r for r in reader if r["dataset"] != "wikitext103"]
    with open(EPOCH_TIMES, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(kept + fitted)
    print(f"updated {EPOCH_TIMES}: {', '.join(r['model'] for r in fitted)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--models", nargs="+", default=["wt103_lstm", "wt103_mmlstm"])
    parser.add_argument("--out", default="benchmarks/results/wt103_memory.csv")
    parser.add_argument("--from-csv", action="store_true", help="only update the epoch times")
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)  # model batch: child process
    args = parser.parse_args()
    if args.one:
        print(json.dumps(step(args.one[0], int(args.one[1]))))
        return
    if args.from_csv:
        with open(args.out, newline="") as f:
            update_epoch_times(list(csv.DictReader(f)))
        return
    rows = []
    for name in args.models:
        measured = []
        for batch in args.batches:
            out = subprocess.run(
                [sys.executable, __file__, "--one", name, str(batch)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            measured.append(json.loads(out.splitlines()[-1]))
            print(measured[-1], flush=True)
        (b0, m0), (b1, m1) = [(r["batch"], r["peak_rss_gib"]) for r in (measured[0], measured[-1])]
        slope = (m1 - m0) / (b1 - b0)
        per_token = measured[-1]["seconds_per_batch"] / (measured[-1]["batch"] * T)
        rows += measured
        rows.append(
            {
                "model": name,
                "batch": f"{PAPER_BATCH} (fitted)",
                "params": measured[-1]["params"],
                "seconds_per_batch": round(per_token * PAPER_BATCH * T, 1),
                "peak_rss_gib": round(m0 + slope * (PAPER_BATCH - b0), 1),
            }
        )
        hours = per_token * TRAIN_TOKENS / 3600
        print(f"{name}: {rows[-1]}; one epoch of {TRAIN_TOKENS:,} tokens ≈ {hours:.0f} h on 1 core")
    write_rows(args.out, rows)
    print(f"wrote {args.out}")
    update_epoch_times(rows)


if __name__ == "__main__":
    main()
