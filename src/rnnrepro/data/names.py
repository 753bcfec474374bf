"""Dataset names: the one place that makes them and reads them back (no torch import).

A family (``experiments.<name>.datasets`` in config.yaml) expands to dataset names at a scale:

- ``dyck``               -> ``dyck_m<m>`` for every bound m (generated Dyck-2 languages)
- ``ptb_char``           -> ``ptb_char`` (Mikolov's character PTB, one sentence per sequence)
- ``ptb_word``           -> ``ptb_word`` (Mikolov's word PTB, one sentence per sequence)
- ``ptb_char_cut``       -> ``ptb_char_cut<C>`` for every cutoff C (multi_matrix §6.1)
- ``ptb_lines_unigram``  -> ``ptb_lines_unigram_fold<k>`` for every fold k (general_second_order)
- ``ptb_lines_bigram``   -> ``ptb_lines_bigram_fold<k>``
- ``wikitext2``, ``wikitext103``, ``ptb_stream`` (a corpus as one token stream), ``linzen``
- ``wmt14_de_en``        -> ``wmt14_de_en`` (sentence pairs; at the reduced scales a generated
                            stand-in, ``rnnrepro.data.parallel``)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

STREAMS = ("wikitext2", "wikitext103", "ptb_stream", "linzen")
TRANSLATIONS = ("wmt14_de_en",)  # parallel corpora: source and target sentence pairs
_NAME = re.compile(
    r"^(?:(?P<dyck>dyck)_m(?P<m>\d+)|(?P<cut>ptb_char_cut)(?P<cutoff>\d+)"
    r"|(?P<lines>ptb_lines_(?P<tokenization>unigram|bigram))_fold(?P<fold>\d+)"
    r"|(?P<ptb>ptb_char|ptb_word)|(?P<stream>" + "|".join(STREAMS) + ")"
    r"|(?P<pairs>" + "|".join(TRANSLATIONS) + "))$"
)
# A wildcard constraint per family (``pattern``).
_PATTERNS = {
    "dyck": r"dyck_m\d+",
    "ptb_char_cut": r"ptb_char_cut\d+",
    "ptb_lines_unigram": r"ptb_lines_unigram_fold\d+",
    "ptb_lines_bigram": r"ptb_lines_bigram_fold\d+",
}
TITLES = {
    "wikitext2": "WikiText-2",
    "wikitext103": "WikiText-103",
    "wmt14_de_en": "WMT'14 German→English",
}


@dataclass(frozen=True)
class Dataset:
    """What a dataset name says: its family and, where the family has one, the Dyck bound
    ``m``, the training-line ``cutoff`` or the cross-validation ``fold``."""

    name: str
    family: str
    m: int | None = None
    cutoff: int | None = None
    fold: int | None = None

    @property
    def unfolded(self) -> str:
        """The name without its fold: the cross-validation family a paper's row names
        (``ptb_lines_unigram_fold3`` -> ``ptb_lines_unigram``); other names unchanged."""
        return self.family if self.fold is not None else self.name

    @property
    def level(self) -> str | None:
        """``word`` or ``char`` for Mikolov's PTB sentence datasets, else None."""
        if self.family == "ptb_word":
            return "word"
        return "char" if self.family in ("ptb_char", "ptb_char_cut") else None

    @property
    def title(self) -> str:
        """A reader's name: ``4-bounded Dyck-2``, ``WikiText-2``, else the name itself."""
        if self.m is not None:
            return f"{self.m}-bounded Dyck-2"
        return TITLES.get(self.name, self.name)


def parse(name: str) -> Dataset:
    """The ``Dataset`` a name stands for; ValueError for a name no family makes."""
    match = _NAME.match(name)
    if not match:
        raise ValueError(f"unknown dataset name {name!r}")
    family = next(match[g] for g in ("dyck", "cut", "lines", "ptb", "stream", "pairs") if match[g])
    number = {key: int(match[key]) if match[key] else None for key in ("m", "cutoff", "fold")}
    return Dataset(name, family, **number)


def family(name: str) -> str:
    """The family of a dataset name (``dyck_m4`` -> ``dyck``)."""
    return parse(name).family


def dyck_m(name: str) -> int:
    """The bound m of a Dyck dataset name such as ``dyck_m4``."""
    m = parse(name).m
    if m is None:
        raise ValueError(f"not a Dyck dataset: {name!r}")
    return m


def expand(
    family: str, m: Iterable[int] = (), cutoffs: Iterable[int] = (), folds: Iterable[int] = ()
) -> list[str]:
    """The dataset names of ``family``: one per bound ``m`` (dyck), cutoff (ptb_char_cut) or
    fold (ptb_lines_*); the family's own name otherwise."""
    if family == "dyck":
        return [f"dyck_m{k}" for k in m]
    if family == "ptb_char_cut":
        return [f"ptb_char_cut{c}" for c in cutoffs]
    if family.startswith("ptb_lines_"):
        return [f"{family}_fold{k}" for k in folds]
    return [family]


def pattern(*families: str) -> str:
    """A regular expression matching the dataset names of ``families`` (wildcard constraints)."""
    return "|".join(_PATTERNS.get(f, re.escape(f)) for f in families)
