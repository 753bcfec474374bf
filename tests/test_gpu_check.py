"""benchmarks/gpu_check.py on a CPU (``--sample small``), so that the GPU check cannot rot
where there is no GPU: every CSV is written, the epoch samples cover the prepared data only, and
the paper-scale training stops within the budget with its finished epochs reported. It runs as
on the GPU machine: from the source tree, without the packages that machine lacks."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pandas as pd
import pytest
from pipeline_utils import ROOT, base_config, load_benchmark
from test_stream import write_corpus

from rnnrepro import config as cfg
from rnnrepro import cost

pytestmark = pytest.mark.slow

# dependencies (pyproject.toml) the GPU machine does not have: issue 33 lists what it has (PyTorch,
# pandas, matplotlib, pytest, tqdm, sentencepiece, sacrebleu; no Snakemake), and its image's
# package list adds pyyaml, numpy, scipy, pygments and ninja
DEVICE_LACKS = ("snakemake", "jsonschema", "inflect", "sacremoses")
BLOCKER = f"""import sys
from importlib.abc import MetaPathFinder


class Lacks(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {DEVICE_LACKS!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (not on the GPU machine)")


sys.meta_path.insert(0, Lacks())
"""


def device_image_env(tmp_path) -> dict:
    """The environment of a process that, like the GPU machine, lacks ``DEVICE_LACKS`` and
    reads the package from the source tree (``PYTHONPATH=src``)."""
    site = tmp_path / "device_site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT / "src")])}


def test_the_device_image_lacks_what_it_lacks(tmp_path):
    command = [sys.executable, "-c", "import jsonschema"]
    proc = subprocess.run(command, env=device_image_env(tmp_path), capture_output=True, text=True)
    assert proc.returncode == 1 and "not on the GPU machine" in proc.stderr


def test_the_check_runs_on_a_cpu_within_its_budget(tmp_path):
    data, out, work = tmp_path / "data", tmp_path / "out", tmp_path / "work"
    write_corpus(data / "ptb_stream", lines=200)
    budget = 40
    started = time.monotonic()
    command = [sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--device", "cpu"]
    command += ["--sample", "small", "--skip-tests", "--budget", str(budget), "--data", str(data)]
    command += ["--out", str(out), "--work", str(work), "--models", "lstm_650", "lstm_920"]
    command += ["nmt_lstm"]
    env = device_image_env(tmp_path)
    env.pop("RNNREPRO_KERNELS", None)
    proc = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert time.monotonic() - started < budget + 20  # the last epoch and the checkpoint
    assert pd.read_csv(out / "environment.csv")["cpu_loops"].tolist() == ["python"]
    cells = pd.read_csv(out / "cells.csv")
    assert cells["model"].tolist() == [
        "nn.LSTM (reference)", "lstm", "attention_lstm", "attention_lstm[cells=1]"
    ]  # fmt: skip
    assert (cells["seconds_per_batch"] > 0).all() and cells["device"].str.startswith("CPU").all()
    epochs = pd.read_csv(out / "epoch_times.csv")
    assert set(epochs["model"]) == {"lstm_650", "lstm_920", "nmt_lstm (small sample)"}
    assert set(epochs["dataset"]) == {"ptb_stream", "wmt14_de_en"}
    assert (epochs["epoch_seconds"] > 0).all()
    # a translation epoch: max_steps / max_epochs steps of batch 128 (random WMT-length pairs)
    nmt = epochs[epochs["dataset"] == "wmt14_de_en"].iloc[0]
    assert nmt["batches_per_epoch"] == 34_000 and nmt["params"] < 10_000_000
    skipped = pd.read_csv(out / "skipped.csv")
    assert "wikitext2" in set(skipped["dataset"])  # not prepared: listed, not measured
    training = pd.read_csv(out / "training.csv")
    summary = pd.read_csv(out / "training_summary.csv").iloc[0]
    assert len(training) >= 1 and training["epoch"].tolist() == list(range(1, len(training) + 1))
    assert summary["model"] == "memory/ptb_stream/lstm_650" and summary["paper_test_ppl"] == 67.2
    if summary["finished"]:
        assert summary["exit_code"] == 0 and summary["test_ppl"] > 0
    else:  # stopped by SIGTERM: it checkpointed
        assert summary["exit_code"] == 143 and (work / "training" / "checkpoint.pt").exists()
    # a device call returns at most 8 files from --out, each under 16 MiB: only the CSVs
    outputs = load_benchmark("gpu_check").OUTPUTS
    assert len(outputs) <= 8 and all(name.endswith(".csv") for name in outputs)
    written = {path.name for path in out.iterdir()}
    assert written == set(outputs) - {"tests.csv", "cells_graphed.csv"}  # --skip-tests, a CPU
    assert all(path.stat().st_size < 16 * 2**20 for path in out.iterdir())


def test_the_sample_order_reaches_every_group_and_experiment_first():
    config = base_config()
    config["scale"] = "paper"
    gpu_check = load_benchmark("gpu_check")
    runs = gpu_check.text_runs(config)
    order = gpu_check.sample_order(config, runs)
    assert sorted(order) == sorted(runs)

    def group(key):
        experiment, dataset, model = key
        try:
            architecture, batch, count = cost.run_size(config, *key)
        except ValueError:
            return (experiment, cfg.family(dataset), model, 0), 0
        return (experiment, cfg.family(dataset), architecture, batch), count

    groups = {group(key)[0] for key in runs}
    first = order[: len(groups)]
    assert {group(key)[0] for key in first} == groups  # one of each before any second
    experiments = list(config["experiments"])
    text = [e for e in experiments if any(key[0] == e for key in runs)]
    assert [key[0] for key in order[: len(text)]] == text  # every experiment at once
    for key in first:  # each group's first is its largest model
        own, count = group(key)
        assert count == max(group(other)[1] for other in runs if group(other)[0] == own)


def test_cuda_tests_past_their_time_keep_the_finished_rows(tmp_path):
    tests = tmp_path / "test_timed.py"
    tests.write_text(
        "import time\n\n\ndef test_quick():\n    pass\n\n\n"
        "def test_slow():\n    time.sleep(120)\n\n\ndef test_never_reached():\n    pass\n"
    )
    started = time.monotonic()
    rows = load_benchmark("gpu_check").cuda_tests(tmp_path, 8, [tests])
    assert time.monotonic() - started < 40
    # the module's dotted name depends on where pytest puts its rootdir: keep its last part
    assert [(row["test"].rpartition(".")[2], row["outcome"]) for row in rows] == [
        ("test_timed::test_quick", "passed"),
        ("(the rest)", "timeout"),
    ]
