"""Linzen et al. (2016)'s agreement data set (``agr_50_mostcommon_10K.tsv.gz``) split by their
protocol into an LM corpus and agreement test dependencies (memory §3.3, docs/methods.md §11.4).

One row per subject-verb dependency; ``sentence`` has the words outside the 10,000 most common
replaced by their POS tag; ``verb_index`` is 1-based. Protocol (TalLinzen/rnn_agreement): the
dependencies are shuffled with ``random.seed(1)``, the first ``prop_train`` = 10 % train the
model (its last 10 % validate it) and the rest are the test set [A: Python 3's shuffle, so the
order differs from the original Python 2 code's].
"""

from __future__ import annotations

import csv
import gzip
import os
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from rnnrepro.fileio import atomic_open

FIELDS = ("sentence", "verb_index", "verb_pos", "n_intervening", "n_diff_intervening")
PROP_TRAIN = 0.1
PROP_VAL = 0.1  # of the training part
SEED = 1


@dataclass(frozen=True)
class Split:
    """Dependencies of each part (rows with ``FIELDS``)."""

    train: list[dict]
    val: list[dict]
    test: list[dict]


def iter_dependencies(path: str | os.PathLike) -> Iterator[dict]:
    """The rows of the (gzipped) TSV, one at a time (the test set has ~1.4M), checked to have
    ``FIELDS`` and a verb at ``verb_index``."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        missing = set(FIELDS) - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f"{path}: no column(s) {', '.join(sorted(missing))}")
        for line, row in enumerate(reader, start=2):
            words = row["sentence"].split()
            index = int(row["verb_index"])
            if not 1 <= index <= len(words):
                raise ValueError(f"{path}, line {line}: verb_index {index} outside the sentence")
            yield {key: row[key] for key in FIELDS}


def read_dependencies(path: str | os.PathLike) -> list[dict]:
    """Every row of the TSV (``iter_dependencies``)."""
    return list(iter_dependencies(path))


def split(rows: Sequence[dict], seed: int = SEED, prop_train: float = PROP_TRAIN) -> Split:
    """Linzen's split: shuffle with ``seed``, the first ``prop_train`` for training (its last
    ``PROP_VAL`` for validation), the rest for testing."""
    shuffled = list(rows)
    random.Random(seed).shuffle(shuffled)
    n_train = int(len(shuffled) * prop_train)
    n_fit = n_train - int(n_train * PROP_VAL)
    return Split(shuffled[:n_fit], shuffled[n_fit:n_train], shuffled[n_train:])


def sentences(rows: Iterable[dict]) -> list[list[str]]:
    return [row["sentence"].split() for row in rows]


def write_dependencies(rows: Iterable[dict], path: str | os.PathLike) -> None:
    with atomic_open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(
            f, FIELDS, delimiter="\t", quoting=csv.QUOTE_NONE, lineterminator="\n"
        )
        writer.writeheader()
        writer.writerows(rows)
