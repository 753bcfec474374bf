"""Figures of seed 000 (Figs. 2, 3, 4, 6) and seed 003 (Figs. 1, 2, 3) drawn from run outputs.

Every input file must live in a run directory ``.../{experiment}/{dataset}/{model}/seed{seed}/``;
the path supplies the panel (dataset) and line (model, seed) labels. The seed-003 figures read
``metrics.json`` files (run identity, test BPC, budget ratio); ``position_loss`` and ``examples``
also take the per-run data files and match them to their run by directory.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.patches import Patch, Rectangle  # noqa: E402
from matplotlib.ticker import MaxNLocator, NullFormatter  # noqa: E402

from rnnrepro.evaluation import IDENTITY  # noqa: E402
from rnnrepro.fileio import atomic_open
from rnnrepro.reporting.tables import dataset_family, dataset_fold  # noqa: E402

MODEL_LABELS = {
    "lstm": "Baseline LSTM",
    "attention_lstm": "Attention LSTM",
    "attention_lstm_5": "Attention LSTM (5 cells)",
    "assignment_lstm": "Assignment LSTM",
    "first_order_rnn": "first-order RNN",
    "mi_rnn": "general MI-RNN",
}
MODEL_COLOURS = {
    "lstm": "Reds",
    "attention_lstm": "Blues",
    "attention_lstm_5": "Purples",
    "assignment_lstm": "Greens",
}
CELL_COLOURS = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple"]
TOKENS_PER_LINE = 20
TASK_LABELS = {"ptb_lines_unigram": "character unigrams", "ptb_lines_bigram": "character bigrams"}
TASK_COLOURS = {"ptb_lines_unigram": "tab:blue", "ptb_lines_bigram": "tab:orange"}
EXAMPLE_DOCS = 4  # documents shown in the examples figure
EXAMPLE_WIDTH = 80  # characters per line (longer documents are wrapped)


def read_runs(paths: Sequence[str | Path]) -> pd.DataFrame:
    """Concatenate per-run CSV files; each carries its run's identity in its own columns."""
    frames = []
    for path in paths:
        frame = pd.read_csv(path)
        missing = [key for key in IDENTITY if key not in frame]
        if missing:
            raise ValueError(
                f"{path}: no run identity columns ({', '.join(missing)}): written by an older "
                "version? Rerun the job that wrote it"
            )
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def _dataset_title(dataset: str) -> str:
    match = re.fullmatch(r"dyck_m(\d+)", dataset)
    if match:
        return f"{match[1]}-bounded Dyck-2"
    return {"wikitext2": "WikiText-2"}.get(dataset, dataset)


def _panels(datasets: Sequence[str], title: str, rows: int = 1) -> tuple[plt.Figure, dict]:
    """One panel per dataset (a column each); with ``rows`` > 1, a dict of columns of axes."""
    ordered = sorted(datasets, key=lambda d: (len(d), d))
    fig, axes = plt.subplots(
        rows, len(ordered), figsize=(4.6 * len(ordered), 3.8 * rows), squeeze=False
    )
    fig.suptitle(title, fontsize=13)
    for row in axes:
        for ax, dataset in zip(row, ordered, strict=True):
            ax.set_title(_dataset_title(dataset))
            ax.grid(alpha=0.3)
    if rows == 1:
        return fig, dict(zip(ordered, axes[0], strict=True))
    return fig, {dataset: axes[:, j] for j, dataset in enumerate(ordered)}


def _shade(model: str, k: int, n: int) -> tuple:
    cmap = plt.get_cmap(MODEL_COLOURS.get(model, "Greys"))
    return cmap(0.85 - 0.45 * k / max(n - 1, 1))


def _footer(fig: plt.Figure, notes: Sequence[str]) -> float:
    """Write ``notes`` (the scale and its reductions) at the bottom of ``fig``; returns the
    height they take (figure fraction, 0 without notes)."""
    if not notes:
        return 0.0
    width_in, height_in = fig.get_size_inches()
    text = textwrap.fill(" ".join(notes), int(width_in * 17))
    fig.text(0.01, 0.01, text, fontsize=7, color="dimgrey", va="bottom", ha="left")
    return min(0.4, ((text.count("\n") + 1) * 0.13 + 0.1) / height_in)


def _save(
    fig: plt.Figure,
    out: str | Path,
    notes: Sequence[str] = (),
    bottom: float = 0.0,
    footer: float | None = None,
) -> None:
    """Lay out and write ``fig`` with ``notes`` in a footer (drawn here unless the caller drew
    it and passes its ``footer`` height) and kept as PNG metadata; ``bottom`` is room kept free
    above the footer (figure fraction)."""
    if footer is None:
        footer = _footer(fig, notes)
    fig.tight_layout(rect=(0, footer + bottom, 1, 1))
    with atomic_open(out, "wb") as f:
        fig.savefig(
            f,
            format=Path(out).suffix.lstrip(".") or "png",
            dpi=150,
            metadata={"Description": " ".join(notes)} if notes else None,
        )
    plt.close(fig)


def plot_ldpa(
    paths: Sequence[str | Path],
    out: str | Path,
    notes: Sequence[str] = (),
    min_events: int | None = None,
) -> None:
    """Fig. 2: test LDPA vs closing distance, seed-averaged, one line per model, panel per m;
    in grey (right axis, log scale) the number of test events at each distance, with
    ``min_events`` (the robust WCPA's threshold) as a dotted line."""
    df = read_runs(paths)
    df = df[df["split"] == "test"]
    fig, axes = _panels(df["dataset"].unique(), "Long-distance prediction accuracy (test)")
    for dataset, group in df.groupby("dataset"):
        events = group.groupby("distance")["total"].mean()  # the same test set for every run
        twin = axes[dataset].twinx()
        twin.fill_between(events.index, events.to_numpy(), step="mid", color="grey", alpha=0.2)
        twin.set_yscale("log")
        twin.set_ylabel("test events per distance", color="dimgrey")
        if min_events:
            twin.axhline(min_events, color="grey", ls=":", lw=1)
            twin.annotate(
                f"{min_events} events",
                (events.index.max(), min_events),
                fontsize=7,
                color="dimgrey",
                ha="right",
                va="bottom",
            )
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
    _save(fig, out, notes)


def plot_val_wcpa(
    paths: Sequence[str | Path],
    out: str | Path,
    notes: Sequence[str] = (),
    min_events: int | None = None,
) -> None:
    """Fig. 3: validation WCPA per epoch, one line per model and seed, panel per m; a second
    row (when the histories have it) over the distances with at least ``min_events`` events."""
    df = read_runs(paths)
    metrics = [("val_wcpa", "validation WCPA (every distance)")]
    if "val_robust_wcpa" in df and df["val_robust_wcpa"].notna().any():
        at_least = f"≥ {min_events}" if min_events else "enough"
        metrics.append(("val_robust_wcpa", f"validation WCPA (distances with {at_least} events)"))
    fig, columns = _panels(df["dataset"].unique(), "Validation WCPA during training", len(metrics))
    if len(metrics) == 1:
        columns = {dataset: [ax] for dataset, ax in columns.items()}
    for (dataset, model), group in df.groupby(["dataset", "model"]):
        seeds = sorted(group["seed"].unique())
        for k, seed in enumerate(seeds):
            run = group[group["seed"] == seed].sort_values("epoch")
            for ax, (metric, _) in zip(columns[dataset], metrics, strict=True):
                ax.plot(
                    run["epoch"],
                    run[metric],
                    marker="o",
                    ms=2.5,
                    lw=1.2,
                    color=_shade(model, k, len(seeds)),
                    label=f"{MODEL_LABELS.get(model, model)}, seed {seed}",
                )
    for column in columns.values():
        for ax, (_, label) in zip(column, metrics, strict=True):
            ax.set(xlabel="epoch", ylabel=label, ylim=(-0.03, 1.03))
            ax.legend(fontsize=7, loc="lower right")
    _save(fig, out, notes)


def plot_pabs(paths: Sequence[str | Path], out: str | Path, notes: Sequence[str] = ()) -> None:
    """Figs. 4-5: principal angles between cell pairs vs sorted index, one line per seed and
    pair; one panel per dataset (Dyck, Fig. 4) or per model when a dataset has several (the 2-
    and 5-cell WikiText-2 models, Fig. 5)."""
    df = read_runs(paths)
    several = df.groupby("dataset")["model"].nunique() > 1
    df["panel"] = [
        f"{d}|{m}" if several[d] else d for d, m in zip(df["dataset"], df["model"], strict=True)
    ]
    fig, axes = _panels(df["panel"].unique(), "Principal angles between cells' W_hh subspaces")
    for (panel, model), group in df.groupby(["panel", "model"]):
        if "|" in panel:
            axes[panel].set_title(
                f"{_dataset_title(panel.split('|')[0])}, {MODEL_LABELS.get(model, model)}"
            )
        lines = sorted(group.groupby(["seed", "pair"]).groups)
        for k, (seed, pair) in enumerate(lines):
            curve = group[(group["seed"] == seed) & (group["pair"] == pair)].sort_values("index")
            axes[panel].plot(
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
        crowded = len(ax.get_lines()) > 6
        ax.legend(fontsize=5 if crowded else 7, loc="lower right", ncol=2 if crowded else 1)
    _save(fig, out, notes)


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


def plot_heatmap(paths: Sequence[str | Path], out: str | Path, notes: Sequence[str] = ()) -> None:
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
            f"{_dataset_title(key['dataset'])}, "
            f"{MODEL_LABELS.get(key['model'], key['model'])}, seed {key['seed']}"
        )
    handles = [
        Patch(color=CELL_COLOURS[(c - 1) % len(CELL_COLOURS)], label=f"cell {c}") for c in cells
    ]
    footer = _footer(fig, notes)
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
    _save(fig, out, notes, bottom=0.12, footer=footer)


# ---------------------------------------------------------------------------------------------
# Seed 003 (general second-order RNN on PTB lines)


def model_label(model: str) -> str:
    """Readable model name: ``so_d_tanh`` -> "second-order +Dx, tanh", ``ratio_0_5`` -> ...."""
    if model in MODEL_LABELS:
        return MODEL_LABELS[model]
    match = re.fullmatch(r"so_(de|d|e)?_?(tanh|id)", model)
    if match:
        terms = {"de": "+Dx +Eh", "d": "+Dx", "e": "+Eh", None: "no first-order terms"}[match[1]]
        return f"second-order, {terms}, {'tanh' if match[2] == 'tanh' else 'Id'}"
    ratio = ratio_from_model(model)
    return f"|m|/|h| = {ratio:g}" if ratio is not None else model


def ratio_from_model(model: str) -> float | None:
    """|m|/|h| encoded in a model name: ``ratio_0_1`` -> 0.1, ``ratio_20`` -> 20."""
    match = re.fullmatch(r"ratio_(\d+)(?:_(\d+))?", model)
    if not match:
        return None
    return float(f"{match[1]}.{match[2]}" if match[2] else match[1])


def read_metrics(paths: Sequence[str | Path]) -> pd.DataFrame:
    """One row per ``metrics.json``: run identity, family/fold, |m|/|h| ratio, test BPC, dir.

    The ratio is ``run.budget.ratio`` of the file, else parsed from the model name.
    """
    rows = []
    for path in paths:
        m = json.loads(Path(path).read_text())
        budget = (m.get("run") or {}).get("budget") or {}
        ratio = budget.get("ratio")
        bpc = m["test"].get("bpc")
        rows.append(
            {
                **{key: m[key] for key in ("experiment", "dataset", "model", "seed")},
                "family": dataset_family(m["dataset"]),
                "fold": dataset_fold(m["dataset"]),
                "ratio": float(ratio) if ratio is not None else ratio_from_model(m["model"]),
                "test_bpc": np.nan if bpc is None else float(bpc),
                "params": m["params"]["total"],
                "dir": str(Path(path).parent.resolve()),
            }
        )
    columns = ["experiment", "dataset", "model", "seed", "family", "fold", "ratio", "test_bpc"]
    return pd.DataFrame(rows, columns=[*columns, "params", "dir"])


def _runs_description(group: pd.DataFrame) -> str:
    folds = group["fold"].dropna().nunique()
    seeds = group["seed"].nunique()
    n = len(group)
    if folds:
        return f"{_plural(n, 'run')}: {_plural(folds, 'fold')} × {_plural(seeds, 'seed')}"
    return _plural(n, "run")


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


def plot_ratio(paths: Sequence[str | Path], out: str | Path, notes: Sequence[str] = ()) -> None:
    """Fig. 1 (seed 003): test BPC vs |m|/|h| (log x), one line per task, mean ± std over runs."""
    df = read_metrics(paths).dropna(subset=["ratio", "test_bpc"])
    if df.empty:
        raise ValueError("no run with both a |m|/|h| ratio and a test BPC among the inputs")
    fig, ax = plt.subplots(figsize=(6.8, 4.4))
    fig.suptitle("Test BPC vs |m| / |h| at a fixed parameter budget", fontsize=13)
    for family in sorted(df["family"].unique(), key=lambda f: (f not in TASK_COLOURS, f)):
        group = df[df["family"] == family]
        stats = group.groupby("ratio")["test_bpc"].agg(["mean", "std", "count"]).sort_index()
        colour = TASK_COLOURS.get(family)
        ax.errorbar(
            stats.index,
            stats["mean"],
            yerr=stats["std"].fillna(0.0),
            marker="o",
            ms=4,
            lw=1.4,
            capsize=3,
            color=colour,
            label=f"{TASK_LABELS.get(family, family)} ({_runs_description(group)})",
        )
        best = stats["mean"].idxmin()
        ax.plot(best, stats.loc[best, "mean"], marker="*", ms=14, color=colour, mec="black")
    ratios = sorted(df["ratio"].unique())
    ax.set_xscale("log")
    ax.set_xticks(ratios)
    ax.set_xticklabels([f"{r:g}" for r in ratios])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set(xlabel="|m| / |h| (log scale)", ylabel="test BPC (mean ± std over runs)")
    ax.grid(alpha=0.3)
    ax.plot([], [], ls="none", marker="*", ms=10, color="grey", mec="black", label="best ratio")
    ax.legend(fontsize=8)
    _save(fig, out, notes)


def pick_best_run(paths: Sequence[str | Path], data_name: str) -> tuple[pd.Series, Path, str]:
    """The best run among the ``metrics.json`` inputs, and its ``data_name`` file from the inputs.

    "Best" follows the paper's "best unigram model": the (dataset family, model) with the lowest
    mean test BPC over its runs (folds × seeds), then that model's run with the lowest test BPC.
    Returns the run's row (see ``read_metrics``), its data file and a one-line description.
    """
    metrics = [p for p in paths if Path(p).name == "metrics.json"]
    data = {Path(p).parent.resolve(): Path(p) for p in paths if Path(p).name == data_name}
    df = read_metrics(metrics).dropna(subset=["test_bpc"])
    if df.empty:
        raise ValueError(f"no metrics.json with a test BPC among the inputs of {data_name}")
    means = df.groupby(["family", "model"])["test_bpc"].mean()
    family, model = means.idxmin()
    runs = df[(df["family"] == family) & (df["model"] == model)]
    best = runs.loc[runs["test_bpc"].idxmin()]
    path = data.get(Path(best["dir"]))
    if path is None:
        raise ValueError(f"{data_name} of the best run ({best['dir']}) is not among the inputs")
    fold = f"fold {int(best['fold'])}, " if pd.notna(best["fold"]) else ""
    text = (
        f"best model: {model_label(model)} (mean test BPC {means.min():.3f} over "
        f"{_runs_description(runs)}); shown: {fold}seed {best['seed']}, "
        f"test BPC {best['test_bpc']:.3f}"
    )
    return best, path, text


def plot_position_loss(
    paths: Sequence[str | Path], out: str | Path, notes: Sequence[str] = ()
) -> None:
    """Fig. 3 (seed 003): mean test bits vs character position in word, for the best run.

    Inputs: the candidate runs' ``metrics.json`` and ``position_loss.csv`` files.
    """
    best, path, text = pick_best_run(paths, "position_loss.csv")
    df = pd.read_csv(path).sort_values("position")
    fig, ax = plt.subplots(figsize=(8.0, 4.6))
    fig.suptitle("Test loss by character position within a word", fontsize=13)
    ax.set_title(textwrap.fill(text, 110), fontsize=8)
    ax.bar(df["position"], df["bits"], color="tab:blue", alpha=0.8, label="mean test loss (bits)")
    ax.axhline(best["test_bpc"], color="tab:red", ls=":", lw=1.2, label="test BPC (all characters)")
    ax.set(xlabel="position of the character in its word (1 = first letter)", ylabel="bits")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3, axis="y")
    counts = ax.twinx()
    counts.plot(df["position"], df["count"], color="grey", marker=".", lw=1, ls="--")
    counts.set_yscale("log")
    counts.set_ylabel("characters at this position (log scale)", color="grey")
    counts.tick_params(axis="y", which="both", colors="grey")
    handles, labels = ax.get_legend_handles_labels()
    handles.append(plt.Line2D([], [], color="grey", marker=".", ls="--"))
    labels.append("count (right axis)")
    ax.legend(handles, labels, fontsize=8, loc="upper center")
    _save(fig, out, notes)


def _example_lines(docs: list[dict], n_docs: int, width: int) -> list[tuple[str, str]]:
    """(target, predicted) line pairs of the first ``n_docs`` documents, short ones first."""
    for k, doc in enumerate(docs):
        if len(doc["target"]) != len(doc["predicted"]):
            raise ValueError(f"examples.json document {k}: target and predicted lengths differ")
    short = [d for d in docs if 0 < len(d["target"]) <= width]
    long = [d for d in docs if len(d["target"]) > width]
    chosen = (short + long)[:n_docs]
    pairs = []
    for doc in chosen:
        target, predicted = doc["target"], doc["predicted"]
        starts = range(0, len(target), width)
        pairs.append([(target[i : i + width], predicted[i : i + width]) for i in starts])
    return pairs


def plot_examples(
    paths: Sequence[str | Path],
    out: str | Path,
    notes: Sequence[str] = (),
    n_docs: int = EXAMPLE_DOCS,
    width: int = EXAMPLE_WIDTH,
) -> None:
    """Fig. 2 (seed 003): test documents of the best run, true characters above, predictions
    below (monospace), mispredicted characters in red on a pink box.

    Inputs: the candidate runs' ``metrics.json`` and ``examples.json`` files. Shows the first
    ``n_docs`` documents of at most ``width`` characters (longer ones, wrapped, if too few).
    """
    best, path, text = pick_best_run(paths, "examples.json")
    docs = _example_lines(json.loads(Path(path).read_text()), n_docs, width)
    if not docs:
        raise ValueError(f"{path}: no document to show")
    cols = max(len(t) for doc in docs for t, _ in doc)
    rows = sum(2 * len(doc) + 1 for doc in docs) - 1
    width_in = max(0.092 * cols + 1.0, 6.0)
    fig, ax = plt.subplots(figsize=(width_in, 0.3 * rows + 1.4))
    y = rows - 0.5
    shown = wrong = 0
    for doc in docs:
        for target, predicted in doc:
            for label, line, offset in (("true", target, 0), ("pred.", predicted, 1)):
                ax.text(-1, y - offset, label, ha="right", va="center", fontsize=7, color="grey")
                for x, char in enumerate(line):
                    miss = offset == 1 and char != target[x]
                    if miss:
                        ax.add_patch(
                            Rectangle((x, y - 1.45), 1, 0.9, color="mistyrose", lw=0, zorder=0)
                        )
                    ax.text(
                        x + 0.5,
                        y - offset,
                        char,
                        ha="center",
                        va="center",
                        family="monospace",
                        fontsize=10,
                        color="red" if miss else "black",
                    )
            shown += len(target)
            wrong += sum(a != b for a, b in zip(target, predicted, strict=True))
            y -= 2
        y -= 1
    ax.set(xlim=(-5, cols), ylim=(-0.2, rows))
    ax.axis("off")
    fig.suptitle("Test documents: true characters (above) and argmax predictions (below)")
    caption = f"{text}; {wrong} of {shown} shown characters mispredicted (red)"
    ax.set_title(textwrap.fill(caption, int(14 * width_in)), fontsize=8)
    _save(fig, out, notes)


def plot_stack_actions(
    paths: Sequence[str | Path], out: str | Path, notes: Sequence[str] = ()
) -> None:
    """Seed 002 Fig. 3: how often each stack state is the most probable (log scale; STAY red,
    PUSH blue, by number of pops) and the distribution of the maximum action probability.
    Inputs: one run's ``stack_states.csv`` and ``stack_max_prob.csv`` (told apart by columns)."""
    frames = [pd.read_csv(p) for p in paths]
    states = next(f for f in frames if "state" in f)
    histogram = next(f for f in frames if "steps" in f)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    width = 0.4
    for offset, (action, colour) in enumerate((("STAY", "tab:red"), ("PUSH", "tab:blue"))):
        rows = states[(states["action"] == action) & (states["argmax_count"] > 0)]
        left.bar(
            rows["pops"] + (offset - 0.5) * width,
            rows["argmax_count"],
            width,
            color=colour,
            label=action,
        )
    left.set_yscale("log")
    left.set_xticks(range(int(states["pops"].max()) + 1))
    left.set_xlabel("number of pops")
    left.set_ylabel("steps where the state is the most probable")
    left.legend()
    centres = (histogram["low"] + histogram["high"]) / 2
    right.bar(centres, histogram["steps"], width=histogram["high"] - histogram["low"], color="grey")
    right.set_xlabel("maximum action probability")
    right.set_ylabel("steps")
    run = states.iloc[0]
    fig.suptitle(f"Stack actions of {run['model']} on the {run['dataset']} test stream")
    _save(fig, out, notes)


FIGURES: dict[str, Callable[..., None]] = {
    "ldpa": plot_ldpa,
    "val_wcpa": plot_val_wcpa,
    "pabs": plot_pabs,
    "heatmap": plot_heatmap,
    "ratio": plot_ratio,
    "position_loss": plot_position_loss,
    "examples": plot_examples,
    "stack_actions": plot_stack_actions,
}
