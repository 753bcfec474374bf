"""Character-model figures (general_second_order): test BPC against the |m|/|h| ratio, and the
best run's loss by position in a word and its predictions."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator, NullFormatter

from rnnrepro.data import names
from rnnrepro.reporting.figures.base import PLAIN, Labels, Paths, Style, label, save

TASK_LABELS = {"ptb_lines_unigram": "character unigrams", "ptb_lines_bigram": "character bigrams"}
TASK_COLOURS = {"ptb_lines_unigram": "tab:blue", "ptb_lines_bigram": "tab:orange"}
EXAMPLE_DOCS = 4  # documents shown in the examples figure
EXAMPLE_WIDTH = 80  # characters per line (longer documents are wrapped)
TERMS = {(True, True): "+Dx +Eh", (True, False): "+Dx", (False, True): "+Eh"}


def model_label(metrics: dict, labels: Labels) -> str:
    """A run's model label: the catalogue's, else a second-order RNN's from its
    hyper-parameters ("second-order, +Dx, tanh"), else the configured name."""
    model = metrics["model"]
    hparams = (metrics.get("run") or {}).get("hparams", {})
    if model in labels or metrics.get("architecture") != "second_order_rnn":
        return label(model, labels)
    terms = TERMS.get((hparams.get("use_d"), hparams.get("use_e")), "no first-order terms")
    activation = "tanh" if hparams.get("activation") == "tanh" else "Id"
    return f"second-order, {terms}, {activation}"


def read_metrics(paths: Sequence[str | Path], labels: Labels = PLAIN.labels) -> pd.DataFrame:
    """One row per ``metrics.json``: run identity, family/fold, |m|/|h| ratio (its parameter
    budget's ``ratio``), test BPC, the model's label and the run's directory."""
    rows = []
    for path in paths:
        m = json.loads(Path(path).read_text())
        dataset = names.parse(m["dataset"])
        budget = (m.get("run") or {}).get("budget") or {}
        ratio = budget.get("ratio")
        bpc = m["test"].get("bpc")
        rows.append(
            {
                **{key: m[key] for key in ("experiment", "dataset", "model", "seed")},
                "family": dataset.unfolded,
                "fold": dataset.fold,
                "ratio": np.nan if ratio is None else float(ratio),
                "test_bpc": np.nan if bpc is None else float(bpc),
                "params": m["params"]["total"],
                "dir": str(Path(path).parent.resolve()),
                "label": model_label(m, labels),
            }
        )
    columns = ["experiment", "dataset", "model", "seed", "family", "fold", "ratio", "test_bpc"]
    return pd.DataFrame(rows, columns=[*columns, "params", "dir", "label"])


def _runs_description(group: pd.DataFrame) -> str:
    folds = group["fold"].dropna().nunique()
    seeds = group["seed"].nunique()
    n = len(group)
    if folds:
        return f"{_plural(n, 'run')}: {_plural(folds, 'fold')} × {_plural(seeds, 'seed')}"
    return _plural(n, "run")


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


def plot_ratio(paths: Paths, out: str | Path, style: Style = PLAIN) -> None:
    """general_second_order Fig. 1: test BPC vs |m|/|h| (log x), one line per task, mean ±
    std over runs."""
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
    save(fig, out, style.notes)


def pick_best_run(
    paths: Sequence[str | Path], data_name: str, labels: Labels = PLAIN.labels
) -> tuple[pd.Series, Path, str]:
    """The best run among the ``metrics.json`` inputs, and its ``data_name`` file from the inputs.

    "Best" follows the paper's "best unigram model": the (dataset family, model) with the lowest
    mean test BPC over its runs (folds × seeds), then that model's run with the lowest test BPC.
    Returns the run's row (see ``read_metrics``), its data file and a one-line description.
    """
    metrics = [p for p in paths if Path(p).name == "metrics.json"]
    data = {Path(p).parent.resolve(): Path(p) for p in paths if Path(p).name == data_name}
    df = read_metrics(metrics, labels).dropna(subset=["test_bpc"])
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
        f"best model: {best['label']} (mean test BPC {means.min():.3f} over "
        f"{_runs_description(runs)}); shown: {fold}seed {best['seed']}, "
        f"test BPC {best['test_bpc']:.3f}"
    )
    return best, path, text


def plot_position_loss(paths: Paths, out: str | Path, style: Style = PLAIN) -> None:
    """general_second_order Fig. 3: mean test bits vs character position in word, for the best run.

    Inputs: the candidate runs' ``metrics.json`` and ``position_loss.csv`` files.
    """
    best, path, text = pick_best_run(paths, "position_loss.csv", style.labels)
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
    save(fig, out, style.notes)


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
    paths: Paths,
    out: str | Path,
    style: Style = PLAIN,
    n_docs: int = EXAMPLE_DOCS,
    width: int = EXAMPLE_WIDTH,
) -> None:
    """general_second_order Fig. 2: test documents of the best run, true characters above,
    predictions below (monospace), mispredicted characters in red on a pink box.

    Inputs: the candidate runs' ``metrics.json`` and ``examples.json`` files. Shows the first
    ``n_docs`` documents of at most ``width`` characters (longer ones, wrapped, if too few).
    """
    best, path, text = pick_best_run(paths, "examples.json", style.labels)
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
            for side, line, offset in (("true", target, 0), ("pred.", predicted, 1)):
                ax.text(-1, y - offset, side, ha="right", va="center", fontsize=7, color="grey")
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
    save(fig, out, style.notes)
