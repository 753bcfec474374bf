"""tools/gpu_check.py on a CPU (``--sample small``), so that the GPU check cannot rot
where there is no GPU: every CSV is written, the epoch samples cover the prepared data only, every
step ends by its deadline, a failure or an overrun is one row and the next step starts, and the
paper-scale training (its own call) stops within its budget with its finished epochs reported;
and tools/gpu_word_track.py (multi_matrix's word models, a call of its own) trains, evaluates
and packs what the archive needs. It runs as on the GPU machine: from the source tree, without
the packages that machine lacks."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from pipeline_utils import ROOT, base_config, load_script
from test_stream import WORDS, write_corpus

from rnnrepro import config as cfg
from rnnrepro import cost
from rnnrepro.data import text
from rnnrepro.provenance import code_digest, model_module

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


def run_check(tmp_path, budget: float, *options: str) -> tuple[float, Path]:
    """The check on the CPU as on the GPU machine, with ``options``: its wall time and --out."""
    out, work = tmp_path / "out", tmp_path / "work"
    command = [sys.executable, str(ROOT / "tools" / "gpu_check.py"), "--device", "cpu"]
    command += ["--budget", str(budget), "--out", str(out), "--work", str(work), *options]
    env = device_image_env(tmp_path)
    env.pop("RNNREPRO_KERNELS", None)
    started = time.monotonic()
    proc = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True)
    seconds = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    # a device call returns at most 8 files from --out, each under 16 MiB: only the CSVs
    written = list(out.iterdir())
    assert len(written) <= 8 and all(path.name.endswith(".csv") for path in written)
    assert all(path.stat().st_size < 16 * 2**20 for path in written)
    return seconds, out


@pytest.mark.timing
def test_the_check_runs_on_a_cpu_within_its_budget(tmp_path):
    data = tmp_path / "data"
    write_corpus(data / "ptb_stream", lines=200)
    # each step's share leaves room for its process to start (2-3 s each under load: at 50 s,
    # with a training on the other core and the suite on this one, the translation step's 2.9 s
    # timed out)
    budget = 70
    options = ["--sample", "small", "--data", str(data), "--models", "lstm_650", "nmt_lstm"]
    seconds, out = run_check(tmp_path, budget, *options)
    assert seconds < budget + 2  # the budget counts from the process's start
    steps = pd.read_csv(out / "steps.csv")
    assert steps["step"].tolist() == [
        "environment",
        "correctness",
        "cells",
        "epochs",
        "translation",
        "training_tests",
        "graph_tests",
    ]  # fmt: skip  (graphs need CUDA)
    assert set(steps["outcome"]) == {"ok"}, steps.to_string()
    assert (steps["seconds"] <= steps["allotted_seconds"] + 2).all()
    environment = pd.read_csv(out / "environment.csv").iloc[0]
    assert environment["cpu_loops"] == "python"
    assert (
        environment["float32_cells_and_tests"] == "cuda.matmul=ieee cudnn.conv=ieee cudnn.rnn=ieee"
    )
    tests = pd.read_csv(out / "tests.csv")
    modules = {test.split("::")[0].rpartition(".")[2] for test in tests["test"]}
    assert modules == {"test_cuda", "test_cuda_training", "test_cuda_resume", "test_cuda_graphs"}
    assert set(tests["outcome"]) == {"skipped"}  # no CUDA here
    cells = pd.read_csv(out / "cells.csv")
    assert cells["model"].tolist() == [
        "nn.LSTM (reference)", "lstm", "attention_lstm", "attention_lstm[cells=1]"
    ]  # fmt: skip
    assert (cells["seconds_per_batch"] > 0).all() and cells["device"].str.startswith("CPU").all()
    assert set(cells["float32"]) == {"ieee"}
    epochs = pd.read_csv(out / "epoch_times.csv")
    assert epochs["model"].tolist() == ["lstm_650", "nmt_lstm (small sample)"]
    assert epochs["dataset"].tolist() == ["ptb_stream", "wmt14_de_en"]
    assert (epochs["epoch_seconds"] > 0).all()
    # a translation epoch: max_steps / max_epochs steps of batch 128 (random WMT-length pairs)
    nmt = epochs[epochs["dataset"] == "wmt14_de_en"].iloc[0]
    assert nmt["batches_per_epoch"] == 34_000 and nmt["params"] < 10_000_000
    skipped = pd.read_csv(out / "skipped.csv")
    assert "wikitext2" in set(skipped["dataset"])  # not prepared: listed, not measured


@pytest.mark.timing
def test_a_step_past_its_time_is_stopped_and_the_next_one_starts(tmp_path):
    """At paper size a CPU takes minutes for the cells and a translation batch: each step is
    killed at its deadline (one native backward pass cannot be interrupted from Python), says
    so, and the call ends within its budget."""
    budget = 24
    seconds, out = run_check(tmp_path, budget, "--only", "cells", "translation")
    assert seconds < budget + 2
    steps = pd.read_csv(out / "steps.csv").set_index("step")
    assert steps.index.tolist() == ["environment", "cells", "translation"]
    assert steps.loc["cells", "outcome"] == steps.loc["translation", "outcome"] == "timeout"
    assert (steps["seconds"] <= steps["allotted_seconds"] + 0.04 * budget + 1.5).all()


def test_a_failing_step_is_one_error_row_and_the_next_step_starts(tmp_path):
    gpu_check = load_script("tools/gpu_check.py")

    def fails(context, deadline):
        yield "cells.csv", {"model": "a"}
        raise RuntimeError("broken cell")

    def slow(context, deadline):
        yield "cells.csv", {"model": "b"}
        raise gpu_check.OutOfTime("1 of 2 sizes timed")

    def works(context, deadline):
        yield "tests.csv", {"test": "t", "outcome": "passed"}

    steps = [
        gpu_check.Step("first", 1, fails),
        gpu_check.Step("second", 1, slow),
        gpu_check.Step("third", 1, works),
    ]
    context = SimpleNamespace(budget=30)
    gpu_check.run_steps(steps, context, gpu_check.Outputs(tmp_path), time.monotonic() + 30)
    outcomes = pd.read_csv(tmp_path / "steps.csv")
    assert outcomes[["step", "outcome"]].values.tolist() == [
        ["first", "error"], ["second", "timeout"], ["third", "ok"]
    ]  # fmt: skip
    assert outcomes["message"].tolist()[:2] == ["RuntimeError: broken cell", "1 of 2 sizes timed"]
    assert pd.read_csv(tmp_path / "cells.csv")["model"].tolist() == ["a", "b"]  # kept
    assert pd.read_csv(tmp_path / "tests.csv")["outcome"].tolist() == ["passed"]


@pytest.mark.timing
def test_the_paper_scale_training_is_its_own_call_within_its_budget(tmp_path):
    data = tmp_path / "data"
    write_corpus(data / "ptb_stream", lines=200)
    # the shipped recipe validates every 415 steps; this corpus has a few batches an epoch
    config = base_config()
    config["training"]["memory_rmsprop"]["eval_every"] = None
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    budget = 30
    seconds, out = run_check(tmp_path, budget, "--only", "training", "--data", str(data),
                             "--config", str(tmp_path / "config.yaml"))  # fmt: skip
    assert seconds < budget + 2
    assert {path.name for path in out.iterdir()} == {
        "environment.csv", "steps.csv", "training.csv", "training_summary.csv"
    }  # fmt: skip
    training = pd.read_csv(out / "training.csv")
    summary = pd.read_csv(out / "training_summary.csv").iloc[0]
    assert len(training) >= 1 and training["epoch"].tolist() == list(range(1, len(training) + 1))
    assert summary["model"] == "memory/ptb_stream/lstm_650" and summary["paper_test_ppl"] == 67.2
    assert summary["epochs"] == len(training)
    if summary["finished"]:
        assert summary["exit_code"] == 0 and summary["test_ppl"] > 0
    else:  # stopped by SIGTERM: it checkpointed
        assert summary["exit_code"] == 143
        assert (tmp_path / "work" / "training" / "checkpoint.pt").exists()


def test_a_training_that_ended_by_itself_is_not_stopped(tmp_path, monkeypatch):
    """A training that has logged its end (``stopped: ...``) is writing its model when the budget
    runs out: it gets no SIGTERM (which would kill it mid-write, exit -15, its finished run
    reported as stopped) and is waited for. Seen in a loaded CI run of the training call."""
    gpu_check = load_script("tools/gpu_check.py")
    write_corpus(tmp_path / "data" / "ptb_stream", lines=40)
    # the training: its last epoch and end logged at once, then 3 s of writing its model
    fake = (
        "import time; print('epoch=1 train_loss=5.0 val_loss=5.0', flush=True); "
        "print('stopped: no improvement for 5 epochs; best epoch 1', flush=True); "
        "time.sleep(3)"
    )
    popen = subprocess.Popen
    trained = []

    def training_replaced(command, *args, **kwargs):
        if "rnnrepro.scripts.train" in command:
            trained.append(json.loads(command[command.index("--run") + 1]))
            command = [sys.executable, "-c", fake]
        return popen(command, *args, **kwargs)

    monkeypatch.setattr(gpu_check.subprocess, "Popen", training_replaced)
    config = {**base_config(), "scale": "paper"}
    context = SimpleNamespace(
        device=gpu_check.torch.device("cpu"), data=tmp_path / "data", config=config,
        work=tmp_path / "work", grace=6.0, trial=5,
    )  # fmt: skip
    # the evaluation's reserve (a quarter of 2 s on a CPU) begins while it writes
    rows = list(gpu_check.training(context, time.monotonic() + 2.0))
    summary = rows[-1][1]
    assert rows[0] == ("training.csv", {"epoch": 1, "train_loss": "5.0", "val_loss": "5.0"})
    assert summary["exit_code"] == 0 and summary["finished"] and summary["epochs"] == 1
    assert summary["note"] == "trained; the test evaluation did not fit the budget"
    # --trial 5: that draw of the search, named in the summary
    assert trained[0]["trial"]["index"] == 5 == summary["trial"]
    first = cfg.run_config(config, "memory", "ptb_stream", "lstm_650", trial=1)
    assert summary["lr"] == trained[0]["training"]["lr"] != first["training"]["lr"]


def test_an_epoch_sample_of_a_corpus_of_one_batch(tmp_path):
    """A corpus smaller than the timed steps repeats its batches (it divided by zero)."""
    epoch_times = load_script("benchmarks/epoch_times.py")
    write_corpus(tmp_path / "ptb_stream", lines=40)
    config = base_config()
    config["scale"] = "paper"
    args = SimpleNamespace(data=tmp_path, batches=3, val_lines=20, val_tokens=2000)
    row = epoch_times.measure(config, "memory", "ptb_stream", "lstm_650", args)
    assert row["batches_per_epoch"] == 1 and row["epoch_seconds"] > 0


def test_the_sample_order_reaches_every_group_and_experiment_first():
    config = base_config()
    config["scale"] = "paper"
    gpu_check = load_script("tools/gpu_check.py")
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
    rows = load_script("tools/gpu_check.py").cuda_tests(tmp_path, 8, [tests])
    assert time.monotonic() - started < 40
    # the module's dotted name depends on where pytest puts its rootdir: keep its last part
    assert [(row["test"].rpartition(".")[2], row["outcome"]) for row in rows] == [
        ("test_timed::test_quick", "passed"),
        ("(the rest)", "timeout"),
    ]


def test_a_failed_cuda_test_says_where_and_what_it_printed(tmp_path):
    """The first GPU run's failures kept only the first 300 characters of a device-side assert's
    message: neither where it was raised nor the assertion CUDA printed."""
    tests = tmp_path / "test_failing.py"
    tests.write_text(
        "def deep():\n    raise RuntimeError('CUDA error: device-side assert triggered')\n\n\n"
        "def test_fails():\n    print('Kernel.cu:42: block: [0,0,0] Assertion `idx` failed.')\n"
        "    deep()\n"
    )
    rows = load_script("tools/gpu_check.py").cuda_tests(tmp_path, 60, [tests])
    [row] = rows
    assert row["outcome"] == "failure"
    message = row["message"]
    assert message.startswith("RuntimeError: CUDA error: device-side assert triggered"), message
    assert "test_failing.py:2 < " in message and "test_failing.py:7" in message, message
    assert "Kernel.cu:42: block: [0,0,0] Assertion `idx` failed." in message, message
    assert len(message) <= 500


def test_the_word_track_call_runs_on_a_cpu(tmp_path):
    """tools/gpu_word_track.py as on the GPU machine: each model trains at the pipeline's
    settings with the pipeline's code digest, a finished paper model is evaluated by the
    pipeline's script and packed with its files, the stream variant trains on the stream and
    comes back as CSV rows only."""
    data = tmp_path / "ptb_word"
    rng = random.Random(0)  # sentences: lines of 3-15 words, none empty
    splits = {
        split: [rng.choices(WORDS, k=rng.randint(3, 15)) for _ in range(n)]
        for split, n in (("train", 60), ("val", 15), ("test", 15))
    }
    splits["train"][0] = list(WORDS)
    text.write_dataset(data, splits, text.build_vocab(splits["train"]))
    out, work = tmp_path / "out", tmp_path / "work"
    command = [sys.executable, str(ROOT / "tools" / "gpu_word_track.py"), "--device", "cpu"]
    command += ["--data", str(data), "--out", str(out), "--work", str(work), "--max-epochs", "2"]
    command += ["--budget", "150", "--reserve", "30", "--models", "rnn", "lstm_stream"]
    env = device_image_env(tmp_path)
    env.pop("RNNREPRO_KERNELS", None)
    proc = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert sorted(p.name for p in out.iterdir()) == [
        "run_rnn.tar",
        "word_epochs.csv",
        "word_track.csv",
    ]
    rows = pd.read_csv(out / "word_track.csv").set_index("model")
    assert rows["finished"].all() and (rows["epochs"] == 2).all()
    config = {**base_config(), "scale": "paper"}
    for model, base in (("rnn", "rnn"), ("lstm_stream", "lstm")):
        architecture = cfg.architecture(config, "multi_matrix", base)
        assert rows.loc[model, "code_train"] == code_digest(
            "scripts/train.py", model_module(architecture)
        )
    # the pipeline's test CE is the readings' sentence by sentence
    assert rows.loc["rnn", "test_ce"] == pytest.approx(rows.loc["rnn", "test_sentences"])
    with tarfile.open(out / "run_rnn.tar") as tar:
        assert sorted(tar.getnames()) == ["history.csv", "metrics.json", "model.pt"]
        metrics = json.load(tar.extractfile("metrics.json"))
    expected = cfg.run_config(config, "multi_matrix", "ptb_word", "rnn")
    expected["training"]["max_epochs"] = 2
    assert metrics["run"] == expected and metrics["test"]["loss"] == rows.loc["rnn", "test_ce"]
    stream_log = (work / "lstm_stream" / "train.log").read_text()
    assert "stream of" in stream_log and "BPTT 35" in stream_log
