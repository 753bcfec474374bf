"""Shared fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rnnrepro import buildcache

ROOT = Path(__file__).resolve().parents[1]
# Deterministic cuBLAS in every process the tests start (training subprocesses included):
# without it, PyTorch's deterministic mode (warn_only) lets cuBLAS reduce in any order, and a
# resumed CUDA run need not repeat an uninterrupted one. No effect without CUDA.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
# One intra-op thread in this process and the ones it starts (read when torch is imported):
# the tests' tensors are tiny, and with the workers of ``-n auto`` or a training beside them
# on 2 cores, each extra thread only waits at barriers (test_dynamic_eval_modes: 115 s with
# 2 threads beside a training, 7 s with 1). Snakemake sets it per job from the rule's threads.
os.environ.setdefault("OMP_NUM_THREADS", "1")
# The compiled recurrences in the build cache the workflow's jobs use (rnnrepro.buildcache), so
# that the tests' own processes and the pipelines they start build them once, not twice.
buildcache.use_own_cache()


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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files that mostly wait first (SLURM's scheduling: the other workers' pipelines,
    which run jobs on 2 cores, fill the idle core), then those with slow (pipeline) tests, each
    file's tests in their order: with ``-n auto --dist loadfile`` a long file handed out last
    keeps one worker busy while the others have finished."""

    def files(marker: str) -> set:
        return {item.path for item in items if item.get_closest_marker(marker)}

    waits, slow = files("waits"), files("slow")
    items.sort(key=lambda item: (item.path not in waits, item.path not in slow))
