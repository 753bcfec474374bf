"""The CUDA tests' own harness, checked where there is no GPU: whatever would make a CUDA test
fail for the test's reasons rather than the model's. The CUDA tests compare a model on two
devices (or eager against replayed), so neither run may draw from the global generators (CUDA
and the CPU draw differently), float32 must be full FP32 on both, and cuBLAS deterministic in
every process they start."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref

import pytest
import test_cuda
import test_cuda_graphs
import torch
from pipeline_utils import load_script

from rnnrepro import precision

CPU = torch.device("cpu")


@pytest.mark.parametrize("name", test_cuda.MODELS)
def test_the_device_comparison_draws_nothing_from_the_global_generators(name):
    first = test_cuda.outputs_and_gradients(name, "cpu", torch.float64, global_seed=3)
    second = test_cuda.outputs_and_gradients(name, "cpu", torch.float64, global_seed=5)
    for a, b in zip(first, second, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_the_discrete_stack_samples_in_training_so_its_draws_must_be_shared():
    """Without ``cpu_draws`` the stack's actions follow the global seed: the test above has
    something to catch."""
    architecture, hparams = test_cuda.MODELS["memory_lstm_discrete_stack"]
    tokens = torch.randint(1, len(test_cuda.VOCAB), (12, 4), generator=torch.Generator())
    logits = []
    for seed in (3, 5):
        torch.manual_seed(0)
        model = test_cuda.build_model(architecture, test_cuda.VOCAB, **hparams).double()
        torch.manual_seed(seed)
        logits.append(model(tokens)[0].detach())
    assert not torch.equal(*logits)


@pytest.mark.parametrize("name", test_cuda_graphs.MODELS)
def test_the_graphed_models_train_and_draw_nothing(name):
    model = test_cuda_graphs.graph_model(name, CPU)
    assert model.training  # cuDNN has no RNN backward pass in eval mode
    tokens = torch.randint(0, len(test_cuda_graphs.SIZE["vocab"]), (7, 4))
    outputs = []
    for seed in (3, 5):
        torch.manual_seed(seed)
        outputs.append(model(tokens)[0].detach())
    torch.testing.assert_close(*outputs, rtol=0, atol=0)


def test_a_captured_batch_keeps_its_tokens_alive(monkeypatch):
    """A graph replays its kernels on the addresses of capture time: the step that owns the
    input tokens must live as long as the graph. The first H200 run (tests.csv,
    ``gpu_check_h200/``) failed the graph tests with an out-of-bounds index after the first
    model: its tokens' memory had been handed on between replays."""
    bench_cells = load_script("benchmarks/bench_cells.py")

    class Nothing:  # the CUDA calls of ``capture``, without a GPU
        def __init__(self, *args, **kwargs):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        wait_stream = replay = __init__

    for name in ("Stream", "stream", "current_stream", "graph", "CUDAGraph"):
        monkeypatch.setattr(torch.cuda, name, Nothing)
    model = test_cuda_graphs.graph_model("lstm", CPU)
    step = bench_cells.training_batch(model, test_cuda_graphs.SIZE, CPU)
    tokens = weakref.ref(step.__closure__[step.__code__.co_freevars.index("tokens")].cell_contents)
    captured = bench_cells.capture(step, CPU, warmup=1)
    del step
    gc.collect()
    assert tokens() is not None
    captured.replay()
    del captured
    gc.collect()
    assert tokens() is None


def test_full_fp32_turns_tf32_off_and_restore_puts_it_back():
    before = precision.tf32_settings()
    assert set(before) == {"cuda.matmul", "cudnn.conv", "cudnn.rnn"}
    precision.full_fp32()
    try:
        assert precision.tf32_settings() == dict.fromkeys(before, "ieee")
    finally:
        precision.restore(before)
    assert precision.tf32_settings() == before


def test_the_cuda_comparisons_run_in_full_fp32(full_fp32):
    assert set(precision.tf32_settings().values()) == {"ieee"}


def test_every_process_the_tests_start_has_deterministic_cublas():
    code = "import os; print(os.environ.get('CUBLAS_WORKSPACE_CONFIG'))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.strip() == ":4096:8"
