"""The orderings a paper states about its table, checked on the reproduced means.

A table row compares one model's number with the paper's; a paper's conclusions rest on the
orderings between rows ("models free of the first-order term outperformed the rest"). Each
``Ordering`` here is one such statement, with where the paper makes it, written as a check on
one metric where lower is better (or, marked so, higher: BLEU). It is checked on the paper's
own numbers (it must hold there: ``tests`` assert it) and on the reproduced means of the table,
with its margin, so that a reader sees both whether it holds and by how much.
"""

from __future__ import annotations

import math

import pandas as pd

from rnnrepro.papers.base import Ordering
from rnnrepro.reporting.markdown import section
from rnnrepro.reporting.tables import PAPER_SCALE, scaled_verdict


def check_orderings(
    orderings: tuple[Ordering, ...], table: pd.DataFrame, scales: set[str] = frozenset()
) -> pd.DataFrame:
    """Each ordering on the paper's numbers and on the reproduced means of ``table`` (a
    ``tables.build_table`` result: its ``dataset``, ``model``, ``stage``, ``metric``, ``paper``,
    ``mean`` and ``n_seeds`` columns).

    An ordering reads the rows of its metric, of its dataset when it names one (it is left out
    when the table has no row of that dataset), by (model, stage). The verdict is ``holds`` /
    ``fails`` on the reproduced means, ``missing`` when a row has no run; from runs of a reduced
    scale (``scales``, as in ``tables.scaled_verdict``) it names it. Raises ValueError for an
    ordering that names a row the table lacks or has several of (rows of several datasets: the
    ordering names none), or that does not hold on the paper's own numbers (a mistake in the
    catalogue).
    """
    if "stage" not in table:
        table = table.assign(stage="train")
    rows = []
    for ordering in orderings:
        selected = table[table["metric"] == ordering.metric]
        if ordering.dataset is not None:
            selected = selected[selected["dataset"] == ordering.dataset]
            if selected.empty:
                continue  # a table without that dataset's rows (e.g. --datasets)
        keyed = selected.set_index(["model", "stage"])
        unknown = [ordering.label(r) for r in ordering.rows if r not in keyed.index]
        if unknown:
            raise ValueError(f"ordering {ordering.name!r}: no table row for model(s) {unknown}")
        repeated = set(keyed.index[keyed.index.duplicated()])
        repeated = [ordering.label(r) for r in ordering.rows if r in repeated]
        if repeated:
            raise ValueError(
                f"ordering {ordering.name!r}: a row per dataset "
                f"({', '.join(sorted(set(selected['dataset'])))}) for model(s) {repeated}: "
                "it must name its dataset"
            )
        keyed = keyed.loc[list(ordering.rows)]
        paper = ordering.margin(keyed["paper"].to_dict())
        if paper <= 0:
            raise ValueError(f"ordering {ordering.name!r} does not hold on the paper's numbers")
        ours = keyed["mean"].to_dict()
        missing = any(math.isnan(ours[r]) for r in ordering.rows)
        margin = math.nan if missing else ordering.margin(ours)
        verdict = "missing" if missing else ("holds" if margin > 0 else "fails")
        rows.append(
            {
                "ordering": ordering.name,
                "check": ordering.check(),
                "paper margin": round(paper, 4),
                "reproduced margin": round(margin, 4) + 0.0,  # no "-0"
                "runs per model": int(keyed["n_seeds"].min()),
                "verdict": scaled_verdict(verdict, set(scales) or {PAPER_SCALE}),
                "source": ordering.source,
            }
        )
    return pd.DataFrame(rows)


def ordering_lines(checked: pd.DataFrame) -> list[str]:
    """Markdown section of ``check_orderings``' result (empty when there is none)."""
    text = (
        "Each is checked on the paper's numbers and on the reproduced means (lower is better, "
        "unless the check says higher is better). "
        "Margin: by how much it holds (positive) or fails (negative), in the metric's units; "
        "with one run per model it carries that run's seed-to-seed noise. A verdict from runs "
        "of a scale other than paper names the scale."
    )
    return section("Orderings the paper states", text, checked)
