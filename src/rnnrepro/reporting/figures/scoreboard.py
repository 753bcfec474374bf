"""The scoreboard's figure: every result at the papers' settings as its relative difference from
the paper, one row per paper and metric, with each number's tolerance band. Parameter counts
(settings the pipeline sizes to the papers') and reduced-scale runs are left out: neither is a
result, and neither sets the axes."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from rnnrepro.archive import PAPER_SETTINGS
from rnnrepro.reporting.figures.base import plt, save
from rnnrepro.reporting.metrics import METRIC_KIND, SETTING_KINDS

VERDICT_COLOURS = {"match": "tab:green", "differs": "tab:red"}


def figure_rows(board: pd.DataFrame, tolerances: Mapping[str, float]) -> pd.DataFrame:
    """The board's results at the papers' settings that the figure draws: ``=`` rows with a
    finite mean, a non-zero paper number and a tolerance (``allowed``: a Dyck perplexity's is
    the one its excess over the floor allows), with their relative difference (``relative``)
    and tolerance (``band``), both as fractions of the paper's number."""
    kind = board["metric"].map(METRIC_KIND)
    paper = board["paper_value"].astype(float)
    mean = board["mean"].astype(float)
    keep = (
        (board["comparison"] == "=")
        & board["scale"].isin(PAPER_SETTINGS)
        & ~kind.isin(SETTING_KINDS)
        & np.isfinite(board["allowed"].astype(float))
        & np.isfinite(mean)
        & np.isfinite(paper)
        & (paper != 0)
    )
    rows = board[keep]
    scale = rows["paper_value"].abs().astype(float)
    return rows.assign(
        relative=(rows["mean"].astype(float) - rows["paper_value"].astype(float)) / scale,
        band=rows["allowed"].astype(float) / scale,
        group=rows["paper"] + " · " + rows["metric"],
    )


def scoreboard_figure(
    board: pd.DataFrame, tolerances: Mapping[str, float], out: str | Path, notes: list[str]
) -> None:
    """One line per (paper, metric): each result's relative difference from the paper (a
    symmetric-log axis in %), its tolerance band in grey, coloured by its verdict."""
    rows = figure_rows(board, tolerances)
    groups = list(dict.fromkeys(rows["group"]))
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.42 * max(len(groups), 1)))
    for y, group in enumerate(groups):
        mine = rows[rows["group"] == group]
        jitter = np.linspace(-0.18, 0.18, len(mine)) if len(mine) > 1 else np.zeros(1)
        for dy, (_, row) in zip(jitter, mine.iterrows(), strict=True):
            ax.plot([-100 * row["band"], 100 * row["band"]], [y + dy] * 2, color="lightgrey",
                    lw=3, solid_capstyle="butt", zorder=1)  # fmt: skip
            verdict = "match" if "match" in row["verdict"] else "differs"
            ax.scatter(100 * row["relative"], y + dy, s=16, color=VERDICT_COLOURS[verdict],
                       zorder=2)  # fmt: skip
    ax.axvline(0, color="black", lw=0.8)
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_yticks(range(len(groups)), groups, fontsize=8)
    ax.set_ylim(len(groups) - 0.5, -0.5)
    ax.set_xlabel("reproduced − paper, % of the paper's number (grey: the tolerance)")
    for verdict, colour in VERDICT_COLOURS.items():
        ax.scatter([], [], color=colour, s=16, label=verdict)
    ax.legend(fontsize=8, loc="lower right")
    if not groups:
        ax.text(0.5, 0.5, "no result at the papers' settings yet", ha="center", va="center",
                transform=ax.transAxes)  # fmt: skip
    left_out = len(board[board["scale"].ne("") & ~board["scale"].isin(PAPER_SETTINGS)])
    settings = int(board["setting"].astype(bool).sum()) if "setting" in board else 0
    notes = [*notes, f"Results at the papers' settings only: {len(rows)} drawn; left out "
             f"{settings} parameter-count rows (settings) and {left_out} reduced-scale "
             "numbers (no evidence). A Dyck perplexity's band is the one its excess over the "
             "generator's floor allows."]  # fmt: skip
    save(fig, out, notes)
