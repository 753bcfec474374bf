"""One GPU per concurrent job: the lock-file device pool, exercised with fake device ids."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from rnnrepro.devices import claim_device, select_device

HOLD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from rnnrepro.devices import claim_device
    print(claim_device(int(sys.argv[1]), Path(sys.argv[2]), timeout=float(sys.argv[3])), flush=True)
    time.sleep(float(sys.argv[4]))
    """
)


def holder(count: int, lock_dir, timeout: float = 5, hold: float = 30) -> subprocess.Popen:
    args = [sys.executable, "-c", HOLD, str(count), str(lock_dir), str(timeout), str(hold)]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_concurrent_jobs_get_distinct_devices_and_a_third_waits(tmp_path):
    first, second = holder(2, tmp_path), holder(2, tmp_path)
    try:
        claimed = {int(first.stdout.readline()), int(second.stdout.readline())}
        assert claimed == {0, 1}
        with pytest.raises(RuntimeError, match="no free GPU among 2"):
            claim_device(2, tmp_path, timeout=0.5, poll=0.1)
    finally:
        first.kill()
        second.kill()
        first.wait()
        second.wait()
    # The kernel releases a dead process's lock: its device is free again.
    assert claim_device(2, tmp_path, timeout=1) in {0, 1}


def test_a_waiting_job_gets_the_device_released_by_a_finished_one(tmp_path):
    short = holder(1, tmp_path, hold=1)
    assert int(short.stdout.readline()) == 0
    waiter = holder(1, tmp_path, timeout=20, hold=0)
    assert int(waiter.stdout.readline()) == 0
    short.wait()
    waiter.wait()
    assert waiter.returncode == 0


def test_single_or_no_gpu_needs_no_pool(tmp_path, monkeypatch):
    assert select_device("cpu") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert select_device("auto") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert select_device("cuda", tmp_path) == torch.device("cuda:0")
    assert not list(tmp_path.iterdir())  # one visible device (e.g. bound by SLURM): no lock


def test_several_visible_gpus_are_shared_through_the_pool(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)
    other = holder(3, tmp_path)
    try:
        taken = int(other.stdout.readline())
        device = select_device("cuda", tmp_path)
        assert device.type == "cuda" and device.index != taken
    finally:
        other.kill()
        other.wait()
