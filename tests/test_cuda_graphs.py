"""A training batch replayed from a CUDA graph (``bench_cells.time_training_graphed``, the GPU
check's ``cells_graphed.csv``) computes what the eager batch computes: the same loss gradients,
for each architecture of the paper-size text models. A model whose step cannot be captured
fails here with the capture's error. CUDA only (graphs need it); the GPU check runs it.

The models train (cuDNN refuses an RNN's backward pass in eval mode) with no dropout: their
forward pass draws nothing, so eager and replayed batches see the same numbers
(``tests/test_gpu_harness.py`` checks both on the CPU)."""

from __future__ import annotations

import pytest
import torch
from pipeline_utils import load_script

from rnnrepro.models import build_model

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

SIZE = {"B": 4, "T": 7, "vocab": [f"c{i}" for i in range(11)]}
MODELS = {
    "lstm": {"embedding_dim": 6, "hidden_size": 8},
    "rnn": {"embedding_dim": 6, "hidden_size": 8},
    "mrnn": {"embedding_dim": 6, "hidden_size": 8},
    "mlstm": {"embedding_dim": 6, "hidden_size": 8},
    "mmrnn": {"embedding_dim": 6, "hidden_size": 8},
    "mmlstm": {"embedding_dim": 6, "hidden_size": 8},
    "attention_lstm": {"embedding_dim": 6, "hidden_size": 8, "cells": 3},
    "second_order_rnn": {"hidden_size": 8, "inner_size": 5},
    "first_order_rnn": {"hidden_size": 8},
    "mi_rnn": {"hidden_size": 8},
}


def graph_model(name: str, device: torch.device) -> torch.nn.Module:
    """Model ``name`` as the test captures it: in training mode, its dropout at 0."""
    torch.manual_seed(0)
    return build_model(name, SIZE["vocab"], **MODELS[name]).to(device).train()


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.usefixtures("full_fp32")
def test_a_graphed_batch_gives_the_eager_gradients(name):
    bench_cells = load_script("benchmarks/bench_cells.py")
    device = torch.device("cuda")
    model = graph_model(name, device)
    torch.manual_seed(1)
    eager = bench_cells.training_batch(model, SIZE, device)
    eager()
    expected = {key: p.grad.clone() for key, p in model.named_parameters()}

    torch.manual_seed(1)  # the same tokens
    graph = bench_cells.capture(bench_cells.training_batch(model, SIZE, device), device, 1)
    for _ in range(2):  # the replay writes the same gradients each time
        graph.replay()
        torch.cuda.synchronize()
        for key, p in model.named_parameters():
            torch.testing.assert_close(p.grad, expected[key], rtol=2e-4, atol=1e-5, msg=key)
