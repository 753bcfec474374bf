"""benchmarks/gpu_check.py on a CPU (``--sample small``), so that the GPU check cannot rot
where there is no GPU: every CSV is written, the epoch samples cover the prepared data only, and
the paper-scale training stops within the budget with its finished epochs reported."""

from __future__ import annotations

import time

import pandas as pd
import pytest
from pipeline_utils import load_benchmark
from test_stream import write_corpus

pytestmark = pytest.mark.slow


def test_the_check_runs_on_a_cpu_within_its_budget(tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    write_corpus(data / "ptb_stream", lines=200)
    budget = 40
    started = time.monotonic()
    argv = ["--device", "cpu", "--sample", "small", "--skip-tests", "--budget", str(budget)]
    argv += ["--data", str(data), "--out", str(out), "--models", "lstm_650", "lstm_920", "nmt_lstm"]
    assert load_benchmark("gpu_check").main(argv) == 0
    assert time.monotonic() - started < budget + 20  # the last epoch and the checkpoint
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
        assert summary["exit_code"] == 143 and (out / "training" / "checkpoint.pt").exists()
