"""Checks before the first job: corpus availability (mirror or URL), the device, and the cost
summary."""

from __future__ import annotations

import functools
import gzip
import http.server
import threading
from dataclasses import replace

import pytest
from pipeline_utils import base_config

from rnnrepro import config as cfg
from rnnrepro import preflight
from rnnrepro.data import sources
from rnnrepro.preflight import cost_summary, data_error, probe_url, unavailable
from rnnrepro.scripts.estimate_cost import main as estimate_cost_main

PTB = [("ptb", "train.txt"), ("ptb", "valid.txt")]


@pytest.fixture
def http_root(tmp_path):
    """A loopback HTTP server over tmp_path/www; yields (root directory, base URL)."""
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.fixture
def registry(monkeypatch):
    """Point the PTB entries at URLs chosen by the test (registry restored afterwards)."""

    def point(urls: dict[str, str]) -> None:
        for name, url in urls.items():
            src = sources.REGISTRY["ptb"][name]
            monkeypatch.setitem(sources.REGISTRY["ptb"], name, replace(src, url=url))

    return point


def test_probe_answers(http_root):
    root, base = http_root
    (root / "here.txt").write_text("x")
    assert probe_url(f"{base}/here.txt") is None
    assert "HTTP 404" in probe_url(f"{base}/gone.txt")
    assert "cannot reach http://127.0.0.1:9/x" in probe_url("http://127.0.0.1:9/x", timeout=2)


def test_unreachable_and_missing_urls_are_named(http_root, registry):
    root, base = http_root
    (root / "train.txt").write_text("x")
    registry({"train.txt": f"{base}/train.txt", "valid.txt": "http://127.0.0.1:9/valid.txt"})
    problems = unavailable(PTB, None, timeout=2)
    assert len(problems) == 1 and problems[0].startswith("ptb/valid.txt: cannot reach")
    registry({"valid.txt": f"{base}/valid.txt"})
    assert "HTTP 404" in unavailable(PTB, None, timeout=2)[0]
    (root / "valid.txt").write_text("x")
    assert unavailable(PTB, None, timeout=2) == []


def test_mirror_needs_each_file_or_its_gz(tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / "ptb").mkdir(parents=True)
    (mirror / "ptb/train.txt").write_text("x")
    assert unavailable(PTB, str(mirror)) == [
        f"ptb/valid.txt: not in the data mirror (looked for {mirror}/ptb/valid.txt[.gz])"
    ]
    with gzip.open(mirror / "ptb/valid.txt.gz", "wt") as f:
        f.write("x")
    assert unavailable(PTB, str(mirror)) == []


def test_cached_archive_needs_no_network(tmp_path, monkeypatch):
    src = sources.get_source("ptb_char", "train.txt")
    assert src.member  # an archive member
    monkeypatch.setitem(
        sources.REGISTRY["ptb_char"], "train.txt", replace(src, url="http://127.0.0.1:9/a.tgz")
    )
    files = [("ptb_char", "train.txt")]
    assert unavailable(files, None, tmp_path / "downloads", timeout=2)
    (tmp_path / "downloads/_archives").mkdir(parents=True)
    (tmp_path / "downloads/_archives/a.tgz").write_bytes(b"cached")
    assert unavailable(files, None, tmp_path / "downloads", timeout=2) == []


def test_data_error_names_both_ways_out():
    message = data_error(["ptb/train.txt: cannot reach http://x"], None)
    assert "ptb/train.txt" in message and "data_mirror" in message
    assert "allow internet access" in message and "No job was started" in message


def test_cost_summary_at_paper_scale_matches_the_estimate(capsys, tmp_path):
    from pipeline_utils import ROOT

    config = base_config()
    runs = cfg.jobs(config)  # what the pipeline plans: every stage of every run
    summary = cost_summary(config, runs, ROOT, tmp_path)
    assert summary.startswith(f"Scale 'paper': {len(runs)} training job(s) to run.")
    estimate_cost_main(
        [
            "--config",
            str(ROOT / "config.yaml"),
            "--throughput",
            str(ROOT / "benchmarks/results/cells.csv"),
            "--epoch-times",
            str(ROOT / "benchmarks/results/epoch_times.csv"),
            "--runs-dir",
            str(tmp_path),
        ]
    )
    total = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("total"))
    expected_hours = float(total.split()[2])
    assert f"{expected_hours:,.0f} device-hours" in summary
    smoke = {**config, "scale": "smoke"}
    assert "device-hour estimate is made for the paper scale only" in cost_summary(
        smoke, cfg.runs(smoke), ROOT
    )


@pytest.mark.parametrize(
    ("device", "local", "have", "problem"),
    [
        ("cuda", True, {"cuda": 0, "mps": 0}, "this machine has no CUDA device"),
        ("cuda:1", True, {"cuda": 1, "mps": 0}, "this machine has 1 CUDA device(s) (cuda:0 to"),
        ("mps", True, {"cuda": 0, "mps": 0}, "this machine has no MPS device"),
        ("cuda:1", True, {"cuda": 2, "mps": 0}, None),
        ("cuda", False, {"cuda": 0, "mps": 0}, None),  # a cluster run: its nodes have GPUs
        ("cpu", True, {"cuda": 0, "mps": 0}, None),
        ("auto", True, {"cuda": 0, "mps": 0}, None),
    ],
)
def test_the_device_must_be_on_the_machine_that_runs_the_jobs(device, local, have, problem):
    error = preflight.device_problem(device, local, have)
    if problem is None:
        assert error is None
    else:
        assert error.startswith(f"config key 'device': {device!r}, but {problem}")
        assert "no job was started" in error


def test_this_machines_devices_are_asked_of_pytorch():
    import torch

    have = preflight.accelerators()
    assert have["cuda"] == (torch.cuda.device_count() if torch.cuda.is_available() else 0)


def test_a_plan_is_checked_device_first_then_downloads_then_checkpoints(tmp_path):
    """``plan_problem`` (common.smk's ``onstart``): each check applies only to the jobs it
    concerns, and the first problem found stops the plan."""
    config = {
        "device": "cuda:7",
        "data_mirror": str(tmp_path / "mirror"),
        "checkpoint_dir": str(tmp_path / "file" / "checkpoints"),
        "scale": "smoke",
    }
    (tmp_path / "mirror").mkdir()
    (tmp_path / "file").write_text("a file, not a directory")
    train = preflight.PlannedJob("train", {"dataset": "dyck_m4"}, names_device=True)
    download = preflight.PlannedJob("download", {"corpus": "ptb", "name": "train.txt"}, False)
    table = preflight.PlannedJob("table", {"table": "x"}, names_device=False)

    def problem(*jobs, local=True):
        return preflight.plan_problem(config, jobs, local, ("train",))

    assert problem(table) is None
    assert problem(train, download).startswith("config key 'device': 'cuda:7'")
    assert "ptb" in problem(train, download, local=False)  # a cluster run: the downloads next
    assert problem(download, table) == problem(download)
    assert problem(train, local=False).startswith("config key 'checkpoint_dir'")
