"""Writing a benchmark's rows, shared by the benchmark scripts."""

from __future__ import annotations

import csv
from pathlib import Path


def write_rows(path: str | Path, rows: list[dict], append: bool = False) -> None:
    """``rows`` (dicts with the same keys, in the first row's order) as a CSV file; with
    ``append``, added after the rows of an existing file (whose header they must share)."""
    path = Path(path)
    new = not (append and path.exists())
    with path.open("w" if new else "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        if new:
            writer.writeheader()
        writer.writerows(rows)
