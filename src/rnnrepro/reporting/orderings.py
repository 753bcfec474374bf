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
from collections.abc import Mapping

import pandas as pd

from rnnrepro.papers.base import Ordering
from rnnrepro.reporting.markdown import section
from rnnrepro.reporting.metrics import METRIC_KIND
from rnnrepro.reporting.tables import PAPER_SCALE, scaled_verdict


def relative_spreads(table: pd.DataFrame) -> dict[str, float]:
    """Metric kind -> the seeds' relative spread (std / |mean|, the median over ``table``'s
    rows with at least two runs): the noise a one-run margin is read against."""
    if "std" not in table:
        return {}
    several = table[(table["n_seeds"] >= 2) & table["std"].notna() & (table["mean"] != 0)]
    ratio = (several["std"] / several["mean"].abs()).groupby(several["metric"].map(METRIC_KIND))
    return ratio.median().to_dict()


def margin_noise(
    ordering: Ordering, keyed: pd.DataFrame, spreads: Mapping[str, float]
) -> tuple[float, str]:
    """The seed noise of an ordering's margin and where it comes from: the root of the summed
    squares of each group's largest std over its runs ("seeds"), a one-run row's std taken as
    the metric kind's relative spread (``relative_spreads``) × its value ("seeds of other
    rows"); NaN when neither is known."""
    spread = spreads.get(METRIC_KIND[ordering.metric], math.nan)
    source = "seeds"
    squares = 0.0
    for group in ordering.groups:
        if not group:
            continue
        rows = keyed.loc[list(group)]
        std = rows["std"] if "std" in rows else pd.Series(math.nan, index=rows.index)
        if std.isna().any():
            std = std.fillna(rows["mean"].abs() * spread)
            source = "seeds of other rows"
        squares += float(std.max()) ** 2
    return math.sqrt(squares), source


def check_orderings(
    orderings: tuple[Ordering, ...],
    table: pd.DataFrame,
    scales: set[str] = frozenset(),
    spreads: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """Each ordering on the paper's numbers and on the reproduced means of ``table`` (a
    ``tables.build_table`` result: its ``dataset``, ``model``, ``stage``, ``metric``, ``paper``,
    ``mean`` and ``n_seeds`` columns).

    An ordering reads the rows of its metric, of its dataset when it names one (it is left out
    when the table has no row of that dataset), by (model, stage). The verdict is ``holds`` /
    ``fails`` on the reproduced means, ``missing`` when a row has no run; from runs of a reduced
    scale (``scales``, as in ``tables.scaled_verdict``) it names it. A margin inside the seeds'
    noise (``margin_noise``: the table's ``std``, or for a one-run row the metric kind's
    relative spread in ``spreads``, by default the table's own ``relative_spreads``) is
    ``within noise``; ``evidence`` says how many runs and what noise it was read against.
    Raises ValueError for an
    ordering that names a row the table lacks or has several of (rows of several datasets: the
    ordering names none), or that does not hold on the paper's own numbers (a mistake in the
    catalogue).
    """
    if "stage" not in table:
        table = table.assign(stage="train")
    spreads = relative_spreads(table) if spreads is None else spreads
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
        runs = int(keyed["n_seeds"].min())
        noise, source = margin_noise(ordering, keyed, spreads)
        verdict = "missing" if missing else ("holds" if margin > 0 else "fails")
        if not missing and abs(margin) <= noise:
            verdict = "within noise"
        evidence = ""
        if not missing:
            evidence = "one run per model" if runs == 1 else f"{runs} runs per model"
            evidence += (
                f"; seed noise ±{noise:.4g} ({source})" if not math.isnan(noise) else
                "; seed noise not measured for this metric"
            )  # fmt: skip
        rows.append(
            {
                "ordering": ordering.name,
                "check": ordering.check(),
                "paper margin": round(paper, 4),
                "reproduced margin": round(margin, 4) + 0.0,  # no "-0"
                "runs per model": runs,
                "evidence": evidence,
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
        "Margin: by how much it holds (positive) or fails (negative), in the metric's units. "
        "A margin inside the seeds' noise is `within noise`, not holds or fails: the noise is "
        "the root of the summed squares of each side's largest std over its runs; a model with "
        "one run takes the metric's relative seed spread measured on the rows with several "
        "(`evidence` says which; docs/results.md). A verdict from runs of a scale other than "
        "paper names the scale."
    )
    return section("Orderings the paper states", text, checked)
