"""Training throughput of every registered model against a plain nn.LSTM language model.

One "batch" = forward on random tokens [T, B], cross-entropy against random targets, backward
(no optimiser step). Reported: median over ``--repeats`` timed repeats (after a warm-up) of the
seconds per batch, tokens/s = T·B / seconds, and the time ratio to the reference
``nn.LSTM`` LM (Embedding -> nn.LSTM -> Linear, built here) at the same size.

    python benchmarks/bench_cells.py [--sizes dyck wt2] [--repeats 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import csv
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from rnnrepro.models import MODEL_NAMES, build_model

DYCK_VOCAB = ["<pad>", "<start>", "<end>", "(a", "a)", "(b", "b)"]

# size -> batch, time steps, vocabulary, hyper-parameters of the models
SIZES = {
    "dyck": dict(B=10, T=200, vocab=DYCK_VOCAB, e=30, h=12, stack_depth=4),
    # WikiText-2 model size; the decoder uses a smaller vocabulary (see --wt2-vocab)
    "wt2": dict(B=64, T=70, vocab=None, e=300, h=600, stack_depth=None),
}
MIN_REPEAT_SECONDS = 0.3  # fast batches are timed in groups lasting at least this long


class ReferenceLSTM(nn.Module):
    """Embedding -> nn.LSTM -> Linear: the yardstick every model is compared with."""

    def __init__(self, vocab_size: int, embedding_dim: int, hidden_size: int):
        super().__init__()
        self.encoder = nn.Embedding(vocab_size, embedding_dim)
        self.rnn = nn.LSTM(embedding_dim, hidden_size)
        self.decoder = nn.Linear(hidden_size, vocab_size)

    def forward(self, tokens):
        output, state = self.rnn(self.encoder(tokens))
        return self.decoder(output), state


def hparams(name: str, size: dict) -> dict:
    """Hyper-parameters of ``name`` at a benchmark size (registry defaults otherwise)."""
    if name == "dyck_rnn":
        return {"stack_depth": size["stack_depth"]}
    return {"embedding_dim": size["e"], "hidden_size": size["h"]}


def time_training(model: nn.Module, size: dict, repeats: int) -> float:
    """Median seconds per training batch (forward + loss + backward) on random tokens."""
    V = len(size["vocab"])
    tokens = torch.randint(0, V, (size["T"], size["B"]))

    def batch() -> None:
        model.zero_grad(set_to_none=True)
        logits, _ = model(tokens)
        targets = tokens % logits.shape[-1]  # a closing-bracket classifier has fewer outputs
        F.cross_entropy(logits.flatten(0, 1), targets.flatten()).backward()

    start = time.perf_counter()
    batch()  # warm-up
    batches = max(1, round(MIN_REPEAT_SECONDS / (time.perf_counter() - start)))
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(batches):
            batch()
        timings.append((time.perf_counter() - start) / batches)
    return statistics.median(timings)


def run(sizes: list[str], repeats: int, wt2_vocab: int) -> list[dict]:
    rows = []
    for size_name in sizes:
        size = dict(SIZES[size_name])
        if size["vocab"] is None:
            size["vocab"] = [f"w{i}" for i in range(wt2_vocab)]
        torch.manual_seed(0)
        ref = time_training(ReferenceLSTM(len(size["vocab"]), size["e"], size["h"]), size, repeats)
        candidates = [("nn.LSTM (reference)", None, {})]
        candidates += [(name, name, hparams(name, size)) for name in MODEL_NAMES]
        # same fused recurrence as attention_lstm with one cell: the kernel's own overhead
        single = {**hparams("attention_lstm", size), "cells": 1}
        candidates.append(("attention_lstm[cells=1]", "attention_lstm", single))
        for label, name, kwargs in candidates:
            if name is None:
                seconds = ref
            elif name == "dyck_rnn" and size["stack_depth"] is None:
                print(f"[{size_name}] skip {label}: Dyck-only model")
                continue
            else:
                try:
                    model = build_model(name, size["vocab"], **kwargs)
                except Exception as err:  # a module not written yet, or a failing build
                    print(f"[{size_name}] skip {label}: {type(err).__name__}: {err}")
                    continue
                seconds = time_training(model, size, repeats)
            tokens = size["B"] * size["T"]
            rows.append(
                {
                    "size": size_name,
                    "model": label,
                    "tokens_per_s": round(tokens / seconds),
                    "seconds_per_batch": round(seconds, 5),
                    "ratio_to_nn_lstm": round(seconds / ref, 2),
                }
            )
            print(f"[{size_name}] {label}: {seconds * 1e3:.1f} ms/batch", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", choices=list(SIZES), default=list(SIZES))
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats (median)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/cells.csv"))
    parser.add_argument(
        "--wt2-vocab", type=int, default=1000, help="decoder vocabulary at the wt2 size"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)

    rows = run(args.sizes, args.repeats, args.wt2_vocab)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)

    print(f"\n{'size':6} {'model':26} {'tokens/s':>10} {'s/batch':>9} {'× nn.LSTM':>9}")
    for r in rows:
        print(
            f"{r['size']:6} {r['model']:26} {r['tokens_per_s']:>10} "
            f"{r['seconds_per_batch']:>9.4f} {r['ratio_to_nn_lstm']:>9.2f}"
        )
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
