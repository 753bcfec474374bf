"""What a paper catalogue declares: its outputs, the runs they read, the maker of each (a key of
``rnnrepro.makers.MAKERS``), and the orderings a paper states (no torch or pandas import: the
workflow reads them to plan)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from rnnrepro import config as cfg


@dataclass(frozen=True)
class Runs:
    """The runs an output reads: an experiment's runs on datasets of ``families`` (all of its
    families when empty), of the ``models`` named (all when empty), of an ``architecture``,
    whose resolved hyper-parameters hold every item of ``hparams``, whose parameter budget sets
    ``budget_key``; ``first_seed`` keeps the experiment's first seed only; ``searched=False``
    only models without a random search. One run per seed: a
    searched model's trials count as the run they search for."""

    experiment: str
    families: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    architecture: str | None = None
    hparams: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))
    budget_key: str | None = None
    first_seed: bool = False
    searched: bool | None = None

    def select(self, config: dict) -> list[cfg.Run]:
        runs = []
        for run in cfg.runs(config, self.experiment):
            if self.families and cfg.family(run.dataset) not in self.families:
                continue
            if self.models and run.model not in self.models:
                continue
            if self.first_seed and run.seed != cfg.seeds(config, run.experiment)[0]:
                continue
            trials = cfg.search_trials(config, run.experiment, run.model)
            if self.searched is not None and self.searched != (trials != [None]):
                continue
            if self.architecture or self.hparams or self.budget_key:
                settings = cfg.run_config(config, run.experiment, run.dataset, run.model)
                if self.architecture and settings["architecture"] != self.architecture:
                    continue
                if any(settings["hparams"].get(k) != v for k, v in self.hparams.items()):
                    continue
                if self.budget_key and self.budget_key not in settings.get("budget", {}):
                    continue
            runs.append(replace(run, trial=None))
        return list(dict.fromkeys(runs))


@dataclass(frozen=True)
class Output:
    """One table or figure of a paper.

    ``name``: its file stem (results/tables/<name>.md, results/figures/<name>.png); ``maker``: a
    key of ``rnnrepro.makers.MAKERS``, and for a figure its ``kind``
    (``reporting.figures.FIGURES``); ``runs``: a ``Runs`` or a function of the config giving the
    runs; ``files``: the per-run files read; ``track``: whose scale reductions its notes state
    (``dyck``, ``text`` or ``translation``); ``labels``: its ``paper_numbers.csv`` table labels;
    ``families``: only the reference rows of these dataset families (as the selected scale
    expands them); ``stages``: every stage of each run and its dynamic evaluation; ``corpus``:
    the corpus whose downloaded files its title checks against the published ones;
    ``orderings``: the orderings the paper states about it; ``model_labels``: model -> legend
    label; ``optional``: a target only when it has runs; ``groups``: further targets it belongs
    to (e.g. the ``dyck`` track); ``notes``: lines under a table's title (e.g. how our corpus
    differs from the paper's); ``setting_notes``: lines under its title chosen by what its runs
    resolved: a dotted setting of the run config (``translation.corpus``) -> each value -> its
    line, stated for every value the runs read (a compare table reads them from its files, a
    configuration table from config.yaml at the selected scale); ``bpc_in_nats``: its BPC rows
    are also read as nats per character, each reading with its verdict (a paper whose "BPC" may
    be either).
    """

    name: str
    title: str
    caption: str
    maker: str
    runs: Runs | Callable[[dict], list[cfg.Run]] | None = None
    files: tuple[str, ...] = ()
    kind: str | None = None
    track: str = "text"
    labels: tuple[str, ...] = ()
    families: tuple[str, ...] | None = None
    stages: bool = False
    corpus: str | None = None
    orderings: tuple[Ordering, ...] = ()
    model_labels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    optional: bool = False
    groups: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    setting_notes: Mapping[str, Mapping[str, str]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    bpc_in_nats: bool = False
    paper: str = ""  # set by ``papers.catalogue``: the key of the catalogue declaring it

    def __post_init__(self) -> None:
        # captions are written as docstrings are: indented lines, paragraphs apart
        object.__setattr__(self, "caption", inspect.cleandoc(self.caption))

    def select(self, config: dict) -> list[cfg.Run]:
        """The runs it reads at the config's scale."""
        if self.runs is None:
            return []
        return self.runs.select(config) if isinstance(self.runs, Runs) else self.runs(config)


@dataclass(frozen=True)
class Ordering:
    """Every model of ``better`` has a lower ``metric`` than every model of ``worse`` (a higher
    one with ``higher_is_better``, e.g. BLEU).

    With ``better_than`` / ``worse_than`` (a second pair of groups) it is instead a claim on
    gaps: ``mean(worse) - mean(better)`` exceeds ``mean(worse_than) - mean(better_than)`` (each
    gap the other way round with ``higher_is_better``).

    The rows compared are the table's rows of ``metric``; of ``dataset`` only, when it is set (a
    table of several datasets names one in each ordering; an ordering is not checked on a table
    without rows of its dataset); at ``stage`` (``train``: the trained model, the default;
    ``finetune``, ``dynamic_eval``; the check names it when it is set). ``better_stage`` /
    ``worse_stage``, when set, are instead the stage of the better side (``better`` and
    ``better_than``) / the worse side (``worse`` and ``worse_than``), so that a model is compared
    with itself at another stage (fine-tuning helps: ``better_stage="finetune",
    worse_stage="train"``).
    """

    name: str
    source: str
    better: tuple[str, ...]
    worse: tuple[str, ...]
    better_than: tuple[str, ...] = ()
    worse_than: tuple[str, ...] = ()
    metric: str = "test_bpc"
    dataset: str | None = None
    stage: str | None = None
    better_stage: str | None = None
    worse_stage: str | None = None
    higher_is_better: bool = False

    @property
    def models(self) -> tuple[str, ...]:
        return self.better + self.worse + self.better_than + self.worse_than

    @property
    def groups(self) -> tuple[tuple[tuple[str, str], ...], ...]:
        """``better``, ``worse``, ``better_than``, ``worse_than`` as (model, stage) rows."""
        stage = self.stage or "train"
        better, worse = self.better_stage or stage, self.worse_stage or stage
        return tuple(
            tuple((model, stage) for model in group)
            for group, stage in (
                (self.better, better),
                (self.worse, worse),
                (self.better_than, better),
                (self.worse_than, worse),
            )
        )

    @property
    def rows(self) -> tuple[tuple[str, str], ...]:
        """The (model, stage) rows it compares, each once."""
        return tuple(dict.fromkeys(row for group in self.groups for row in group))

    @property
    def crosses_stages(self) -> bool:
        return len({stage for _, stage in self.rows}) > 1

    def label(self, row: tuple[str, str]) -> str:
        """A row as the check names it: the model, with its stage where the ordering compares
        stages."""
        model, stage = row
        return f"{model} ({stage})" if self.crosses_stages else model

    def margin(self, values: Mapping[tuple[str, str], float]) -> float:
        """How far the ordering holds on ``values`` ((model, stage) -> metric): positive when it
        does."""
        if self.higher_is_better:  # a gap or a distance the other way round: negate the values
            values = {row: -value for row, value in values.items()}
        better, worse, better_than, worse_than = self.groups
        if better_than:
            return _gap(values, better, worse) - _gap(values, better_than, worse_than)
        return min(values[r] for r in worse) - max(values[r] for r in better)

    def check(self) -> str:
        """The check in words, e.g. ``max(a, b) < min(c, d)``, after the dataset and the stage
        it is checked on where it names them (``wikitext2, finetune: a < b``); a higher-is-better
        check reads the other way (``min(a, b) > c``) and says so."""
        better, worse, better_than, worse_than = (
            tuple(map(self.label, group)) for group in self.groups
        )
        if better_than:  # the gaps, each the larger value minus the smaller when it holds
            gaps = ((worse, better), (worse_than, better_than))
            if self.higher_is_better:
                gaps = tuple((b, a) for a, b in gaps)
            text = " > ".join(f"{_mean(a)} − {_mean(b)}" for a, b in gaps)
        elif self.higher_is_better:
            text = f"{_extreme('min', better)} > {_extreme('max', worse)}"
        else:
            text = f"{_extreme('max', better)} < {_extreme('min', worse)}"
        if self.higher_is_better:
            text += " (higher is better)"
        stage = None if self.crosses_stages else self.stage
        where = ", ".join(part for part in (self.dataset, stage) if part)
        return f"{where}: {text}" if where else text


def _gap(
    values: Mapping[tuple[str, str], float],
    better: tuple[tuple[str, str], ...],
    worse: tuple[tuple[str, str], ...],
) -> float:
    """mean(worse) - mean(better)."""
    return sum(values[r] for r in worse) / len(worse) - sum(values[r] for r in better) / len(better)


def _mean(models: tuple[str, ...]) -> str:
    return models[0] if len(models) == 1 else f"mean({', '.join(models)})"


def _extreme(name: str, models: tuple[str, ...]) -> str:
    return models[0] if len(models) == 1 else f"{name}({', '.join(models)})"


@dataclass(frozen=True)
class Claim:
    """A headline claim of a paper (its abstract's or conclusion's), in ``text``, with where the
    paper makes it (``source``). It is tested by the ``orderings`` of the paper's tables named
    here (every ordering of that name, on every dataset; the claim holds where they all hold),
    or, where no table ordering states it, by the output ``checked_in`` (e.g. a figure's own
    claim check)."""

    text: str
    source: str
    orderings: tuple[str, ...] = ()
    checked_in: str | None = None

    def __post_init__(self) -> None:
        if not self.orderings and self.checked_in is None:
            raise ValueError(f"claim {self.text!r}: names no ordering and no output that tests it")
