"""second_order_lstm's WikiText-2 track through Snakemake at smoke scale, on a fixture corpus."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pandas as pd
import pytest
import torch
from pipeline_utils import base_config, run_snakemake, run_track

from rnnrepro import config as cfg

pytestmark = pytest.mark.slow
MODELS = ("lstm", "attention_lstm", "attention_lstm_5")


def wikitext2_config(mirror: str, sources: str) -> dict:
    config = base_config()
    config.update(scale="smoke", data_mirror=mirror, data_sources=sources)
    config["experiments"] = {"second_order_lstm": config["experiments"]["second_order_lstm"]}
    config["experiments"]["second_order_lstm"]["datasets"] = ["wikitext2"]
    del config["experiments"]["second_order_lstm"]["models"]["assignment_lstm"]
    for model in config["experiments"]["second_order_lstm"]["models"].values():
        model.get("dataset_hparams", {}).pop("dyck", None)
        model.pop("datasets", None)
    # a fine-tuning stage with AWD-LSTM's procedure parts (no paper of second_order_lstm has one)
    config["training"]["finetune_test"] = {
        "lr": 0.5, "batch_size": 4, "bptt": 8, "max_epochs": 3, "early_stopping_patience": 3,
        "optimizer": "sgd", "asgd_nonmono": 1, "variable_bptt": True, "ar": 1.0, "tar": 1.0,
    }  # fmt: skip
    config["experiments"]["second_order_lstm"]["models"]["lstm"]["finetune"] = "finetune_test"
    # a random search over two trials (no paper of second_order_lstm has one)
    config["scales"]["smoke"]["search_trials"] = 2
    config["experiments"]["second_order_lstm"]["models"]["searched"] = {
        "architecture": "lstm", "training": "second_order_lstm_wikitext2",
        "hparams": {"embedding_dim": 300, "hidden_size": 600},
        "search": {"lr": [1e-3, 1e-2]},
    }  # fmt: skip
    return config


FINETUNED = "results/runs/second_order_lstm/wikitext2/lstm/seed1/finetune"


@pytest.fixture(scope="module")
def wt2_run(tmp_path_factory):
    targets = ("wikitext2", f"{FINETUNED}/metrics.json", SEARCH, PTB_STREAM)
    return run_track(tmp_path_factory.mktemp("wt2"), wikitext2_config, *targets)


PTB_STREAM = "results/data/ptb_stream/train.txt"


SEARCH = "results/runs/second_order_lstm/wikitext2/searched/seed1/search.json"


def test_table2_holds_every_model_with_paper_numbers(wt2_run):
    work, _ = wt2_run
    table = pd.read_csv(work / "results/tables/second_order_lstm_table2.csv")
    assert set(table["model"]) == set(MODELS)
    ppl = table[table["metric"].isin(["val_ppl", "test_ppl"])]
    assert (ppl["n_seeds"] == 1).all() and ppl["paper"].notna().all()
    assert ppl["verdict"].str.startswith("smoke-scale ").all()
    header = (work / "results/tables/second_order_lstm_table2.md").read_text().split("Columns:")[0]
    assert "Scale smoke: reduced" in header


def test_stream_metrics_and_history(wt2_run):
    work, _ = wt2_run
    run = work / "results/runs/second_order_lstm/wikitext2/attention_lstm_5/seed1"
    metrics = json.loads((run / "metrics.json").read_text())
    vocab = (work / "results/data/wikitext2/vocab.txt").read_text().split("\n")[:-1]
    assert 1 < metrics["test"]["ppl"] < 2 * len(vocab)  # finite, near uniform after 2 epochs
    assert metrics["run"]["text"]["framing"] == "stream" and metrics["scale"] == "smoke"
    # 10 evaluation columns, the remainder of the stream unscored
    val_lines = (work / "results/data/wikitext2/val.txt").read_text().splitlines()
    tokens = sum(len(line.split()) + 1 for line in val_lines)
    assert metrics["val"]["tokens"] == (tokens // 10 - 1) * 10
    history = pd.read_csv(run / "history.csv")
    assert len(history) == 2 and history["val_ppl"].notna().all()


def test_attention_analyses(wt2_run):
    work, _ = wt2_run
    pabs = pd.read_csv(
        work / "results/runs/second_order_lstm/wikitext2/attention_lstm_5/seed1/pabs.csv"
    )
    assert pabs["pair"].nunique() == 10  # every pair of 5 cells
    assert pabs["angle_deg"].between(0, 90).all()
    heat = pd.read_csv(
        work / "results/runs/second_order_lstm/wikitext2/attention_lstm_5/seed1/heatmap.csv"
    )
    assert heat["cell"].nunique() == 5 and "<start>" not in set(heat["token"])
    for name in ("fig5_pabs_wikitext2", "fig6_heatmap_wikitext2"):
        assert (work / f"results/figures/second_order_lstm_{name}.png").stat().st_size > 5000


def test_syntactic_evaluation_table(wt2_run):
    work, _ = wt2_run
    result = pd.read_csv(work / "results/runs/second_order_lstm/wikitext2/lstm/seed1/syneval.csv")
    assert set(result["category"]) == {
        "simple_agrmt", "subj_rel", "simple_npi G>I", "simple_npi I>U", "simple_npi G>U",
        "npi_across G>I", "npi_across I>U", "npi_across G>U",
    }  # fmt: skip
    assert (
        result[["experiment", "model", "seed"]].iloc[0] == ["second_order_lstm", "lstm", 1]
    ).all()
    agreement = result.set_index("category").loc["simple_agrmt"]
    assert agreement["pairs"] == 2 and agreement["unk_pairs"] == 2  # "say", "says" not in train
    assert result["accuracy"].between(0, 1).all()
    table = pd.read_csv(work / "results/tables/second_order_lstm_table3.csv")
    assert len(table) == 19 and list(table.columns[:2]) == ["category", "pairs"]
    assert set(table.columns[2:]) == {c for m in MODELS for c in (m, f"{m} <unk> pairs")}
    md = (work / "results/tables/second_order_lstm_table3.md").read_text()
    assert "Cross Clause NPI, intrusive vs. ungrammatical / Attention" in md
    assert "smoke-scale" in md and "Scale smoke: reduced" in md


def test_finetune_stage_continues_from_the_trained_model(wt2_run):
    work, _ = wt2_run
    trained = torch.load(work / Path(FINETUNED).parent / "model.pt", weights_only=True)
    finetuned = torch.load(work / FINETUNED / "model.pt", weights_only=True)
    assert finetuned["identity"]["stage"] == "finetune" and finetuned["run"]["stage"] == "finetune"
    assert finetuned["init"].endswith("seed1/model.pt") and trained["identity"]["stage"] == "train"
    metrics = json.loads((work / FINETUNED / "metrics.json").read_text())
    assert metrics["stage"] == "finetune" and metrics["run"]["training"]["optimizer"] == "sgd"
    history = pd.read_csv(work / FINETUNED / "history.csv")
    assert "averaged" in history and len(history) == 2  # smoke scale: 2 epochs at most
    log = work / "results/logs/train/second_order_lstm/wikitext2/lstm/seed1/finetune.log"
    assert f"starting from {Path(FINETUNED).parent / 'model.pt'}" in log.read_text()


def test_random_search_runs_each_trial_and_keeps_the_best(wt2_run):
    work, _ = wt2_run
    record = json.loads((work / SEARCH).read_text())
    trials = record["search"]["every_trial"]
    assert record["search"]["trials"] == 2 and [t["trial"] for t in trials] == [1, 2]
    assert all(1e-3 <= t["settings"]["lr"] <= 1e-2 for t in trials)
    assert trials[0]["settings"] != trials[1]["settings"]
    best = min(trials, key=lambda t: t["val_loss"])
    assert record["search"]["chosen"] == best["trial"] == record["trial"]
    chosen = json.loads(
        (work / Path(SEARCH).parent / f"trial{best['trial']}/metrics.json").read_text()
    )
    assert record["val"] == chosen["val"] and record["test"] == chosen["test"]
    assert chosen["run"]["training"]["lr"] == best["settings"]["lr"]


def test_ptb_as_a_stream(wt2_run):
    work, _ = wt2_run
    raw = (work / "results/downloads/ptb/train.txt").read_text().splitlines()
    data = (work / PTB_STREAM).read_text().splitlines()
    vocab = (work / "results/data/ptb_stream/vocab.txt").read_text().split()
    assert [line.split() for line in data] == [line.split() for line in raw[:48]]  # smoke: 48
    assert "<eos>" in vocab and "<unk>" in vocab
    assert cfg.family("ptb_stream") == "ptb_stream"
    assert cfg.task_kind("ptb_stream") == "stream"


def test_rerun_does_nothing_and_a_finetune_change_reruns_only_that_stage(wt2_run):
    work, config = wt2_run
    proc = run_snakemake(work, config, "wikitext2", f"{FINETUNED}/metrics.json", SEARCH, "-n")
    assert "Nothing to be done" in proc.stdout + proc.stderr
    changed = copy.deepcopy(config)
    changed["training"]["finetune_test"]["lr"] = 0.25
    proc = run_snakemake(work, changed, "wikitext2", f"{FINETUNED}/metrics.json", "-n")
    out = proc.stdout + proc.stderr
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", out, flags=re.M))
    assert jobs == {"finetune": "1", "evaluate_text": "1", "total": "2"}, out
    assert f"{FINETUNED}/model.pt" in out
    run_snakemake(work, config, "wikitext2", "-n")  # the shipped config: still nothing to do
