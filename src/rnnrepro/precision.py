"""Float32 precision on CUDA: TensorFloat-32 (TF32) off, and what is in force.

On Ampere and later GPUs PyTorch may compute float32 matrix products and cuDNN convolutions and
RNNs in TF32 (10 mantissa bits). Since torch 2.9 the defaults are: cuBLAS matmuls in full FP32,
cuDNN convolutions and RNNs in TF32. So an ``nn.LSTM`` (cuDNN) runs at a lower precision than
the custom cells (cuBLAS), unless TF32 is turned off.

The CUDA tests compare CUDA with the CPU in float32 to 2e-4, and the GPU check compares every
custom cell with cuDNN: both turn TF32 off (``full_fp32``). The pipeline's own runs keep
PyTorch's defaults (docs/cluster.md, "Float32 precision"). Pure settings: nothing here needs a GPU.
"""

from __future__ import annotations

import torch

# the settings reported, as paths under torch.backends (torch >= 2.9)
_SETTINGS = ("cuda.matmul", "cudnn.conv", "cudnn.rnn")


def _new_api() -> bool:
    """Whether this torch has the per-backend ``fp32_precision`` settings (2.9 and later;
    reading the legacy ``allow_tf32`` flags after setting these raises)."""
    return hasattr(torch.backends, "fp32_precision")


def _backend(path: str):
    backend = torch.backends
    for part in path.split("."):
        backend = getattr(backend, part)
    return backend


def full_fp32() -> None:
    """Compute float32 in IEEE FP32 everywhere: TF32 off for matmuls and cuDNN."""
    restore(dict.fromkeys(_SETTINGS, "ieee"))


def restore(settings: dict[str, str]) -> None:
    """Put back what ``tf32_settings`` returned (or set each backend to ``ieee``/``tf32``)."""
    if _new_api():
        for path in _SETTINGS:
            _backend(path).fp32_precision = settings[path]
    else:
        torch.backends.cuda.matmul.allow_tf32 = settings["cuda.matmul"] == "tf32"
        torch.backends.cudnn.allow_tf32 = settings["cudnn.rnn"] == "tf32"


def tf32_settings() -> dict[str, str]:
    """Each float32 backend setting in force: ``ieee`` (full FP32) or ``tf32``."""
    if _new_api():
        settings = {path: _backend(path).fp32_precision for path in _SETTINGS}
        if settings["cuda.matmul"] == "none":  # unset: torch.set_float32_matmul_precision's
            highest = torch.get_float32_matmul_precision() == "highest"
            settings["cuda.matmul"] = "ieee" if highest else "tf32"
        return settings
    matmul = "tf32" if torch.backends.cuda.matmul.allow_tf32 else "ieee"
    cudnn = "tf32" if torch.backends.cudnn.allow_tf32 else "ieee"
    return {"cuda.matmul": matmul, "cudnn.conv": cudnn, "cudnn.rnn": cudnn}
