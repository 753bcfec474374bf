"""What every figure shares: reading per-run CSVs, one panel per dataset, model labels and
colours, and writing the PNG with the scale's notes in a footer."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from rnnrepro.data import names  # noqa: E402
from rnnrepro.evaluation import IDENTITY  # noqa: E402
from rnnrepro.fileio import atomic_open  # noqa: E402

# A model's colour map: the n-th model of the figure's labels (its catalogue's order) gets the
# n-th; a model without a label is grey.
COLOUR_MAPS = ("Reds", "Blues", "Purples", "Greens")
Labels = Mapping[str, str]
Paths = Sequence[str | Path]


@dataclass(frozen=True)
class Style:
    """What a paper's figure adds to its kind: the notes of its footer (the scale and its
    reductions), its model labels (their catalogue order picks the colours) and, for the Dyck
    figures, the robust WCPA's threshold."""

    notes: Sequence[str] = ()
    labels: Labels = field(default_factory=lambda: MappingProxyType({}))
    min_events: int | None = None


PLAIN = Style()


def label(model: str, labels: Labels) -> str:
    """A model's label: the catalogue's, else its configured name."""
    return labels.get(model, model)


def shade(model: str, k: int, n: int, labels: Labels) -> tuple:
    """The k-th of n shades of the model's colour map."""
    order = list(labels)
    name = COLOUR_MAPS[order.index(model) % len(COLOUR_MAPS)] if model in order else "Greys"
    return plt.get_cmap(name)(0.85 - 0.45 * k / max(n - 1, 1))


def run_line(ax: plt.Axes, xy: tuple, model: str, k: int, n: int, text: str, style: Style) -> None:
    """The line of the k-th of n runs of ``model`` through the points ``xy`` (x and y values,
    then the marker size): its colour, labelled "<label>, <text>"."""
    colour = shade(model, k, n, style.labels)
    x, y, size = xy
    name = f"{label(model, style.labels)}, {text}"
    ax.plot(x, y, marker="o", ms=size, lw=1.2, color=colour, label=name)


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


def panels(datasets: Sequence[str], title: str, rows: int = 1) -> tuple[plt.Figure, dict]:
    """One panel per dataset (a column each); with ``rows`` > 1, a dict of columns of axes."""
    ordered = sorted(datasets, key=lambda d: (len(d), d))
    fig, axes = plt.subplots(
        rows, len(ordered), figsize=(4.6 * len(ordered), 3.8 * rows), squeeze=False
    )
    fig.suptitle(title, fontsize=13)
    for row in axes:
        for ax, dataset in zip(row, ordered, strict=True):
            ax.set_title(names.parse(dataset.split("|")[0]).title)  # "dataset|model" panels too
            ax.grid(alpha=0.3)
    if rows == 1:
        return fig, dict(zip(ordered, axes[0], strict=True))
    return fig, {dataset: axes[:, j] for j, dataset in enumerate(ordered)}


def footer_height(fig: plt.Figure, notes: Sequence[str]) -> float:
    """Write ``notes`` (the scale and its reductions) at the bottom of ``fig``; returns the
    height they take (figure fraction, 0 without notes)."""
    if not notes:
        return 0.0
    width_in, height_in = fig.get_size_inches()
    text = textwrap.fill(" ".join(notes), int(width_in * 17))
    fig.text(0.01, 0.01, text, fontsize=7, color="dimgrey", va="bottom", ha="left")
    return min(0.4, ((text.count("\n") + 1) * 0.13 + 0.1) / height_in)


def save(
    fig: plt.Figure,
    out: str | Path,
    notes: Sequence[str] = (),
    bottom: float = 0.0,
    footer: float | None = None,
) -> None:
    """Lay out and write ``fig`` with ``notes`` in a footer (drawn here unless the caller drew
    it and passes its ``footer`` height) and kept as PNG metadata; ``bottom`` is room kept free
    above the footer (figure fraction)."""
    height = footer_height(fig, notes) if footer is None else footer
    fig.tight_layout(rect=(0, height + bottom, 1, 1))
    with atomic_open(out, "wb") as f:
        fig.savefig(
            f,
            format=Path(out).suffix.lstrip(".") or "png",
            dpi=150,
            metadata={"Description": " ".join(notes)} if notes else None,
        )
    plt.close(fig)
