"""second_order_lstm Table 3: syntactic-evaluation accuracies of the WikiText-2 models, side by
side, with the paper's four NPI comparisons next to ours."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from rnnrepro.data.syneval import CATEGORIES
from rnnrepro.fileio import atomic_open, write_text_atomic
from rnnrepro.reporting.markdown import format_spread, markdown_lines
from rnnrepro.reporting.tables import PAPER_SCALE, scaled_verdict

PREFIX = "syneval:"


def read_results(paths: Iterable[str | Path]) -> pd.DataFrame:
    """Concatenate ``syneval.csv`` files (each names its run: experiment, dataset, model, seed)."""
    frames = [pd.read_csv(path) for path in paths]
    if not frames:
        return pd.DataFrame(
            columns=["category", "accuracy", "unk_pairs", "pairs", "model", "seed", "scale"]
        )
    return pd.concat(frames, ignore_index=True)


def _summary(values: pd.Series) -> str:
    std = values.std(ddof=1) if len(values) > 1 else float("nan")
    return format_spread(values.mean(), std, len(values), 3)


def side_by_side(results: pd.DataFrame, models: Sequence[str]) -> pd.DataFrame:
    """One row per sub-category: pairs, then per model its accuracy (mean ± std over seeds)
    and the pairs holding a word outside its vocabulary (``<unk>``)."""
    rows = []
    for category in CATEGORIES:
        rows_of = results[results["category"] == category]
        row = {"category": category, "pairs": int(rows_of["pairs"].max()) if len(rows_of) else 0}
        for model in models:
            mine = rows_of[rows_of["model"] == model]
            row[model] = _summary(mine["accuracy"])
            row[f"{model} <unk> pairs"] = int(mine["unk_pairs"].max()) if len(mine) else None
        rows.append(row)
    table = pd.DataFrame(rows)
    unk = [f"{model} <unk> pairs" for model in models]
    table[unk] = table[unk].astype("Int64")
    return table


def paper_comparison(
    results: pd.DataFrame, reference: pd.DataFrame, tolerance: float, scale: str = PAPER_SCALE
) -> pd.DataFrame:
    """The paper's rows (metric ``syneval:<category>``) with our mean, delta and verdict."""
    out = []
    for _, ref in reference.iterrows():
        category = ref["metric"].removeprefix(PREFIX)
        mine = results[(results["model"] == ref["model"]) & (results["category"] == category)]
        values = mine["accuracy"]
        if values.empty:
            verdict = "missing"
        else:
            verdict = (
                "match" if abs(values.mean() - ref["value"]) <= tolerance + 1e-12 else "differs"
            )
        scales = set(mine["scale"]) if "scale" in mine and len(mine) else {scale}
        out.append(
            {
                "row": ref["row"],
                "model": ref["model"],
                "category": category,
                "paper": ref["value"],
                "reproduced": _summary(values),
                "n_seeds": len(values),
                "delta": values.mean() - ref["value"] if len(values) else float("nan"),
                "verdict": scaled_verdict(verdict, scales),
            }
        )
    return pd.DataFrame(out)


def write(
    comparison: pd.DataFrame,
    categories: pd.DataFrame,
    csv_path: str | Path,
    md_path: str | Path,
    title: str,
    title_notes: Sequence[str],
    notes: Sequence[str],
) -> None:
    """CSV: the 19 sub-categories side by side; Markdown: the paper comparison, then those."""
    with atomic_open(csv_path, "w", newline="") as f:
        categories.to_csv(f, index=False)
    lines = [f"# {title}", ""]
    lines += [f"> {note}  " for note in title_notes] + [""]
    lines += [*(f"{note}  " for note in notes), ""]
    lines += ["## The paper's comparisons (Table 3)", "", *markdown_lines(comparison), ""]
    lines += ["## All 19 sub-categories (accuracy; pairs with `<unk>` per model)", ""]
    lines += markdown_lines(categories)
    write_text_atomic(md_path, "\n".join(lines) + "\n")
