"""Print the training jobs and device-hours per experiment of a scale, before launching it.

    python -m rnnrepro.scripts.estimate_cost [--config config.yaml] [--scale paper] \\
        [--throughput benchmarks/results/cells.csv] [--out cost.csv]
    python -m rnnrepro.scripts.estimate_cost --gpu     # GPU-hours from benchmarks/results/gpu/
    python -m rnnrepro.scripts.estimate_cost --resources [--scale paper]
    python -m rnnrepro.scripts.estimate_cost --translation   # the translation runs' FLOPs

Hours are device-hours of the device the throughput table was measured on, one job at a time.
Translation runs are priced by their counted FLOPs (rnnrepro.cost.translation) at that device's
rate: measured translation epochs, else derived from its language models (CPU) or assumed (GPU);
``--translation-tflops`` sets a measured rate instead.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter
from pathlib import Path

import yaml

from rnnrepro import config as cfg
from rnnrepro.config_check import check_config
from rnnrepro.cost import (
    DEFAULT_EXPECTED_FRACTION,
    VAL_COST,
    CostError,
    RunCost,
    Summary,
    estimate,
    group_shares,
    read_epoch_times,
    read_throughput,
    summarise,
    translation_lines,
)
from rnnrepro.cost.translation import ASSUMED_GPU, FlopRate, format_flops, format_hours, format_rate
from rnnrepro.fileio import atomic_open
from rnnrepro.resources import device_flop_rate, run_resources

# The shipped cells.csv: benchmarks/bench_cells.py on a CPU, torch.set_num_threads(1).
BENCH_DEVICE = "CPU, 1 thread (benchmarks/bench_cells.py)"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=Path("config.yaml"))
    parser.add_argument("--scale", help="override the config's scale")
    parser.add_argument(
        "--throughput", type=Path, default=Path("benchmarks/results/cells.csv"),
        help="CSV of benchmarks/bench_cells.py (size, model, tokens_per_s, ...)",
    )  # fmt: skip
    parser.add_argument(
        "--device-label",
        help="device the throughput CSV was measured on (default: its 'device' column, else "
        "bench_cells.py's CPU)",
    )
    parser.add_argument(
        "--runs-dir", type=Path, default=Path("results/runs"),
        help="finished runs of this scale: their history.csv gives the expected epochs",
    )  # fmt: skip
    parser.add_argument(
        "--expected-fraction", type=float, default=DEFAULT_EXPECTED_FRACTION,
        help="expected epochs as a fraction of max_epochs when no run of the model has finished",
    )  # fmt: skip
    parser.add_argument(
        "--epoch-times", type=Path, default=Path("benchmarks/results/epoch_times.csv"),
        help="CSV of benchmarks/epoch_times.py: measured paper-scale epochs of the text runs "
        "and of finished paper-scale Dyck runs",
    )  # fmt: skip
    parser.add_argument(
        "--gpu",
        action="store_true",
        help="read the GPU check's tables (benchmarks/results/gpu/cells.csv, epoch_times.csv)",
    )
    parser.add_argument(
        "--translation-tflops", type=float,
        help="sustained TFLOP/s of a translation training step on the table's device (a "
        "measurement): replaces the derived (CPU) or assumed (GPU) rate",
    )  # fmt: skip
    parser.add_argument(
        "--translation",
        action="store_true",
        help="print each translation run's counted FLOPs (rnnrepro.cost.translation) and hours",
    )
    parser.add_argument("--out", type=Path, help="write the table as CSV")
    parser.add_argument(
        "--resources",
        action="store_true",
        help="print instead what each kind of run's SLURM job asks for (rnnrepro.resources)",
    )
    return parser.parse_args(argv)


def translation_table(costs: list[RunCost]) -> str:
    """One line per translation run: its counted FLOPs by part and its hours."""
    lines = [
        f"{'model':12} {'params':>12} {'step':>11} {'steps':>8} {'training':>11} "
        f"{'validation':>11} {'test ppl':>11} {'beam':>11} {'hours':>9} {'GPU-h [A]':>9}"
    ]
    for c in costs:
        if c.flops is None:
            continue
        f, fmt = c.flops, format_flops
        lines.append(
            f"{c.run.model:12} {f.parameters:>12,} {fmt(f.step):>11} {f.steps:>8,} "
            f"{fmt(f.training):>11} {fmt(f.epochs * f.validation):>11} "
            f"{fmt(f.test_perplexity):>11} {fmt(f.beam):>11} {format_hours(c.upper_hours):>9} "
            f"{format_hours(f.total / ASSUMED_GPU.flops_per_s / 3600):>9}"
        )
    return "\n".join(lines)


def resources_table(config: dict, results_dir: Path) -> str:
    """One line per (experiment, data family, model, stage): device, minutes and their basis."""
    lines = [f"{'experiment':21} {'family':17} {'model':19} {'stage':8} {'asks for':>16}  basis"]
    seen = set()
    for run in cfg.jobs(config):
        key = (run.experiment, cfg.family(run.dataset), run.model, run.stage)
        if key in seen:
            continue
        seen.add(key)
        res = run_resources(config, run, results_dir)
        ask = f"{'1 GPU' if res.gpu else 'CPUs'} {res.runtime} min"
        lines.append(f"{key[0]:21} {key[1]:17} {key[2]:19} {key[3]:8} {ask:>16}  {res.basis}")
    return "\n".join(lines)


def format_table(rows: list[Summary]) -> str:
    lines = [f"{'experiment':12} {'jobs':>5} {'expected h':>11} {'upper-bound h':>14}"]
    for r in rows:
        if r.experiment == "total":
            lines.append("-" * len(lines[0]))
        lines.append(
            f"{r.experiment:12} {r.jobs:>5} {r.expected_hours:>11.2f} {r.upper_hours:>14.2f}"
        )
    return "\n".join(lines)


def write_csv(rows: list[Summary], device: str, path: Path) -> None:
    with atomic_open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["experiment", "jobs", "expected_hours", "upper_bound_hours", "device"])
        for r in rows:
            writer.writerow(
                [r.experiment, r.jobs, f"{r.expected_hours:.3f}", f"{r.upper_hours:.3f}", device]
            )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    config = yaml.safe_load(args.config.read_text())
    if args.scale:
        config["scale"] = args.scale
    results_dir = args.throughput.parent  # benchmarks/results: the CPU tables, gpu/ the GPU's
    if args.gpu:
        gpu = results_dir / "gpu"
        args.throughput, args.epoch_times = gpu / "cells.csv", gpu / "epoch_times.csv"
        if not args.throughput.is_file():
            print(
                f"estimate_cost: no GPU measurement ({args.throughput} is missing): run "
                "tools/gpu_check.py on a GPU and copy its cells.csv and epoch_times.csv "
                f"to {gpu}/ (benchmarks/notes/gpu_check.md)",
                file=sys.stderr,
            )
            return 2
    if args.resources:
        try:
            check_config(config)
            table = resources_table(config, results_dir)
        except (CostError, cfg.ConfigError) as error:
            print(f"estimate_cost: {error}", file=sys.stderr)
            return 2
        print(f"First-attempt requests of each kind of run at scale {config['scale']!r}:")
        print(table)
        return 0
    try:
        throughput = read_throughput(args.throughput, args.device_label, BENCH_DEVICE)
        epoch_times = read_epoch_times(args.epoch_times) if args.epoch_times.exists() else {}
        if args.translation_tflops:
            rate = FlopRate(args.translation_tflops * 1e12, "measured: --translation-tflops")
        else:
            rate = device_flop_rate(results_dir, "gpu" if args.gpu else "cpu", epoch_times)
        costs = estimate(
            config, throughput, args.runs_dir, args.expected_fraction, epoch_times, rate
        )
    except (CostError, cfg.ConfigError) as error:
        print(f"estimate_cost: {error}", file=sys.stderr)
        return 2
    if args.translation:
        lengths = {c.flops.lengths.basis for c in costs if c.flops}
        rates = {format_rate(c.flop_rate) for c in costs if c.flops}
        print(f"Translation runs of scale {config['scale']!r}: FLOPs counted from the models'")
        print(f"sizes ({'; '.join(sorted(lengths)) or 'none'}); hours at {'; '.join(rates)};")
        print(f"GPU-h at {format_rate(ASSUMED_GPU)}.\n")
        print(translation_table(costs))
        return 0
    rows = summarise(costs)
    bases = Counter(c.epochs_basis for c in costs)
    print(f"Cost of scale {config['scale']!r} ({args.config}): {len(costs)} training jobs")
    counted = {c.run for c in costs}
    left_out = [run for run in cfg.jobs(config) if run not in counted]
    if left_out:
        names = ", ".join(f"{r.experiment}/{r.dataset}/{r.model}" for r in left_out)
        print(
            f"Not counted: {len(left_out)} text or translation run(s) with no measured epoch time "
            f"in {args.epoch_times} (benchmarks/epoch_times.py measures them) nor FLOP rate: "
            f"{names}."
        )
    print(f"Throughput: {args.throughput}, measured on {throughput.device}.")
    print("Hours are device-hours of that device, one job at a time (not GPU-hours unless the")
    print("table was measured on a GPU); divide by the number of jobs run in parallel.\n")
    print(format_table(rows))
    total = rows[-1]
    for group in group_shares(config, costs):
        share = group.expected_hours / total.expected_hours if total.expected_hours else 0.0
        print(
            f"of which {group.experiment} (runs only its outputs read): {group.jobs} jobs, "
            f"{group.expected_hours:,.2f} expected h ({share:.1%}), upper bound "
            f"{group.upper_hours:,.2f} h"
        )
    for line in translation_lines(costs, on_gpu=args.gpu):
        print(f"of which {line}" if line.startswith("translation") else line)
    scaled = Counter(c.epoch_proxy for c in costs if c.epoch_proxy and c.flops is None)
    if scaled:
        print(
            f"{sum(scaled.values())} text job(s) have no measured epoch: each takes the epoch of "
            "its experiment's measured model of the same architecture and batch size, scaled by "
            "the parameter counts (" + ", ".join(f"{m} {n}" for m, n in scaled.items()) + ")."
        )
    print(
        f"\nupper bound: every run reaches its max_epochs. expected epochs: "
        f"{bases['history']} run(s) from their history.csv, {bases['same model']} from finished "
        f"runs of the same model, {bases['no early stopping']} at max_epochs (procedures that "
        "never stop early, or stop only on rises in a row, which no run has done before its "
        f"budget), {bases['fraction']} at {args.expected_fraction:g} × max_epochs."
    )
    print(
        f"Per epoch: training tokens padded per batch + validation (batch 64) at {VAL_COST:.2f} "
        "of the training cost."
    )
    finished = [c for c in costs if c.measured_seconds_per_epoch]
    if finished:
        measured = sum(c.measured_seconds_per_epoch for c in finished)
        estimated = sum(c.seconds_per_epoch for c in finished)
        print(
            f"Check: the {len(finished)} finished run(s) under {args.runs_dir} took "
            f"{measured / estimated:.2f} × their estimated seconds per epoch."
        )
    if args.out:
        write_csv(rows, throughput.device, args.out)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
