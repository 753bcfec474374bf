"""Where the compiled recurrences are built: one cache per Python environment.

torch builds ``models/kernels/recurrences.cpp`` (``models/native.py``) under
``TORCH_EXTENSIONS_DIR``, by default one directory per user and Python version. Environments that
share it (a venv beside a conda env, CI beside a working copy) overwrite each other's build: the
first use in the other one rebuilds it (~30 s, during which every job of both waits), and a job
killed while it holds torch's build lock leaves the lock file behind, so that every later job of
any of them waits on it for ever, without a message. The workflow therefore gives each
environment (``sys.prefix``) a cache of its own unless ``TORCH_EXTENSIONS_DIR`` is set, and
removes a lock file that no build can still hold. Pure Python (the Snakefile imports it).
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

VARIABLE = "TORCH_EXTENSIONS_DIR"
# A build takes well under a minute (~30 s on 2 cores); a lock this old was left by a killed one.
STALE_LOCK_SECONDS = 600


def extensions_dir(prefix: str | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """``TORCH_EXTENSIONS_DIR`` when set, else a directory of the user's cache named after the
    environment ``prefix`` (default ``sys.prefix``)."""
    environ = os.environ if environ is None else environ
    if environ.get(VARIABLE):
        return Path(environ[VARIABLE])
    prefix = sys.prefix if prefix is None else prefix
    cache = Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    tag = hashlib.sha256(os.path.realpath(prefix).encode()).hexdigest()[:12]
    return cache / "torch_extensions" / f"rnnrepro-{tag}"


def use_own_cache(environ: dict[str, str] | None = None) -> Path:
    """Set ``TORCH_EXTENSIONS_DIR`` in ``environ`` (default ``os.environ``, which the jobs
    inherit) to this environment's cache unless it is set; returns it."""
    environ = os.environ if environ is None else environ
    root = extensions_dir(environ=environ)
    environ[VARIABLE] = str(root)
    return root


def remove_stale_locks(root: Path) -> list[Path]:
    """Remove torch's build lock files of our build under ``root`` older than
    ``STALE_LOCK_SECONDS`` (left by killed builds); returns them."""
    if not root.is_dir():
        return []
    now = time.time()
    removed = sorted(
        lock
        for lock in root.glob("**/rnnrepro_recurrences*/lock")
        if now - lock.stat().st_mtime > STALE_LOCK_SECONDS
    )
    for lock in removed:
        lock.unlink(missing_ok=True)
    return removed
