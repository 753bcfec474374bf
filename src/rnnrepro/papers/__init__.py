"""Each paper's tables and figures, declared in one catalogue per paper key (no torch import).

A catalogue (``papers/<key>.py``) lists its ``Output`` s: a table or figure, the runs that feed
it (chosen by experiment, dataset family, model, architecture or hyper-parameter), the per-run
files it reads, the paper numbers it is compared with (``paper_numbers.csv`` labels), the checks
it carries, its labels and its caption. The workflow's targets and its generic report rules
(``workflow/rules/report.smk``) read these declarations; adding a table or figure means adding
an ``Output`` to its paper's catalogue (and its numbers to ``paper_numbers.csv``).
"""

from __future__ import annotations

import importlib
from dataclasses import replace

from rnnrepro.papers.base import MAKERS, Maker, Ordering, Output, Runs

__all__ = ["KEYS", "MAKERS", "Maker", "Ordering", "Output", "Runs"]

KEYS = ("second_order_lstm", "multi_matrix", "memory", "general_second_order", "major_minor")
# The catalogues are imported by name (``catalogue``), which no import statement shows: listed
# here, they are in the code digest of every script that imports this package
# (``rnnrepro.provenance``), so that editing a catalogue reruns the tables it declares.
DIGEST_FILES = (
    "second_order_lstm.py",
    "multi_matrix.py",
    "memory.py",
    "general_second_order.py",
    "major_minor.py",
)


def catalogue(key: str) -> tuple[Output, ...]:
    """The outputs paper ``key`` declares (its module's ``OUTPUTS``)."""
    declared = importlib.import_module(f"rnnrepro.papers.{key}").OUTPUTS
    for output in declared:
        if output.maker not in MAKERS:
            raise ValueError(f"{key}: output {output.name!r} has unknown maker {output.maker!r}")
    return tuple(replace(output, paper=key) for output in declared)


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


def targets(config: dict, group: str | None = None) -> list[str]:
    """The files of every output (of one paper key or group) that the config makes: all but an
    ``optional`` output without runs."""
    chosen = []
    for output in outputs().values():
        if group is not None and group != output.paper and group not in output.groups:
            continue
        if output.optional and not output.select(config):
            continue
        chosen.append(output.path)
    return chosen


def groups() -> list[str]:
    """Every target group: the paper keys, then the groups outputs name."""
    named = [g for output in outputs().values() for g in output.groups]
    return list(dict.fromkeys([*KEYS, *named]))
