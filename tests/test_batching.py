"""Vocabulary and padded episode batches."""

import random

import pytest
import torch

from rnnrepro.data.batching import IGNORE_INDEX, Vocabulary, lm_batches, padded_batches
from rnnrepro.data.dyck import vocabulary

PAD, BOS, EOS = 0, 1, 2


def test_vocabulary_ids_and_encode():
    voc = Vocabulary(vocabulary(2))
    assert (voc.pad_id, voc.bos_id, voc.eos_id) == (0, 1, 2)
    assert len(voc) == 7
    assert voc.tokens[voc.index["b)"]] == "b)"
    assert voc.encode(["(a", "(b", "b)", "a)"]) == [3, 5, 6, 4]
    with pytest.raises(ValueError, match="'c\\)'"):
        voc.encode(["(a", "c)"])


def test_vocabulary_requires_special_tokens():
    with pytest.raises(ValueError, match="eos"):
        Vocabulary(["<pad>", "<start>", "x"])
    voc = Vocabulary(["<eos>", "a", "b"], pad="<eos>", bos="<eos>", eos="<eos>")
    assert voc.pad_id == voc.bos_id == voc.eos_id == 0


def test_padded_batch_layout():
    seqs = [[3, 4], [5, 3, 4, 6], [7]]
    (batch,) = list(padded_batches(seqs, 8, BOS, EOS, PAD, shuffle=False))
    assert batch.indices == [0, 1, 2]
    assert batch.inputs.dtype == batch.targets.dtype == torch.long
    assert batch.inputs.tolist() == [[1, 1, 1], [3, 5, 7], [4, 3, 0], [0, 4, 0], [0, 6, 0]]
    assert batch.targets.tolist() == [[3, 5, 7], [4, 3, 2], [2, 4, 0], [0, 6, 0], [0, 2, 0]]


def test_last_partial_batch_kept_and_each_padded_to_its_own_longest():
    seqs = [[3] * n for n in (1, 5, 2, 2, 9)]
    batches = list(padded_batches(seqs, 2, BOS, EOS, PAD, shuffle=False))
    assert [b.indices for b in batches] == [[0, 1], [2, 3], [4]]
    assert [tuple(b.inputs.shape) for b in batches] == [(6, 2), (3, 2), (10, 1)]
    assert all(b.inputs.shape == b.targets.shape for b in batches)


def test_shuffle_is_a_deterministic_permutation():
    seqs = [[3] * (i % 7 + 1) for i in range(23)]

    def order(seed):
        return [i for b in padded_batches(seqs, 4, BOS, EOS, PAD, True, seed) for i in b.indices]

    assert order(5) == order(5)
    assert order(5) != order(6)
    assert sorted(order(5)) == list(range(23))
    assert order(5) != list(range(23))
    for batch in padded_batches(seqs, 4, BOS, EOS, PAD, shuffle=True, seed=5):
        for col, i in enumerate(batch.indices):
            n = len(seqs[i])
            assert batch.targets[: n + 1, col].tolist() == seqs[i] + [EOS]
            assert (batch.targets[n + 1 :, col] == PAD).all()


def test_sort_window_keeps_every_sequence_and_cuts_padding():
    rng = random.Random(0)
    seqs = [[1] * rng.randint(2, 200) for _ in range(400)]

    def padding(batches):
        return sum(int((b.targets == IGNORE_INDEX).sum()) for b in batches)

    plain = list(lm_batches(seqs, 16, shuffle=True, seed=3, bos_id=2, eos_id=2))
    sorted_ = list(lm_batches(seqs, 16, shuffle=True, seed=3, bos_id=2, eos_id=2, sort_window=5))
    assert sorted(i for b in sorted_ for i in b.indices) == list(range(400))
    assert padding(sorted_) < padding(plain) / 3
    again = list(lm_batches(seqs, 16, shuffle=True, seed=3, bos_id=2, eos_id=2, sort_window=5))
    assert [b.indices for b in again] == [b.indices for b in sorted_]
