"""Layer-size figures (major_minor): perplexity against one layer's hidden size (Fig. 3), the
parameter count and the perplexity band around the standard size (Fig. 4), and perplexity by
Major:Minor ratio (Fig. 6), from the runs' ``metrics.json``.

The catalogue's model labels name the standard models (size c); every other run is a point of
the sweep of the standard on its dataset that it differs from in exactly one layer's size.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from rnnrepro.data import names
from rnnrepro.reporting.figures.base import PLAIN, Labels, Paths, Style, label, save

BAND = 0.25  # Fig. 4: sizes whose perplexity is within ±0.25 of the standard's are marked
SPLITS = {"val_ppl": ("validation", "--"), "test_ppl": ("test", "-")}
LAYER_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:purple")


def read_sizes(paths: Paths) -> pd.DataFrame:
    """One row per ``metrics.json``: identity, layer sizes, Major proportions, experts,
    parameter count and validation and test perplexity."""
    rows = []
    for path in paths:
        m = json.loads(Path(path).read_text())
        hparams = m["run"]["hparams"]
        sizes = tuple(hparams["layer_sizes"])
        rows.append(
            {
                **{key: m[key] for key in ("experiment", "dataset", "model", "seed")},
                "sizes": sizes,
                "proportion": (hparams.get("major_proportions") or [1.0] * len(sizes))[0],
                "experts": hparams.get("experts", 0),
                "params": m["params"]["total"],
                "val_ppl": m["val"]["ppl"],
                "test_ppl": m["test"]["ppl"],
            }
        )
    return pd.DataFrame(rows)


def sweep_points(df: pd.DataFrame, labels: Labels) -> pd.DataFrame:
    """Each run as a point of its standard's sweep: ``standard`` (model), ``layer`` (1-based; 0
    for the standard itself, which belongs to every layer's line), ``size`` and ``c`` (the
    standard's size of that layer). Raises ValueError for a run that matches no standard."""
    standards = df[df["model"].isin(list(labels))]
    if standards.empty:
        raise ValueError(f"none of the standard models {sorted(labels)} is among the inputs")
    points = []
    for _, run in df.iterrows():
        same = standards[
            (standards["dataset"] == run["dataset"]) & (standards["experts"] == run["experts"])
        ]
        for _, std in same.iterrows():
            if len(std["sizes"]) != len(run["sizes"]):
                continue
            pairs = zip(run["sizes"], std["sizes"], strict=True)
            differ = [i for i, (a, b) in enumerate(pairs) if a != b]
            if run["model"] == std["model"]:
                differ = []
            elif len(differ) != 1:
                continue
            layer = differ[0] + 1 if differ else 0
            size = run["sizes"][differ[0]] if differ else None
            points.append({**run, "standard": std["model"], "layer": layer, "size": size})
            break
        else:
            raise ValueError(
                f"run {run['model']} on {run['dataset']} differs from every standard model "
                f"({', '.join(labels)}) in more than one layer size"
            )
    return pd.DataFrame(points)


def _layer_line(points: pd.DataFrame, standard: pd.Series, layer: int) -> pd.DataFrame:
    """A layer's sweep with the standard's point at its size c, by size."""
    line = points[points["layer"] == layer].copy()
    own = standard.copy()
    own["size"] = standard["sizes"][layer - 1]
    return pd.concat([line, own.to_frame().T]).sort_values("size")


def sweep_panels(paths: Paths, labels: Labels) -> list[tuple[str, str, pd.DataFrame, pd.Series]]:
    """One panel per (dataset, standard) with at least one sweep point: the pair, its points
    and the standard's own row."""
    points = sweep_points(read_sizes(paths), labels)
    swept = points[points["layer"] > 0]
    pairs = dict.fromkeys(zip(swept["dataset"], swept["standard"], strict=True))
    if not pairs:
        raise ValueError("no sweep point (a run differing from a standard in one layer)")
    panels = []
    for dataset, standard in sorted(pairs, key=lambda p: (p[1], len(p[0]), p[0])):
        group = points[(points["dataset"] == dataset) & (points["standard"] == standard)]
        panels.append((dataset, standard, group, group[group["layer"] == 0].iloc[0]))
    return panels


def _title(dataset: str, standard: str, labels: Labels) -> str:
    return f"{label(standard, labels)}, {names.parse(dataset).title}"


def plot_layer_sizes(paths: Paths, out: str | Path, style: Style = PLAIN) -> None:
    """major_minor Fig. 3: validation and test perplexity against the hidden size of layer i
    (LSTM-i), the other layers at their standard size c (dotted line), a panel per model and
    dataset."""
    panels = sweep_panels(paths, style.labels)
    fig, axes = plt.subplots(1, len(panels), figsize=(4.8 * len(panels), 4.0), squeeze=False)
    fig.suptitle("Perplexity against one LSTM layer's hidden size", fontsize=13)
    for ax, (dataset, standard, group, std) in zip(axes[0], panels, strict=True):
        for layer in sorted(set(group["layer"]) - {0}):
            line = _layer_line(group, std, layer)
            colour = LAYER_COLOURS[(layer - 1) % len(LAYER_COLOURS)]
            for metric, (split, ls) in SPLITS.items():
                ax.plot(
                    line["size"],
                    line[metric],
                    ls=ls,
                    marker="o",
                    ms=4,
                    color=colour,
                    label=f"LSTM-{layer}, {split}",
                )
            ax.axvline(std["sizes"][layer - 1], color=colour, ls=":", lw=1)
        ax.set(
            title=_title(dataset, standard, style.labels),
            xlabel="hidden size of LSTM-i",
            ylabel="perplexity",
        )
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    save(
        fig,
        out,
        [*style.notes, "Dotted lines: the standard size c of each layer (the main table's run)."],
    )


def plot_size_band(paths: Paths, out: str | Path, style: Style = PLAIN) -> None:
    """major_minor Fig. 4: per model and dataset, the parameter count (top) and the test
    perplexity (bottom) against layer i's size in units of its standard size c; the band is the
    standard's perplexity ± 0.25, and sizes within it are marked with red squares."""
    panels = sweep_panels(paths, style.labels)
    fig, axes = plt.subplots(2, len(panels), figsize=(4.8 * len(panels), 6.6), squeeze=False)
    fig.suptitle("Parameters and perplexity band around the standard layer size", fontsize=13)
    inside = []
    for j, (dataset, standard, group, std) in enumerate(panels):
        top, bottom = axes[0, j], axes[1, j]
        bottom.axhspan(
            std["test_ppl"] - BAND,
            std["test_ppl"] + BAND,
            color="gold",
            alpha=0.3,
            label=f"standard ± {BAND}",
        )
        for layer in sorted(set(group["layer"]) - {0}):
            line = _layer_line(group, std, layer)
            x = line["size"].astype(float) / std["sizes"][layer - 1]
            colour = LAYER_COLOURS[(layer - 1) % len(LAYER_COLOURS)]
            top.plot(x, line["params"] / 1e6, marker="o", ms=4, color=colour, label=f"LSTM-{layer}")
            bottom.plot(x, line["test_ppl"], marker="o", ms=4, color=colour, label=f"LSTM-{layer}")
            near = (line["test_ppl"] - std["test_ppl"]).abs() <= BAND
            bottom.scatter(
                x[near],
                line["test_ppl"][near],
                marker="s",
                s=90,
                facecolors="none",
                edgecolors="red",
                zorder=3,
            )
            inside += [
                f"{label(standard, style.labels)}/{names.parse(dataset).title} LSTM-"
                f"{layer}: {', '.join(f'{v:.1f}c' for v in x[near])}"
            ]
        top.set(title=_title(dataset, standard, style.labels), ylabel="parameters (M)")
        bottom.set(xlabel="size of LSTM-i / c", ylabel="test perplexity")
        for ax in (top, bottom):
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    notes = [
        *style.notes,
        f"Red squares: within ±{BAND} of the standard's test perplexity ({'; '.join(inside)}).",
    ]
    save(fig, out, notes)


def ratio_label(proportion: float) -> str:
    """A Major proportion as the paper's Major:Minor ratio (0.9 -> "9:1")."""
    major = round(proportion * 10)
    return f"{major}:{10 - major}"


def plot_major_ratio(paths: Paths, out: str | Path, style: Style = PLAIN) -> None:
    """major_minor Fig. 6: validation and test perplexity by Major:Minor ratio (every layer
    split alike), a panel per dataset; mean over seeds."""
    df = read_sizes(paths)
    if df.empty:
        raise ValueError("no metrics.json among the inputs")
    datasets = sorted(set(df["dataset"]), key=lambda d: (len(d), d))
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.8 * len(datasets), 4.0), squeeze=False)
    fig.suptitle("Perplexity by Major:Minor ratio", fontsize=13)
    for ax, dataset in zip(axes[0], datasets, strict=True):
        group = df[df["dataset"] == dataset].groupby("proportion")[list(SPLITS)].mean()
        ticks = [ratio_label(p) for p in group.index]
        for metric, (split, ls) in SPLITS.items():
            ax.plot(ticks, group[metric], ls=ls, marker="o", ms=5, label=split)
        ax.set(title=names.parse(dataset).title, xlabel="Major : Minor", ylabel="perplexity")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    save(fig, out, style.notes)
