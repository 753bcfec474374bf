"""Training and evaluation on CUDA, each task kind: a few epochs run there and say so, the model
file loads on a CPU, and a CUDA run killed mid-epoch resumes to the numbers of an uninterrupted
one. Skipped without CUDA (CI has none); ``tools/gpu_check.py`` runs them on a GPU machine.

Resumption on CUDA is compared within 1e-6 relative: every process the tests start has
``CUBLAS_WORKSPACE_CONFIG=:4096:8`` (``tests/conftest.py``) so that cuBLAS is deterministic,
and PyTorch's deterministic algorithms are on (``training.seed_everything``); the CPU's are
equal to the last bit (``tests/test_training.py``). ``RNNREPRO_TEST_DEVICE=cpu`` runs them
on the CPU, which checks the harness where there is no GPU.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys

import pandas as pd
import pytest
import torch
from pipeline_utils import train_signalled
from test_stream import RUN_AWD, write_corpus

from rnnrepro.data import dyck, text
from rnnrepro.models import load_model

DEVICE = os.environ.get("RNNREPRO_TEST_DEVICE", "cuda")
pytestmark = pytest.mark.skipif(
    DEVICE == "cuda" and not torch.cuda.is_available(), reason="no CUDA device"
)
RESUME_RTOL = 1e-6 if DEVICE != "cpu" else 0.0

TRAINING = {
    "lr": 3e-3, "batch_size": 4, "bptt": 8, "eval_batch_size": 3, "max_epochs": 2,
    "early_stopping_patience": 2, "lr_decay": 0.5, "lr_patience": 1,
}  # fmt: skip
STREAM = {"framing": "stream", "metric": "ppl"}
# One run per task kind the pipeline trains (rnnrepro.tasks) and the procedures on top of them.
RUNS = {
    "dyck": {
        "architecture": "attention_lstm", "task": "dyck", "dyck": {"k": 2, "m": 4},
        "reading": "close", "training": {**TRAINING, "batch_size": 8},
        "hparams": {"embedding_dim": 8, "hidden_size": 12, "cells": 2},
    },
    "sentences": {
        "architecture": "mmlstm", "task": "sentences", "text": {"framing": "eos", "metric": "bpc"},
        "training": TRAINING, "hparams": {"embedding_dim": 8, "hidden_size": 12, "choices": 3},
    },
    "stream_memory": {
        "architecture": "memory_lstm", "task": "stream", "text": STREAM,
        "training": {**TRAINING, "optimizer": "rmsprop", "weight_decay": 1e-4},
        "hparams": {"hidden_size": 8, "slots": 3, "memory": "multipop_stack", "dropout": 0.3},
    },
    "search_trial": {
        "architecture": "memory_lstm", "task": "stream", "text": STREAM,
        "training": {**TRAINING, "optimizer": "rmsprop", "lr": 4e-3, "weight_decay": 2e-4},
        "trial": {"index": 2, "lr": 4e-3, "weight_decay": 2e-4},
        "hparams": {"hidden_size": 8, "slots": 3, "memory": "attention"},
    },
    "awd": {**RUN_AWD, "training": {**RUN_AWD["training"], "max_epochs": 2}},
}  # fmt: skip
FINETUNE = {
    **RUNS["awd"],
    "training": {
        **RUNS["awd"]["training"], "optimizer": "sgd", "lr": 1.0, "asgd_nonmono": 1,
        "average_from_start": True,
    },
}  # fmt: skip


def write_data(path, kind: str) -> list[str]:
    """The run's data in ``path``; returns the extra command-line options it needs."""
    if kind == "dyck":
        for split, n, seed in (("train", 48, 1), ("val", 16, 2)):
            dyck.write_sequences(path / f"{split}.txt", dyck.generate(n, 2, 4, 6, 24, seed))
        return []
    if kind == "sentences":  # one sentence per line, none empty
        lines = [[f"w{(i * 7 + j) % 11}" for j in range(3 + i % 5)] for i in range(40)]
        text.write_dataset(path, dict.fromkeys(text.SPLITS, lines), text.build_vocab(lines))
    else:
        write_corpus(path, lines=60)
    return ["--vocab", str(path / "vocab.txt")]


def train_cmd(path, name: str, run: dict, data: list[str], init=None) -> list[str]:
    cmd = [
        sys.executable, "-m", "rnnrepro.scripts.train", "--run", json.dumps(run), "--seed", "5",
        "--device", DEVICE, "--train", str(path / "train.txt"), "--val", str(path / "val.txt"),
        *data, "--checkpoint", str(path / f"{name}.ckpt"),
        "--out-model", str(path / name / "model.pt"),
        "--out-history", str(path / name / "history.csv"),
    ]  # fmt: skip
    stage = "finetune" if init else "train"
    identity = {"experiment": "e", "dataset": "d", "model": name, "seed": 5, "stage": stage}
    cmd += ["--identity", json.dumps(identity)]
    return cmd + (["--init", str(init)] if init else [])


def run_ok(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]


def train(path, name: str, run: dict, data: list[str], init=None) -> pd.DataFrame:
    run_ok(train_cmd(path, name, run, data, init))
    return pd.read_csv(path / name / "history.csv")


def check_ran_here(path, name: str, history: pd.DataFrame, epochs: int) -> None:
    assert len(history) == epochs
    assert set(history["device"]) == {torch.device(DEVICE).type}
    assert history[["train_loss", "val_loss"]].map(math.isfinite).all().all()
    model, record = load_model(path / name / "model.pt")  # on the CPU
    assert next(model.parameters()).device.type == "cpu"
    assert record["devices"] == [torch.device(DEVICE).type]


@pytest.mark.parametrize("kind", ["dyck", "sentences", "stream_memory", "search_trial"])
def test_each_task_kind_trains_on_the_device(tmp_path, kind):
    data = write_data(tmp_path, kind)
    history = train(tmp_path, "run", RUNS[kind], data)
    check_ran_here(tmp_path, "run", history, 2)


def test_fine_tuning_and_dynamic_evaluation_on_the_device(tmp_path):
    data = write_data(tmp_path, "awd")
    train(tmp_path, "train", RUNS["awd"], data)
    tuned = train(tmp_path, "finetune", FINETUNE, data, init=tmp_path / "train" / "model.pt")
    check_ran_here(tmp_path, "finetune", tuned, 2)
    out = tmp_path / "dynamic_eval.json"
    settings = {"batch_size": 3, "lr": 0.01, "epsilon": 0.001, "lamb": 0.02, "bptt": 4}
    # fmt: off
    run_ok([
        sys.executable, "-m", "rnnrepro.scripts.dynamic_eval",
        "--model", str(tmp_path / "finetune" / "model.pt"), "--settings", json.dumps(settings),
        "--train", str(tmp_path / "train.txt"), "--val", str(tmp_path / "val.txt"),
        "--test", str(tmp_path / "test.txt"), "--scale", "smoke", "--device", DEVICE,
        "--checkpoint", str(tmp_path / "dynamic_eval.ckpt"), "--out", str(out),
    ])
    # fmt: on
    metrics = json.loads(out.read_text())
    assert all(math.isfinite(metrics[split]["ppl"]) for split in ("val", "test"))


@pytest.mark.parametrize("kind", ["dyck", "stream_memory", "awd"])
def test_a_run_killed_mid_epoch_on_the_device_resumes_to_the_same_numbers(tmp_path, kind):
    data = write_data(tmp_path, kind)
    whole = train(tmp_path, "whole", RUNS[kind], data)
    cmd = train_cmd(tmp_path, "killed", RUNS[kind], data)
    assert train_signalled(cmd, signal.SIGTERM, epoch=1, batch=1) == 128 + signal.SIGTERM
    resumed = train(tmp_path, "killed", RUNS[kind], data)
    numbers = ["train_loss", "val_loss", "lr"]
    pd.testing.assert_frame_equal(
        resumed[numbers], whole[numbers], check_exact=not RESUME_RTOL, rtol=RESUME_RTOL or 1e-5
    )
