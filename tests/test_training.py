"""Training: determinism, and a killed job resuming to the same numbers."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys

import pandas as pd
import pytest
import torch
from pipeline_utils import train_signalled

from rnnrepro.data import dyck

RUN = {
    "architecture": "attention_lstm",
    "hparams": {"embedding_dim": 8, "hidden_size": 12, "cells": 2, "temperature_decay": 0.9},
    "training": {
        "lr": 3e-3,
        "batch_size": 8,
        "max_epochs": 8,
        "early_stopping_patience": 8,
        "lr_decay": 0.5,
        "lr_patience": 1,
    },
    "task": "dyck",
    "dyck": {"k": 2, "m": 4},
    "reading": "close",
}


def write_data(tmp_path):
    for split, n, seed in (("train", 240, 1), ("val", 40, 2)):
        dyck.write_sequences(tmp_path / f"{split}.txt", dyck.generate(n, 2, 4, 20, 60, seed))


def train_cmd(tmp_path, name: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "rnnrepro.scripts.train",
        "--run",
        json.dumps(RUN),
        "--seed",
        "7",
        "--device",
        "cpu",
        "--train",
        str(tmp_path / "train.txt"),
        "--val",
        str(tmp_path / "val.txt"),
        "--checkpoint",
        str(tmp_path / f"{name}.ckpt"),
        "--out-model",
        str(tmp_path / name / "model.pt"),
        "--out-history",
        str(tmp_path / name / "history.csv"),
    ]


def outputs(tmp_path, name):
    history = pd.read_csv(tmp_path / name / "history.csv").drop(columns="seconds")
    state = torch.load(tmp_path / name / "model.pt", weights_only=True)["state_dict"]
    return history, state


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """Training data and one uninterrupted run ("whole") to compare against."""
    path = tmp_path_factory.mktemp("train")
    write_data(path)
    subprocess.run(train_cmd(path, "whole"), check=True, capture_output=True)
    return path


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM, signal.SIGUSR1])
def test_interrupted_training_resumes_with_the_same_numbers(data_dir, signum):
    name = f"interrupted_{signum}"
    returncode = train_signalled(train_cmd(data_dir, name), signum, epoch=1, batch=2)
    assert not (data_dir / name / "model.pt").exists()
    state = torch.load(data_dir / f"{name}.ckpt", weights_only=True)
    assert state["epoch"] == 1
    if signum == signal.SIGKILL:  # the checkpoint of the last whole epoch
        assert returncode == -signal.SIGKILL and state["partial"] is None
    else:  # caught: a checkpoint after the batch in hand, then a clean non-zero exit
        assert returncode == 128 + signum
        assert state["partial"]["batches"] == 3

    rerun = subprocess.run(train_cmd(data_dir, name), check=True, capture_output=True, text=True)
    assert f"resuming from {data_dir / f'{name}.ckpt'} after epoch {state['epoch']}" in rerun.stdout

    whole_history, whole_state = outputs(data_dir, "whole")
    resumed_history, resumed_state = outputs(data_dir, name)
    pd.testing.assert_frame_equal(whole_history, resumed_history)
    assert whole_state.keys() == resumed_state.keys()
    for key in whole_state:
        assert torch.equal(whole_state[key], resumed_state[key]), key


def test_checkpoint_of_other_settings_is_ignored(data_dir, tmp_path):
    for split in ("train", "val"):
        shutil.copy(data_dir / f"{split}.txt", tmp_path)
    shutil.copy(data_dir / "whole.ckpt", tmp_path / "first.ckpt")
    RUN["hparams"]["embedding_dim"] = 9
    try:
        cmd = train_cmd(tmp_path, "first")
        proc = subprocess.run(cmd, check=True, capture_output=True, text=True)
    finally:
        RUN["hparams"]["embedding_dim"] = 8
    assert "ignoring" in proc.stdout and "resuming" not in proc.stdout
    history = pd.read_csv(tmp_path / "first" / "history.csv")
    assert len(history) == RUN["training"]["max_epochs"]


def test_a_later_stage_refuses_a_model_of_other_settings(tmp_path):
    from rnnrepro.models import build_model, save_model
    from rnnrepro.scripts.train import start_from

    vocab = ["<pad>", "a", "b"]
    trained = build_model("lstm", vocab, embedding_dim=4, hidden_size=5)
    save_model(
        trained, tmp_path / "model.pt", "lstm", vocab, {"embedding_dim": 4, "hidden_size": 5}
    )
    run = {"architecture": "lstm", "hparams": {"embedding_dim": 4, "hidden_size": 5}}
    model = build_model("lstm", vocab, embedding_dim=4, hidden_size=5)
    start_from(model, tmp_path / "model.pt", run, vocab)
    assert all(
        torch.equal(a, b) for a, b in zip(model.parameters(), trained.parameters(), strict=True)
    )
    other = {**run, "hparams": {"embedding_dim": 4, "hidden_size": 6}}
    with pytest.raises(ValueError, match=r"model.pt: its hparams differs from this stage's"):
        start_from(
            build_model("lstm", vocab, embedding_dim=4, hidden_size=6),
            tmp_path / "model.pt",
            other,
            vocab,
        )


def test_select_trial_takes_the_lowest_finite_validation_loss():
    from rnnrepro.scripts.select_trial import select

    def trial(k, loss, diverged=False):
        return {"trial": k, "val": {"loss": loss, "ppl": 2.0}, "diverged": diverged,
                "run": {"trial": {"index": k, "lr": k / 1000}}}  # fmt: skip

    record = select([trial(2, 1.5), trial(1, 1.5), trial(3, 0.5, diverged=True), trial(4, 2.0)])
    assert record["trial"] == 1 and record["search"]["chosen"] == 1  # the tie: lower trial
    assert record["search"]["trials"] == 4
    assert [t["settings"]["lr"] for t in record["search"]["every_trial"]] == [
        0.001,
        0.002,
        0.003,
        0.004,
    ]
    with pytest.raises(ValueError, match="no trial ended with a finite validation loss"):
        select([trial(1, float("nan"))])


def test_a_run_resumed_with_other_time_loops_resumes_and_marks_its_epochs(data_dir, tmp_path):
    """Where a run executes is not what it computes: a checkpoint written with the compiled
    loops resumes under the Python ones (as a CPU run resumes on a GPU, whose loops are
    Python), and each epoch's history row, and the model file, say which ran it."""
    from rnnrepro.models import native

    if native.kernels() is None:
        pytest.skip("no C++ compiler: the compiled loops are not built here")
    for split in ("train", "val"):
        shutil.copy(data_dir / f"{split}.txt", tmp_path)
    cmd = train_cmd(tmp_path, "moved")
    assert train_signalled(cmd, signal.SIGTERM, epoch=2, batch=0) == 128 + signal.SIGTERM
    env = {**os.environ, "RNNREPRO_KERNELS": "python"}
    proc = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    assert "python loops" in proc.stdout and "resuming" in proc.stdout
    history = pd.read_csv(tmp_path / "moved" / "history.csv")
    assert history["kernels"].tolist() == ["native"] * 2 + ["python"] * (len(history) - 2)
    assert set(history["device"]) == {"cpu"}
    record = torch.load(tmp_path / "moved" / "model.pt", weights_only=True)
    assert record["kernels"] == "native+python" and record["devices"] == ["cpu"]
    whole = torch.load(data_dir / "whole" / "model.pt", weights_only=True)
    assert whole["kernels"] == "native" and whole["devices"] == ["cpu"]


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: data[: len(data) // 2], id="truncated"),
        pytest.param(lambda data: b"\x00garbage" * 100, id="garbage"),
        pytest.param(lambda data: b"", id="empty"),
    ],
)
def test_an_unreadable_checkpoint_is_set_aside_and_the_run_starts_afresh(
    data_dir, tmp_path, damage
):
    for split in ("train", "val"):
        shutil.copy(data_dir / f"{split}.txt", tmp_path)
    checkpoint = tmp_path / "damaged.ckpt"
    checkpoint.write_bytes(damage((data_dir / "whole.ckpt").read_bytes()))
    proc = subprocess.run(
        train_cmd(tmp_path, "damaged"), check=True, capture_output=True, text=True
    )
    aside = list(tmp_path.glob("damaged.ckpt.unreadable-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == damage(
        (data_dir / "whole.ckpt").read_bytes()
    )
    assert f"{checkpoint}: unreadable" in proc.stdout
    assert f"moved it to {aside[0]} and starting afresh" in proc.stdout
    whole_history, whole_state = outputs(data_dir, "whole")
    history, state = outputs(tmp_path, "damaged")  # afresh: the uninterrupted run's numbers
    pd.testing.assert_frame_equal(whole_history, history)
    assert all(torch.equal(whole_state[k], state[k]) for k in whole_state)
    assert torch.load(checkpoint, weights_only=True)["finished"]  # a new, readable one


def test_an_unreadable_model_file_names_itself_and_the_command_that_remakes_it(data_dir, tmp_path):
    from rnnrepro.fileio import UnreadableFile
    from rnnrepro.models import load_model

    model = tmp_path / "model.pt"
    model.write_bytes((data_dir / "whole" / "model.pt").read_bytes()[:1000])
    with pytest.raises(UnreadableFile) as error:
        load_model(model)
    assert str(error.value).startswith(f"{model}: unreadable (")
    assert f"snakemake {model} --force" in str(error.value)


def test_a_full_disk_leaves_no_partial_model_file(tmp_path, monkeypatch):
    """save_model writes through the atomic writer: the system's "No space left on device",
    and neither the destination nor a temporary file left behind."""
    import errno

    from rnnrepro import fileio
    from rnnrepro.models import build_model, save_model

    model = build_model("lstm", ["<pad>", "a", "b"], embedding_dim=4, hidden_size=4)
    dest = tmp_path / "model.pt"

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(fileio.os, "fsync", full)
    with pytest.raises(OSError, match="No space left on device"):
        save_model(model, dest, "lstm", ["<pad>", "a", "b"], {})
    assert list(tmp_path.iterdir()) == []


def test_a_training_log_holds_progress_lines_not_carriage_returns(
    data_dir, tmp_path, monkeypatch, capsys
):
    """Off a terminal (a job's log file), progress is a line every interval, never a bar."""
    from rnnrepro import progress

    monkeypatch.setattr(progress.time, "perf_counter", iter(range(0, 10_000, 20)).__next__)
    assert list(progress.iterate(range(3), "epoch 1", "batches", interval=30.0)) == [0, 1, 2]
    assert capsys.readouterr().out == "epoch 1: 2 batches, 40 s\nepoch 1: 3 batches, 80 s\n"
    monkeypatch.undo()
    for split in ("train", "val"):
        shutil.copy(data_dir / f"{split}.txt", tmp_path)
    proc = subprocess.run(train_cmd(tmp_path, "logged"), check=True, capture_output=True, text=True)
    assert "\r" not in proc.stdout + proc.stderr


# The columns of each task kind's history.csv after the run's identity, as written before the
# kinds declared them (tasks.HISTORY_METRICS): the same for every kind; the validation metrics
# a kind does not report are empty columns.
HISTORY_COLUMNS = [
    "epoch", "train_loss", "val_loss", "val_ppl", "val_wcpa", "val_robust_wcpa", "val_bpc",
    "temperature", "lr", "seconds",
]  # fmt: skip
EMPTY_METRICS = {
    "dyck": ["val_bpc"],
    "sentences": ["val_ppl", "val_wcpa", "val_robust_wcpa"],  # a bpc family
    "stream": ["val_wcpa", "val_robust_wcpa", "val_bpc"],
}


@pytest.mark.parametrize("kind", ["dyck", "sentences", "stream"])
def test_each_task_kind_writes_its_history_columns(tmp_path, kind):
    from rnnrepro.data import text
    from rnnrepro.tasks import TASKS

    assert list(TASKS[kind].history_columns) == HISTORY_COLUMNS
    run = {**RUN, "task": kind, "training": {**RUN["training"], "max_epochs": 2}}
    if kind == "dyck":
        for split, seed in (("train", 1), ("val", 2)):
            dyck.write_sequences(tmp_path / f"{split}.txt", dyck.generate(16, 2, 4, 4, 12, seed))
        data = []
    else:
        lines = [[f"w{(i + j) % 9}" for j in range(3 + i % 4)] for i in range(16)]
        text.write_dataset(tmp_path, dict.fromkeys(text.SPLITS, lines), text.build_vocab(lines))
        data = ["--vocab", str(tmp_path / "vocab.txt")]
        framing, metric = ("eos", "bpc") if kind == "sentences" else ("stream", "ppl")
        run["text"] = {"framing": framing, "metric": metric}
        if kind == "stream":
            run["training"]["bptt"] = 5
    identity = {"experiment": "e", "dataset": kind, "model": "m", "seed": 7, "stage": "train"}
    cmd = train_cmd(tmp_path, "run")
    cmd[cmd.index("--run") + 1] = json.dumps(run)
    subprocess.run([*cmd, "--identity", json.dumps(identity), *data], check=True)
    history = pd.read_csv(tmp_path / "run" / "history.csv")
    assert list(history.columns) == [*identity, *HISTORY_COLUMNS, "device", "kernels"]
    assert len(history) == 2
    empty = [column for column in HISTORY_COLUMNS if history[column].isna().all()]
    assert empty == EMPTY_METRICS[kind]
