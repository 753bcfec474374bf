"""The memory paper's memories against an LSTM step at its size (d = 650, batch 32, BPTT 35).

Times forward + backward of one BPTT window through (a) ``nn.LSTM`` alone (the reference: what
an LSTM language model's recurrence costs), (b) each memory alone, fed the LSTM's outputs, and
(c) the whole memory body (LSTM, memory and the h̃ = W_hh h + W_hm m read-out). Reported: the
median seconds per window over ``--repeats`` (after a warm-up) and each time over the LSTM's.

    python benchmarks/bench_memory.py [--repeats 5] [--out benchmarks/results/memory.csv]
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import torch
from timing import cpu_benchmark_args, timed
from torch import nn

from rnnrepro.models.memory import MEMORIES, MemoryLSTM

D, B, T = 650, 32, 35
# (label, memory name, slots)
CASES = [
    ("attention K=1", "attention", 1),
    ("attention K=10", "attention", 10),
    ("attention K=15", "attention", 15),
    ("continuous stack K=10", "continuous_stack", 10),
    ("discrete stack K=10", "discrete_stack", 10),
    ("multipop stack K=10", "multipop_stack", 10),
]


def main() -> None:
    args = cpu_benchmark_args(__doc__.splitlines()[0], 5, "benchmarks/results/memory.csv")
    x = torch.randn(T, B, D)
    lstm = nn.LSTM(D, D)

    def run_lstm():
        out, _ = lstm(x)
        out.sum().backward()

    reference = timed(run_lstm, args.repeats)
    rows = [{"case": "nn.LSTM d=650 (reference)", "part": "lstm", "seconds": reference}]
    hs = lstm(x)[0].detach().requires_grad_(True)
    for label, name, slots in CASES:
        memory = MEMORIES[name](D, D, slots)
        body = MemoryLSTM(D, D, name, slots)

        def run_memory(memory=memory):
            reads, _, aux = memory(x, hs, None)
            loss = reads.sum()
            if "action_log_prob" in aux:
                loss = loss + aux["action_log_prob"].sum()
            loss.backward()

        def run_body(body=body):
            out, _, aux = body(x, None)
            loss = out.sum()
            if "action_log_prob" in aux:
                loss = loss + aux["action_log_prob"].sum()
            loss.backward()

        rows.append({"case": label, "part": "memory", "seconds": timed(run_memory, args.repeats)})
        rows.append({"case": label, "part": "body", "seconds": timed(run_body, args.repeats)})
    print(f"{'case':28} {'part':7} {'s/window':>9} {'× LSTM':>7}")
    for row in rows:
        row["ratio_to_lstm"] = round(row["seconds"] / reference, 2)
        row["seconds"] = round(row["seconds"], 4)
        print(f"{row['case']:28} {row['part']:7} {row['seconds']:9.4f} {row['ratio_to_lstm']:7.2f}")
    load = os.getloadavg()
    print(f"load average at end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["case", "part", "seconds", "ratio_to_lstm"])
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
