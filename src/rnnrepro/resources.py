"""What one run's SLURM job asks for: a GPU or CPUs only, and a time limit from measurements.

- **Device**: a GPU, unless the run's data family is in ``cluster.cpu_families`` (the Dyck
  models: a few thousand parameters, dispatch-bound, faster on a CPU's compiled loops).
- **Time limit** (minutes, first attempt): at a scale in ``cluster.runtime.fixed``, that value;
  elsewhere ``margin`` × ``max_epochs`` × the run's epoch time on the device it asks for, from
  the measured tables of that device (``rnnrepro.cost``: ``epoch_times.csv`` for text runs, the
  Dyck token model over ``cells.csv``), clamped to [``min``, ``max``]; ``unmeasured`` where no
  measurement covers the run (on a GPU: a model ``tools/gpu_check.py`` could not sample;
  its tables are in ``benchmarks/results/gpu/``). Translation runs are priced by their counted
  FLOPs (``rnnrepro.cost.translation``): on a GPU at the assumed rate until one is measured.

Light imports only (no torch): Snakemake calls this for every training job it plans.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from . import config as cfg
from .cost import CostError, Throughput, read_epoch_times, read_throughput, run_cost
from .cost.translation import ASSUMED_GPU, FlopRate, derived_rate, format_rate

# The measured tables of each device kind, under benchmarks/results/ of the repository.
TABLES = {"cpu": Path("."), "gpu": Path("gpu")}
# benchmarks/flops.py's count of one experiment's language models (device-independent), in
# benchmarks/results/<experiment>_flops.csv
FLOPS_EXPERIMENT = "major_minor"


@dataclass(frozen=True)
class Measurements:
    """One device kind's measured throughput and paper-scale epoch times (either may be absent)
    and the FLOP rate of its translation runs."""

    throughput: Throughput | None
    epoch_times: dict[tuple[str, str, str], float]
    flop_rate: FlopRate | None = None


def device_flop_rate(
    results_dir: str | Path, device: str, epoch_times: dict[tuple[str, str, str], float]
) -> FlopRate | None:
    """The FLOP rate translation runs are priced at on ``device`` when no translation epoch is
    measured: a CPU's from its measured language models, a GPU's assumed (``ASSUMED_GPU``:
    its language models run whole sequences in cuDNN, faster than a step-by-step decoder)."""
    if device == "gpu":
        return ASSUMED_GPU
    table = Path(results_dir) / f"{FLOPS_EXPERIMENT}_flops.csv"
    return derived_rate(epoch_times, table, FLOPS_EXPERIMENT)


@cache
def measurements(results_dir: str, device: str) -> Measurements:
    """The tables of ``device`` ("cpu" or "gpu") in ``results_dir`` (benchmarks/results)."""
    folder = Path(results_dir) / TABLES[device]
    cells, epochs = folder / "cells.csv", folder / "epoch_times.csv"
    throughput = read_throughput(cells, None, device) if cells.is_file() else None
    epoch_times = read_epoch_times(epochs) if epochs.is_file() else {}
    return Measurements(throughput, epoch_times, device_flop_rate(results_dir, device, epoch_times))


@dataclass(frozen=True)
class RunResources:
    """A run's request: ``gpu`` GPUs (0 or 1) and ``runtime`` minutes, with how it was set."""

    gpu: int
    runtime: int
    basis: str


def device_of(config: dict, run: cfg.Run) -> str:
    """ "cpu" for a run whose data family is in ``cluster.cpu_families``, else "gpu"."""
    return "cpu" if cfg.family(run.dataset) in config["cluster"]["cpu_families"] else "gpu"


def run_resources(config: dict, run: cfg.Run, results_dir: str | Path) -> RunResources:
    """What ``run``'s training job asks for on its first attempt."""
    device = device_of(config, run)
    gpu = int(device == "gpu")
    limits = config["cluster"]["runtime"]
    fixed = limits["fixed"].get(config["scale"])
    if fixed is not None:
        return RunResources(gpu, fixed, f"scale {config['scale']}")
    measured = measurements(str(results_dir), device)
    throughput = measured.throughput or Throughput({}, device, "no cells.csv")
    try:
        cost = run_cost(
            config,
            run,
            throughput,
            math.inf,
            "max_epochs",
            None,
            measured.epoch_times,
            measured.flop_rate,
        )
    except CostError:  # no throughput or epoch time of this run on its device
        return RunResources(gpu, limits["unmeasured"], f"not measured on a {device}")
    minutes = limits["margin"] * cost.max_epochs * cost.seconds_per_epoch / 60
    runtime = min(max(math.ceil(minutes), limits["min"]), limits["max"])
    basis = f"{cost.max_epochs} epochs of {cost.seconds_per_epoch:.0f} s"
    if cost.flop_rate is not None:
        basis += f", counted FLOPs at {format_rate(cost.flop_rate)}"
    return RunResources(gpu, runtime, basis)
