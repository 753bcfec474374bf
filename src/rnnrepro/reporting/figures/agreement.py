"""The Venn diagram of three language models' agreement mistakes (memory Fig. 2)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.patches import Circle

from rnnrepro.reporting import agreement
from rnnrepro.reporting.figures.base import PLAIN, Paths, Style, save


def plot_venn(paths: Paths, out: str | Path, style: Style = PLAIN) -> None:
    """memory Fig. 2: the mistakes of three models on the items all of them scored (first
    seed). Inputs: their runs' ``agreement.json`` (the models, in order, and the corpus they
    were trained on) and ``agreement_items.csv``."""
    summaries = agreement.read_summaries(p for p in paths if str(p).endswith(".json"))
    items = pd.concat([pd.read_csv(p) for p in paths if str(p).endswith(".csv")])
    models = list(dict.fromkeys(s["model"] for s in summaries))
    wrong = agreement.mistakes(items, models)
    counts = agreement.venn_counts(wrong, models)
    notes = [f"{agreement.trained_line(summaries)}.", *style.notes]
    venn_figure(counts, models, len(wrong), out, notes)


def venn_figure(
    counts: Mapping[str, int], models: Sequence[str], items: int, path, notes=()
) -> None:
    """Three circles, a count in each region."""
    a, b, c = models
    centres = {a: (-0.6, 0.35), b: (0.6, 0.35), c: (0.0, -0.65)}
    fig, ax = plt.subplots(figsize=(6.5, 6.5))
    labels = {a: (-1.1, 1.65), b: (1.1, 1.65), c: (0.0, -1.95)}  # outside the circles
    for model, colour in zip(models, ("tab:red", "tab:blue", "tab:green"), strict=True):
        ax.add_patch(Circle(centres[model], 1.1, alpha=0.25, color=colour))
        ax.text(*labels[model], model, ha="center", va="center", fontsize=11)
    spots = {
        f"only {a}": (-1.1, 0.65),
        f"only {b}": (1.1, 0.65),
        f"only {c}": (0.0, -1.25),
        f"{a} & {b} only": (0.0, 0.85),
        f"{a} & {c} only": (-0.75, -0.35),
        f"{b} & {c} only": (0.75, -0.35),
        "all": (0.0, 0.05),
    }
    for name, (x, y) in spots.items():
        ax.text(x, y, f"{counts[name]:,}", ha="center", va="center", fontsize=12)
    ax.set_xlim(-2.4, 2.4)
    ax.set_ylim(-2.2, 2.0)
    ax.set_aspect("equal")
    ax.axis("off")
    fig.suptitle(f"Mistakes on {items:,} Linzen agreement items")
    save(fig, path, notes)
