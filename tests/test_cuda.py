"""Every registered architecture on CUDA equals itself on the CPU: logits, final state and every
parameter gradient, in float64 (to 1e-9) and float32 (cuDNN and the GPU's reductions are not
bit-exact: within 2e-4 relative, with TF32 off, ``rnnrepro.precision``). Skipped without CUDA
(CI has none); the GPU check (``tools/gpu_check.py``) runs it on a GPU machine.

The models run in training mode. The discrete stack samples its actions there
(``torch.multinomial``), which on CUDA would draw from the CUDA generator and on the CPU from the
CPU's: both runs take their draws from one seeded CPU generator instead (``cpu_draws``).
``tests/test_gpu_harness.py`` checks on the CPU that no model draws anything else.

``RNNREPRO_TEST_DEVICE=cpu`` runs the same comparisons CPU against CPU, which checks the harness
itself (every model builds, moves and runs) where there is no GPU.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

import pytest
import torch

from rnnrepro.models import REGISTRY, build_model

DEVICE = os.environ.get("RNNREPRO_TEST_DEVICE", "cuda")
pytestmark = pytest.mark.skipif(
    DEVICE == "cuda" and not torch.cuda.is_available(), reason="no CUDA device"
)

VOCAB = ["<pad>", "<start>", "<end>", "(a", "a)", "(b", "b)", "x", "y", "z"]
E, H = 6, 8
# name -> (architecture, hyper-parameters): each registered architecture, and the variants that
# take other code paths (memories, Major-Minor layers, mixture of softmaxes, second-order terms).
MODELS = {
    "lstm": ("lstm", {"embedding_dim": E, "hidden_size": H}),
    "lstm_2l": ("lstm", {"embedding_dim": E, "hidden_size": H, "num_layers": 2}),
    "attention_lstm": ("attention_lstm", {"embedding_dim": E, "hidden_size": H, "cells": 3}),
    "assignment_lstm": ("assignment_lstm", {"embedding_dim": E, "hidden_size": H}),
    "dyck_rnn": ("dyck_rnn", {"stack_depth": 4}),
    "dyck_rnn_2d": ("dyck_rnn", {"stack_depth": 3, "slot_dim": 2, "trainable_embedding": True}),
    "rnn": ("rnn", {"embedding_dim": E, "hidden_size": H}),
    "mrnn": ("mrnn", {"embedding_dim": E, "hidden_size": H}),
    "mlstm": ("mlstm", {"embedding_dim": E, "hidden_size": H}),
    "mmrnn": ("mmrnn", {"embedding_dim": E, "hidden_size": H, "choices": 3}),
    "mmlstm_2l": ("mmlstm", {"embedding_dim": E, "hidden_size": H, "num_layers": 2}),
    "second_order_rnn": ("second_order_rnn", {"hidden_size": H, "inner_size": 5}),
    "second_order_rnn_id": (
        "second_order_rnn",
        {"hidden_size": H, "inner_size": 5, "use_d": False, "activation": "identity"},
    ),
    "first_order_rnn": ("first_order_rnn", {"hidden_size": H}),
    "mi_rnn": ("mi_rnn", {"hidden_size": H}),
    **{
        f"memory_lstm_{memory}": ("memory_lstm", {"hidden_size": H, "memory": memory, "slots": 4})
        for memory in ("none", "attention", "continuous_stack", "discrete_stack", "multipop_stack")
    },
    "awd_lstm": ("awd_lstm", {"embedding_dim": E, "layer_sizes": [H, E]}),
    "awd_lstm_mos": ("awd_lstm", {"embedding_dim": E, "layer_sizes": [H, E], "experts": 3}),
    "awd_mmlstm_mos": (
        "awd_lstm",
        {"embedding_dim": E, "layer_sizes": [H, E], "major_proportions": [0.5, 0.5], "experts": 3},
    ),
    "luong_nmt": ("luong_nmt", {"embedding_dim": E, "layer_sizes": [H, H]}),
    "luong_nmt_mm": (
        "luong_nmt",
        {"embedding_dim": E, "layer_sizes": [H, H], "major_proportions": [0.75, 0.5]},
    ),
}
SOURCE_LENGTHS = [7, 5, 6, 3]  # an encoder-decoder's padded source batch


def test_every_registered_architecture_is_covered():
    assert {architecture for architecture, _ in MODELS.values()} == set(REGISTRY)


@contextmanager
def cpu_draws(seed: int) -> Iterator[None]:
    """``torch.multinomial`` drawn from one CPU generator seeded ``seed``, whatever the device
    of its probabilities: the same actions on CUDA and on the CPU."""
    draw, generator = torch.multinomial, torch.Generator().manual_seed(seed)

    def multinomial(probs: torch.Tensor, *args, **kwargs) -> torch.Tensor:
        return draw(probs.cpu(), *args, generator=generator, **kwargs).to(probs.device)

    with mock.patch.object(torch, "multinomial", multinomial):
        yield


def outputs_and_gradients(
    name: str, device: str, dtype: torch.dtype, global_seed: int = 3
) -> list[torch.Tensor]:
    """Logits, final state and parameter gradients of ``name`` on ``device``, on the CPU.
    ``global_seed`` seeds the global generators before the forward pass: a model that draws
    from them would differ between devices (``tests/test_gpu_harness.py``)."""
    architecture, hparams = MODELS[name]
    torch.manual_seed(0)
    model = build_model(architecture, VOCAB, **hparams).to(dtype=dtype)
    model.to(device)
    torch.manual_seed(global_seed)
    with cpu_draws(4):
        return _run(model, architecture, device)


def _run(model: torch.nn.Module, architecture: str, device: str) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(1)
    tokens = torch.randint(1, len(VOCAB), (12, 4), generator=gen)
    if architecture == "luong_nmt":  # an encoder-decoder: padded source, lengths, target
        src = tokens[:7].clone()
        for b, n in enumerate(SOURCE_LENGTHS):
            src[n:, b] = 0
        lengths = torch.tensor(SOURCE_LENGTHS)
        logits, state = model(src.to(device), lengths, tokens.to(device)), ()
    else:
        logits, state = model(tokens.to(device))
    weights = torch.randn(
        logits.shape, dtype=logits.dtype, generator=torch.Generator().manual_seed(2)
    )
    (logits * weights.to(device)).sum().backward()
    leaves = torch.utils._pytree.tree_leaves(state)
    states = [s.detach() for s in leaves if isinstance(s, torch.Tensor) and s.is_floating_point()]
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads, f"{architecture}: no parameter received a gradient"
    return [t.cpu() for t in (logits.detach(), *states, *grads)]


@pytest.mark.parametrize(
    ("dtype", "rtol", "atol"), [(torch.float64, 1e-9, 1e-11), (torch.float32, 2e-4, 1e-5)]
)
@pytest.mark.parametrize("name", MODELS)
@pytest.mark.usefixtures("full_fp32")
def test_forward_and_backward_on_cuda_equal_the_cpu(name, dtype, rtol, atol):
    ours = outputs_and_gradients(name, DEVICE, dtype)
    cpu = outputs_and_gradients(name, "cpu", dtype)
    assert len(ours) == len(cpu)
    for a, b in zip(ours, cpu, strict=True):
        torch.testing.assert_close(a, b, rtol=rtol, atol=atol)
