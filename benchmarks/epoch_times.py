"""Seconds per paper-scale training epoch of every text model, measured on the real corpora.

For each (experiment, dataset family, model) of the config's text experiments at ``scale:
paper``, the script builds the run exactly as the pipeline does (``rnnrepro.tasks``: the real
batches of the prepared dataset), times ``--batches`` training steps (forward, backward, clip,
Adam step) after one warm-up step, times the validation pass on ``--val-lines`` sentences (a
stream: ``--val-tokens`` tokens), and extrapolates both to the full epoch. One thread (one
core per job, as the local profile runs).
The prepared data come from the pipeline (paper scale), e.g.

    snakemake --config data_mirror=/path/to/mirror results/data/ptb_char/vocab.txt \\
        results/data/ptb_word/vocab.txt results/data/ptb_char_cut50/vocab.txt \\
        results/data/ptb_lines_unigram_fold1/vocab.txt \\
        results/data/ptb_lines_bigram_fold1/vocab.txt results/data/wikitext2/vocab.txt \\
        results/data/ptb_stream/vocab.txt
    python benchmarks/epoch_times.py --out benchmarks/results/epoch_times.csv

Rows of models not measured in this call are kept from the existing CSV (``--models`` re-measures
only those).

Dyck runs are small enough to finish on a CPU, so their rows come from the runs themselves:
``--from-runs results/runs`` reads every finished paper-scale Dyck run (``metrics.json`` and
``history.csv``) and writes, per (experiment, dataset, model), the median seconds per epoch over
all epochs of all its seeds (training and validation; the median ignores epochs stretched by a
paused process). ``load_average`` is then empty: the runs shared the machine with the pipeline's
other jobs (``--cores 2``: two at a time).

``rnnrepro.scripts.estimate_cost`` reads the CSV for the text runs.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import math
import os
import statistics
import time
from pathlib import Path

import torch
import yaml

from rnnrepro import config as cfg
from rnnrepro.models import build_model
from rnnrepro.procedures import BatchLoss, Procedure
from rnnrepro.tasks import StreamTask, make_task
from rnnrepro.training import seed_everything

# the dataset timed for each family (folds and cutoffs of a family cost about the same)
FAMILY_DATASET = {
    "ptb_char": "ptb_char",
    "ptb_word": "ptb_word",
    "ptb_char_cut": "ptb_char_cut50",
    "ptb_lines_unigram": "ptb_lines_unigram_fold1",
    "ptb_lines_bigram": "ptb_lines_bigram_fold1",
    "wikitext2": "wikitext2",
    "ptb_stream": "ptb_stream",
}
CPU = torch.device("cpu")
DYCK_TRAIN_SEQUENCES = 10_000  # paper scale (config.yaml, scales.paper.dyck.sizes.train)
COLUMNS = [
    "experiment",
    "dataset",
    "model",
    "params",
    "batches_per_epoch",
    "seconds_per_batch",
    "train_seconds",
    "val_seconds",
    "epoch_seconds",
    "load_average",
]


def task_of(run: dict, dataset: str, args, device: torch.device = CPU):
    """The run's task on the prepared ``args.data / dataset`` (the pipeline's batches)."""
    data = Path(args.data) / dataset
    return make_task(run, 1, device, data / "train.txt", data / "val.txt", data / "vocab.txt")


def measure(
    config: dict,
    experiment: str,
    dataset: str,
    model_name: str,
    args,
    device: torch.device = CPU,
    task=None,
) -> dict:
    """One model's epoch, extrapolated from ``args.batches`` timed steps after a warm-up one
    (a corpus of fewer batches repeats them) and a validation pass on part of the split.
    ``task``: the run's task, if already built (``task_of``; it is left as it was)."""
    run = cfg.run_config(config, experiment, dataset, model_name)
    task = task or task_of(run, dataset, args, device)
    seed_everything(1)
    model = build_model(run["architecture"], task.vocab, **run["hparams"]).to(device)
    sync = torch.cuda.synchronize if device.type == "cuda" else lambda: None
    procedure = Procedure.from_dict(run["training"])
    optimizer = procedure.make_optimizer(model)
    task.start_epoch(0)
    batches = list(task.batches(0))
    model.train()
    times, sampled = [], []
    for batch in itertools.islice(itertools.cycle(batches), args.batches + 1):
        started = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = BatchLoss(*task.batch_loss(model, batch))
        procedure.objective(loss).backward()
        if procedure.grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), procedure.grad_clip)
        with procedure.batch_lr(optimizer, loss.lr_scale):
            optimizer.step()
        sync()
        times.append(time.perf_counter() - started)
        sampled.append(batch)
    times, sampled = times[1:], sampled[1:]  # the first step warms up
    # extrapolate by tokens: the timed batches are a random sample of the epoch's batches
    tokens = sum(b[0].numel() for b in sampled)
    all_tokens = sum(b[0].numel() for b in batches)
    train_seconds = sum(times) / tokens * all_tokens
    full = task.val
    task.val = full[: args.val_tokens if isinstance(task, StreamTask) else args.val_lines]
    try:
        started = time.perf_counter()
        model.eval()
        with torch.no_grad():
            task.evaluate(model)
        sync()
        val_seconds = (time.perf_counter() - started) * len(full) / len(task.val)
    finally:
        task.val = full
    return {
        "experiment": experiment,
        "dataset": dataset,
        "model": model_name,
        "params": model.num_parameters(),
        "batches_per_epoch": len(batches),
        "seconds_per_batch": round(sum(times) / len(times), 3),
        "train_seconds": round(train_seconds, 1),
        "val_seconds": round(val_seconds, 1),
        "epoch_seconds": round(train_seconds + val_seconds, 1),
        "load_average": round(os.getloadavg()[0], 2),
    }


def from_runs(runs_dir: Path) -> list[dict]:
    """Rows of finished paper-scale Dyck runs under ``runs_dir``: median seconds per epoch."""
    epochs: dict[tuple[str, str, str], list[float]] = {}
    facts: dict[tuple[str, str, str], dict] = {}
    for metrics_path in sorted(runs_dir.rglob("metrics.json")):
        metrics = json.loads(metrics_path.read_text())
        history_path = metrics_path.with_name("history.csv")
        if (
            metrics.get("scale") != "paper"
            or cfg.family(metrics["dataset"]) != "dyck"
            or not history_path.is_file()
        ):
            continue
        key = (metrics["experiment"], metrics["dataset"], metrics["model"])
        with history_path.open(newline="") as f:
            epochs.setdefault(key, []).extend(float(r["seconds"]) for r in csv.DictReader(f))
        facts[key] = metrics
    rows = []
    for key, seconds in sorted(epochs.items()):
        metrics = facts[key]
        batches = math.ceil(DYCK_TRAIN_SEQUENCES / metrics["training"]["batch_size"])
        rows.append(
            {
                **dict(zip(("experiment", "dataset", "model"), key, strict=True)),
                "params": metrics["params"]["total"],
                "batches_per_epoch": batches,
                "seconds_per_batch": "",
                "train_seconds": "",
                "val_seconds": "",
                "epoch_seconds": round(statistics.median(seconds), 1),
                "load_average": "",
            }
        )
    return rows


def write_rows(path: str, kept: list[dict], measured: list[dict]) -> None:
    """The CSV: rows kept from before, then this call's."""
    keys = {(r["experiment"], r["dataset"], r["model"]) for r in measured}
    kept = [r for r in kept if (r["experiment"], r["dataset"], r["model"]) not in keys]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(kept + measured)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config.yaml")
    parser.add_argument("--data", default="results/data", help="prepared datasets (paper scale)")
    parser.add_argument("--batches", type=int, default=4, help="timed training steps per model")
    parser.add_argument("--val-lines", type=int, default=300)
    parser.add_argument("--val-tokens", type=int, default=20000, help="of a stream")
    parser.add_argument("--models", nargs="*", help="only these model names")
    parser.add_argument("--experiments", nargs="*", help="only these experiments")
    parser.add_argument("--out", default="benchmarks/results/epoch_times.csv")
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    parser.add_argument(
        "--from-runs",
        type=Path,
        help="read the Dyck rows from the finished paper-scale runs under this directory "
        "(measures nothing)",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    config = yaml.safe_load(Path(args.config).read_text())
    config["scale"] = "paper"
    measured = []
    kept = []
    if Path(args.out).exists():
        with open(args.out, newline="") as f:
            kept = list(csv.DictReader(f))
    if args.from_runs:
        rows = from_runs(args.from_runs)
        for row in rows:
            print(", ".join(f"{k}={v}" for k, v in row.items() if v != ""), flush=True)
        write_rows(args.out, kept, rows)
        return
    for experiment, entry in config["experiments"].items():
        if args.experiments and experiment not in args.experiments:
            continue
        for model_name, model in entry["models"].items():
            if args.models and model_name not in args.models:
                continue
            for family in cfg.model_families(entry, model):
                if family not in FAMILY_DATASET:
                    continue
                row = measure(
                    config,
                    experiment,
                    FAMILY_DATASET[family],
                    model_name,
                    args,
                    torch.device(args.device),
                )
                print(", ".join(f"{k}={v}" for k, v in row.items()), flush=True)
                measured.append(row)
                write_rows(args.out, kept, measured)


if __name__ == "__main__":
    main()
