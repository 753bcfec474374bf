"""Token vocabularies, padded time-major batches of independent sequences, and stream windows."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

from .text import iter_token_file, stream_ids


class Vocabulary:
    """Bidirectional token <-> id map with named pad / begin / end tokens."""

    def __init__(
        self, tokens: Sequence[str], pad: str = "<pad>", bos: str = "<start>", eos: str = "<end>"
    ) -> None:
        self.tokens = list(tokens)
        self.index = {tok: i for i, tok in enumerate(self.tokens)}
        if len(self.index) != len(self.tokens):
            raise ValueError("vocabulary has duplicate tokens")
        for role, tok in (("pad", pad), ("bos", bos), ("eos", eos)):
            if tok not in self.index:
                raise ValueError(f"{role} token {tok!r} is not in the vocabulary")
        self.pad_id = self.index[pad]
        self.bos_id = self.index[bos]
        self.eos_id = self.index[eos]

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Token ids of ``tokens``; ValueError naming the first unknown token."""
        try:
            return [self.index[tok] for tok in tokens]
        except KeyError as err:
            raise ValueError(f"token {err.args[0]!r} is not in the vocabulary") from None

    def __len__(self) -> int:
        return len(self.tokens)


IGNORE_INDEX = -100  # target padding skipped by torch.nn.functional.cross_entropy


@dataclass(frozen=True)
class Batch:
    """Time-major [T, B] padded inputs and next-token targets; indices into the data."""

    inputs: torch.Tensor
    targets: torch.Tensor
    indices: list[int]


def lm_batches(
    sequences: Sequence[Sequence[int]],
    batch_size: int,
    *,
    shuffle: bool,
    seed: int = 0,
    bos_id: int | None = None,
    eos_id: int | None = None,
    input_pad: int = 0,
    target_pad: int = IGNORE_INDEX,
    sort_window: int | None = None,
) -> Iterator[Batch]:
    """Batches of whole sequences for next-token prediction, padded to the batch's longest.

    Each sequence is extended to ``full = [bos] + seq + [eos]`` (either end only when its id is
    given); inputs = full[:-1], targets = full[1:]. With both (multi_matrix) inputs = [bos] + seq,
    targets = seq + [eos]; with neither (general_second_order) inputs = seq[:-1],
    targets = seq[1:]. A sequence whose ``full`` is shorter than 2 has no target and is skipped.
    Padding: inputs get ``input_pad``, targets ``target_pad``. With ``shuffle`` the order is a
    permutation drawn from ``random.Random(seed)`` (the training loop passes run seed * 1000 +
    epoch); the last, possibly smaller, batch is kept.

    ``sort_window`` (with ``shuffle``) cuts padding: the shuffled order is cut into windows of
    ``sort_window`` batches, each window is sorted by length and cut into batches, and the
    batches are shuffled again (same random stream). Batches stay random, lengths similar.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    prefix = [] if bos_id is None else [bos_id]
    suffix = [] if eos_id is None else [eos_id]
    order = list(range(len(sequences)))
    if shuffle:
        random.Random(seed).shuffle(order)
    min_len = 2 - len(prefix) - len(suffix)
    if min_len > 0:
        order = [i for i in order if len(sequences[i]) >= min_len]
    starts = range(0, len(order), batch_size)
    if shuffle and sort_window:
        window = batch_size * sort_window
        order = [
            i
            for w in range(0, len(order), window)
            for i in sorted(order[w : w + window], key=lambda i: len(sequences[i]))
        ]
        starts = list(starts)
        random.Random(seed + 1).shuffle(starts)

    def batches() -> Iterator[Batch]:
        for start in starts:
            indices = order[start : start + batch_size]
            full = [prefix + list(sequences[i]) + suffix for i in indices]
            steps = max(len(seq) for seq in full) - 1
            inputs = [seq[:-1] + [input_pad] * (steps + 1 - len(seq)) for seq in full]
            targets = [seq[1:] + [target_pad] * (steps + 1 - len(seq)) for seq in full]
            yield Batch(
                torch.tensor(inputs, dtype=torch.long).T.contiguous(),
                torch.tensor(targets, dtype=torch.long).T.contiguous(),
                indices,
            )

    return batches()


def padded_batches(
    sequences: Sequence[Sequence[int]],
    batch_size: int,
    bos_id: int,
    eos_id: int,
    pad_id: int,
    shuffle: bool,
    seed: int = 0,
) -> Iterator[Batch]:
    """Episode batches: inputs = [bos] + seq, targets = seq + [eos], both padded with ``pad_id``
    (``lm_batches`` with both ends and one pad id)."""
    return lm_batches(
        sequences,
        batch_size,
        shuffle=shuffle,
        seed=seed,
        bos_id=bos_id,
        eos_id=eos_id,
        input_pad=pad_id,
        target_pad=pad_id,
    )


def variable_bptt_lengths(bptt: int, seed: int, max_delta: int | None = None) -> Iterator[int]:
    """AWD-LSTM's random window lengths (docs/methods.md §7.1): mean ``bptt`` with probability
    0.95, else ``bptt / 2``; the length is ``max(5, int(N(mean, 5)))``, at most ``bptt +
    max_delta`` (MoS's ``max_seq_len_delta``) when given. Drawn from a generator seeded with
    ``seed``, so an epoch's windows are the same on every pass (and after a resume)."""
    generator = torch.Generator().manual_seed(seed)
    cap = None if max_delta is None else bptt + max_delta
    while True:
        mean = bptt if torch.rand((), generator=generator).item() < 0.95 else bptt / 2
        length = max(5, int(mean + 5 * torch.randn((), generator=generator).item()))
        yield length if cap is None else min(length, cap)


def read_stream(path: str | os.PathLike, index: dict[str, int]) -> torch.Tensor:
    """A token file (one line per sequence) as one stream of ids, every line then ``<eos>``
    (``text.stream_ids``), read line by line: only the ids are held (8 bytes per token)."""
    ids = stream_ids(iter_token_file(path, empty_lines=True), index, str(path))
    if not ids:
        return torch.empty(0, dtype=torch.long)
    return torch.frombuffer(ids, dtype=torch.int64)


def stream_batches(
    ids: Sequence[int] | torch.Tensor,
    batch_size: int,
    bptt: int,
    lengths: Iterator[int] | None = None,
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """BPTT windows ``(inputs, targets)`` [T, B] over one token stream (docs/methods.md §1.6).

    The stream is cut into ``batch_size`` equal columns (the remainder dropped); column b is
    stream[b * n : (b + 1) * n] and each window continues every column of the previous one, so
    recurrent state can be carried across windows. Windows have ``bptt`` steps (or the next of
    ``lengths``, e.g. ``variable_bptt_lengths``), the last one possibly fewer; targets are the
    inputs shifted one step ahead in the stream.
    """
    if batch_size < 1 or bptt < 1:
        raise ValueError(f"batch_size and bptt must be >= 1, got {batch_size}, {bptt}")
    stream = torch.as_tensor(ids, dtype=torch.long)
    if stream.dim() != 1:
        raise ValueError(f"ids must be one-dimensional, got shape {tuple(stream.shape)}")
    n = len(stream) // batch_size
    if n < 2:
        raise ValueError(f"{len(stream)} tokens are too few for {batch_size} columns")
    columns = stream[: n * batch_size].view(batch_size, n).T.contiguous()

    def windows() -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        start = 0
        while start < n - 1:
            steps = min(bptt if lengths is None else next(lengths), n - 1 - start)
            yield columns[start : start + steps], columns[start + 1 : start + 1 + steps]
            start += steps

    return windows()
