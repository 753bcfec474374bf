"""The orderings a paper states about its table, checked on the reproduced means.

A table row compares one model's number with the paper's; a paper's conclusions rest on the
orderings between rows ("models free of the first-order term outperformed the rest"). Each
``Ordering`` here is one such statement, with where the paper makes it, written as a check on
one metric where lower is better. It is checked on the paper's own numbers (it must hold there:
``tests`` assert it) and on the reproduced means of the table, with its margin, so that a reader
sees both whether it holds and by how much.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from rnnrepro.reporting.tables import PAPER_SCALE, markdown_lines, scaled_verdict


@dataclass(frozen=True)
class Ordering:
    """Every model of ``better`` has a lower ``metric`` than every model of ``worse``.

    With ``better_than`` / ``worse_than`` (a second pair of groups) it is instead a claim on
    gaps: ``mean(worse) - mean(better)`` exceeds ``mean(worse_than) - mean(better_than)``.
    """

    name: str
    source: str
    better: tuple[str, ...]
    worse: tuple[str, ...]
    better_than: tuple[str, ...] = ()
    worse_than: tuple[str, ...] = ()
    metric: str = "test_bpc"

    @property
    def models(self) -> tuple[str, ...]:
        return self.better + self.worse + self.better_than + self.worse_than

    def margin(self, values: Mapping[str, float]) -> float:
        """How far the ordering holds on ``values`` (model -> metric): positive when it does."""
        if self.better_than:
            return _gap(values, self.better, self.worse) - _gap(
                values, self.better_than, self.worse_than
            )
        return min(values[m] for m in self.worse) - max(values[m] for m in self.better)

    def check(self) -> str:
        """The check in words, e.g. ``max(a, b) < min(c, d)``."""
        if self.better_than:
            return (
                f"{_mean(self.worse)} − {_mean(self.better)} > "
                f"{_mean(self.worse_than)} − {_mean(self.better_than)}"
            )
        return f"{_extreme('max', self.better)} < {_extreme('min', self.worse)}"


def _gap(values: Mapping[str, float], better: tuple[str, ...], worse: tuple[str, ...]) -> float:
    """mean(worse) - mean(better)."""
    return sum(values[m] for m in worse) / len(worse) - sum(values[m] for m in better) / len(better)


def _mean(models: tuple[str, ...]) -> str:
    return models[0] if len(models) == 1 else f"mean({', '.join(models)})"


def _extreme(name: str, models: tuple[str, ...]) -> str:
    return models[0] if len(models) == 1 else f"{name}({', '.join(models)})"


_SECOND_ORDER = {
    activation: tuple(f"so_{terms}{activation}" for terms in ("de_", "d_", "e_", ""))
    for activation in ("tanh", "id")
}
_TERMS = ("Dx_t and Eh_t-1", "Dx_t only", "Eh_t-1 only", "neither first-order term")
_ALL_SECOND_ORDER = _SECOND_ORDER["tanh"] + _SECOND_ORDER["id"]

# (paper, table label) -> the orderings it states; the models are the reference rows' models.
ORDERINGS: dict[tuple[str, str], tuple[Ordering, ...]] = {
    ("general_second_order", "Table 1"): (
        *(
            Ordering(
                f"without Eh_t-1 beats with it ({activation})",
                "seed 003 §5: 'models free of the first-order term Eh_t-1 outperformed the rest'",
                better=(f"so_d_{activation}", f"so_{activation}"),
                worse=(f"so_de_{activation}", f"so_e_{activation}"),
            )
            for activation in ("tanh", "id")
        ),
        Ordering(
            "the Eh_t-1 gap is larger with Id than with tanh",
            "seed 003 §5: 'These differences are very small when using the hyperbolic tangent "
            "[...] They become larger when using no activation.'",
            better=("so_d_id", "so_id"),
            worse=("so_de_id", "so_e_id"),
            better_than=("so_d_tanh", "so_tanh"),
            worse_than=("so_de_tanh", "so_e_tanh"),
        ),
        Ordering(
            "every second-order model beats the first-order RNN",
            "seed 003 §5: 'our models outperformed our baseline first-order RNN'",
            better=_ALL_SECOND_ORDER,
            worse=("first_order_rnn",),
        ),
        Ordering(
            "every second-order model beats the general MI-RNN",
            "seed 003 Table 1: the MI-RNN row is above every second-order row",
            better=_ALL_SECOND_ORDER,
            worse=("mi_rnn",),
        ),
        *(
            Ordering(
                f"tanh beats Id ({terms})",
                "seed 003 Table 1: the tanh column is below the Id column in this row; §4.1: Id "
                "'facilitates gradient explosion'",
                better=(tanh,),
                worse=(identity,),
            )
            for terms, tanh, identity in zip(
                _TERMS, _SECOND_ORDER["tanh"], _SECOND_ORDER["id"], strict=True
            )
        ),
        Ordering(
            "the best model has neither first-order term, tanh",
            "seed 003 Table 1: the lowest BPC of the table; §6: the first-order terms 'should be "
            "omitted'",
            better=("so_tanh",),
            worse=tuple(m for m in _ALL_SECOND_ORDER if m != "so_tanh")
            + ("first_order_rnn", "mi_rnn"),
        ),
    ),
}


def orderings_for(paper: str, tables: list[str] | None) -> tuple[Ordering, ...]:
    """The orderings stated by ``paper`` in any of ``tables`` (all its tables when None)."""
    return tuple(
        ordering
        for (name, label), found in ORDERINGS.items()
        if name == paper and (tables is None or label in tables)
        for ordering in found
    )


def check_orderings(
    orderings: tuple[Ordering, ...], table: pd.DataFrame, scales: set[str] = frozenset()
) -> pd.DataFrame:
    """Each ordering on the paper's numbers and on the reproduced means of ``table`` (a
    ``tables.build_table`` result: its ``model``, ``metric``, ``paper``, ``mean`` and
    ``n_seeds`` columns).

    The verdict is ``holds`` / ``fails`` on the reproduced means, ``missing`` when a model has no
    run; from runs of a reduced scale (``scales``, as in ``tables.scaled_verdict``) it names it.
    Raises ValueError for an ordering that names a model without a row, or that does not hold
    on the paper's own numbers (a mistake in ``ORDERINGS``).
    """
    rows = []
    for ordering in orderings:
        models = table[table["metric"] == ordering.metric].set_index("model")
        unknown = sorted(set(ordering.models) - set(models.index))
        if unknown:
            raise ValueError(f"ordering {ordering.name!r}: no table row for model(s) {unknown}")
        paper = ordering.margin(models["paper"].to_dict())
        if paper <= 0:
            raise ValueError(f"ordering {ordering.name!r} does not hold on the paper's numbers")
        ours = models["mean"].to_dict()
        missing = any(math.isnan(ours[m]) for m in ordering.models)
        margin = math.nan if missing else ordering.margin(ours)
        verdict = "missing" if missing else ("holds" if margin > 0 else "fails")
        rows.append(
            {
                "ordering": ordering.name,
                "check": ordering.check(),
                "paper margin": round(paper, 4),
                "reproduced margin": round(margin, 4) + 0.0,  # no "-0"
                "runs per model": int(models.loc[list(ordering.models), "n_seeds"].min()),
                "verdict": scaled_verdict(verdict, set(scales) or {PAPER_SCALE}),
                "source": ordering.source,
            }
        )
    return pd.DataFrame(rows)


def ordering_lines(checked: pd.DataFrame) -> list[str]:
    """Markdown section of ``check_orderings``' result (empty when there is none)."""
    if checked.empty:
        return []
    return [
        "",
        "## Orderings the paper states",
        "",
        "Each is checked on the paper's numbers and on the reproduced means (lower is better). "
        "Margin: by how much it holds (positive) or fails (negative), in the metric's units; "
        "with one run per model it carries that run's seed-to-seed noise. A verdict from "
        "runs of a scale other than paper names the scale.",
        "",
        *markdown_lines(checked),
    ]
