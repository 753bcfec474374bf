"""N-gram baseline language models: what a model that learnt only local statistics scores.

Two models are fit on a run's own training data and scored on the same tokens as the runs:

- ``Unigram``: add-one (Laplace) smoothed token frequencies over the model vocabulary;
- ``KneserNey``: interpolated modified Kneser-Ney (Chen & Goodman 1999, §3.5; the smoothing of
  KenLM's ``lmplz`` and SRILM's ``-kndiscount -interpolate``, without pruning): three discounts
  per order from its counts of counts; the highest order uses raw counts, the lower orders
  continuation counts (distinct left extensions; an n-gram at a sequence's start counts each
  occurrence, as it has no left context); the unigram level interpolates with the uniform
  distribution over the vocabulary.

A sequence is a list of token ids whose first element may be ``START``, a context-only marker
(SRILM's ``<s>``) that is never predicted. ``score`` sums the negative log-likelihood (nats) of
every token from position ``first`` on, each given the tokens before it in its sequence. Checked
against KenLM's ``lmplz`` on the Penn Treebank: docs/methods.md §13.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

START = -1  # the context-only start marker (never a vocabulary id)


class Unigram:
    """Add-one smoothed unigram model over ``vocab_size`` tokens (``START`` not counted)."""

    order = 1

    def __init__(self, sequences: Iterable[Sequence[int]], vocab_size: int) -> None:
        self.vocab_size = vocab_size
        self.counts: Counter[int] = Counter()
        for seq in sequences:
            self.counts.update(tok for tok in seq if tok != START)
        self.total = sum(self.counts.values())

    def logprob(self, token: int, history: Sequence[int] = ()) -> float:
        return math.log((self.counts[token] + 1) / (self.total + self.vocab_size))


class KneserNey:
    """Interpolated modified Kneser-Ney model of ``order`` over ``vocab_size`` tokens."""

    def __init__(self, sequences: Iterable[Sequence[int]], order: int, vocab_size: int) -> None:
        if order < 1:
            raise ValueError(f"order must be >= 1, got {order}")
        self.order, self.vocab_size = order, vocab_size
        sequences = [list(seq) for seq in sequences]
        # counts[k][ngram]: raw counts at the highest order, continuation counts below it
        self.counts: list[dict[tuple[int, ...], int]] = [{} for _ in range(order + 1)]
        self.counts[order] = dict(_ngram_counts(sequences, order))
        starts = _start_counts(sequences, order)
        for k in range(order - 1, 0, -1):
            continuation: Counter[tuple[int, ...]] = Counter(starts[k])
            continuation.update(ngram[1:] for ngram in self.counts[k + 1])
            self.counts[k] = dict(continuation)
        self.counts[1].pop((START,), None)  # the marker is never predicted
        self.discounts = [(0.0, 0.0, 0.0)] + [
            _discounts(self.counts[k].values()) for k in range(1, order + 1)
        ]
        # contexts[k][history]: (sum of counts, the discounted mass freed for the lower order)
        self.contexts: list[dict[tuple[int, ...], tuple[int, float]]] = [{}]
        for k in range(1, order + 1):
            totals: dict[tuple[int, ...], int] = defaultdict(int)
            freed: dict[tuple[int, ...], float] = defaultdict(float)
            for ngram, count in self.counts[k].items():
                totals[ngram[:-1]] += count
                freed[ngram[:-1]] += self._discount(k, count)
            self.contexts.append({h: (totals[h], freed[h]) for h in totals})

    def _discount(self, k: int, count: int) -> float:
        return self.discounts[k][min(count, 3) - 1]

    def logprob(self, token: int, history: Sequence[int]) -> float:
        """ln p(token | history) (only the last ``order - 1`` history tokens matter)."""
        history = tuple(history[max(0, len(history) - self.order + 1) :]) if self.order > 1 else ()
        prob = 1.0 / self.vocab_size
        for k in range(1, len(history) + 2):
            context = history[len(history) - k + 1 :]
            seen = self.contexts[k].get(context)
            if seen is None:  # an unseen context: the lower order's estimate stands
                break
            total, freed = seen
            count = self.counts[k].get((*context, token), 0)
            discounted = max(count - self._discount(k, count), 0.0) if count else 0.0
            prob = (discounted + freed * prob) / total
        return math.log(prob)


def _ngram_counts(sequences: list[list[int]], k: int) -> Counter[tuple[int, ...]]:
    counts: Counter[tuple[int, ...]] = Counter()
    for seq in sequences:
        counts.update(zip(*(seq[i:] for i in range(k)), strict=False))
    return counts


def _start_counts(sequences: list[list[int]], order: int) -> list[Counter[tuple[int, ...]]]:
    """Per order k: the k-grams at the start of a sequence (no left context), counted."""
    out: list[Counter[tuple[int, ...]]] = [Counter() for _ in range(order + 1)]
    for seq in sequences:
        for k in range(1, min(order, len(seq)) + 1):
            out[k][tuple(seq[:k])] += 1
    return out


def _discounts(counts: Iterable[int]) -> tuple[float, float, float]:
    """Chen & Goodman's D1, D2, D3+ from the counts of counts n1..n4 (each clipped to [0, c])."""
    n = Counter(c for c in counts if c <= 4)
    if not n[1] or not n[2]:  # too little data for an estimate: absolute discounting by 0.5
        return (0.5, 0.5, 0.5)
    y = n[1] / (n[1] + 2 * n[2])
    estimates = (
        1 - 2 * y * n[2] / n[1],
        2 - 3 * y * n[3] / n[2],
        3 - 4 * y * n[4] / n[3] if n[3] else 2.5,
    )
    if not all(0 < d <= c for c, d in enumerate(estimates, start=1)):  # tiny data: out of range
        return (0.5, 0.5, 0.5)  # a positive discount keeps mass for every unseen token
    return estimates


def score(
    model: Unigram | KneserNey, sequences: Iterable[Sequence[int]], first: int = 1
) -> tuple[float, list[int]]:
    """Total negative log-likelihood (nats) of every token at position >= ``first`` of each
    sequence, and the scored token ids."""
    total, scored = 0.0, []
    for seq in sequences:
        for i in range(first, len(seq)):
            total -= model.logprob(seq[i], seq[max(0, i - model.order + 1) : i])
            scored.append(seq[i])
    return total, scored
