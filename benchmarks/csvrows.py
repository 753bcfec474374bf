"""Writing a benchmark's rows, shared by the benchmark scripts."""

from __future__ import annotations

import csv
from pathlib import Path


def write_rows(path: str | Path, rows: list[dict]) -> None:
    """``rows`` (dicts with the same keys, in the first row's order) as a CSV file."""
    with Path(path).open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
