"""Shared fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Deterministic cuBLAS in every process the tests start (training subprocesses included):
# without it, PyTorch's deterministic mode (warn_only) lets cuBLAS reduce in any order, and a
# resumed CUDA run need not repeat an uninterrupted one. No effect without CUDA.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture
def full_fp32():
    """TF32 off for the test (``rnnrepro.precision``): CUDA float32 compared with the CPU's."""
    from rnnrepro import precision

    saved = precision.tf32_settings()
    precision.full_fp32()
    yield
    precision.restore(saved)


@pytest.fixture
def one_thread():
    """Tiny tensors: intra-op threads only add synchronisation (10x slower on a busy machine)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
