"""The compiled time loops (rnnrepro.models.native) against the Python loops they replace."""

from __future__ import annotations

import math
import os

import pytest
import torch

from rnnrepro.models import build_model, native
from rnnrepro.models.attention_lstm import MixedLSTMFunction

VOCAB = ["<pad>", "<start>", "<end>", "(a", "a)", "(b", "b)"]
CELLS = {
    "rnn": {"embedding_dim": 5, "hidden_size": 6},
    "mrnn": {"embedding_dim": 5, "hidden_size": 6},
    "mlstm": {"embedding_dim": 5, "hidden_size": 6},
    "mmrnn": {"embedding_dim": 5, "hidden_size": 6, "choices": 3},
    "mmlstm": {"embedding_dim": 5, "hidden_size": 6, "choices": 3},
    "mmlstm_2l": {"embedding_dim": 5, "hidden_size": 6, "choices": 2, "num_layers": 2},
    "attention_lstm": {"embedding_dim": 5, "hidden_size": 6, "cells": 3},
    "assignment_lstm": {"embedding_dim": 5, "hidden_size": 6},
    "dyck_rnn": {"stack_depth": 4},
    "dyck_rnn_2d": {"stack_depth": 3, "slot_dim": 2, "trainable_embedding": True},
    "first_order_rnn": {"hidden_size": 6},
}
ARCHITECTURE = {"mmlstm_2l": "mmlstm", "dyck_rnn_2d": "dyck_rnn"}


@pytest.fixture(scope="module", autouse=True)
def kernels():
    """The compiled module; on CI (a C++ compiler is installed) a failed build is an error."""
    module = native.kernels()
    if module is None:
        if os.environ.get("CI"):
            pytest.fail("the compiled recurrences did not build on CI")
        pytest.skip("no C++ compiler: the compiled recurrences are not built here")
    return module


def outputs_and_gradients(name, mode, dtype, monkeypatch, steps=9, batch=4):
    """Logits, final state and every parameter gradient of ``name`` under RNNREPRO_KERNELS."""
    monkeypatch.setenv("RNNREPRO_KERNELS", mode)
    torch.manual_seed(0)
    model = build_model(ARCHITECTURE.get(name, name), VOCAB, **CELLS[name]).to(dtype)
    gen = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, len(VOCAB), (steps, batch), generator=gen)
    logits, state = model(tokens)
    weights = torch.randn(logits.shape, dtype=dtype, generator=torch.Generator().manual_seed(2))
    (logits * weights).sum().backward()
    flat_state = [s for s in torch.utils._pytree.tree_leaves(state) if isinstance(s, torch.Tensor)]
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    return [logits.detach(), *[s.detach() for s in flat_state], *grads]


@pytest.mark.parametrize("name", CELLS)
def test_compiled_loops_equal_the_python_loops_in_float64(name, monkeypatch):
    ours = outputs_and_gradients(name, "native", torch.float64, monkeypatch)
    oracle = outputs_and_gradients(name, "python", torch.float64, monkeypatch)
    assert len(ours) == len(oracle) > 2
    for a, b in zip(ours, oracle, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("name", ["mmrnn", "mmlstm", "mmlstm_2l"])
def test_large_batches_take_the_batched_product_and_agree_too(name, monkeypatch):
    """From GEMM_MIN_BATCH (32) examples on, the multi-matrix loops multiply the whole batch
    at once (one BLAS call per step): the other branch of the same kernels."""
    ours = outputs_and_gradients(name, "native", torch.float64, monkeypatch, steps=5, batch=40)
    oracle = outputs_and_gradients(name, "python", torch.float64, monkeypatch, steps=5, batch=40)
    for a, b in zip(ours, oracle, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("name", ["mlstm", "mmlstm", "attention_lstm", "rnn"])
def test_compiled_loops_in_float32_are_within_rounding(name, monkeypatch):
    """float32 uses the kernels' own exp/tanh (a few ulp from libm and torch's)."""
    ours = outputs_and_gradients(name, "native", torch.float32, monkeypatch, steps=60)
    oracle = outputs_and_gradients(name, "python", torch.float32, monkeypatch, steps=60)
    for a, b in zip(ours, oracle, strict=True):
        torch.testing.assert_close(a, b, rtol=2e-5, atol=2e-6)


def test_the_kernels_activations_match_libm_and_keep_nan(kernels):
    x = torch.cat([torch.linspace(-100, 100, 20001), torch.tensor([0.0, 1e-8, -1e-8, 0.6249])])
    B = len(x)

    def tanh(values):  # one step of the tanh RNN from a zero state: h = tanh(x)
        return kernels.multiplicative_forward(
            values.view(1, B, 1), torch.empty(0), torch.zeros(1, 1), torch.zeros(B, 1),
            torch.empty(0),
        )[0][1].flatten()  # fmt: skip

    exact = torch.tanh(x.double())
    assert ((tanh(x).double() - exact).abs() <= 4e-7 * exact.abs() + 1e-45).all()
    x[5] = math.nan
    assert tanh(x).isnan().nonzero().flatten().tolist() == [5]


def test_a_nan_weight_gives_a_nan_loss_not_a_finite_one(monkeypatch):
    """A diverged run must show up as a non-finite loss (the loop's check), as in Python."""
    monkeypatch.setenv("RNNREPRO_KERNELS", "native")
    torch.manual_seed(0)
    for name in ("mlstm", "mmlstm", "attention_lstm"):
        model = build_model(name, VOCAB, **CELLS[name])
        with torch.no_grad():
            next(p for n, p in model.named_parameters() if n.startswith("body")).view(-1)[0] = (
                math.nan
            )
        logits, _ = model(torch.randint(0, len(VOCAB), (5, 2)))
        assert logits.isnan().any(), name


def test_the_candidate_dropout_mask_matches_python(monkeypatch):
    """MixedLSTMFunction's optional g-mask (recurrent dropout), in both loops."""
    T, B, S, h = 7, 3, 2, 5
    gen = torch.Generator().manual_seed(3)
    inputs = [
        torch.randn(T, B, 4 * S * h, dtype=torch.float64, generator=gen),
        torch.softmax(torch.randn(T, B, S, dtype=torch.float64, generator=gen), -1),
        0.3 * torch.randn(4 * S * h, h, dtype=torch.float64, generator=gen),
        torch.randn(B, h, dtype=torch.float64, generator=gen),
        torch.randn(B, h, dtype=torch.float64, generator=gen),
    ]
    mask = (torch.rand(T, B, h, generator=gen, dtype=torch.float64) > 0.3).double() / 0.7
    results = []
    for mode in ("native", "python"):
        monkeypatch.setenv("RNNREPRO_KERNELS", mode)
        leaves = [t.clone().requires_grad_() for t in inputs]
        hs, c = MixedLSTMFunction.apply(*leaves, mask)
        (hs.sum() + (c * c).sum()).backward()
        results.append([hs.detach(), c.detach(), *(t.grad for t in leaves)])
    for a, b in zip(*results, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-11, atol=1e-12)


def test_the_compiled_loops_are_deterministic(monkeypatch):
    first = outputs_and_gradients("mmlstm", "native", torch.float32, monkeypatch, steps=40)
    second = outputs_and_gradients("mmlstm", "native", torch.float32, monkeypatch, steps=40)
    for a, b in zip(first, second, strict=True):
        assert torch.equal(a, b)


def test_when_the_compiled_loops_run(monkeypatch):
    x = torch.zeros(2, 2)
    assert native.use_native(x, hidden_size=native.MAX_HIDDEN) is not None
    assert native.use_native(x, hidden_size=native.MAX_HIDDEN + 1) is None  # BLAS wins
    assert native.use_native(x, x.double(), hidden_size=4) is None  # mixed dtypes
    assert native.use_native(x.half(), hidden_size=4) is None
    monkeypatch.setenv("RNNREPRO_KERNELS", "python")
    assert native.use_native(x, hidden_size=4) is None and native.backend() == "python"
    monkeypatch.setenv("RNNREPRO_KERNELS", "fast")
    with pytest.raises(ValueError, match="RNNREPRO_KERNELS='fast'"):
        native.kernels()
