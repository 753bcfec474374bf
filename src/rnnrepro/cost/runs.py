"""One training job's cost (``RunCost``) and every job's of a config (``estimate``): its epochs
from finished runs or its procedure, its seconds per epoch from a measured table, the Dyck token
model or, for translation runs, counted FLOPs (the model: ``rnnrepro.cost``)."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, replace
from pathlib import Path

from rnnrepro import budget
from rnnrepro import config as cfg
from rnnrepro.config_check import check_config

from . import translation as tc
from .dyck import VAL_BATCH_SIZE, VAL_COST, mean_length, padded_tokens
from .measured import CostError, Throughput, benchmark_size, epoch_key
from .translation import FlopRate

DEFAULT_EXPECTED_FRACTION = 0.25  # of max_epochs, for runs with no finished run to go by


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
    # a procedure with eval_every writes a row per validation: the epochs are the last row's,
    # an epoch's seconds the sum of its rows'
    epochs = int(rows[-1]["epoch"])
    seconds = math.fsum(float(r["seconds"]) for r in rows if r.get("seconds"))
    timed = any(r.get("seconds") for r in rows)
    return History(epochs, seconds / epochs if timed and epochs else None)


@dataclass(frozen=True)
class RunCost:
    """Estimated cost of one training job."""

    run: cfg.Run
    architecture: str
    max_epochs: int
    expected_epochs: float
    epochs_basis: str  # "history", "same model" or "fraction"
    # the Dyck token model's runs (NaN for the others)
    train_tokens: float = math.nan  # per epoch, targets only
    computed_tokens: float = math.nan  # per epoch: training + padding + VAL_COST × validation
    tokens_per_s: float = math.nan
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
    settings: dict | None = None,
) -> RunCost:
    """Cost of one run given its expected number of epochs (text runs need ``epoch_times``,
    translation runs a measured epoch there or ``flop_rate``); ``settings``: the run's resolved
    ones (``cfg.run_config``), when the caller has them."""
    settings = settings or resolve(config, run)
    if cfg.family(run.dataset) in cfg.TRANSLATION_FAMILIES:
        return translation_run_cost(
            config,
            run,
            expected_epochs,
            basis,
            measured_seconds,
            epoch_times or {},
            flop_rate,
            settings,
        )
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
    settings: dict | None = None,
) -> RunCost:
    """A translation run's cost from its counted FLOPs: at the rate of a measured translation
    epoch on the device (its own, else another translation model's of its experiment), else
    at ``flop_rate``; CostError without either."""
    settings = settings or resolve(config, run)
    flops = tc.run_flops(config, run, settings)
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
        architecture=settings["architecture"],
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
    check_config(config)
    epoch_times = epoch_times or {}
    all_runs = cfg.jobs(config)
    done = {r: read_history(runs_dir, r) for r in all_runs} if runs_dir else {}
    out = []
    for run in all_runs:
        own = done.get(run)
        siblings = [h.epochs for r, h in done.items() if h and model_key(r) == model_key(run)]
        settings = resolve(config, run)
        training = settings["training"]
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
                run_cost(
                    config,
                    run,
                    throughput,
                    epochs,
                    basis,
                    measured,
                    epoch_times,
                    flop_rate,
                    settings,
                )
            )
        except CostError:
            if cfg.family(run.dataset) == "dyck":
                raise
            # a text run with no measured epoch, nor one to scale: left out (callers say so)
    return out


def resolve(config: dict, run: cfg.Run) -> dict:
    """The run's settings at the config's scale (its stage's, its search trial's)."""
    return cfg.run_config(config, run.experiment, run.dataset, run.model, run.stage, run.trial)


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
    """Whether a procedure is expected to run ``max_epochs``: no patience, loss target or
    fine-tuning stops short of it, or it stops only on rises of the validation loss in a row
    (``stop_on: increase``), which no run has done before its budget
    (studies/dyck_readings/README.md)."""
    return (
        training["early_stopping_patience"] >= training["max_epochs"]
        or training.get("stop_on") == "increase"
    ) and (training.get("stop_loss") is None and not training.get("average_from_start"))


def paper_sized_dyck(config: dict) -> bool:
    """Whether the config's scale generates the paper scale's Dyck data."""
    paper = cfg.scale_settings({**config, "scale": "paper"})["dyck"]
    return cfg.scale_settings(config)["dyck"] == paper


def paper_sized_translation(config: dict) -> bool:
    """Whether the config's scale trains the paper scale's translation runs (corpus, sizes)."""
    paper = {**config, "scale": "paper"}
    return cfg.translation_settings(config) == cfg.translation_settings(paper)
