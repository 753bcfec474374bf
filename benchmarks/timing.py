"""Timing shared by the benchmark scripts."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch


def timed(fn: Callable[[], object], repeats: int) -> float:
    """Median seconds of ``repeats`` calls of ``fn``, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def cpu_benchmark_args(description: str, repeats: int, out: str) -> argparse.Namespace:
    """The options of a CPU benchmark of cells (``--repeats``, ``--threads``, ``--out``), with
    torch's threads set and its seed fixed."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--repeats", type=int, default=repeats)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=out)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    return args
