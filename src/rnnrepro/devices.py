"""Device selection, including one GPU per concurrent job on a multi-GPU workstation.

Snakemake only counts GPUs (``--resources gpu=N``) and never says which one a job should use
(snakemake#281). Under a scheduler that binds devices (SLURM sets ``CUDA_VISIBLE_DEVICES``) a job
sees exactly its own GPU(s) and takes the first. When a job sees several GPUs, it claims a free one
from a pool of lock files: an exclusive ``flock`` held for the life of the process, released by the
kernel when the process ends, however it ends.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import time
from pathlib import Path
from typing import IO

import torch

_claimed: list[IO] = []  # lock files held by this process (kept open on purpose)


def default_lock_dir() -> Path:
    """Machine-wide pool directory (``RNNREPRO_GPU_LOCK_DIR`` overrides)."""
    default = Path(tempfile.gettempdir()) / f"rnnrepro-gpu-locks-{os.getuid()}"
    return Path(os.environ.get("RNNREPRO_GPU_LOCK_DIR", default))


def claim_device(count: int, lock_dir: Path, timeout: float = 3600.0, poll: float = 1.0) -> int:
    """Claim the first free device index in ``range(count)``; wait up to ``timeout`` seconds."""
    lock_dir.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout
    while True:
        for index in range(count):
            handle = open(lock_dir / f"gpu{index}.lock", "w")  # noqa: SIM115 (held until exit)
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            handle.write(f"{os.getpid()}\n")
            handle.flush()
            _claimed.append(handle)
            return index
        if time.monotonic() >= deadline:
            raise RuntimeError(
                f"no free GPU among {count} after {timeout:.0f} s (locks in {lock_dir}); "
                "run fewer concurrent jobs (--resources gpu=N) or set CUDA_VISIBLE_DEVICES"
            )
        time.sleep(poll)


def select_device(name: str = "auto", lock_dir: Path | None = None) -> torch.device:
    """``auto``: CUDA when available, else CPU. ``cuda`` with several visible GPUs: a free one."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda":
        count = torch.cuda.device_count()
        index = claim_device(count, lock_dir or default_lock_dir()) if count > 1 else 0
        return torch.device(f"cuda:{index}")
    return torch.device(name)
