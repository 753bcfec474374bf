"""Stream language modelling (WikiText-2 style): carried state, evaluation, exact resume."""

from __future__ import annotations

import itertools
import json
import random
import signal
import subprocess
import sys

import pandas as pd
import pytest
import torch
from pipeline_utils import train_signalled

from rnnrepro.data import text
from rnnrepro.data.batching import stream_batches, variable_bptt_lengths
from rnnrepro.evaluation.text import evaluate_stream
from rnnrepro.models import build_model
from rnnrepro.tasks import StreamTask, drop_columns

WORDS = [f"w{i}" for i in range(30)]
RUN = {
    "architecture": "attention_lstm",
    "task": "stream",
    "hparams": {
        "embedding_dim": 8,
        "hidden_size": 12,
        "cells": 2,
        "temperature_decay": 0.9,
        "dropouti": 0.3,
        "dropout": 0.3,
    },
    "training": {
        "lr": 3e-3,
        "batch_size": 4,
        "bptt": 10,
        "eval_batch_size": 3,
        "max_epochs": 4,
        "early_stopping_patience": 4,
        "lr_decay": 0.5,
        "lr_patience": 1,
    },
    "text": {"framing": "stream", "metric": "ppl"},
}
# The resumed run also uses AWD-LSTM's parts: variable BPTT with LR scaling, AR/TAR, dropoute.
RUN_AWD = {
    **RUN,
    "hparams": {**RUN["hparams"], "dropoute": 0.1},
    "training": {**RUN["training"], "variable_bptt": True, "ar": 2.0, "tar": 1.0},
}


def write_corpus(path, lines: int = 120, seed: int = 0):
    rng = random.Random(seed)
    splits = {}
    for split, n in (("train", lines), ("val", lines // 4), ("test", lines // 4)):
        rows = [
            [] if rng.random() < 0.2 else rng.choices(WORDS, k=rng.randint(3, 15)) for _ in range(n)
        ]
        splits[split] = rows
    splits["train"][0] = list(WORDS)  # every word in the training vocabulary
    text.write_dataset(path, splits, text.build_vocab(splits["train"]))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("stream")
    write_corpus(path)
    return path


def test_stream_has_every_line_and_eos(corpus):
    vocab = text.read_vocab(corpus / "vocab.txt")
    lines = text.read_token_file(corpus / "train.txt", empty_lines=True)
    ids = text.stream_ids(lines, {t: i for i, t in enumerate(vocab)}, "train")
    assert len(ids) == sum(len(line) + 1 for line in lines)  # empty lines give one <eos>
    assert ids.count(vocab.index("<eos>")) == len(lines)


def test_task_carries_the_state_across_windows_and_resets_it_per_epoch(corpus):
    task = StreamTask(
        RUN,
        1,
        torch.device("cpu"),
        *(str(corpus / f) for f in ("train.txt", "val.txt", "vocab.txt")),
    )
    torch.manual_seed(0)
    model = build_model("attention_lstm", task.vocab, **RUN["hparams"])
    batches = iter(task.batches(0))
    task.start_epoch(0)
    task.batch_loss(model, next(batches))
    first = task.state_dict()["state"]
    assert first is not None and not first[0].requires_grad  # detached
    loss = task.batch_loss(model, next(batches))
    assert loss.count == 4 * 10 and loss.nll.requires_grad and loss.lr_scale == 1.0
    assert set(loss.aux) == {"output", "raw_output", "losses"}
    task.start_epoch(1)
    assert task.state_dict()["state"] is None


def test_stream_evaluation_equals_one_long_forward(corpus):
    """Carrying the state across windows = running each column in one go."""
    vocab = text.read_vocab(corpus / "vocab.txt")
    ids = text.stream_ids(
        text.read_token_file(corpus / "val.txt", empty_lines=True),
        {t: i for i, t in enumerate(vocab)},
        "val",
    )
    torch.manual_seed(0)
    model = build_model("lstm", vocab, embedding_dim=8, hidden_size=12).eval()
    windowed = evaluate_stream(model, ids, batch_size=3, bptt=7)
    ((inputs, targets),) = stream_batches(ids, 3, 10_000)
    with torch.no_grad():
        logits, _ = model(inputs)
    whole = torch.nn.functional.cross_entropy(logits.reshape(-1, len(vocab)), targets.reshape(-1))
    assert windowed.tokens == targets.numel()
    assert windowed.loss == pytest.approx(whole.item(), rel=1e-5)


def test_variable_bptt_windows_cover_the_stream_and_repeat_per_seed():
    ids = torch.arange(2000)
    lengths = [len(x) for x, _ in stream_batches(ids, 2, 70, variable_bptt_lengths(70, 5))]
    again = [len(x) for x, _ in stream_batches(ids, 2, 70, variable_bptt_lengths(70, 5))]
    other = [len(x) for x, _ in stream_batches(ids, 2, 70, variable_bptt_lengths(70, 6))]
    assert lengths == again and lengths != other
    assert sum(lengths) == 1000 - 1 and min(lengths[:-1]) >= 5
    many = list(itertools.islice(variable_bptt_lengths(70, 1), 4000))
    halves = sum(n < 52 for n in many) / len(many)  # N(35, 5) draws, ~5% of them
    # mean 0.95 · 70 + 0.05 · 35 = 68.25, less ~0.5 that int() truncates
    assert 0.03 < halves < 0.07 and abs(sum(many) / len(many) - 67.75) < 0.3
    # MoS's max_seq_len_delta caps the windows at bptt + delta; the draws are otherwise the same
    capped = list(itertools.islice(variable_bptt_lengths(70, 1, max_delta=2), 4000))
    assert capped == [min(n, 72) for n in many] and capped.count(72) > 500


def test_variable_bptt_task_scales_the_lr_by_window_length(corpus):
    task = StreamTask(
        RUN_AWD,
        1,
        torch.device("cpu"),
        *(str(corpus / f) for f in ("train.txt", "val.txt", "vocab.txt")),
    )
    model = build_model("attention_lstm", task.vocab, **RUN_AWD["hparams"])
    task.start_epoch(0)
    scales = [task.batch_loss(model, batch).lr_scale for batch in task.batches(0)]
    lengths = [len(inputs) for inputs, _ in task.batches(0)]
    assert scales == [n / 10 for n in lengths] and len(set(lengths)) > 2


def train_cmd(path, name, run=RUN_AWD):
    """The training command of one stream run on the corpus in ``path`` (outputs in path/name)."""
    return [
        sys.executable, "-m", "rnnrepro.scripts.train", "--run", json.dumps(run), "--seed", "3",
        "--device", "cpu", "--train", str(path / "train.txt"), "--val", str(path / "val.txt"),
        "--vocab", str(path / "vocab.txt"), "--checkpoint", str(path / f"{name}.ckpt"),
        "--out-model", str(path / name / "model.pt"),
        "--out-history", str(path / name / "history.csv"),
    ]  # fmt: skip


def outputs(path, name):
    history = pd.read_csv(path / name / "history.csv").drop(columns="seconds")
    return history, torch.load(path / name / "model.pt", weights_only=True)["state_dict"]


@pytest.mark.parametrize(
    ("signum", "archived"),
    [(signal.SIGTERM, False), (signal.SIGUSR1, False), (signal.SIGTERM, True)],
    ids=["SIGTERM", "SIGUSR1", "SIGTERM-archived"],
)
def test_stream_run_killed_mid_epoch_resumes_to_identical_numbers(corpus, signum, archived):
    """Also from the checkpoint as src/rnnrepro/scripts/archive.py keeps it (compacted, in parts)
    and restores it: the paper-scale tracks resume so on a new machine."""
    if not (corpus / "whole" / "model.pt").exists():
        subprocess.run(train_cmd(corpus, "whole"), check=True, capture_output=True)
    name = f"killed_{signum}_{archived}"
    checkpoint = corpus / f"{name}.ckpt"
    assert train_signalled(train_cmd(corpus, name), signum, epoch=1, batch=1) == 128 + signum
    state = torch.load(checkpoint, weights_only=True)
    assert state["epoch"] == 1 and state["partial"]["batches"] == 2  # stopped inside an epoch
    assert state["task"]["state"] is not None  # with the carried recurrent state
    if archived:
        from rnnrepro.scripts import archive as ta

        kept = corpus / f"archive/{name}.pt"
        ta.keep_checkpoint(checkpoint, kept, part_mb=0.02)
        assert len(json.loads(ta.parts_index(kept).read_text())["parts"]) > 1
        checkpoint.unlink()
        ta.unpack_checkpoint(ta.parts_index(kept), checkpoint)
    subprocess.run(train_cmd(corpus, name), check=True, capture_output=True)
    whole_history, whole_state = outputs(corpus, "whole")
    history, resumed = outputs(corpus, name)
    pd.testing.assert_frame_equal(whole_history, history)
    assert all(torch.equal(whole_state[k], resumed[k]) for k in whole_state)
    assert history["val_ppl"].notna().all()


def test_a_dropped_column_starts_its_window_from_the_initial_state(corpus):
    """``drop_state_probability`` (deepmind/lamb): before a window each column's carried state
    is zeroed with that probability, the others are carried unchanged."""
    training = {**RUN["training"], "batch_size": 4, "drop_state_probability": 0.5}
    hparams = {"hidden_size": 6, "memory": "none"}
    run = {**RUN, "architecture": "memory_lstm", "training": training, "hparams": hparams}
    files = [str(corpus / f) for f in ("train.txt", "val.txt", "vocab.txt")]
    task = StreamTask(run, 1, torch.device("cpu"), *files)
    torch.manual_seed(0)
    model = build_model("memory_lstm", task.vocab, **hparams).eval()  # no dropout masks drawn
    batches = iter(task.batches(0))
    task.batch_loss(model, next(batches))
    (h, c), memory = task.state
    second = next(batches)
    torch.manual_seed(3)
    dropped = torch.empty(4).bernoulli_(0.5)
    assert 0 < dropped.sum() < 4  # this seed drops some columns, not all
    torch.manual_seed(3)  # the task draws the same columns first
    task.batch_loss(model, second)
    keep = (1 - dropped).view(1, 4, 1)  # the state written out: zeros where dropped
    _, expected, _ = model.forward_aux(second[0], ((h * keep, c * keep), memory))
    _, carried, _ = model.forward_aux(second[0], ((h, c), memory))
    torch.testing.assert_close(task.state[0][0], expected[0][0])
    assert not torch.allclose(task.state[0][0], carried[0][0])
    with pytest.raises(ValueError, match=r"shape \(4, 4\) has several dimensions"):
        drop_columns(torch.ones(4, 4), dropped)
