"""Cost summaries: jobs and hours per experiment, per catalogue group, and what the
translation runs add."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

from . import translation as tc
from .runs import RunCost


@dataclass(frozen=True)
class Summary:
    """Jobs and hours of one experiment (or ``total``)."""

    experiment: str
    jobs: int
    expected_hours: float
    upper_hours: float


def group_shares(config: dict, costs: Iterable[RunCost]) -> list[Summary]:
    """One row per catalogue group that is no paper key (e.g. a paper's studies): the jobs of
    the runs that only that group's outputs read (what the group adds to the papers' tables)."""
    from rnnrepro import papers  # the catalogues: light, but not needed by the cost model

    costs = list(costs)
    selected = [(o.groups, set(o.select(config))) for o in papers.outputs().values()]
    rows = []
    for group in papers.groups():
        if group in papers.KEYS:
            continue
        inside = set().union(*(runs for groups, runs in selected if group in groups))
        outside = set().union(*(runs for groups, runs in selected if group not in groups))
        own = inside - outside
        chosen = [c for c in costs if replace(c.run, stage="train", trial=None) in own]
        rows.append(
            Summary(
                group,
                len(chosen),
                math.fsum(c.expected_hours for c in chosen),
                math.fsum(c.upper_hours for c in chosen),
            )
        )
    return rows


def summarise(costs: Iterable[RunCost]) -> list[Summary]:
    """One row per experiment (config order) and a final ``total`` row."""
    costs = list(costs)
    groups: dict[str, list[RunCost]] = {}
    for c in costs:
        groups.setdefault(c.run.experiment, []).append(c)
    groups["total"] = costs
    return [
        Summary(
            name,
            len(group),
            math.fsum(c.expected_hours for c in group),
            math.fsum(c.upper_hours for c in group),
        )
        for name, group in groups.items()
    ]


@dataclass(frozen=True)
class TranslationSummary:
    """The translation runs among some costs: jobs, counted FLOPs and hours."""

    jobs: int
    flops: float  # every part of every run (rnnrepro.cost.translation.TranslationFlops.total)
    hours: float  # at the runs' own rates (they never stop early: expected = upper bound)
    rates: list[str]  # each rate used, formatted with its basis
    step_flops: tuple[float, float]  # the smallest and largest training step
    steps: list[int]

    @property
    def assumed_gpu_hours(self) -> float:
        """The hours at ``tc.ASSUMED_GPU``'s rate."""
        return self.flops / tc.ASSUMED_GPU.flops_per_s / 3600


def translation_summary(costs: Iterable[RunCost]) -> TranslationSummary | None:
    """What the translation runs among ``costs`` add (None without any)."""
    mine = [c for c in costs if c.flops is not None]
    if not mine:
        return None
    steps = sorted(c.flops.step for c in mine)
    return TranslationSummary(
        jobs=len(mine),
        flops=math.fsum(c.flops.total for c in mine),
        hours=math.fsum(c.upper_hours for c in mine),
        rates=sorted({tc.format_rate(c.flop_rate) for c in mine}),
        step_flops=(steps[0], steps[-1]),
        steps=sorted({c.flops.steps for c in mine}),
    )


def translation_lines(costs: Iterable[RunCost], on_gpu: bool = False) -> list[str]:
    """``translation_summary`` in words: jobs, counted FLOPs, hours at their rate and, where
    that rate is no GPU's (``on_gpu``: the costs are a GPU's), GPU-hours at the assumed one."""
    costs = list(costs)
    summary = translation_summary(costs)
    if summary is None:
        return []
    step = " to ".join(dict.fromkeys(tc.format_flops(f) for f in summary.step_flops))
    lines = [
        f"translation: {summary.jobs} job(s), {tc.format_flops(summary.flops)} counted "
        f"(training steps of {step} × {', '.join(f'{n:,}' for n in summary.steps)}, "
        f"validations, test perplexities, beam search); {tc.format_hours(summary.hours)} "
        "device-hours at " + "; ".join(summary.rates)
    ]
    if not on_gpu and any(c.flop_rate != tc.ASSUMED_GPU for c in costs if c.flops is not None):
        gpu = tc.format_hours(summary.assumed_gpu_hours)
        lines.append(f"  on a GPU: {gpu} GPU-hours at {tc.format_rate(tc.ASSUMED_GPU)}")
    return lines


@dataclass(frozen=True)
class PaperCost:
    """One paper's training jobs at paper scale and their expected device-hours: all of them,
    those already done (``done``: archived at the papers' settings with today's settings) and
    those still to do; ``unpriced``: jobs the cost model has no measurement for (left out)."""

    paper: str
    jobs: int
    hours: float
    done_jobs: int
    done_hours: float
    unpriced: int

    @property
    def todo_jobs(self) -> int:
        return self.jobs - self.done_jobs

    @property
    def todo_hours(self) -> float:
        return self.hours - self.done_hours


def paper_costs(jobs: Iterable, costs: Iterable[RunCost], done: set) -> list[PaperCost]:
    """Per experiment of ``jobs`` (``rnnrepro.config.jobs`` at paper scale, in order): its jobs
    and expected hours (``costs``: ``estimate``'s, a job without one counted as unpriced), and
    the part of both in ``done`` (runs)."""
    priced = {c.run: c.expected_hours for c in costs}
    rows: dict[str, list] = {}
    for run in jobs:
        rows.setdefault(run.experiment, []).append(run)
    out = []
    for paper, runs in rows.items():
        hours = [priced.get(run, math.nan) for run in runs]
        finished = [h for run, h in zip(runs, hours, strict=True) if run in done]
        out.append(
            PaperCost(
                paper,
                len(runs),
                math.fsum(h for h in hours if not math.isnan(h)),
                len(finished),
                math.fsum(h for h in finished if not math.isnan(h)),
                sum(math.isnan(h) for h in hours),
            )
        )
    return out
