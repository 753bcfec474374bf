"""Token vocabularies and padded, time-major batches of independent sequences (episodes)."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch


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


@dataclass(frozen=True)
class Batch:
    """inputs = [bos] + seq, targets = seq + [eos], both [T, B] padded; indices into the data."""

    inputs: torch.Tensor
    targets: torch.Tensor
    indices: list[int]


def padded_batches(
    sequences: Sequence[Sequence[int]],
    batch_size: int,
    bos_id: int,
    eos_id: int,
    pad_id: int,
    shuffle: bool,
    seed: int = 0,
) -> Iterator[Batch]:
    """Yield batches of whole sequences padded to the longest one in the batch.

    With ``shuffle`` the order is a permutation drawn from ``random.Random(seed)`` (the training
    loop passes run seed * 1000 + epoch); the last, possibly smaller, batch is kept.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    order = list(range(len(sequences)))
    if shuffle:
        random.Random(seed).shuffle(order)
    for start in range(0, len(order), batch_size):
        indices = order[start : start + batch_size]
        steps = max(len(sequences[i]) for i in indices) + 1
        inputs = torch.full((steps, len(indices)), pad_id, dtype=torch.long)
        targets = torch.full((steps, len(indices)), pad_id, dtype=torch.long)
        for col, i in enumerate(indices):
            seq = torch.as_tensor(list(sequences[i]), dtype=torch.long)
            inputs[0, col] = bos_id
            inputs[1 : len(seq) + 1, col] = seq
            targets[: len(seq), col] = seq
            targets[len(seq), col] = eos_id
        yield Batch(inputs, targets, indices)
