"""Where a Dyck model's loss sits above the generator's floor: the kinds of target, and sums
that add up to the perplexity's excess over the floor."""

from __future__ import annotations

import math

import pytest
import torch

from rnnrepro.data import dyck
from rnnrepro.evaluation.dyck import evaluate_dyck
from rnnrepro.evaluation.dyck_excess import excess_by_kind, generator_targets
from rnnrepro.models import build_model


def test_each_target_has_its_kind_and_the_generators_probability():
    # (a (b b) a) then <end>, m = 2, min_len 4: the end is allowed after 4 tokens
    seq = ["(a", "(b", "b)", "a)"]
    targets = generator_targets(seq, k=2, m=2, min_len=4)
    assert [kind for kind, _ in targets] == ["empty", "inside", "inside", "inside", "end"]
    # empty before min_len: 1/k for an open; depth 1 < m: 0.5/k; depth m: 1; depth 1: 0.5
    expected = [1 / 2, 0.5 / 2, 1.0, 0.5, 0.5]
    assert [math.exp(-nll) for _, nll in targets] == pytest.approx(expected)
    total = -sum(nll for _, nll in targets)
    assert total == pytest.approx(dyck.sequence_log_prob(seq, 2, 2, 4))


def test_the_kinds_add_up_to_the_models_excess_over_the_floor():
    seqs = dyck.generate(12, 2, 3, 6, 20, seed=4)
    vocab = dyck.vocabulary(2)
    torch.manual_seed(0)
    model = build_model("lstm", vocab, embedding_dim=4, hidden_size=6)
    split = excess_by_kind(model, seqs, vocab, k=2, m=3, min_len=6, batch_size=5)
    assert set(split) == {"empty", "inside", "end"} and split["end"]["targets"] == 12
    targets = sum(s["targets"] for s in split.values())
    assert targets == sum(len(s) + 1 for s in seqs)
    model_ce = sum(s["model_ce"] * s["targets"] for s in split.values()) / targets
    result = evaluate_dyck(model, seqs, vocab)
    assert model_ce == pytest.approx(result.loss, rel=1e-6)
    floor = math.log(dyck.floor_perplexity(seqs, 2, 3, 6))
    excess = sum(s["excess"] * s["targets"] for s in split.values()) / targets
    assert excess == pytest.approx(result.loss - floor, rel=1e-6)
    assert sum(s["share"] for s in split.values()) == pytest.approx(1.0)
