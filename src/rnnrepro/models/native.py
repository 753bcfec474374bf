"""The compiled time loops of the custom cells (``kernels/recurrences.cpp``), and when to use
them.

The C++ source is compiled on first use with ``torch.utils.cpp_extension`` (needs a C++
compiler and ninja; the build is cached under ``TORCH_EXTENSIONS_DIR``, default
``~/.cache/torch_extensions``). Each model's autograd Function calls ``kernels()`` and runs its
compiled loop when that returns the module, else its Python loop, which stays the fallback and
the test oracle. The kernels run on CPU tensors of float32/float64 up to ``MAX_HIDDEN`` units:
beyond that the step is a real matrix product, and the Python loops' BLAS calls are faster.

``RNNREPRO_KERNELS`` chooses: ``auto`` (default: compiled when the build succeeds, else Python
with a warning), ``python`` (always the Python loops) or ``native`` (an error if the build
fails). ``backend()`` names the one in use; runs record it in their metrics.
"""

from __future__ import annotations

import os
import warnings
from functools import cache
from pathlib import Path

import torch

SOURCE = Path(__file__).with_name("kernels") / "recurrences.cpp"
# files the compiled code is built from: part of the code digest of every job importing this
DIGEST_FILES = ("kernels/recurrences.cpp",)
MODES = ("auto", "python", "native")
# -fno-trapping-math and -fno-math-errno change no result; they let the compiler vectorise the
# activations' selects (kernels/recurrences.cpp)
FLAGS = ["-O3", "-fno-trapping-math", "-fno-math-errno"]
MAX_HIDDEN = 64  # above this many hidden units per step the Python loops (BLAS) are faster


def mode() -> str:
    """``RNNREPRO_KERNELS`` (``auto`` when unset); ValueError naming the variable if invalid."""
    value = os.environ.get("RNNREPRO_KERNELS", "auto")
    if value not in MODES:
        raise ValueError(f"RNNREPRO_KERNELS={value!r}: expected one of {', '.join(MODES)}")
    return value


def build_variant() -> tuple[str, list[str]]:
    """Module name and compiler flags for this CPU: AVX2/FMA code where torch finds AVX2 (or
    better), else the baseline. The name carries the variant, so a build cache shared by
    different machines (a cluster's home directory) never hands one the other's binary."""
    if torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512"):
        return "rnnrepro_recurrences_avx2", [*FLAGS, "-mavx2", "-mfma"]
    return "rnnrepro_recurrences", FLAGS


@cache
def _load(requested: str):
    if requested == "python":
        return None
    try:
        from torch.utils.cpp_extension import load

        name, flags = build_variant()
        return load(name=name, sources=[str(SOURCE)], extra_cflags=flags, verbose=False)
    except Exception as err:  # no compiler, no ninja, a failed build
        if requested == "native":
            raise RuntimeError(f"RNNREPRO_KERNELS=native: cannot build {SOURCE}: {err}") from err
        warnings.warn(
            f"compiled recurrences unavailable ({type(err).__name__}: {err}); using the Python "
            "loops (slower on CPU; same model). Install a C++ compiler and ninja to build them.",
            stacklevel=3,
        )
        return None


def kernels():
    """The compiled module, or None when the Python loops are to run."""
    return _load(mode())


def backend() -> str:
    """``native`` or ``python``: which loops CPU runs of the custom cells use."""
    return "python" if kernels() is None else "native"


def use_native(*tensors: torch.Tensor, hidden_size: int = 0):
    """The compiled module if it should run on ``tensors`` (CPU, all float32 or all float64, a
    recurrent matrix of at most ``MAX_HIDDEN`` units, 0 for none), else None."""
    if hidden_size > MAX_HIDDEN:
        return None
    if any(t.device.type != "cpu" or t.dtype not in _DTYPES for t in tensors):
        return None
    if len({t.dtype for t in tensors}) > 1:
        return None
    return kernels()


_DTYPES = (torch.float32, torch.float64)


def empty(like: torch.Tensor) -> torch.Tensor:
    """The "absent" argument of the kernels (an empty tensor)."""
    return like.new_empty(0)
