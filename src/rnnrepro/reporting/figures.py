"""Figures of seed 000 (Figs. 2, 3, 4, 6) drawn from run outputs.

Every input file must live in a run directory ``.../{experiment}/{dataset}/{model}/seed{seed}/``;
the path supplies the panel (dataset) and line (model, seed) labels.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.patches import Patch, Rectangle  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

MODEL_LABELS = {
    "lstm": "Baseline LSTM",
    "attention_lstm": "Attention LSTM",
    "assignment_lstm": "Assignment LSTM",
}
MODEL_COLOURS = {"lstm": "Reds", "attention_lstm": "Blues", "assignment_lstm": "Greens"}
CELL_COLOURS = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple"]
TOKENS_PER_LINE = 20


def run_key(path: str | Path) -> dict[str, str | int]:
    """experiment, dataset, model and seed from a path ``.../{exp}/{data}/{model}/seed{n}/file``."""
    parts = Path(path).parts
    for i in range(len(parts) - 1, 2, -1):
        match = re.fullmatch(r"seed(\d+)", parts[i])
        if match:
            experiment, dataset, model = parts[i - 3 : i]
            return {
                "experiment": experiment,
                "dataset": dataset,
                "model": model,
                "seed": int(match[1]),
            }
    raise ValueError(f"{path}: expected .../{{experiment}}/{{dataset}}/{{model}}/seed{{n}}/file")


def read_runs(paths: Sequence[str | Path]) -> pd.DataFrame:
    """Concatenate CSV files, each tagged with the run key encoded in its path."""
    frames = [pd.read_csv(path).assign(**run_key(path)) for path in paths]
    return pd.concat(frames, ignore_index=True)


def _dataset_title(dataset: str) -> str:
    match = re.fullmatch(r"dyck_m(\d+)", dataset)
    return f"{match[1]}-bounded Dyck-2" if match else dataset


def _panels(datasets: Sequence[str], title: str) -> tuple[plt.Figure, dict]:
    ordered = sorted(datasets, key=lambda d: (len(d), d))
    fig, axes = plt.subplots(1, len(ordered), figsize=(4.6 * len(ordered), 3.8), squeeze=False)
    fig.suptitle(title, fontsize=13)
    for ax, dataset in zip(axes[0], ordered, strict=True):
        ax.set_title(_dataset_title(dataset))
        ax.grid(alpha=0.3)
    return fig, dict(zip(ordered, axes[0], strict=True))


def _shade(model: str, k: int, n: int) -> tuple:
    cmap = plt.get_cmap(MODEL_COLOURS.get(model, "Greys"))
    return cmap(0.85 - 0.45 * k / max(n - 1, 1))


def _save(fig: plt.Figure, out: str | Path) -> None:
    fig.tight_layout()
    fig.savefig(out, dpi=150)
    plt.close(fig)


def plot_ldpa(paths: Sequence[str | Path], out: str | Path) -> None:
    """Fig. 2: test LDPA vs closing distance, seed-averaged, one line per model, panel per m."""
    df = read_runs(paths)
    df = df[df["split"] == "test"]
    fig, axes = _panels(df["dataset"].unique(), "Long-distance prediction accuracy (test)")
    for (dataset, model), group in df.groupby(["dataset", "model"]):
        curve = group.groupby("distance")["accuracy"].mean()
        n = group["seed"].nunique()
        axes[dataset].plot(
            curve.index,
            curve.to_numpy(),
            lw=1.2,
            color=_shade(model, 0, 1),
            label=f"{MODEL_LABELS.get(model, model)} (mean of {n} seed{'s' * (n > 1)})",
        )
    for ax in axes.values():
        ax.set(xlabel="closing distance", ylabel="LDPA", ylim=(-0.03, 1.03))
        ax.legend(fontsize=8, loc="lower left")
    _save(fig, out)


def plot_val_wcpa(paths: Sequence[str | Path], out: str | Path) -> None:
    """Fig. 3: validation WCPA per epoch, one line per model and seed, panel per m."""
    df = read_runs(paths)
    fig, axes = _panels(df["dataset"].unique(), "Validation WCPA during training")
    for (dataset, model), group in df.groupby(["dataset", "model"]):
        seeds = sorted(group["seed"].unique())
        for k, seed in enumerate(seeds):
            run = group[group["seed"] == seed].sort_values("epoch")
            axes[dataset].plot(
                run["epoch"],
                run["val_wcpa"],
                marker="o",
                ms=2.5,
                lw=1.2,
                color=_shade(model, k, len(seeds)),
                label=f"{MODEL_LABELS.get(model, model)}, seed {seed}",
            )
    for ax in axes.values():
        ax.set(xlabel="epoch", ylabel="validation WCPA", ylim=(-0.03, 1.03))
        ax.legend(fontsize=7, loc="lower right")
    _save(fig, out)


def plot_pabs(paths: Sequence[str | Path], out: str | Path) -> None:
    """Fig. 4: principal angles between cell pairs vs sorted index, one line per seed and pair."""
    df = read_runs(paths)
    fig, axes = _panels(df["dataset"].unique(), "Principal angles between cells' W_hh subspaces")
    for (dataset, model), group in df.groupby(["dataset", "model"]):
        lines = sorted(group.groupby(["seed", "pair"]).groups)
        for k, (seed, pair) in enumerate(lines):
            curve = group[(group["seed"] == seed) & (group["pair"] == pair)].sort_values("index")
            axes[dataset].plot(
                curve["index"],
                curve["angle_deg"],
                marker="o",
                ms=3,
                lw=1.2,
                color=_shade(model, k, len(lines)),
                label=f"{MODEL_LABELS.get(model, model)}, seed {seed}, cells {pair}",
            )
    for ax in axes.values():
        ax.set(xlabel="principal vector index (sorted)", ylabel="angle (degrees)", ylim=(0, 90))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(fontsize=7, loc="lower right")
    _save(fig, out)


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


def plot_heatmap(paths: Sequence[str | Path], out: str | Path) -> None:
    """Fig. 6: tokens coloured by their argmax cell, opacity by that cell's attention weight."""
    heats = [pd.read_csv(path) for path in paths]
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
    for ax, heat, path in zip(axes[:, 0], heats, paths, strict=True):
        key = run_key(path)
        _draw_tokens(ax, heat)
        ax.set_title(
            f"{_dataset_title(key['dataset'])}, "
            f"{MODEL_LABELS.get(key['model'], key['model'])}, seed {key['seed']}"
        )
    handles = [
        Patch(color=CELL_COLOURS[(c - 1) % len(CELL_COLOURS)], label=f"cell {c}") for c in cells
    ]
    fig.legend(
        handles=handles,
        loc="lower center",
        ncol=len(cells),
        fontsize=9,
        title="argmax cell (opacity: faint = weight 1/S, full = weight 1)",
        title_fontsize=9,
    )
    fig.suptitle("Attention over cells per token", fontsize=13)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.savefig(out, dpi=150)
    plt.close(fig)


FIGURES: dict[str, Callable[[Sequence[str | Path], str | Path], None]] = {
    "ldpa": plot_ldpa,
    "val_wcpa": plot_val_wcpa,
    "pabs": plot_pabs,
    "heatmap": plot_heatmap,
}
