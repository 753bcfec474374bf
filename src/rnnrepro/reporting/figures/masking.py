"""Feature-masking figure (major_minor Fig. 5): test perplexity against the masking probability
P, a panel per masked layer (all, 1, 2, 3), a line per model (mean over mask seeds), from the
runs' ``feature_mask.csv``."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from rnnrepro.reporting.figures.base import PLAIN, Paths, Style, label, read_runs, save

MARKERS = ("o", "s", "^", "v", "D", "P")


def lowest_counts(means: pd.DataFrame, labels: dict) -> list[str]:
    """Per masked layer, how often each model has the lowest mean perplexity over P > 0."""
    out = []
    masked = means[means["probability"] > 0]
    for layer, group in masked.groupby("layer", sort=False):
        best = group.loc[group.groupby("probability")["test_ppl"].idxmin(), "model"]
        counts = best.value_counts()
        wins = ", ".join(
            f"{label(m, labels)} {n}/{group['probability'].nunique()}" for m, n in counts.items()
        )
        out.append(f"{_layer_title(layer)}: {wins}")
    return out


def _layer_title(layer: str) -> str:
    return "all layers masked" if layer == "all" else f"layer {layer} masked"


def plot_feature_masking(paths: Paths, out: str | Path, style: Style = PLAIN) -> None:
    """Test perplexity against P, a panel per masked layer and a line per model (mean over the
    mask seeds); the footer names each model's parameter count, the grid and, per panel, which
    model is lowest at how many P > 0."""
    df = read_runs(paths)
    df["layer"] = df["layer"].astype(str)
    means = (
        df.groupby(["model", "layer", "probability"], sort=False)["test_ppl"].mean().reset_index()
    )
    layers = list(dict.fromkeys(df["layer"]))
    order = [m for m in style.labels if m in set(df["model"])]
    order += [m for m in dict.fromkeys(df["model"]) if m not in order]
    fig, axes = plt.subplots(1, len(layers), figsize=(4.2 * len(layers), 4.0), squeeze=False)
    fig.suptitle("Test perplexity with a share P of a layer's output features masked", fontsize=13)
    for ax, layer in zip(axes[0], layers, strict=True):
        for k, model in enumerate(order):
            line = means[(means["model"] == model) & (means["layer"] == layer)]
            ax.plot(
                line["probability"],
                line["test_ppl"],
                marker=MARKERS[k % len(MARKERS)],
                ms=4,
                label=label(model, style.labels),
            )
        ax.set(title=_layer_title(layer), xlabel="P", ylabel="test perplexity")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    params = df.groupby("model", sort=False)["params_total"].first()
    seeds = df.groupby(["model", "layer", "probability"])["mask_seed"].nunique().max()
    notes = [
        *style.notes,
        "Parameters: "
        + ", ".join(f"{label(m, style.labels)} {params[m] / 1e6:.2f}M" for m in order)
        + ".",
        f"P = {', '.join(f'{p:g}' for p in sorted(set(df['probability'])))}; mean over {seeds} "
        "mask seed(s) (config feature_masking).",
        "Lowest at P > 0: " + "; ".join(lowest_counts(means, dict(style.labels))) + ".",
    ]
    save(fig, out, notes)
