"""Atomic file writes that honour the user's umask.

A file is written to a hidden temporary file next to its destination and renamed into place
only when complete, so a destination never exists half-written. The temporary file is created
with mode 0666 minus the umask (``tempfile.mkstemp`` would give 0600, and the rename keeps the
mode), so results in a group-shared directory stay readable by colleagues.
"""

from __future__ import annotations

import contextlib
import csv
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO


def temporary_path(dest: Path) -> Path:
    """A unique hidden sibling of ``dest`` for writing before the rename."""
    return dest.with_name(f".{dest.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.part")


@contextlib.contextmanager
def atomic_open(dest: str | os.PathLike, mode: str = "w", **kwargs) -> Iterator[IO]:
    """Open a temporary file for writing (``mode`` "w" or "wb") that replaces ``dest`` on a
    clean exit only; on an exception the temporary file is removed and ``dest`` is untouched."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes only ('w' or 'wb'), not {mode!r}")
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_path(dest)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # 0666 & ~umask
    try:
        with os.fdopen(fd, mode, **kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text_atomic(dest: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``dest`` atomically."""
    with atomic_open(dest, "w", encoding="utf-8") as f:
        f.write(text)


def write_csv_atomic(frame, dest: str | os.PathLike, **kwargs) -> None:
    """``frame.to_csv`` (a pandas DataFrame) to ``dest`` atomically."""
    with atomic_open(dest, "w", newline="") as f:
        frame.to_csv(f, **kwargs)


class UnreadableFile(ValueError):
    """A torch file that cannot be read back (truncated, corrupt, or not weights only)."""


def save_torch(obj, dest: str | os.PathLike) -> None:
    """``torch.save`` to ``dest`` atomically. Serialised in memory first, so that a full disk
    fails in the write with the system's own "No space left on device" (torch's writer would
    report an internal assertion) and leaves no partial file."""
    import io

    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    with atomic_open(dest, "wb") as f:
        f.write(buffer.getbuffer())


def load_torch(path: str | os.PathLike, map_location="cpu"):
    """``torch.load`` of tensors and plain containers only (``weights_only``); a file that
    cannot be read so is an ``UnreadableFile`` naming it (FileNotFoundError stays as it is)."""
    import torch

    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except FileNotFoundError:
        raise
    except Exception as error:  # torch raises RuntimeError, EOFError, UnpicklingError, KeyError…
        # the first sentence: torch's zip reader appends a paragraph of advice
        reason = str(error).strip().splitlines()[0].split(". ")[0] if str(error).strip() else ""
        raise UnreadableFile(
            f"{path}: unreadable ({type(error).__name__}{': ' + reason if reason else ''})"
        ) from error


def set_aside(path: str | os.PathLike) -> Path:
    """Rename an unreadable file to ``<name>.unreadable-<UTC time>`` beside it (kept for a
    look, never read again); returns the new path."""
    import time

    path = Path(path)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = path.with_name(f"{path.name}.unreadable-{stamp}")
    os.replace(path, aside)
    return aside


def write_rows(path: str | Path, rows: list[dict], append: bool = False) -> None:
    """``rows`` (dicts with the same keys, in the first row's order) as a CSV file; with
    ``append``, added after the rows of an existing file (whose header they must share)."""
    path = Path(path)
    new = not (append and path.exists())
    with path.open("w" if new else "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        if new:
            writer.writeheader()
        writer.writerows(rows)
