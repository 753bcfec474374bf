"""The Dyck runs' token model: the exact length distribution of the m-bounded Dyck sampler,
hence the tokens an epoch computes with its padding (``rnnrepro.cost``)."""

from __future__ import annotations

import math
from functools import cache

VAL_BATCH_SIZE = 64  # rnnrepro.evaluation.dyck.evaluate_dyck's default batch size
VAL_COST = 1 / 3  # a forward-only token costs about a third of a forward + backward one


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
