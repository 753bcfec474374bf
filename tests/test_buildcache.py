"""The build cache of the compiled recurrences: one per Python environment, stale locks removed."""

import os
import time
from pathlib import Path

from rnnrepro import buildcache


def test_each_environment_gets_its_own_cache(tmp_path):
    environ = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    venv, conda = tmp_path / "venv", tmp_path / "conda"
    venv.mkdir()
    conda.mkdir()
    (tmp_path / "link").symlink_to(venv)
    first = buildcache.extensions_dir(str(venv), environ)
    assert first.parent == tmp_path / "cache" / "torch_extensions"
    assert first != buildcache.extensions_dir(str(conda), environ)
    # the same environment reached through a link is the same cache
    assert first == buildcache.extensions_dir(str(tmp_path / "link"), environ)


def test_a_set_variable_wins_and_is_kept(tmp_path):
    environ = {buildcache.VARIABLE: str(tmp_path / "mine")}
    assert buildcache.use_own_cache(environ) == tmp_path / "mine"
    assert environ[buildcache.VARIABLE] == str(tmp_path / "mine")


def test_unset_variable_is_set_for_the_jobs(tmp_path):
    environ = {"XDG_CACHE_HOME": str(tmp_path)}
    root = buildcache.use_own_cache(environ)
    assert environ[buildcache.VARIABLE] == str(root)
    assert root == buildcache.extensions_dir(environ={"XDG_CACHE_HOME": str(tmp_path)})


def _lock(root: Path, name: str, age: float) -> Path:
    build = root / name
    build.mkdir(parents=True)
    lock = build / "lock"
    lock.touch()
    then = time.time() - age
    os.utime(lock, (then, then))
    (build / "recurrences.o").write_bytes(b"object")
    return lock


def test_only_locks_no_build_can_hold_are_removed(tmp_path):
    stale = _lock(tmp_path, "rnnrepro_recurrences_avx2", buildcache.STALE_LOCK_SECONDS + 60)
    building = _lock(tmp_path, "rnnrepro_recurrences", 20)
    other = _lock(tmp_path, "someone_elses_extension", buildcache.STALE_LOCK_SECONDS + 60)
    assert buildcache.remove_stale_locks(tmp_path) == [stale]
    assert not stale.exists()
    assert building.exists() and other.exists()
    assert (stale.parent / "recurrences.o").exists()
    assert buildcache.remove_stale_locks(tmp_path / "missing") == []
