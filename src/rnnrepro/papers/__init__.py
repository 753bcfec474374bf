"""Each paper's tables and figures, declared in one catalogue per paper key (no torch import).

A catalogue (``papers/<key>.py``) lists its ``Output`` s: a table or figure, the runs that feed
it (chosen by experiment, dataset family, model, architecture or hyper-parameter), the per-run
files it reads, the paper numbers it is compared with (``paper_numbers.csv`` labels), the checks
it carries, its labels and its caption; and the paper's headline claims (``CLAIMS``), each
tested by orderings of its tables or by an output of its own. The workflow's targets and its
generic report rules (``workflow/rules/report.smk``, through ``rnnrepro.makers``) read these
declarations; adding a
table or figure means adding an ``Output`` to its paper's catalogue (and its numbers to
``paper_numbers.csv``).
"""

from __future__ import annotations

from dataclasses import replace
from types import ModuleType

from rnnrepro.papers.base import Claim, Ordering, Output, Runs

# the catalogues, imported as any module is (so that each is in the code digest of every
# script that imports this package: editing one reruns the tables it declares)
from rnnrepro.papers import (  # noqa: E402  isort: skip
    second_order_lstm,
    multi_matrix,
    memory,
    general_second_order,
    major_minor,
)

__all__ = ["KEYS", "Claim", "Ordering", "Output", "Runs"]

# paper key -> its catalogue, in the order the papers are listed
CATALOGUES: dict[str, ModuleType] = {
    module.__name__.rpartition(".")[2]: module
    for module in (second_order_lstm, multi_matrix, memory, general_second_order, major_minor)
}
KEYS = tuple(CATALOGUES)


def catalogue(key: str) -> tuple[Output, ...]:
    """The outputs paper ``key`` declares (its module's ``OUTPUTS``)."""
    return tuple(replace(output, paper=key) for output in CATALOGUES[key].OUTPUTS)


def outputs() -> dict[str, Output]:
    """Every declared output by name, paper by paper."""
    found: dict[str, Output] = {}
    for key in KEYS:
        for output in catalogue(key):
            if found.setdefault(output.name, output) is not output:
                raise ValueError(f"output {output.name!r} is declared twice")
    return found


def orderings(paper: str, labels: list[str] | None) -> tuple[Ordering, ...]:
    """The orderings ``paper`` states about its tables with any of ``labels`` (all if None)."""
    return tuple(
        ordering
        for output in catalogue(paper)
        if labels is None or set(output.labels) & set(labels)
        for ordering in output.orderings
    )


def claims(key: str) -> tuple[Claim, ...]:
    """The headline claims paper ``key`` declares (its module's ``CLAIMS``)."""
    return CATALOGUES[key].CLAIMS


def groups() -> list[str]:
    """Every target group: the paper keys, then the groups outputs name."""
    named = [g for output in outputs().values() for g in output.groups]
    return list(dict.fromkeys([*KEYS, *named]))
