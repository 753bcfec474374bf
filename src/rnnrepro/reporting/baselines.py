"""What trivial models score on a table's data, under its rows: the unigram and n-gram
baselines of a text table (``results/ngram/``), a translation run's own unigram and
copied source, and the nats reading of a "BPC" paper number."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from rnnrepro.data import names
from rnnrepro.reporting.markdown import section
from rnnrepro.reporting.metrics import DECIMALS, TEXT_METRICS


def read_ngram(paths: Iterable[str | Path]) -> pd.DataFrame:
    """The n-gram baselines of ``results/ngram/{dataset}.csv`` files, in one frame
    (``eval_tokens`` 0 where a whole split was scored)."""
    frames = [pd.read_csv(path) for path in paths]
    if not frames:
        return pd.DataFrame(columns=["dataset", "model", "split", "eval_tokens"])
    out = pd.concat(frames, ignore_index=True)
    return out.assign(
        eval_tokens=out["eval_tokens"].fillna(0).astype(int),
        npc=out["bpc"] * math.log(2) if "bpc" in out else math.nan,
    )


# a table metric's unit (``test_ppl`` -> ``ppl``) -> the n-gram scores' column holding it
NGRAM_COLUMNS = {"ppl": "ppl", "bpc": "bpc", "ce": "loss", "npc": "npc"}


def ngram_values(
    scores: pd.DataFrame, runs: pd.DataFrame, dataset: str, metric: str
) -> tuple[float, float]:
    """The unigram and n-gram values of ``metric`` on the tokens the ``runs`` were scored on
    (their datasets and evaluated-token caps; the mean where they differ, e.g. over folds), or
    on the whole splits of ``dataset`` or its folds when no run matched; NaN when there is no
    such baseline."""
    split, _, unit = metric.partition("_")
    column = NGRAM_COLUMNS.get(unit)
    if scores.empty or column is None or split not in ("val", "test"):
        return math.nan, math.nan
    if len(runs):
        tokens = runs["eval_tokens"] if "eval_tokens" in runs else [0] * len(runs)
        keys = set(zip(runs["dataset"], tokens, strict=True))
    else:
        keys = {
            (d, 0)
            for d in scores["dataset"].unique()
            if names.parse(d).unfolded == dataset or d == dataset
        }
    rows = scores[scores["split"] == split]
    rows = rows[[key in keys for key in zip(rows["dataset"], rows["eval_tokens"], strict=True)]]
    unigram = rows["model"] == "unigram"
    return rows.loc[unigram, column].mean(), rows.loc[~unigram, column].mean()


def with_nats_readings(paper: pd.DataFrame) -> pd.DataFrame:
    """``paper`` (paper numbers) with each bits-per-character row followed by the same number
    read as nats per character (metric ``<split>_npc``), for a paper whose "BPC" may be either."""
    bpc = paper["metric"].str.endswith("_bpc")
    nats = paper[bpc].assign(metric=paper.loc[bpc, "metric"].str.replace("_bpc", "_npc"))
    out = pd.concat([paper, nats.set_axis(nats.index + 0.5)]).sort_index(kind="stable")
    return out.reset_index(drop=True)


NATS_NOTE = (
    "Each BPC row is read twice: `*_bpc` takes the paper's number as bits per character (the "
    "usual meaning), `*_npc` as nats per character (the paper's text does not say which; "
    "docs/methods.md §6.6); each reading has its own verdict."
)


# The trivial baselines a translation run scores itself (its metrics' ``<test set>_<key>``): a
# metric's suffix -> the table column and the runs' column suffix; the longest suffix first.
OWN_BASELINES = {
    "_bleu_tokenized": ("copy", "_copy_bleu_tokenized"),
    "_bleu": ("copy", "_copy_bleu"),
    "_ppl": ("unigram", "_unigram_ppl"),
}


def own_baseline(runs: pd.DataFrame, metric: str) -> tuple[str | None, float]:
    """The table column and the mean value of the trivial baseline the ``runs`` scored beside
    ``metric`` (``newstest2015_ppl`` -> the unigram's ``newstest2015_unigram_ppl``; a BLEU ->
    the copied source's); (None, NaN) when they scored none."""
    for suffix, (column, own) in OWN_BASELINES.items():
        if metric.endswith(suffix):
            name = metric.removesuffix(suffix) + own
            if name in runs and runs[name].notna().any():
                return column, float(runs[name].mean())
            break
    return None, math.nan


def baseline_verdict(mean: float, unigram: float, ngram: float) -> str:
    """The suffix of a verdict whose reproduced mean does not beat a baseline ("" if it does,
    or if there is none)."""
    if mean >= unigram:
        return "; no better than the unigram"
    if mean >= ngram:
        return "; no better than the n-gram"
    return ""


def ngram_lines(scores: pd.DataFrame) -> list[str]:
    """Markdown section under a text table: the n-gram baselines of its datasets."""
    if scores.empty:
        return []
    rows = []
    keys = ["dataset", "model", "eval_tokens"]
    for (dataset, model, eval_tokens), group in scores.groupby(keys, sort=False):
        kind = TEXT_METRICS[names.family(dataset)]
        by_split = group.set_index("split")
        row = {
            "dataset": dataset,
            "model": model,
            "training tokens": int(group["train_tokens"].iloc[0]),
            "evaluated tokens": "all" if not eval_tokens else f"first {eval_tokens}",
            "metric": kind,
        }
        for split in ("val", "test"):
            value = by_split[NGRAM_COLUMNS[kind]].get(split, math.nan)
            row[split] = round(float(value), DECIMALS[kind])
        note = group["note"].iloc[0]
        row["note"] = note if isinstance(note, str) else ""
        rows.append(row)
    return section("N-gram baselines on the same data", NGRAM_TEXT, pd.DataFrame(rows))


NGRAM_TEXT = (
    "What a model that learnt only local statistics scores: an add-one unigram model and an "
    "interpolated modified Kneser-Ney model (order `ngram.order` in config.yaml; "
    "rnnrepro.evaluation.ngram), both fit on the same training split as the runs and scored "
    "on the same validation and test tokens with the same conventions (an unknown word is the "
    "`<unk>` token; end of sentence and first token as the runs score them; a stream is read "
    "whole, where the runs start each of their columns without context). A row whose "
    "reproduced mean does not beat them says so in its verdict. On the full Penn Treebank "
    "our 5-gram scores 141.19 test perplexity, as KenLM's does, against the 141.2 Mikolov et "
    "al. (2011) publish (docs/methods.md §13)."
)
