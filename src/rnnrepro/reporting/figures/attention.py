"""Figures of a model with several cells: principal angles between the cells' recurrent
weights, and which cell each token attends to."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import MaxNLocator

from rnnrepro.data import names
from rnnrepro.reporting.figures.base import (
    PLAIN,
    Paths,
    Style,
    footer_height,
    label,
    panels,
    read_runs,
    run_line,
    save,
)

CELL_COLOURS = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple"]
TOKENS_PER_LINE = 20


def plot_pabs(paths: Paths, out: str | Path, style: Style = PLAIN) -> None:
    """Figs. 4-5: principal angles between cell pairs vs sorted index, one line per seed and
    pair; one panel per dataset (Dyck, Fig. 4) or per model when a dataset has several (the 2-
    and 5-cell WikiText-2 models, Fig. 5)."""
    df = read_runs(paths)
    several = df.groupby("dataset")["model"].nunique() > 1
    df["panel"] = [
        f"{d}|{m}" if several[d] else d for d, m in zip(df["dataset"], df["model"], strict=True)
    ]
    fig, axes = panels(df["panel"].unique(), "Principal angles between cells' W_hh subspaces")
    for (panel, model), group in df.groupby(["panel", "model"]):
        if "|" in panel:
            axes[panel].set_title(
                f"{names.parse(panel.split('|')[0]).title}, {label(model, style.labels)}"
            )
        lines = sorted(group.groupby(["seed", "pair"]).groups)
        for k, (seed, pair) in enumerate(lines):
            curve = group[(group["seed"] == seed) & (group["pair"] == pair)].sort_values("index")
            xy = (curve["index"], curve["angle_deg"], 3)
            run_line(axes[panel], xy, model, k, len(lines), f"seed {seed}, cells {pair}", style)
    for ax in axes.values():
        ax.set(xlabel="principal vector index (sorted)", ylabel="angle (degrees)", ylim=(0, 90))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        crowded = len(ax.get_lines()) > 6
        ax.legend(fontsize=5 if crowded else 7, loc="lower right", ncol=2 if crowded else 1)
    save(fig, out, style.notes)


def _draw_tokens(ax: plt.Axes, heat: pd.DataFrame) -> None:
    """Token boxes; opacity rises linearly from 0.15 at weight 1/S (uniform) to 1 at weight 1."""
    best = heat.loc[heat.groupby("position")["weight"].idxmax()].sort_values("position")
    uniform = 1.0 / heat["cell"].nunique()
    lines = (len(best) + TOKENS_PER_LINE - 1) // TOKENS_PER_LINE
    for k, row in enumerate(best.itertuples()):
        x, y = k % TOKENS_PER_LINE, lines - 1 - k // TOKENS_PER_LINE
        colour = CELL_COLOURS[(row.cell - 1) % len(CELL_COLOURS)]
        alpha = 0.15 + 0.85 * (row.weight - uniform) / (1.0 - uniform)
        ax.add_patch(Rectangle((x, y), 0.95, 0.85, color=colour, alpha=alpha, lw=0))
        ax.text(x + 0.47, y + 0.42, row.token, ha="center", va="center", fontsize=8)
    ax.set(xlim=(0, TOKENS_PER_LINE), ylim=(0, lines))
    ax.axis("off")


def plot_heatmap(paths: Paths, out: str | Path, style: Style = PLAIN) -> None:
    """Fig. 6: tokens coloured by their argmax cell, opacity by that cell's attention weight."""
    heats = [read_runs([path]) for path in paths]
    heights = [
        (heat["position"].nunique() + TOKENS_PER_LINE - 1) // TOKENS_PER_LINE for heat in heats
    ]
    fig, axes = plt.subplots(
        len(heats),
        1,
        figsize=(11, 0.55 * sum(heights) + 1.4 * len(heats)),
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
    )
    cells = sorted(set().union(*(heat["cell"].unique() for heat in heats)))
    for ax, heat in zip(axes[:, 0], heats, strict=True):
        key = heat.iloc[0]
        _draw_tokens(ax, heat)
        ax.set_title(
            f"{names.parse(key['dataset']).title}, "
            f"{label(key['model'], style.labels)}, seed {key['seed']}"
        )
    handles = [
        Patch(color=CELL_COLOURS[(c - 1) % len(CELL_COLOURS)], label=f"cell {c}") for c in cells
    ]
    footer = footer_height(fig, style.notes)
    fig.legend(
        handles=handles,
        loc="lower center",
        bbox_to_anchor=(0.5, footer),
        ncol=len(cells),
        fontsize=9,
        title="argmax cell (opacity: faint = weight 1/S, full = weight 1)",
        title_fontsize=9,
    )
    fig.suptitle("Attention over cells per token", fontsize=13)
    save(fig, out, style.notes, bottom=0.12, footer=footer)
