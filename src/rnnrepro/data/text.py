"""Penn Treebank text data for multi_matrix (word/char PTB) and general_second_order (normalised
PTB lines).

Every text dataset is stored in one format: ``<dir>/{train,val,test}.txt`` hold one sequence
per line with tokens separated by single spaces, ``<dir>/vocab.txt`` the model vocabulary, one
token per line in id order. Files are written atomically.

- multi_matrix (docs/methods.md §1.3): each line of Mikolov's PTB is one sequence. Word level:
  whitespace split tokens, vocabulary ``<eos>`` + train types in order of first appearance
  (10,000). Char level: the ptb.char files' space-separated symbols (``_`` = word boundary,
  ``<unk>`` spelled ``< u n k >``), vocabulary ``<eos>`` + first appearance (50).
- general_second_order (docs/methods.md §1.4): word-PTB train+valid+test lines normalised to
  ``[a-z ]``, split into 5 cross-validation folds, tokenised as character unigrams (V = 27) or
  within-word bigrams (V = 703), spaces written as ``_``.
"""

from __future__ import annotations

import os
import random
import re
import string
from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from pathlib import Path
from typing import Literal, TypeVar

from .dyck import write_sequences

EOS = "<eos>"
SPACE = "_"
SPLITS = ("train", "val", "test")
MIN_LINE_CHARS = 2  # general_second_order lines shorter than this have no next-character target

Level = Literal["word", "char"]
Tokenization = Literal["unigram", "bigram"]
T = TypeVar("T")


# --------------------------------------------------------------------------------------------
# The token-file format


def iter_token_file(path: str | os.PathLike, empty_lines: bool = False) -> Iterator[list[str]]:
    """One token list per line, read lazily.

    ValueError naming the file and 1-based line for an empty token (double, leading or trailing
    space), whitespace other than single spaces, or an empty line. ``empty_lines``: an empty
    line is an empty sequence (a stream's: WikiText's blank lines are part of the text).
    """
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            text = line.removesuffix("\n")
            tokens = text.split()
            if not tokens and not empty_lines:
                raise ValueError(f"{path}:{lineno}: empty line (a sentence has tokens)")
            if " ".join(tokens) != text:
                raise ValueError(
                    f"{path}:{lineno}: empty token (tokens must be separated by single spaces)"
                )
            yield tokens


def read_token_file(path: str | os.PathLike, empty_lines: bool = False) -> list[list[str]]:
    """``iter_token_file``'s lines as a list."""
    return list(iter_token_file(path, empty_lines))


def write_token_file(sequences: Iterable[Sequence[str]], path: str | os.PathLike) -> None:
    """Write one space-separated sequence per line atomically; ValueError for a token that is
    empty or contains whitespace (it would not read back)."""
    seqs = [list(seq) for seq in sequences]
    for i, seq in enumerate(seqs):
        if " ".join(seq).split() != seq:
            raise ValueError(f"sequence {i}: a token is empty or contains whitespace")
    write_sequences(path, seqs)


def read_vocab(path: str | os.PathLike) -> list[str]:
    """Tokens of a vocabulary file in id order; ValueError naming file and line for a blank,
    whitespace-containing or duplicate token."""
    tokens = read_token_file(path)
    seen: dict[str, int] = {}
    for lineno, line in enumerate(tokens, start=1):
        if len(line) != 1:
            raise ValueError(f"{path}:{lineno}: expected exactly one token, got {len(line)}")
        if line[0] in seen:
            raise ValueError(f"{path}:{lineno}: duplicate token {line[0]!r} (line {seen[line[0]]})")
        seen[line[0]] = lineno
    return list(seen)


def write_vocab(vocab: Sequence[str], path: str | os.PathLike) -> None:
    """Write one token per line atomically; ValueError for duplicates."""
    if len(set(vocab)) != len(vocab):
        raise ValueError("vocabulary has duplicate tokens")
    write_token_file(([tok] for tok in vocab), path)


def check_in_vocab(
    sequences: Sequence[Sequence[str]], vocab: Iterable[str], path: str | os.PathLike
) -> None:
    """ValueError naming ``path``, the 1-based line and the token of the first token outside
    ``vocab`` (sequence i is taken to be line i + 1)."""
    known = set(vocab)
    for i, seq in enumerate(sequences):
        if not known.issuperset(seq):
            token = next(tok for tok in seq if tok not in known)
            raise ValueError(f"{path}:{i + 1}: token {token!r} is not in the vocabulary")


def write_dataset(
    out_dir: str | os.PathLike, splits: dict[str, Sequence[Sequence[str]]], vocab: Sequence[str]
) -> None:
    """Write ``out_dir/{train,val,test}.txt`` and ``vocab.txt`` (all tokens must be in vocab)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in SPLITS:
        check_in_vocab(splits[name], vocab, f"<{name} split>")
    for name in SPLITS:
        write_token_file(splits[name], out_dir / f"{name}.txt")
    write_vocab(vocab, out_dir / "vocab.txt")


def head(sequences: Sequence[T], n: int | None) -> list[T]:
    """The first ``n`` sequences (all for ``None``): the deterministic slice for small scales."""
    if n is not None and n < 0:
        raise ValueError(f"n must be >= 0 or None, got {n}")
    return list(sequences if n is None else sequences[:n])


# --------------------------------------------------------------------------------------------
# multi_matrix: word and character PTB


def read_ptb(path: str | os.PathLike, level: Level) -> list[list[str]]:
    """Whitespace-split lines of a Mikolov PTB file (``ptb.*`` or ``ptb.char.*``).

    The char files end with a lone space after the last newline; that unterminated blank line
    is ignored. Any other blank line, or at char level a token longer than one character, is a
    ValueError naming the file and line.
    """
    if level not in ("word", "char"):
        raise ValueError(f"level must be 'word' or 'char', got {level!r}")
    seqs = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            tokens = line.split()
            if not tokens:
                if not line.endswith("\n"):
                    continue
                raise ValueError(f"{path}:{lineno}: blank line")
            if level == "char" and any(len(tok) != 1 for tok in tokens):
                token = next(tok for tok in tokens if len(tok) != 1)
                raise ValueError(
                    f"{path}:{lineno}: token {token!r} is not one character "
                    "(is this a char-level file?)"
                )
            seqs.append(tokens)
    return seqs


def build_vocab(train: Iterable[Sequence[str]], specials: Sequence[str] = (EOS,)) -> list[str]:
    """``specials`` then the types of ``train`` in order of first appearance."""
    return list(dict.fromkeys(chain(specials, *train)))


def truncate(sequences: Iterable[Sequence[str]], cutoff: int) -> list[list[str]]:
    """First ``cutoff`` tokens of every sequence (docs/methods.md §1.3; at char level ``_``
    counts)."""
    if cutoff < 1:
        raise ValueError(f"cutoff must be >= 1, got {cutoff}")
    return [list(seq[:cutoff]) for seq in sequences]


def prepare_ptb(
    train: str | os.PathLike,
    valid: str | os.PathLike,
    test: str | os.PathLike,
    level: Level,
    *,
    train_lines: int | None = None,
    eval_lines: int | None = None,
    cutoff: int | None = None,
) -> tuple[dict[str, list[list[str]]], list[str]]:
    """multi_matrix splits ``{train, val, test}`` and vocabulary.

    The vocabulary comes from the full train file and every val/test token is checked against
    it before slicing, so neither depends on ``train_lines``/``eval_lines``. ``cutoff``
    truncates only the training sequences.
    """
    train_seqs = read_ptb(train, level)
    vocab = build_vocab(train_seqs)
    splits = {"train": head(train_seqs, train_lines)}
    for name, path in (("val", valid), ("test", test)):
        seqs = read_ptb(path, level)
        check_in_vocab(seqs, vocab, path)
        splits[name] = head(seqs, eval_lines)
    if cutoff is not None:
        splits["train"] = truncate(splits["train"], cutoff)
    return splits, vocab


# --------------------------------------------------------------------------------------------
# Token streams (WikiText-2): every line, empty ones included, then <eos>


def read_stream_lines(path: str | os.PathLike) -> list[list[str]]:
    """Whitespace-split lines of a WikiText file, empty lines kept (each ends in ``<eos>`` in the
    stream, as in pytorch/examples' ``Corpus``: 2,088,628 training tokens for WikiText-2)."""
    with open(path, encoding="utf-8") as f:
        return [line.split() for line in f]


def prepare_stream(
    train: str | os.PathLike,
    valid: str | os.PathLike,
    test: str | os.PathLike,
    *,
    train_lines: int | None = None,
    eval_lines: int | None = None,
) -> tuple[dict[str, list[list[str]]], list[str]]:
    """Stream splits ``{train, val, test}`` (lines) and the vocabulary of the full train file
    (``<eos>`` first); val/test tokens outside it are a ValueError naming file and line."""
    train_seqs = read_stream_lines(train)
    vocab = build_vocab(train_seqs)
    splits = {"train": head(train_seqs, train_lines)}
    for name, path in (("val", valid), ("test", test)):
        seqs = read_stream_lines(path)
        check_in_vocab(seqs, vocab, path)
        splits[name] = head(seqs, eval_lines)
    return splits, vocab


def stream_ids(lines: Iterable[Sequence[str]], index: dict[str, int], path: str) -> array:
    """One token stream: every line's ids followed by ``<eos>``, as 8-byte integers (103M
    WikiText-103 tokens take 0.8 GB, a list of ints 3.7 GB); ValueError naming the file, line
    and token for a token outside the vocabulary."""
    eos = index[EOS]
    out = array("q")
    for lineno, line in enumerate(lines, start=1):
        try:
            out.extend(index[token] for token in line)
        except KeyError as err:
            raise ValueError(
                f"{path}, line {lineno}: token {err.args[0]!r} is not in the vocabulary"
            ) from None
        out.append(eos)
    return out


# --------------------------------------------------------------------------------------------
# general_second_order: normalised PTB lines, unigram / bigram tokens, cross-validation folds

_NON_LETTERS = re.compile(r"[^A-Za-z]+")
UNIGRAM_VOCAB = (SPACE, *string.ascii_lowercase)
BIGRAM_VOCAB = (
    *UNIGRAM_VOCAB,
    *(a + b for a in string.ascii_lowercase for b in string.ascii_lowercase),
)


def normalise_line(line: str) -> str:
    """general_second_order preprocessing: every character other than an ASCII letter becomes a
    space, runs of spaces collapse to one, letters are lowercased and the ends stripped.

    PTB's placeholders survive as words: ``<unk>`` -> ``unk``, the number token ``N`` -> ``n``.
    """
    return _NON_LETTERS.sub(" ", line).strip().lower()


def normalise_lines(lines: Iterable[str]) -> tuple[list[str], int]:
    """``(kept, dropped)``: the normalised lines with at least ``MIN_LINE_CHARS`` characters
    (a shorter line has no next-character target) and how many were dropped."""
    kept, dropped = [], 0
    for line in lines:
        norm = normalise_line(line)
        if len(norm) >= MIN_LINE_CHARS:
            kept.append(norm)
        else:
            dropped += 1
    return kept, dropped


def ptb_lines(
    train: str | os.PathLike, valid: str | os.PathLike, test: str | os.PathLike
) -> tuple[list[str], int]:
    """general_second_order corpus: word-PTB train, valid and test lines in that order, normalised;
    returns ``(lines, dropped)``."""
    raw: list[str] = []
    for path in (train, valid, test):
        with open(path, encoding="utf-8") as f:
            raw.extend(f)
    return normalise_lines(raw)


def write_lines(lines: Iterable[str], path: str | os.PathLike) -> None:
    """Write normalised documents, one per line (spaces kept), atomically."""
    write_token_file((line.split(" ") for line in lines), path)


def read_lines(path: str | os.PathLike) -> list[str]:
    """Documents of a file written by ``write_lines``; ValueError naming file and line for a
    line that is not normalised or shorter than ``MIN_LINE_CHARS``."""
    lines = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            text = line.removesuffix("\n")
            if normalise_line(text) != text or len(text) < MIN_LINE_CHARS:
                raise ValueError(f"{path}:{lineno}: not a normalised line of >= 2 characters")
            lines.append(text)
    return lines


def unigram_tokens(line: str) -> list[str]:
    """Characters of a normalised line, space written as ``_``."""
    return [SPACE if ch == " " else ch for ch in line]


def bigram_tokens(line: str) -> list[str]:
    """Non-overlapping left-to-right letter pairs within each word, a leftover last letter on
    its own, spaces as ``_``: 'the state' -> th, e, _, st, at, e."""
    tokens: list[str] = []
    for i, word in enumerate(line.split(" ")):
        if i:
            tokens.append(SPACE)
        tokens.extend(word[j : j + 2] for j in range(0, len(word), 2))
    return tokens


TOKENIZERS = {"unigram": (unigram_tokens, UNIGRAM_VOCAB), "bigram": (bigram_tokens, BIGRAM_VOCAB)}


def token_char_lengths(vocab: Sequence[str]) -> list[int]:
    """Characters each token covers (``_`` and ``<eos>`` count 1, a pair 2), for bits per
    character from per-token losses."""
    return [1 if tok == EOS else len(tok) for tok in vocab]


def folds(
    n_lines: int, k: int = 5, seed: int = 0, val_fraction: float = 0.1
) -> list[tuple[list[int], list[int], list[int]]]:
    """``k`` cross-validation folds ``(train, val, test)`` of line indices (docs/methods.md §1.4).

    One permutation from ``random.Random(seed)``; fold i's test set is the i-th of k contiguous,
    near-equal chunks of it; the other lines, in permutation order, split into train and the
    last ``val_fraction`` (rounded) as validation: 72% / 8% / 20% for k = 5.
    """
    if not 2 <= k <= n_lines:
        raise ValueError(f"need 2 <= k <= n_lines, got k={k}, n_lines={n_lines}")
    order = list(range(n_lines))
    random.Random(seed).shuffle(order)
    bounds = [i * n_lines // k for i in range(k + 1)]
    out = []
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        rest = order[:lo] + order[hi:]
        n_train = len(rest) - round(val_fraction * len(rest))
        out.append((rest[:n_train], rest[n_train:], order[lo:hi]))
    return out


def prepare_fold(
    lines: Sequence[str],
    tokenization: Tokenization,
    fold: int,
    k: int = 5,
    seed: int = 0,
    *,
    train_lines: int | None = None,
    eval_lines: int | None = None,
) -> tuple[dict[str, list[list[str]]], list[str]]:
    """general_second_order splits of fold ``fold`` (0-based) in ``tokenization`` and the closed
    vocab."""
    if not 0 <= fold < k:
        raise ValueError(f"fold must be in 0..{k - 1}, got {fold}")
    tokenize, vocab = TOKENIZERS[tokenization]
    train_idx, val_idx, test_idx = folds(len(lines), k, seed)[fold]
    limits = {"train": train_lines, "val": eval_lines, "test": eval_lines}
    splits = {
        name: [tokenize(lines[i]) for i in head(idx, limits[name])]
        for name, idx in zip(SPLITS, (train_idx, val_idx, test_idx), strict=True)
    }
    return splits, list(vocab)


def encode(sequences: list[list[str]], index: dict[str, int], path: str) -> list[list[int]]:
    """Token ids; ValueError naming the file, line and token for a token outside the vocabulary."""
    out = []
    for line, seq in enumerate(sequences, 1):
        try:
            out.append([index[token] for token in seq])
        except KeyError as err:
            raise ValueError(
                f"{path}, line {line}: token {err.args[0]!r} is not in the vocabulary"
            ) from None
    return out
