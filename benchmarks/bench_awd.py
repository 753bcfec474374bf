"""major_minor's recurrent layers against ``nn.LSTM``: the Major-Minor layer against an ``nn.LSTM``
of the same parameter count, and the weight-dropped LSTM against ``nn.LSTM`` of its size.

One case is forward + backward of one BPTT window (T = 70) of a batch (PTB and WikiText-2: the
MoS batches 12 and 15; WikiText-103: 128) through the layer, in training mode (weight drop on:
a new DropConnect mask per window). Reported: the median seconds over ``--repeats`` (after a
warm-up) and the ratio to the reference. The issue's target: a Major-Minor layer within 1.3x of
the ``nn.LSTM`` with as many parameters.

    python benchmarks/bench_awd.py [--repeats 7] [--out benchmarks/results/awd.csv]
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import torch
from timing import cpu_benchmark_args, timed
from torch import nn

from rnnrepro.fileio import write_rows
from rnnrepro.models.awd import MajorMinorLSTM, WeightDropLSTM

T = 70
# (case, batch, layer input size, embedding size (the Minor's input), layer size, Major share)
LAYERS = [
    ("PTB layer 1", 12, 280, 280, 1080, 0.9),
    ("PTB layer 2", 12, 1080, 280, 1080, 0.9),
    ("PTB layer 3", 12, 1080, 280, 620, 0.6),
    ("WT2 layer 2", 15, 1200, 300, 1200, 0.9),
    ("WT103 layer 1", 128, 256, 256, 1100, 0.9),
]
WEIGHT_DROP = 0.5


def same_size_lstm(n_in: int, params: int) -> int:
    """The hidden size of a one-layer nn.LSTM on ``n_in`` inputs with ``params`` parameters."""
    # 4h² + (4 n_in + 8) h - params = 0
    b = 4 * n_in + 8
    return round((-b + math.sqrt(b * b + 16 * params)) / 8)


def main() -> None:
    args = cpu_benchmark_args(__doc__.splitlines()[0], 7, "benchmarks/results/awd.csv")
    rows = []
    for case, batch, n_in, emb, size, share in LAYERS:
        x, e = torch.randn(T, batch, n_in), torch.randn(T, batch, emb)
        layer = MajorMinorLSTM(n_in, emb, size, share, WEIGHT_DROP).train()
        params = sum(p.numel() for p in layer.parameters())
        h = same_size_lstm(n_in, params)
        reference = nn.LSTM(n_in, h)
        plain = WeightDropLSTM(n_in, size, WEIGHT_DROP).train()

        def run(module, *inputs):
            def step():
                out, _ = module(*inputs)
                out.sum().backward()

            return step

        seconds = {
            f"nn.LSTM h={h} (same parameters: reference)": timed(run(reference, x), args.repeats),
            f"Major-Minor {round(share * size)}+{size - round(share * size)}": timed(
                run(layer, x, e), args.repeats
            ),
            f"nn.LSTM h={size} (the layer's width)": timed(
                run(nn.LSTM(n_in, size), x), args.repeats
            ),
            f"weight-dropped LSTM h={size}": timed(run(plain, x), args.repeats),
        }
        base = next(iter(seconds.values()))
        width = seconds[f"nn.LSTM h={size} (the layer's width)"]
        for label, s in seconds.items():
            rows.append(
                {
                    "case": case,
                    "batch": batch,
                    "module": label,
                    "params": params if "Major" in label or "same" in label else "",
                    "seconds": f"{s:.4f}",
                    "x_same_params_lstm": f"{s / base:.2f}",
                    "x_lstm_of_width": f"{s / width:.2f}",
                }
            )
            print(f"{case:14s} {label:42s} {s:.4f} s  x{s / base:.2f}  x{s / width:.2f}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_rows(out, rows)
    load = os.getloadavg()[0]
    print(f"wrote {out} (torch {torch.__version__}, {args.threads} thread(s), load {load:.1f})")


if __name__ == "__main__":
    main()
