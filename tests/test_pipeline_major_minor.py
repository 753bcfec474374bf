"""major_minor's track through Snakemake at smoke scale, on fixture corpora: training, fine-tuning
and dynamic evaluation as three rules, Tables II and VII at every stage, Tables IV and V from the
config, and reruns that touch only the stage whose settings changed."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch
from pipeline_utils import base_config, dry_run_jobs, run_track

pytestmark = pytest.mark.slow
RUNS = "results/runs/major_minor"
MODELS = ("awd_lstm_mos", "awd_mmlstm_mos", "wt103_mmlstm")


def major_minor_config(mirror: str, sources: str) -> dict:
    config = base_config()
    config.update(scale="smoke", data_mirror=mirror, data_sources=sources)
    experiment = config["experiments"]["major_minor"]
    experiment["models"] = {name: experiment["models"][name] for name in MODELS}
    for model in experiment["models"].values():  # PTB and WikiText-103 runs only
        model["datasets"] = [d for d in model["datasets"] if d != "wikitext2"]
    config["experiments"] = {"major_minor": experiment}
    return config


@pytest.fixture(scope="module")
def track(tmp_path_factory):
    return run_track(tmp_path_factory.mktemp("major_minor"), major_minor_config, "major_minor")


def test_three_stages_each_start_from_the_one_before(track):
    work, _ = track
    for model in ("awd_lstm_mos", "awd_mmlstm_mos"):
        run = work / RUNS / "ptb_stream" / model / "seed1"
        tuned = torch.load(run / "finetune/model.pt", weights_only=True)
        assert tuned["init"].endswith(f"ptb_stream/{model}/seed1/model.pt")
        assert tuned["run"]["training"]["average_from_start"] is True
        dynamic = json.loads((run / "finetune/dynamic_eval.json").read_text())
        assert dynamic["stage"] == "dynamic_eval" and dynamic["evaluated_stage"] == "finetune"
        assert dynamic["val"]["tokens"] > 0 and dynamic["test"]["windows"] > 0
        assert dynamic["dynamic_eval"]["max_batches"] == 2  # smoke: the experiment's cap
        history = pd.read_csv(run / "history.csv")
        assert len(history) == 2  # smoke: 2 epochs of at most 2 batches
    assert not (work / RUNS / "wikitext103/wt103_mmlstm/seed1/finetune").exists()


def test_table2_has_a_row_per_stage_and_names_the_missing_models(track):
    work, _ = track
    table = pd.read_csv(work / "results/tables/major_minor_table2.csv")
    ran = table[table["model"].isin(MODELS)]
    assert set(ran["stage"]) == {"train", "finetune", "dynamic_eval"}
    assert (ran["n_seeds"] == 1).all() and ran["verdict"].str.startswith("smoke-scale").all()
    missing = table[~table["model"].isin(MODELS)]
    assert set(missing["model"]) == {"awd_lstm", "awd_lstm_mos_minus"}
    assert (missing["verdict"] == "not run at smoke scale").all()
    md = (work / "results/tables/major_minor_table2.md").read_text()
    assert "| stage |" in md and "at most 2 batches per epoch" in md


def test_table7_says_no_run_read_the_real_wikitext103(track):
    work, _ = track
    md = (work / "results/tables/major_minor_table7.md").read_text()
    assert "Corpus wikitext103: NOT the published files" in md
    table = pd.read_csv(work / "results/tables/major_minor_table7.csv")
    assert table.loc[table["model"] == "wt103_mmlstm", "n_seeds"].eq(1).all()


def test_tables_4_and_5_are_the_papers_settings(track):
    work, _ = track
    for number in (4, 5):
        table = pd.read_csv(work / f"results/tables/major_minor_table{number}.csv")
        ptb = table[table["dataset"] == "ptb_stream"]
        assert len(ptb) and (ptb["verdict"] == "match").all(), table
        assert (table[table["dataset"] == "wikitext2"]["verdict"] == "not configured").all()
    table4 = pd.read_csv(work / "results/tables/major_minor_table4.csv")
    sizes = table4[(table4["metric"] == "layer_size_1") & (table4["dataset"] == "ptb_stream")]
    assert sizes["at smoke scale"].tolist() == [22]  # the smoke scale's width: 1080 x 0.02


def test_a_later_stage_reruns_alone(track):
    work, config = track
    assert dry_run_jobs(work, config, "major_minor") == {}  # nothing changed: nothing to do
    config["dynamic_eval"]["mmlstm_ptb"]["lamb"] = 0.05
    jobs = dry_run_jobs(work, config, "major_minor")
    assert jobs.get("dynamic_eval") == 1 and "train" not in jobs and "finetune" not in jobs
    config["dynamic_eval"]["mmlstm_ptb"]["lamb"] = 0.07
    config["training"]["mmlstm_finetune_ptb"]["lr"] = 10
    jobs = dry_run_jobs(work, config, "major_minor")
    assert jobs.get("finetune") == 1 and jobs.get("dynamic_eval") == 1 and "train" not in jobs
