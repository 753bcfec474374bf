"""Marvin & Linzen (2018) targeted syntactic evaluation (second_order_lstm §5, docs/methods.md
§3.7).

Every sentence is scored by its full log-probability under the language model: Σ log p(w_i)
over its words and a final ``.`` (LM_syneval's "full_sent" analysis), read after ``<eos>`` (how
the stream models saw the start of a line) from a zero state. A pair is correct when the
grammatical sentence scores strictly higher. Words outside the vocabulary become ``<unk>``.

The 19 sub-categories of second_order_lstm: 10 agreement and 3 reflexive cases (animate and
inanimate templates joined), and the two NPI cases scored three ways on their triples (grammatical,
intrusive, ungrammatical): G>I, I>U and G>U.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from ..data.syneval import AGREEMENT, CATEGORIES, GROUPS, NPI, NPI_COMPARISONS, REFLEXIVES
from ..models.base import RecurrentLM

UNK, EOS, FINAL = "<unk>", "<eos>", "."


def case_of(template: str) -> str:
    """The sub-category of a template: animate and inanimate variants are one case."""
    for suffix in ("_anim", "_inanim"):
        if template.endswith(suffix):
            return template.removesuffix(suffix)
    return template


def read_pairs(path: str | Path, max_per_template: int | None = None) -> pd.DataFrame:
    """The pairs TSV (``download.write_syneval_tsv``); the first ``max_per_template`` rows of
    each template when given (reduced scales)."""
    df = pd.read_csv(path, sep="\t", keep_default_na=False, quoting=csv.QUOTE_NONE)
    expected = {"template", "condition", "grammatical", "ungrammatical", "ungrammatical_2"}
    if set(df.columns) != expected:
        raise ValueError(f"{path}: expected columns {sorted(expected)}, got {list(df.columns)}")
    if max_per_template is not None:
        df = df.groupby("template", sort=False).head(max_per_template).reset_index(drop=True)
    df["case"] = df["template"].map(case_of)
    unknown = set(df["case"]) - set(AGREEMENT) - set(REFLEXIVES) - set(NPI)
    if unknown:
        raise ValueError(f"{path}: unknown template case(s) {sorted(unknown)}")
    return df


def encode_sentence(sentence: str, index: dict[str, int]) -> tuple[list[int], bool]:
    """Ids of the words and the final ``.``; whether a word was outside the vocabulary."""
    words = [*sentence.split(), FINAL]
    unk = index[UNK]
    ids = [index.get(word, unk) for word in words]
    return ids, any(word not in index for word in words)


@torch.no_grad()
def sentence_logprobs(
    model: RecurrentLM,
    sentences: Sequence[Sequence[int]],
    start_id: int,
    batch_size: int = 256,
    device: str | torch.device = "cpu",
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Σ log p (nats) of every sentence given ``start_id``, batched by length (padding after a
    sentence cannot change its causal scores); ``progress(n)`` is told of each batch."""
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    scores = np.zeros(len(sentences))
    for first in range(0, len(order), batch_size):
        chunk = order[first : first + batch_size]
        T = max(len(sentences[i]) for i in chunk)
        targets = torch.full((T, len(chunk)), -1, dtype=torch.long)
        for b, i in enumerate(chunk):
            targets[: len(sentences[i]), b] = torch.tensor(sentences[i])
        inputs = torch.cat([torch.full((1, len(chunk)), start_id), targets[:-1].clamp(min=0)])
        logits, _ = model(inputs.to(device))
        logp = F.log_softmax(logits.float(), dim=-1)
        mask = targets >= 0
        picked = logp.gather(-1, targets.clamp(min=0).to(device).unsqueeze(-1)).squeeze(-1)
        totals = (picked * mask.to(device)).sum(0).double().cpu().numpy()
        scores[chunk] = totals
        if progress:
            progress(len(chunk))
    return scores


def score_pairs(
    model: RecurrentLM,
    pairs: pd.DataFrame,
    vocab: Sequence[str],
    batch_size: int = 256,
    device: str | torch.device = "cpu",
    progress: Callable[[int], None] | None = None,
) -> pd.DataFrame:
    """Accuracy per sub-category: columns category, group, pairs, correct, accuracy, unk_pairs
    (pairs with a word outside the vocabulary in any of their sentences), in ``CATEGORIES``
    order."""
    index = {token: i for i, token in enumerate(vocab)}
    for token in (UNK, EOS, FINAL):
        if token not in index:
            raise ValueError(f"the model's vocabulary has no {token!r}")
    columns = ["grammatical", "ungrammatical", "ungrammatical_2"]
    unique = sorted({s for col in columns for s in pairs[col] if s})
    encoded = {s: encode_sentence(s, index) for s in unique}
    logp = sentence_logprobs(
        model, [encoded[s][0] for s in unique], index[EOS], batch_size, device, progress
    )
    score = dict(zip(unique, logp, strict=True))
    unk = pairs[columns].apply(lambda row: any(encoded[s][1] for s in row if s), axis=1)
    rows = []
    for category in CATEGORIES:
        case, _, label = category.partition(" ")
        subset = pairs["case"] == case
        if not subset.any():
            continue
        better, worse = ("grammatical", "ungrammatical")
        if label:
            better, worse = next((b, w) for lab, b, w in NPI_COMPARISONS if lab == label)
        wins = pairs.loc[subset, better].map(score) > pairs.loc[subset, worse].map(score)
        rows.append(
            {
                "category": category,
                "group": GROUPS.get(case, "npi"),
                "pairs": int(subset.sum()),
                "correct": int(wins.sum()),
                "accuracy": float(wins.mean()),
                "unk_pairs": int(unk[subset].sum()),
            }
        )
    return pd.DataFrame(rows)
