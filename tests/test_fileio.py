"""Atomic writes: complete or absent, and readable as the user's umask allows."""

from __future__ import annotations

import os
import stat

import pytest

from rnnrepro.data.dyck import write_sequences
from rnnrepro.fileio import atomic_open, write_text_atomic


@pytest.fixture(params=[0o022, 0o002, 0o077])
def umask(request):
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_written_files_follow_the_umask(tmp_path, umask):
    write_text_atomic(tmp_path / "a.txt", "x\n")
    write_sequences(tmp_path / "seqs.txt", [["(a", "a)"]])
    assert mode(tmp_path / "a.txt") == 0o666 & ~umask
    assert mode(tmp_path / "seqs.txt") == 0o666 & ~umask


def test_failed_write_leaves_destination_and_no_temporary(tmp_path):
    dest = tmp_path / "out.txt"
    dest.write_text("finished\n")
    with pytest.raises(RuntimeError), atomic_open(dest) as f:
        f.write("half")
        raise RuntimeError("killed")
    assert dest.read_text() == "finished\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_only_write_modes(tmp_path):
    with pytest.raises(ValueError, match="writes only"), atomic_open(tmp_path / "x", "a"):
        pass
