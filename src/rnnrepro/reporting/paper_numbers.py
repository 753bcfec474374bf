"""Paper (reference) numbers: the only place where published results enter the suite.

``paper_numbers.csv`` has one row per published number or claim, with columns
paper, table, row, dataset, model, metric, value, comparison, source, note, stage; ``paper``
is also the experiment whose runs a row is compared with (config.yaml's ``experiments``).
``comparison`` is ``=`` for a reported value and ``<``, ``<=``, ``>=`` for a claimed bound. An
empty ``value`` is a number the paper draws but does not print (e.g. a figure's curve): its row
carries the runs' value, with the verdict ``info``, for the orderings stated about it.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.resources import files

import pandas as pd

COMPARISONS = ("=", "<", "<=", ">=")


def load_paper_numbers(
    paper: str | None = None, table: str | Sequence[str] | None = None
) -> pd.DataFrame:
    """Reference rows, optionally restricted to one paper (e.g. ``second_order_lstm``) and table(s).

    ``table`` is one label (``"Table 1"``) or several (``["Table 1", "Section 4.1"]``).
    A reference ``dataset`` is either one dataset or a family whose runs are on its folds
    (``ptb_lines_unigram`` for ``ptb_lines_unigram_fold1`` ...; see ``rnnrepro.data.names``).
    """
    path = files("rnnrepro.reporting") / "paper_numbers.csv"
    with path.open(encoding="utf-8") as handle:
        df = pd.read_csv(
            handle, dtype={"value": float}, keep_default_na=False, na_values={"value": [""]}
        )
    unknown = set(df["comparison"]) - set(COMPARISONS)
    if unknown:
        raise ValueError(f"unknown comparison(s) in paper_numbers.csv: {sorted(unknown)}")
    if paper is not None:
        df = df[df["paper"] == paper]
    if table is not None:
        tables = [table] if isinstance(table, str) else list(table)
        df = df[df["table"].isin(tables)]
    return df.reset_index(drop=True)
