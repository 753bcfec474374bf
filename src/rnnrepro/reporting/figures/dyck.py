"""Dyck-language figures: long-distance prediction accuracy by closing distance, and the
validation WCPA over training."""

from __future__ import annotations

from pathlib import Path

from rnnrepro.reporting.figures.base import (
    PLAIN,
    Paths,
    Style,
    label,
    panels,
    read_runs,
    run_line,
    save,
    shade,
)


def plot_ldpa(paths: Paths, out: str | Path, style: Style = PLAIN) -> None:
    """second_order_lstm Fig. 2: test LDPA vs closing distance, seed-averaged, one line per
    model, panel per m; in grey (right axis, log scale) the number of test events at each
    distance, with ``style.min_events`` (the robust WCPA's threshold) as a dotted line."""
    df = read_runs(paths)
    df = df[df["split"] == "test"]
    fig, axes = panels(df["dataset"].unique(), "Long-distance prediction accuracy (test)")
    for dataset, group in df.groupby("dataset"):
        events = group.groupby("distance")["total"].mean()  # the same test set for every run
        twin = axes[dataset].twinx()
        twin.fill_between(events.index, events.to_numpy(), step="mid", color="grey", alpha=0.2)
        twin.set_yscale("log")
        twin.set_ylabel("test events per distance", color="dimgrey")
        if style.min_events:
            twin.axhline(style.min_events, color="grey", ls=":", lw=1)
            twin.annotate(
                f"{style.min_events} events",
                (events.index.max(), style.min_events),
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
            color=shade(model, 0, 1, style.labels),
            label=f"{label(model, style.labels)} (mean of {n} seed{'s' * (n > 1)})",
        )
    for ax in axes.values():
        ax.set(xlabel="closing distance", ylabel="LDPA", ylim=(-0.03, 1.03))
        ax.legend(fontsize=8, loc="lower left")
    save(fig, out, style.notes)


def plot_val_wcpa(paths: Paths, out: str | Path, style: Style = PLAIN) -> None:
    """second_order_lstm Fig. 3: validation WCPA per epoch, one line per model and seed, panel
    per m; a second row (when the histories have it) over the distances with at least
    ``style.min_events`` events."""
    df = read_runs(paths)
    metrics = [("val_wcpa", "validation WCPA (every distance)")]
    if "val_robust_wcpa" in df and df["val_robust_wcpa"].notna().any():
        at_least = f"≥ {style.min_events}" if style.min_events else "enough"
        metrics.append(("val_robust_wcpa", f"validation WCPA (distances with {at_least} events)"))
    fig, columns = panels(df["dataset"].unique(), "Validation WCPA during training", len(metrics))
    if len(metrics) == 1:
        columns = {dataset: [ax] for dataset, ax in columns.items()}
    for (dataset, model), group in df.groupby(["dataset", "model"]):
        seeds = sorted(group["seed"].unique())
        for k, seed in enumerate(seeds):
            run = group[group["seed"] == seed].sort_values("epoch")
            for ax, (metric, _) in zip(columns[dataset], metrics, strict=True):
                xy = (run["epoch"], run[metric], 2.5)
                run_line(ax, xy, model, k, len(seeds), f"seed {seed}", style)
    for column in columns.values():
        for ax, (_, axis_label) in zip(column, metrics, strict=True):
            ax.set(xlabel="epoch", ylabel=axis_label, ylim=(-0.03, 1.03))
            ax.legend(fontsize=7, loc="lower right")
    save(fig, out, style.notes)
