"""The measured tables the cost model reads: training throughput of the Dyck cells
(``benchmarks/bench_cells.py``) and paper-scale epoch times (``benchmarks/epoch_times.py``)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from rnnrepro import config as cfg


class CostError(ValueError):
    """The cost cannot be estimated (e.g. no throughput for an architecture)."""


@dataclass(frozen=True)
class Throughput:
    """Training tokens/s by (benchmark size, model) and the device they were measured on."""

    tokens_per_s: dict[tuple[str, str], float]
    device: str
    source: str

    def lookup(self, size: str, architecture: str) -> float:
        try:
            return self.tokens_per_s[(size, architecture)]
        except KeyError:
            known = sorted(model for s, model in self.tokens_per_s if s == size)
            raise CostError(
                f"no throughput for architecture {architecture!r} at benchmark size {size!r} in "
                f"{self.source} (rows at that size: {', '.join(known) or 'none'}); rerun "
                f"benchmarks/bench_cells.py"
            ) from None


def read_throughput(
    path: str | Path, device: str | None = None, default_device: str = "unknown device"
) -> Throughput:
    """Read a bench_cells.py CSV; the device is ``device``, the CSV's ``device`` column or
    ``default_device``, in that order."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    missing = {"size", "model", "tokens_per_s"} - set(rows[0] if rows else {})
    if missing:
        raise CostError(f"{path}: missing column(s) {', '.join(sorted(missing))}")
    try:
        table = {(r["size"], r["model"]): float(r["tokens_per_s"]) for r in rows}
    except (TypeError, ValueError):
        raise CostError(f"{path}: a tokens_per_s value is missing or not a number") from None
    devices = sorted({r["device"] for r in rows if r.get("device")})
    label = device or ", ".join(devices) or default_device
    return Throughput(table, label, str(path))


def benchmark_size(dataset: str) -> str:
    """The bench_cells.py size whose models match a dataset's."""
    if cfg.family(dataset) == "dyck":
        return "dyck"
    raise CostError(f"no benchmark size for dataset {dataset!r}")


def epoch_key(experiment: str, dataset: str, model: str) -> tuple[str, str, str]:
    """The key of a run's measured epoch: text datasets by family (folds and cutoffs cost about
    the same), Dyck datasets by name (the cost grows with m)."""
    family = cfg.family(dataset)
    return experiment, dataset if family == "dyck" else family, model


def read_epoch_times(path: str | Path) -> dict[tuple[str, str, str], float]:
    """``epoch_key`` -> seconds per paper-scale epoch, from the CSV of
    ``benchmarks/epoch_times.py``."""
    with open(path, newline="") as f:
        return {
            epoch_key(r["experiment"], r["dataset"], r["model"]): float(r["epoch_seconds"])
            for r in csv.DictReader(f)
        }
