"""m-bounded Dyck-k data: Hewitt's sampling distribution, exact probabilities, file I/O.

Tokens are ``"(a"``/``"a)"``, ``"(b"``/``"b)"``, ... (bracket type ``t`` is the t-th lowercase
letter). A sequence is a list of bracket tokens without ``<start>``/``<end>`` (docs/methods.md
§1.1).

Sampling process (a probabilistic automaton over the stack of open types):

- empty stack: each open type w.p. 0.5/k, END w.p. 0.5; END is not allowed while fewer than
  ``min_len`` tokens have been emitted, the opens then share the mass (1/k each);
- 0 < depth < m: each open type w.p. 0.5/k, the close matching the top w.p. 0.5;
- depth == m: the close matching the top w.p. 1.

A sampled sequence longer than ``max_len`` tokens is discarded and sampled again.
"""

from __future__ import annotations

import bisect
import math
import os
import random
import string
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from types import MappingProxyType

from rnnrepro.fileio import atomic_open

SPECIALS = ["<pad>", "<start>", "<end>"]
END = "<end>"


def open_token(bracket_type: int) -> str:
    """Token opening bracket type ``bracket_type`` (0 -> "(a")."""
    return "(" + string.ascii_lowercase[bracket_type]


def close_token(bracket_type: int) -> str:
    """Token closing bracket type ``bracket_type`` (0 -> "a)")."""
    return string.ascii_lowercase[bracket_type] + ")"


def _check_km(k: int, m: int | None = None) -> None:
    if not 1 <= k <= len(string.ascii_lowercase):
        raise ValueError(f"k must be in 1..26, got {k}")
    if m is not None and m < 1:
        raise ValueError(f"m must be >= 1, got {m}")


def vocabulary(k: int) -> list[str]:
    """``["<pad>", "<start>", "<end>", "(a", "a)", "(b", "b)", ...]`` for k bracket types."""
    _check_km(k)
    return SPECIALS + [tok for t in range(k) for tok in (open_token(t), close_token(t))]


@cache
def parse_bracket(token: str) -> tuple[bool, int] | None:
    """``(is_open, type)`` for a bracket token, ``None`` for anything else (cached: reading a
    paper-scale split parses millions of tokens of a handful of kinds)."""
    if len(token) == 2 and token[0] == "(" and token[1] in string.ascii_lowercase:
        return True, string.ascii_lowercase.index(token[1])
    if len(token) == 2 and token[1] == ")" and token[0] in string.ascii_lowercase:
        return False, string.ascii_lowercase.index(token[0])
    return None


def close_type_ids(vocab: Sequence[str]) -> list[int]:
    """For every token id: the closing type index 0..k-1 if it is a close token, else -1."""
    out = []
    for token in vocab:
        parsed = parse_bracket(token)
        out.append(parsed[1] if parsed is not None and not parsed[0] else -1)
    return out


def close_token_ids(vocab: Sequence[str]) -> list[int]:
    """Ids of the k close tokens in type order (a), b), ...)."""
    types = close_type_ids(vocab)
    k = sum(t >= 0 for t in types)
    if sorted(t for t in types if t >= 0) != list(range(k)):
        raise ValueError("vocabulary close tokens are not the types a..k without gaps")
    return [types.index(t) for t in range(k)]


@cache
def _choices(
    k: int, m: int, depth: int, top: int | None, can_end: bool
) -> tuple[tuple[str, ...], tuple[float, ...], tuple[float, ...]]:
    """Next-token support, probabilities and cumulative probabilities in one automaton state."""
    opens = [open_token(t) for t in range(k)]
    if depth == 0:
        if can_end:
            probs = {**{tok: 0.5 / k for tok in opens}, END: 0.5}
        else:
            probs = {tok: 1.0 / k for tok in opens}
    elif depth == m:
        probs = {close_token(top): 1.0}
    else:
        probs = {**{tok: 0.5 / k for tok in opens}, close_token(top): 0.5}
    values = tuple(probs.values())
    cumulative = tuple(math.fsum(values[: i + 1]) for i in range(len(values)))
    return tuple(probs), values, cumulative


@cache
def _distribution(
    k: int, m: int, depth: int, top: int | None, can_end: bool
) -> Mapping[str, float]:
    """``_choices``' tokens and probabilities as a read-only token -> probability mapping."""
    tokens, probs, _ = _choices(k, m, depth, top, can_end)
    return MappingProxyType(dict(zip(tokens, probs, strict=True)))


def next_token_distribution(
    stack: Sequence[int], length: int, k: int, m: int, min_len: int
) -> Mapping[str, float]:
    """The generator's distribution over the next token (``"<end>"`` included), read-only.

    ``stack`` holds the open bracket types (top last); ``length`` is the number of tokens
    emitted so far.
    """
    return _distribution(k, m, len(stack), stack[-1] if stack else None, length >= min_len)


def _check_lengths(min_len: int, max_len: int) -> None:
    # Dyck words have even length: some even length must lie in [min_len, max_len].
    if min_len < 0 or min_len + min_len % 2 > max_len:
        raise ValueError(f"no even length in [{min_len}, {max_len}]")


def sample_sequence(rng: random.Random, k: int, m: int, min_len: int, max_len: int) -> list[str]:
    """Sample one sequence (no start/end tokens) with min_len <= length <= max_len."""
    _check_km(k, m)
    _check_lengths(min_len, max_len)
    while True:
        seq: list[str] = []
        stack: list[int] = []
        while len(seq) <= max_len:
            top = stack[-1] if stack else None
            tokens, _, cumulative = _choices(k, m, len(stack), top, len(seq) >= min_len)
            token = tokens[min(bisect.bisect_right(cumulative, rng.random()), len(tokens) - 1)]
            if token == END:
                return seq
            seq.append(token)
            if token[0] == "(":
                stack.append(string.ascii_lowercase.index(token[1]))
            else:
                stack.pop()
        # Longer than max_len: discard (equivalent to sampling to the end, then rejecting).


def generate(n: int, k: int, m: int, min_len: int, max_len: int, seed: int) -> list[list[str]]:
    """``n`` independent sequences; the same arguments always give the same list."""
    rng = random.Random(seed)
    return [sample_sequence(rng, k, m, min_len, max_len) for _ in range(n)]


def check_sequence(seq: Sequence[str], k: int | None = None, m: int | None = None) -> str | None:
    """Why ``seq`` is not an m-bounded Dyck-k word (``None`` if it is one).

    With ``k``/``m`` left as ``None`` any bracket type / any depth is accepted. The empty
    sequence is none (the generator's words have at least one pair).
    """
    if not seq:
        return "empty sequence"
    stack: list[int] = []
    for pos, token in enumerate(seq):
        parsed = parse_bracket(token)
        if parsed is None or (k is not None and parsed[1] >= k):
            return f"unknown token {token!r} at position {pos}"
        is_open, bracket_type = parsed
        if is_open:
            stack.append(bracket_type)
            if m is not None and len(stack) > m:
                return f"depth {len(stack)} > m={m} at position {pos}"
        elif not stack or stack.pop() != bracket_type:
            return f"{token!r} at position {pos} does not close the innermost open bracket"
    if stack:
        return f"{len(stack)} bracket(s) left open at the end"
    return None


def write_sequences(path: str | os.PathLike, seqs: Iterable[Sequence[str]]) -> None:
    """Write one space-separated sequence per line, atomically (temp file + os.replace)."""
    with atomic_open(path, "w", encoding="utf-8") as f:
        for seq in seqs:
            f.write(" ".join(seq) + "\n")


def add_lengths_argument(parser) -> None:
    """``--dyck-lengths MIN MAX`` on an argparse parser: the bounds a Dyck split was generated
    with, so that ``read_sequences`` refuses a line outside them."""
    parser.add_argument(
        "--dyck-lengths",
        type=int,
        nargs=2,
        metavar=("MIN", "MAX"),
        help="the splits' length bounds: a line outside them is refused",
    )


def read_sequences(
    path: str | os.PathLike,
    k: int | None = None,
    m: int | None = None,
    lengths: Sequence[int] | None = None,
) -> list[list[str]]:
    """Read a file written by ``write_sequences``, validating every line.

    Raises ValueError naming the file and 1-based line number for an empty line, an unknown
    token, a line that is not well nested, depth > m, or a length outside ``lengths`` (the
    split's (min, max) bounds, when given).
    """
    seqs = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            seq = line.split()
            problem = check_sequence(seq, k, m)
            if problem is None and lengths is not None:
                low, high = lengths
                if not low <= len(seq) <= high:
                    problem = f"length {len(seq)} is outside the split's bounds {low}-{high}"
            if problem is not None:
                raise ValueError(f"{path}:{lineno}: {problem}")
            seqs.append(seq)
    return seqs


def generator_steps(
    seq: Sequence[str], k: int, m: int, min_len: int
) -> list[tuple[int, str, float]]:
    """For each target of ``seq`` (its tokens, then END): the stack's depth before it, the
    token and the generator's probability of it (KeyError for a token it cannot emit there)."""
    stack: list[int] = []
    steps = []
    for length, token in enumerate([*seq, END]):
        steps.append(
            (len(stack), token, next_token_distribution(stack, length, k, m, min_len)[token])
        )
        if token != END:
            is_open, bracket_type = parse_bracket(token)
            if is_open:
                stack.append(bracket_type)
            else:
                stack.pop()
    return steps


def sequence_log_prob(seq: Sequence[str], k: int, m: int, min_len: int) -> float:
    """Exact natural-log probability of ``seq`` followed by END under the generator.

    The max_len rejection is ignored (the unnormalised process probability), so this is the
    floor a model can reach on data whose length cap is rarely binding. Raises ValueError for
    a sequence the generator cannot produce.
    """
    problem = check_sequence(seq, k, m)
    if problem is None and len(seq) < min_len:
        problem = f"length {len(seq)} < min_len={min_len}"
    if problem is not None:
        raise ValueError(problem)
    return sum(math.log(p) for _, _, p in generator_steps(seq, k, m, min_len))


def floor_perplexity(seqs: Iterable[Sequence[str]], k: int, m: int, min_len: int) -> float:
    """Perplexity of the generator itself on ``seqs`` (targets = tokens + <end>)."""
    total_logp = 0.0
    total_targets = 0
    for seq in seqs:
        total_logp += sequence_log_prob(seq, k, m, min_len)
        total_targets += len(seq) + 1
    return math.exp(-total_logp / total_targets)
