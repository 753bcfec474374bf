"""A run moves between devices: a checkpoint written on the CPU resumes on CUDA and back, and
the history and model file say where each epoch ran. Skipped without CUDA (CI has none); run on
a GPU machine with ``python -m pytest tests/test_cuda_resume.py``."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pandas as pd
import pytest
import torch
from pipeline_utils import train_signalled
from test_stream import RUN_AWD, write_corpus

from rnnrepro.models import load_model

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

# Averaged SGD from the first step (fine-tuning's procedure): the checkpoint carries a weight
# average and a recurrent state
RUN = {
    **RUN_AWD,
    "training": {
        **RUN_AWD["training"],
        "optimizer": "sgd",
        "lr": 1.0,
        "asgd_nonmono": 1,
        "average_from_start": True,
    },
}


def train_cmd(path, name: str, device: str) -> list[str]:
    return [
        sys.executable, "-m", "rnnrepro.scripts.train", "--run", json.dumps(RUN), "--seed", "3",
        "--device", device, "--train", str(path / "train.txt"), "--val", str(path / "val.txt"),
        "--vocab", str(path / "vocab.txt"), "--checkpoint", str(path / f"{name}.ckpt"),
        "--out-model", str(path / name / "model.pt"),
        "--out-history", str(path / name / "history.csv"),
    ]  # fmt: skip


@pytest.mark.parametrize(("first", "then"), [("cpu", "cuda"), ("cuda", "cpu")])
def test_a_run_resumes_on_the_other_device_and_marks_its_epochs(tmp_path, first, then):
    write_corpus(tmp_path)
    name = f"{first}_{then}"
    code = train_signalled(train_cmd(tmp_path, name, first), signal.SIGTERM, epoch=2, batch=1)
    assert code == 128 + signal.SIGTERM
    state = torch.load(tmp_path / f"{name}.ckpt", map_location="cpu", weights_only=True)
    assert state["epoch"] == 2 and state["average"]["active"]
    proc = subprocess.run(
        train_cmd(tmp_path, name, then), check=True, capture_output=True, text=True
    )
    assert f"resuming from {tmp_path / f'{name}.ckpt'} after epoch 2" in proc.stdout
    history = pd.read_csv(tmp_path / name / "history.csv")
    assert history["device"].tolist() == [first] * 2 + [then] * (len(history) - 2)
    assert history["val_ppl"].notna().all() and len(history) > 2
    model, record = load_model(tmp_path / name / "model.pt")  # loads on the CPU
    assert record["devices"] == [first, then]
    assert next(model.parameters()).device.type == "cpu"
