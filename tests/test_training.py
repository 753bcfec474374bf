"""Training: determinism, and a killed job resuming to the same numbers."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pandas as pd
import torch

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
    state = torch.load(tmp_path / name / "model.pt", weights_only=False)["state_dict"]
    return history, state


def test_killed_training_resumes_with_the_same_numbers(tmp_path):
    write_data(tmp_path)
    subprocess.run(train_cmd(tmp_path, "whole"), check=True, capture_output=True)

    proc = subprocess.Popen(train_cmd(tmp_path, "killed"), stdout=subprocess.PIPE, text=True)
    checkpoint = tmp_path / "killed.ckpt"
    deadline = time.time() + 60
    while not checkpoint.exists() and time.time() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (tmp_path / "killed" / "model.pt").exists(), "killed too late to test resuming"
    epoch_at_kill = torch.load(checkpoint, weights_only=False)["epoch"]
    assert 1 <= epoch_at_kill < RUN["training"]["max_epochs"]

    rerun = subprocess.run(
        train_cmd(tmp_path, "killed"), check=True, capture_output=True, text=True
    )
    assert f"resuming from {checkpoint} after epoch {epoch_at_kill}" in rerun.stdout

    whole_history, whole_state = outputs(tmp_path, "whole")
    resumed_history, resumed_state = outputs(tmp_path, "killed")
    pd.testing.assert_frame_equal(whole_history, resumed_history)
    assert whole_state.keys() == resumed_state.keys()
    for key in whole_state:
        assert torch.equal(whole_state[key], resumed_state[key]), key


def test_checkpoint_of_other_settings_is_ignored(tmp_path):
    write_data(tmp_path)
    subprocess.run(train_cmd(tmp_path, "first"), check=True, capture_output=True)
    RUN["hparams"]["embedding_dim"] = 9
    try:
        cmd = train_cmd(tmp_path, "first")
        proc = subprocess.run(cmd, check=True, capture_output=True, text=True)
    finally:
        RUN["hparams"]["embedding_dim"] = 8
    assert "ignoring" in proc.stdout and "resuming" not in proc.stdout
    history = pd.read_csv(tmp_path / "first" / "history.csv")
    assert len(history) == RUN["training"]["max_epochs"]
