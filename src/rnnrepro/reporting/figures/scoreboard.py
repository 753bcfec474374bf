"""The scoreboard's figure: every paper number against its reproduction, one panel per metric
kind, coloured by the scale of the runs, with the diagonal and the tolerance band."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from rnnrepro.reporting.figures.base import plt, save
from rnnrepro.reporting.metrics import METRIC_KIND, RELATIVE_KINDS

# kinds drawn on log axes (perplexities and counts span orders of magnitude)
LOG_KINDS = ("ppl", "params")
SCALE_COLOURS = {"paper": "tab:red", "fold1": "tab:orange", "cpu": "tab:blue", "smoke": "grey"}


def scoreboard_figure(
    board: pd.DataFrame, tolerances: Mapping[str, float], out: str | Path, notes: list[str]
) -> None:
    """One panel per metric kind with a tolerance (``tolerances``) and a reproduced ``=`` row:
    reproduced mean against the paper's number, a point per row, coloured by ``scale`` (a
    number that is not finite, e.g. the perplexity of a diverged reduced run, is left out)."""
    finite = np.isfinite(board["mean"].astype(float)) & np.isfinite(board["paper_value"])
    rows = board[(board["comparison"] == "=") & finite]  # a diverged reduced run: inf
    rows = rows.assign(kind=rows["metric"].map(METRIC_KIND))
    kinds = [k for k in tolerances if k in set(rows["kind"])]
    columns = min(max(len(kinds), 1), 3)
    lines = -(-max(len(kinds), 1) // columns)
    fig, axes = plt.subplots(lines, columns, figsize=(4.4 * columns, 4.4 * lines), squeeze=False)
    for ax in axes.flat[len(kinds) :]:
        ax.set_axis_off()
    for ax, kind in zip(axes.flat, kinds, strict=False):
        mine = rows[rows["kind"] == kind]
        values = np.concatenate([mine["paper_value"].to_numpy(float), mine["mean"].to_numpy(float)])
        positive = values[values > 0]
        log = kind in LOG_KINDS and len(positive) == len(values)
        low, high = (positive.min() / 1.3, positive.max() * 1.3) if log else _padded(values)
        line = np.geomspace(low, high, 50) if log else np.linspace(low, high, 50)
        tol = tolerances[kind]
        width = line * tol if kind in RELATIVE_KINDS else tol
        lower, upper = line - width, line + width
        ax.fill_between(line, lower, upper, color="lightgrey", alpha=0.6, label=f"±{tol:g} band")
        ax.plot(line, line, color="black", lw=0.8)
        for scale, points in mine.groupby("scale", sort=False):
            ax.scatter(
                points["paper_value"], points["mean"], s=14,
                color=SCALE_COLOURS.get(scale, "tab:green"), label=f"{scale} ({len(points)})",
            )  # fmt: skip
        if log:
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.set_xlim(low, high)
        ax.set_ylim(low, high)
        ax.set_title(kind + (" (relative band)" if kind in RELATIVE_KINDS else ""))
        ax.set_xlabel("paper")
        ax.set_ylabel("reproduced (mean over runs)")
        ax.legend(fontsize=7, loc="upper left")
    if not kinds:
        axes[0][0].text(0.5, 0.5, "no reproduced number yet", ha="center", va="center")
    save(fig, out, notes)


def _padded(values: np.ndarray) -> tuple[float, float]:
    low, high = float(values.min()), float(values.max())
    pad = 0.05 * (high - low) or 0.05 * max(abs(high), 1.0)
    return low - pad, high + pad
