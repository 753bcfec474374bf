"""Result tables: reproduced run metrics next to the paper's numbers, with a verdict per row."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

# metric name -> tolerance kind; kinds missing from the tolerances get the verdict "info"
METRIC_KIND = {
    "val_ppl": "ppl",
    "test_ppl": "ppl",
    "val_wcpa": "wcpa",
    "test_wcpa": "wcpa",
    "params": "params",
    "params_total": "params",
    "epochs": "epochs",
    "train_minutes": "train_minutes",
}
RELATIVE_KINDS = {"ppl", "params"}
DEFAULT_TOLERANCES = {"ppl": 0.01, "wcpa": 0.05, "params": 0.05}
DECIMALS = {"ppl": 3, "wcpa": 3, "params": 0, "epochs": 1, "train_minutes": 1}
TABLE_COLUMNS = [
    "experiment",
    "dataset",
    "model",
    "metric",
    "comparison",
    "paper",
    "reproduced",
    "mean",
    "std",
    "n_seeds",
    "delta",
    "floor",
    "params",
    "verdict",
]
COLUMN_LEGEND = {
    "comparison": "`=` a reported value; `<`, `<=`, `>=` a claimed bound, checked on every seed",
    "paper": "the published number (see `paper_numbers.csv` for the exact source)",
    "reproduced": "mean ± sample std over seeds (`n/a` with a single seed)",
    "n_seeds": "runs with a value for this metric",
    "delta": "reproduced mean − paper",
    "floor": "perplexity of the generating distribution on the same split (ppl rows only)",
    "params": "reproduced recurrent parameter count (mean over seeds)",
    "verdict": "match / differs (tolerance below), missing (no run), info (not compared), "
    "below floor (ppl under the generator's: a bug sign)",
}
BOUND_CHECKS = {
    "<": np.less,
    "<=": np.less_equal,
    ">=": np.greater_equal,
}


def collect_metrics(paths: Iterable[str | Path]) -> pd.DataFrame:
    """One row per run from its ``metrics.json``; columns named like the reference metrics."""
    rows = []
    for path in paths:
        m = json.loads(Path(path).read_text())
        row = {key: m[key] for key in ("experiment", "dataset", "model", "seed")}
        for split in ("val", "test"):
            for name in ("loss", "ppl", "wcpa"):
                value = m[split].get(name)
                row[f"{split}_{name}"] = math.nan if value is None else float(value)
        row["params"] = m["params"]["recurrent"]
        row["params_total"] = m["params"]["total"]
        row["epochs"] = m["epochs"]
        row["train_minutes"] = m["train_seconds"] / 60.0
        row["path"] = str(path)
        rows.append(row)
    return pd.DataFrame(rows)


def read_floors(paths: Iterable[str | Path]) -> dict[str, dict[str, float]]:
    """Generator floors keyed by dataset, from ``results/data/{dataset}/floor.json`` files."""
    return {Path(p).parent.name: json.loads(Path(p).read_text()) for p in paths}


def _verdict(ref: pd.Series, values: np.ndarray, tolerances: Mapping[str, float]) -> str:
    if len(values) == 0:
        return "missing"
    if ref["comparison"] != "=":
        holds = BOUND_CHECKS[ref["comparison"]](values, ref["value"]).all()
        return "match" if holds else "differs"
    kind = METRIC_KIND[ref["metric"]]
    if kind not in tolerances:
        return "info"
    delta = abs(values.mean() - ref["value"])
    allowed = tolerances[kind] * abs(ref["value"]) if kind in RELATIVE_KINDS else tolerances[kind]
    return "match" if delta <= allowed + 1e-12 else "differs"


def _format(mean: float, std: float, n: int, decimals: int) -> str:
    if n == 0:
        return ""
    spread = "n/a" if n == 1 else f"{std:.{decimals}f}"
    return f"{mean:.{decimals}f} ± {spread}"


def build_table(
    reference_rows: pd.DataFrame,
    runs: pd.DataFrame,
    floors: Mapping[str, Mapping[str, float]],
    tolerances: Mapping[str, float] = DEFAULT_TOLERANCES,
) -> pd.DataFrame:
    """One row per reference row: paper value, reproduced mean ± std over seeds and a verdict.

    ``tolerances`` maps a metric kind (``ppl``, ``wcpa``, ``params``, ...) to its tolerance:
    relative for ``ppl`` and ``params``, absolute otherwise; kinds without one are not compared.
    A perplexity below the generator floor (any seed) gets the verdict ``below floor``.
    """
    if runs.empty:
        runs = pd.DataFrame(columns=["experiment", "dataset", "model", *METRIC_KIND])
    out = []
    for _, ref in reference_rows.iterrows():
        metric = ref["metric"]
        matched = runs[
            (runs["experiment"] == ref["experiment"])
            & (runs["dataset"] == ref["dataset"])
            & (runs["model"] == ref["model"])
        ]
        values = matched[metric].dropna().to_numpy(float)
        n = len(values)
        mean = values.mean() if n else math.nan
        std = values.std(ddof=1) if n > 1 else math.nan
        floor = math.nan
        if METRIC_KIND[metric] == "ppl" and ref["dataset"] in floors:
            floor = floors[ref["dataset"]][metric.split("_")[0]]
        verdict = _verdict(ref, values, tolerances)
        if n and values.min() < floor:
            verdict = "below floor"
        recurrent = matched["params"].dropna().to_numpy(float)
        out.append(
            {
                "experiment": ref["experiment"],
                "dataset": ref["dataset"],
                "model": ref["model"],
                "metric": metric,
                "comparison": ref["comparison"],
                "paper": ref["value"],
                "reproduced": _format(mean, std, n, DECIMALS[METRIC_KIND[metric]]),
                "mean": mean,
                "std": std,
                "n_seeds": n,
                "delta": mean - ref["value"],
                "floor": floor,
                "params": recurrent.mean() if len(recurrent) else math.nan,
                "verdict": verdict,
            }
        )
    return pd.DataFrame(out, columns=TABLE_COLUMNS)


def describe_tolerances(tolerances: Mapping[str, float]) -> str:
    """One sentence stating each tolerance and whether it is relative or absolute."""
    parts = [
        f"{kind} {value:g} ({'relative' if kind in RELATIVE_KINDS else 'absolute'})"
        for kind, value in tolerances.items()
    ]
    return "Tolerances for a match: " + ", ".join(parts) + "."


def _cell(value: object) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return f"{value:.0f}" if value.is_integer() else f"{value:.4g}"
    return str(value)


def _markdown(df: pd.DataFrame) -> list[str]:
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    for _, row in df.iterrows():
        cells = [_cell(v) for v in row]
        if row["verdict"] == "below floor":
            cells[df.columns.get_loc("verdict")] = "**BELOW FLOOR**"
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def write_table(
    df: pd.DataFrame, csv_path: str | Path, md_path: str | Path, title: str, notes: Iterable[str]
) -> None:
    """Write the table as CSV and as Markdown with a header explaining columns and tolerances."""
    df.to_csv(csv_path, index=False)
    lines = [f"# {title}", "", "Columns:", ""]
    lines += [f"- **{name}**: {text}" for name, text in COLUMN_LEGEND.items()]
    lines += ["", *[f"{note}  " for note in notes]]
    below = df[df["verdict"] == "below floor"]
    for _, row in below.iterrows():
        lines.append(
            f"**WARNING: {row['dataset']} / {row['model']} {row['metric']} is below the "
            f"generator floor ({row['mean']:.4f} < {row['floor']:.4f}); this indicates a bug.**  "
        )
    counts = df["verdict"].value_counts()
    lines += ["", "Verdicts: " + ", ".join(f"{k} {v}" for k, v in counts.items()), ""]
    lines += _markdown(df.drop(columns=["mean", "std"]))
    Path(md_path).write_text("\n".join(lines) + "\n", encoding="utf-8")
