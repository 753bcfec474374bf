"""Cost before launch: training jobs and device-hours of a scale, from a throughput table.

Model of one run's cost (kept free of torch imports):

- tokens per epoch: training sequences × (mean length + 1 for ``<end>``); the mean comes from
  the exact length distribution of the Dyck sampler for the scale's min/max length;
- computed tokens include the padding of each batch to its longest sequence (expected maximum
  of ``batch_size`` lengths); validation batches of ``VAL_BATCH_SIZE`` run forward only and
  count at ``VAL_COST`` of a training token;
- seconds per epoch = computed tokens / tokens_per_s of the architecture's benchmark row;
- text runs (PTB): seconds per epoch measured at paper size on real data by
  ``benchmarks/epoch_times.py`` (``benchmarks/results/epoch_times.csv``); a run without one
  takes the measured epoch of its experiment's model on the same dataset family with the same
  architecture and batch size and the nearest parameter count, scaled by the ratio of the
  counts (``scaled_epoch``: e.g. a study's variant of a main model); runs with neither are left
  out (``estimate`` says how many);
- Dyck runs at paper size: the epoch time of the finished paper-scale runs in that CSV when it
  has their (experiment, dataset, model), else the token model above;
- epochs: ``max_epochs`` of the run's training procedure (upper bound) and an expected figure:
  the run's own ``history.csv`` when it has finished, else the mean over finished runs of the
  same experiment, model and stage on the same dataset family, else ``max_epochs`` for a
  procedure that never stops early (AWD-LSTM/MoS: the best of all epochs is kept), else
  ``expected_fraction`` × ``max_epochs``;
- every training stage (fine-tuning too) is a job, costed with its own procedure;
- translation runs (``rnnrepro.translation_cost``): a measured epoch of the run in that CSV, or
  one of another translation model of its experiment scaled by their counted FLOPs, else their
  counted FLOPs ÷ a sustained FLOP rate (``FlopRate``: derived on the CPU from its measured
  language models, assumed on a GPU); no rate, no estimate (left out). Their hours include the
  jobs after training (test perplexities and beam search), which the other runs' do not.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from . import budget
from . import config as cfg
from . import translation_cost as tc
from .translation_cost import FlopRate

VAL_BATCH_SIZE = 64  # rnnrepro.evaluation.dyck.evaluate_dyck's default batch size
VAL_COST = 1 / 3  # a forward-only token costs about a third of a forward + backward one
DEFAULT_EXPECTED_FRACTION = 0.25  # of max_epochs, for runs with no finished run to go by


class CostError(ValueError):
    """The cost cannot be estimated (e.g. no throughput for an architecture)."""


@cache
def length_distribution(m: int, min_len: int, max_len: int) -> tuple[tuple[int, float], ...]:
    """Exact ``(length, probability)`` pairs of the m-bounded Dyck sampler (any k).

    Follows the depth of the stack: the bracket types do not change the length. Mass passing
    ``max_len`` is discarded and the rest renormalised, as the sampler's rejection does.
    """
    if m < 1 or min_len < 0 or min_len + min_len % 2 > max_len:
        raise ValueError(f"no Dyck lengths for m={m}, lengths {min_len}-{max_len}")
    mass = [1.0] + [0.0] * m  # probability of depth d after n tokens, not yet ended
    ended: list[tuple[int, float]] = []
    for n in range(max_len + 1):
        can_end = n >= min_len
        if can_end and mass[0] > 0:
            ended.append((n, mass[0] * 0.5))
        new = [0.0] * (m + 1)
        for depth, p in enumerate(mass):
            if depth == 0:
                new[1] += p * (0.5 if can_end else 1.0)
            elif depth == m:
                new[depth - 1] += p
            else:
                new[depth + 1] += p * 0.5
                new[depth - 1] += p * 0.5
        mass = new
    total = math.fsum(p for _, p in ended)
    return tuple((n, p / total) for n, p in ended)


def mean_length(m: int, min_len: int, max_len: int) -> float:
    """Expected number of bracket tokens of a sampled sequence."""
    return math.fsum(n * p for n, p in length_distribution(m, min_len, max_len))


def expected_max_length(m: int, min_len: int, max_len: int, draws: int) -> float:
    """Expected longest of ``draws`` independent sequences (the padded batch length)."""
    out, cdf, previous = 0.0, 0.0, 0.0
    for n, p in length_distribution(m, min_len, max_len):
        cdf += p
        current = min(cdf, 1.0) ** draws
        out += n * (current - previous)
        previous = current
    return out


def padded_tokens(sequences: int, batch_size: int, m: int, min_len: int, max_len: int) -> float:
    """Expected positions computed in one pass over ``sequences`` (targets + padding)."""
    full, rest = divmod(sequences, batch_size)
    out = full * batch_size * (expected_max_length(m, min_len, max_len, batch_size) + 1)
    if rest:
        out += rest * (expected_max_length(m, min_len, max_len, rest) + 1)
    return out


@dataclass(frozen=True)
class Throughput:
    """Training tokens/s by (benchmark size, model) and the device they were measured on."""

    tokens_per_s: dict[tuple[str, str], float]
    device: str
    source: str

    def lookup(self, size: str, architecture: str) -> float:
        try:
            return self.tokens_per_s[(size, architecture)]
        except KeyError:
            known = sorted(model for s, model in self.tokens_per_s if s == size)
            raise CostError(
                f"no throughput for architecture {architecture!r} at benchmark size {size!r} in "
                f"{self.source} (rows at that size: {', '.join(known) or 'none'}); rerun "
                f"benchmarks/bench_cells.py"
            ) from None


def read_throughput(
    path: str | Path, device: str | None = None, default_device: str = "unknown device"
) -> Throughput:
    """Read a bench_cells.py CSV; the device is ``device``, the CSV's ``device`` column or
    ``default_device``, in that order."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    missing = {"size", "model", "tokens_per_s"} - set(rows[0] if rows else {})
    if missing:
        raise CostError(f"{path}: missing column(s) {', '.join(sorted(missing))}")
    try:
        table = {(r["size"], r["model"]): float(r["tokens_per_s"]) for r in rows}
    except (TypeError, ValueError):
        raise CostError(f"{path}: a tokens_per_s value is missing or not a number") from None
    devices = sorted({r["device"] for r in rows if r.get("device")})
    label = device or ", ".join(devices) or default_device
    return Throughput(table, label, str(path))


def benchmark_size(dataset: str) -> str:
    """The bench_cells.py size whose models match a dataset's."""
    if cfg.family(dataset) == "dyck":
        return "dyck"
    raise CostError(f"no benchmark size for dataset {dataset!r}")


@dataclass(frozen=True)
class History:
    """What a finished run's history.csv says about its cost."""

    epochs: int
    seconds_per_epoch: float | None  # measured on the machine that trained it


def read_history(runs_dir: str | Path, run: cfg.Run) -> History | None:
    """The history of a finished run, ``None`` if it has not finished."""
    path = Path(runs_dir, run.path, "history.csv")
    if not path.is_file():
        return None
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return None
    seconds = [float(r["seconds"]) for r in rows if r.get("seconds")]
    return History(len(rows), math.fsum(seconds) / len(seconds) if seconds else None)


@dataclass(frozen=True)
class RunCost:
    """Estimated cost of one training job."""

    run: cfg.Run
    architecture: str
    train_tokens: float  # per epoch, targets only
    computed_tokens: float  # per epoch: training + padding + VAL_COST × validation
    tokens_per_s: float
    max_epochs: int
    expected_epochs: float
    epochs_basis: str  # "history", "same model" or "fraction"
    measured_seconds_per_epoch: float | None = None  # from the run's history.csv, if finished
    epoch_seconds: float | None = None  # text runs: benchmarks/epoch_times.py's measurement
    epoch_proxy: str | None = None  # the measured model whose epoch was scaled to this run's
    flops: tc.TranslationFlops | None = None  # translation runs: their counted arithmetic
    flop_rate: FlopRate | None = None  # translation runs: the FLOP/s their seconds come from
    evaluation_seconds: float = 0.0  # translation runs: the jobs after training

    @property
    def seconds_per_epoch(self) -> float:
        if self.epoch_seconds is not None:
            return self.epoch_seconds
        return self.computed_tokens / self.tokens_per_s

    @property
    def upper_hours(self) -> float:
        return (self.max_epochs * self.seconds_per_epoch + self.evaluation_seconds) / 3600

    @property
    def expected_hours(self) -> float:
        return (self.expected_epochs * self.seconds_per_epoch + self.evaluation_seconds) / 3600


def run_cost(
    config: dict,
    run: cfg.Run,
    throughput: Throughput,
    expected_epochs: float,
    basis: str,
    measured_seconds: float | None = None,
    epoch_times: dict[tuple[str, str, str], float] | None = None,
    flop_rate: FlopRate | None = None,
) -> RunCost:
    """Cost of one run given its expected number of epochs (text runs need ``epoch_times``,
    translation runs a measured epoch there or ``flop_rate``)."""
    if cfg.family(run.dataset) in cfg.TRANSLATION_FAMILIES:
        return translation_run_cost(
            config, run, expected_epochs, basis, measured_seconds, epoch_times or {}, flop_rate
        )
    settings = cfg.run_config(config, run.experiment, run.dataset, run.model, run.stage)
    max_epochs = settings["training"]["max_epochs"]
    measured_epoch = (epoch_times or {}).get(epoch_key(run.experiment, run.dataset, run.model))
    proxy = None
    if "dyck" in settings and not paper_sized_dyck(config):
        measured_epoch = None  # the measured Dyck epochs are paper-scale ones
    elif "dyck" not in settings and measured_epoch is None:
        measured_epoch, proxy = scaled_epoch(config, run, epoch_times or {}) or (None, None)
    if "dyck" not in settings or measured_epoch is not None:
        if measured_epoch is None:
            raise CostError(f"no measured epoch time for {run.path}")
        return RunCost(
            run=run,
            architecture=settings["architecture"],
            train_tokens=math.nan,
            computed_tokens=math.nan,
            tokens_per_s=math.nan,
            max_epochs=max_epochs,
            expected_epochs=min(expected_epochs, max_epochs),
            epochs_basis=basis,
            measured_seconds_per_epoch=measured_seconds,
            epoch_seconds=measured_epoch,
            epoch_proxy=proxy,
        )
    dyck = cfg.scale_settings(config)["dyck"]
    m, lo, hi = settings["dyck"]["m"], dyck["min_length"], dyck["max_length"]
    n_train, n_val = dyck["sizes"]["train"], dyck["sizes"]["val"]
    batch = settings["training"]["batch_size"]
    computed = padded_tokens(n_train, batch, m, lo, hi)
    computed += VAL_COST * padded_tokens(n_val, VAL_BATCH_SIZE, m, lo, hi)
    return RunCost(
        run=run,
        architecture=settings["architecture"],
        train_tokens=n_train * (mean_length(m, lo, hi) + 1),
        computed_tokens=computed,
        tokens_per_s=throughput.lookup(benchmark_size(run.dataset), settings["architecture"]),
        max_epochs=max_epochs,
        expected_epochs=min(expected_epochs, max_epochs),
        epochs_basis=basis,
        measured_seconds_per_epoch=measured_seconds,
    )


def translation_run_cost(
    config: dict,
    run: cfg.Run,
    expected_epochs: float,
    basis: str,
    measured_seconds: float | None,
    epoch_times: dict[tuple[str, str, str], float],
    flop_rate: FlopRate | None,
) -> RunCost:
    """A translation run's cost from its counted FLOPs: at the rate of a measured translation
    epoch on the device (its own, else another translation model's of its experiment), else
    at ``flop_rate``; CostError without either."""
    flops = tc.run_flops(config, run)
    rate, proxy = flop_rate, None
    family = cfg.family(run.dataset)
    measured = sorted(
        (model != run.model, model, seconds)
        for (experiment, fam, model), seconds in epoch_times.items()
        if (experiment, fam) == (run.experiment, family)
        and model in config["experiments"][run.experiment]["models"]
    )
    if measured and paper_sized_translation(config):  # the measured epochs are paper-scale
        _, model, seconds = measured[0]
        other = tc.run_flops(config, replace(run, model=model, stage="train"))
        rate = FlopRate(
            other.epoch / seconds,
            f"measured: {model}'s epoch of {seconds:,.0f} s",
        )
        proxy = None if model == run.model else model
    if rate is None:
        raise CostError(f"no measured epoch time nor FLOP rate for {run.path}")
    return RunCost(
        run=run,
        architecture=cfg.architecture(config, run.experiment, run.model),
        train_tokens=math.nan,
        computed_tokens=math.nan,
        tokens_per_s=math.nan,
        max_epochs=flops.epochs,
        expected_epochs=min(expected_epochs, flops.epochs),
        epochs_basis=basis,
        measured_seconds_per_epoch=measured_seconds,
        epoch_seconds=flops.epoch / rate.flops_per_s,
        epoch_proxy=proxy,
        flops=flops,
        flop_rate=rate,
        evaluation_seconds=flops.evaluation / rate.flops_per_s,
    )


def estimate(
    config: dict,
    throughput: Throughput,
    runs_dir: str | Path | None = None,
    expected_fraction: float = DEFAULT_EXPECTED_FRACTION,
    epoch_times: dict[tuple[str, str, str], float] | None = None,
    flop_rate: FlopRate | None = None,
) -> list[RunCost]:
    """Cost of every run of the config's scale; ``runs_dir`` holds finished runs (epochs).

    Text runs are included when ``epoch_times`` has their (experiment, family, model), or one
    that ``scaled_epoch`` can scale to theirs; translation runs when it has a translation
    model's epoch or ``flop_rate`` is given.
    """
    cfg.check(config)
    epoch_times = epoch_times or {}
    all_runs = cfg.jobs(config)
    done = {r: read_history(runs_dir, r) for r in all_runs} if runs_dir else {}
    out = []
    for run in all_runs:
        own = done.get(run)
        siblings = [h.epochs for r, h in done.items() if h and model_key(r) == model_key(run)]
        training = cfg.run_config(
            config, run.experiment, run.dataset, run.model, run.stage, run.trial
        )["training"]
        if own:
            epochs, basis = float(own.epochs), "history"
        elif siblings:
            epochs, basis = sum(siblings) / len(siblings), "same model"
        elif never_stops_early(training):
            epochs, basis = float(training["max_epochs"]), "no early stopping"
        else:
            epochs, basis = expected_fraction * training["max_epochs"], "fraction"
        measured = own.seconds_per_epoch if own else None
        try:
            out.append(
                run_cost(config, run, throughput, epochs, basis, measured, epoch_times, flop_rate)
            )
        except CostError:
            if cfg.family(run.dataset) == "dyck":
                raise
            # a text run with no measured epoch, nor one to scale: left out (callers say so)
    return out


def run_size(config: dict, experiment: str, dataset: str, model: str) -> tuple[str, int, int]:
    """A run's architecture, training batch size and parameter count at the config's scale: what
    ``scaled_epoch`` scales by (ValueError where ``budget.parameter_count`` has no formula for
    the architecture)."""
    settings = cfg.run_config(config, experiment, dataset, model)
    architecture = settings["architecture"]
    vocab = cfg.TEXT_FAMILIES[cfg.family(dataset)]["vocab_size"]
    count = budget.parameter_count(architecture, vocab, settings["hparams"])
    return architecture, settings["training"]["batch_size"], count


def scaled_epoch(
    config: dict, run: cfg.Run, epoch_times: dict[tuple[str, str, str], float]
) -> tuple[float, str] | None:
    """An unmeasured text run's epoch seconds, from the measured model of its experiment on the
    same dataset family with the same architecture and batch size and the nearest parameter
    count, times the ratio of the counts; and that model's name (None without one)."""
    experiment, family = run.experiment, cfg.family(run.dataset)
    try:
        own = run_size(config, experiment, run.dataset, run.model)
    except ValueError:
        return None
    candidates = []
    models = config["experiments"][experiment]["models"]
    for (exp, fam, model), seconds in epoch_times.items():
        if (exp, fam) != (experiment, family) or model not in models:
            continue
        if family not in cfg.model_families(config["experiments"][exp], models[model]):
            continue
        try:
            architecture, batch, count = run_size(config, exp, run.dataset, model)
        except ValueError:
            continue
        if (architecture, batch) == own[:2]:
            candidates.append((abs(math.log(own[2] / count)), model, seconds * own[2] / count))
    if not candidates:
        return None
    _, model, seconds = min(candidates)
    return seconds, model


def model_key(run: cfg.Run) -> tuple[str, str, str, str]:
    """Finished runs with ``run``'s key tell how long it trains: the same experiment, model and
    stage on the same family of data (a Dyck run's epochs say nothing of PTB's)."""
    return run.experiment, run.model, run.stage, cfg.family(run.dataset)


def never_stops_early(training: dict) -> bool:
    """Whether a procedure always runs ``max_epochs`` (no patience, loss target or fine-tuning
    stop short of it)."""
    return (
        training["early_stopping_patience"] >= training["max_epochs"]
        and training.get("stop_loss") is None
        and not training.get("average_from_start")
    )


def epoch_key(experiment: str, dataset: str, model: str) -> tuple[str, str, str]:
    """The key of a run's measured epoch: text datasets by family (folds and cutoffs cost about
    the same), Dyck datasets by name (the cost grows with m)."""
    family = cfg.family(dataset)
    return experiment, dataset if family == "dyck" else family, model


def paper_sized_dyck(config: dict) -> bool:
    """Whether the config's scale generates the paper scale's Dyck data."""
    paper = cfg.scale_settings({**config, "scale": "paper"})["dyck"]
    return cfg.scale_settings(config)["dyck"] == paper


def paper_sized_translation(config: dict) -> bool:
    """Whether the config's scale trains the paper scale's translation runs (corpus, sizes)."""
    paper = {**config, "scale": "paper"}
    return cfg.translation_settings(config) == cfg.translation_settings(paper)


def read_epoch_times(path: str | Path) -> dict[tuple[str, str, str], float]:
    """``epoch_key`` -> seconds per paper-scale epoch, from the CSV of
    ``benchmarks/epoch_times.py``."""
    with open(path, newline="") as f:
        return {
            epoch_key(r["experiment"], r["dataset"], r["model"]): float(r["epoch_seconds"])
            for r in csv.DictReader(f)
        }


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
    flops: float  # every part of every run (rnnrepro.translation_cost.TranslationFlops.total)
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
