"""The PTB tracks (multi_matrix and general_second_order) through Snakemake at smoke scale, on
fixture corpora served from a fixture mirror or a loopback HTTP server (never the internet)."""

from __future__ import annotations

import functools
import http.server
import json
import math
import re
import shutil
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from pipeline_utils import (
    base_config,
    fixture_mirror,
    run_snakemake,
    write_fixture_corpora,
    write_yaml,
)

from rnnrepro import makers, papers

pytestmark = pytest.mark.slow

MULTI_MATRIX_MODELS = ("lstm", "mmlstm_2l", "rnn")
GENERAL_SECOND_ORDER_MODELS = (
    "so_de_tanh",
    "so_id",
    "first_order_rnn",
    "mi_rnn",
    "ratio_1",
    "ratio_2",
)


def text_config(mirror: str, sources: str) -> dict:
    """Smoke scale, PTB only, a few models of each paper (the full DAG is checked dry)."""
    config = base_config()
    config["scale"] = "smoke"
    config["data_mirror"] = mirror
    config["data_sources"] = sources
    multi_matrix = config["experiments"]["multi_matrix"]
    multi_matrix["datasets"] = [d for d in multi_matrix["datasets"] if d != "dyck"]
    multi_matrix["models"] = {m: multi_matrix["models"][m] for m in MULTI_MATRIX_MODELS}
    for model in multi_matrix["models"].values():
        if "datasets" in model:
            model["datasets"] = [d for d in model["datasets"] if d != "dyck"]
        model.get("dataset_hparams", {}).pop("dyck", None)
    general_second_order = config["experiments"]["general_second_order"]
    general_second_order["models"] = {
        m: general_second_order["models"][m] for m in GENERAL_SECOND_ORDER_MODELS
    }
    del config["experiments"]["second_order_lstm"]
    return config


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpora")
    fixture_mirror(root)
    return root


@pytest.fixture(scope="module")
def text_run(tmp_path_factory, fixtures):
    workdir = tmp_path_factory.mktemp("text")
    config = text_config(str(fixtures / "mirror"), str(fixtures / "sources.yaml"))
    run_snakemake(
        workdir, config, "results/tables/multi_matrix_table2_ptb.md", "general_second_order"
    )
    return workdir, config


def test_ptb_tables_hold_runs_and_paper_numbers(text_run):
    workdir, _ = text_run
    table = pd.read_csv(workdir / "results/tables/multi_matrix_table2_ptb.csv")
    ran = table[
        table["model"].isin(MULTI_MATRIX_MODELS) & table["metric"].isin(["test_bpc", "test_ce"])
    ]
    assert set(ran["dataset"]) == {"ptb_char", "ptb_word"}
    assert (ran["n_seeds"] == 1).all() and ran["paper"].notna().all()
    assert ran["mean"].between(0.5, 12).all()  # bits per char / nats per word, near uniform
    # the n-gram baselines of the same data sit beside every text row, and under the table
    assert ran["unigram"].notna().all() and ran["n-gram"].notna().all()
    markdown = (workdir / "results/tables/multi_matrix_table2_ptb.md").read_text()
    assert "## N-gram baselines on the same data" in markdown and "| ptb_char | kn8 |" in markdown
    # the orderings §5.4 draws, each on the paper's numbers and on the runs'
    assert "| the mmLSTM beats the LSTM (PTB words) | ptb_word: mmlstm < lstm | 0.022 |" in markdown
    assert set(table.loc[~table["model"].isin(MULTI_MATRIX_MODELS), "verdict"]) == {
        "not run at smoke scale"
    }
    general_second_order = pd.read_csv(workdir / "results/tables/general_second_order_table1.csv")
    bpc = general_second_order[
        (general_second_order["metric"] == "test_bpc")
        & general_second_order["model"].isin(GENERAL_SECOND_ORDER_MODELS)
    ]
    assert len(bpc) == 4 and (bpc["n_seeds"] == 1).all()
    nats = general_second_order[general_second_order["metric"] == "test_npc"].set_index("model")
    bits = bpc.set_index("model")
    assert (nats.loc[bits.index, "mean"] - bits["mean"] * math.log(2)).abs().max() < 1e-9
    markdown = (workdir / "results/tables/general_second_order_table1.md").read_text()
    assert "Scale smoke" in markdown and "Corpus: the paper's is the raw Wall Street" in markdown


def test_text_metrics_and_analyses(text_run):
    workdir, _ = text_run
    runs = workdir / "results/runs"
    char = json.loads((runs / "multi_matrix/ptb_char/lstm/seed1/metrics.json").read_text())
    word = json.loads((runs / "multi_matrix/ptb_word/lstm/seed1/metrics.json").read_text())
    assert char["test"]["bpc"] > 0 and char["test"]["ce"] is None
    assert word["test"]["ce"] == pytest.approx(word["test"]["loss"]) and word["test"]["bpc"] is None
    assert char["scale"] == "smoke" and char["run"]["text"]["framing"] == "eos"
    # every character of the test split plus one <eos> per sentence is scored
    test = (workdir / "results/data/ptb_char/test.txt").read_text().splitlines()
    assert char["test"]["tokens"] == sum(len(line.split()) + 1 for line in test)
    fold = runs / "general_second_order/ptb_lines_unigram_fold1/so_id/seed1"
    positions = pd.read_csv(fold / "position_loss.csv")
    assert positions["position"].min() == 1 and (positions["count"] > 0).all()
    examples = json.loads((fold / "examples.json").read_text())
    assert all(len(e["target"]) == len(e["predicted"]) for e in examples)
    from PIL import Image

    for name in ("fig1_ratio", "fig2_examples", "fig3_position_loss"):
        path = workdir / f"results/figures/general_second_order_{name}.png"
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        with Image.open(path) as image:
            assert "Scale smoke: reduced" in image.text["Description"], name


def test_folds_are_disjoint_and_cover_the_corpus(text_run):
    workdir, _ = text_run
    data = workdir / "results/data/ptb_lines_unigram_fold1"
    splits = {s: (data / f"{s}.txt").read_text().splitlines() for s in ("train", "val", "test")}
    assert all(splits.values())
    assert not set(splits["train"]) & set(splits["test"])  # fixture lines are mostly unique


def test_second_run_executes_nothing(text_run):
    workdir, config = text_run
    proc = run_snakemake(
        workdir, config, "results/tables/multi_matrix_table2_ptb.md", "general_second_order", "-n"
    )
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_only_a_change_of_content_reruns_a_download(text_run, tmp_path):
    """Moving the mirror and the data_sources file plans nothing; a new checksum for one file
    plans that file's download and no other."""
    workdir, config = text_run
    targets = ("results/tables/multi_matrix_table2_ptb.md", "general_second_order")
    shutil.copytree(config["data_mirror"], tmp_path / "mirror")
    overrides = yaml.safe_load(Path(config["data_sources"]).read_text())
    moved = {**config, "data_mirror": str(tmp_path / "mirror")}
    moved["data_sources"] = str(tmp_path / "sources.yaml")
    write_yaml(tmp_path / "sources.yaml", overrides)
    proc = run_snakemake(workdir, moved, *targets, "-n")
    assert "Nothing to be done" in proc.stdout + proc.stderr
    overrides["ptb_char"]["valid.txt"]["sha256"] = "0" * 64
    write_yaml(tmp_path / "sources.yaml", overrides)
    plan = run_snakemake(workdir, moved, *targets, "-n", "--quiet", "rules").stdout
    assert re.search(r"^download\s+1$", plan, re.M), plan
    assert "ptb_text" in plan and "ptb_lines" not in plan, plan  # PTB words' lines: not char
    run_snakemake(workdir, config, *targets)  # leaves the run as the other tests expect


def test_corrupt_mirror_file_stops_with_both_hashes(tmp_path, fixtures):
    mirror = tmp_path / "mirror"
    overrides = write_fixture_corpora(mirror)
    (mirror / "ptb" / "valid.txt").write_text("tampered\n")
    write_yaml(tmp_path / "sources.yaml", overrides)
    config = text_config(str(mirror), str(tmp_path / "sources.yaml"))
    proc = run_snakemake(tmp_path, config, "results/data/ptb_word/train.txt", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "valid.txt" in out and overrides["ptb"]["valid.txt"]["sha256"] in out
    assert not (tmp_path / "results/downloads/ptb/valid.txt").exists()
    assert not list((tmp_path / "results/downloads/ptb").glob(".*part"))


def test_offline_main_job_stops_before_any_job_starts(tmp_path, fixtures):
    """The default target with Dyck runs too (which need no corpus): nothing may start."""
    overrides = yaml.safe_load((fixtures / "sources.yaml").read_text())
    for corpus in overrides.values():
        for name, entry in corpus.items():
            entry["url"] = f"http://127.0.0.1:9/{name}"  # discard port: nothing listens
    write_yaml(tmp_path / "sources.yaml", overrides)
    config = base_config()
    config.update(scale="smoke", data_mirror="", data_sources=str(tmp_path / "sources.yaml"))
    started = time.monotonic()
    proc = run_snakemake(tmp_path, config, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and time.monotonic() - started < 60
    assert "data_mirror" in out and "cannot reach http://127.0.0.1:9/train.txt" in out
    assert "No job was started" in out
    assert not (tmp_path / "results").exists()  # no data, no training, no checkpoint


def test_mirror_without_a_needed_file_stops_before_any_job(tmp_path, fixtures):
    mirror = tmp_path / "mirror"
    overrides = write_fixture_corpora(mirror)
    (mirror / "ptb-char" / "test.txt").unlink()
    write_yaml(tmp_path / "sources.yaml", overrides)
    config = base_config()
    config.update(
        scale="smoke", data_mirror=str(mirror), data_sources=str(tmp_path / "sources.yaml")
    )
    proc = run_snakemake(tmp_path, config, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "ptb_char/test.txt: not in the data mirror" in out and "ptb/test.txt" not in out
    assert not (tmp_path / "results").exists()


def test_dyck_target_needs_no_corpus(tmp_path):
    config = base_config()
    config.update(scale="smoke", data_mirror="/nonexistent")
    proc = run_snakemake(tmp_path, config, "results/data/dyck_m4/train.txt")
    assert "cannot be had" not in proc.stdout + proc.stderr


def test_downloads_through_http(tmp_path, fixtures):
    handler = functools.partial(
        http.server.SimpleHTTPRequestHandler, directory=str(fixtures / "mirror")
    )
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        overrides = yaml.safe_load((fixtures / "sources.yaml").read_text())
        for corpus in overrides.values():
            for entry in corpus.values():
                entry["url"] = f"http://127.0.0.1:{server.server_port}/{entry['mirror_path']}"
        write_yaml(tmp_path / "sources.yaml", overrides)
        config = text_config("", str(tmp_path / "sources.yaml"))
        run_snakemake(tmp_path, config, "results/data/ptb_lines_bigram_fold1/train.txt")
    finally:
        server.shutdown()
    got = (tmp_path / "results/downloads/ptb/test.txt").read_bytes()
    assert got == (fixtures / "mirror/ptb/test.txt").read_bytes()
    vocab = (tmp_path / "results/data/ptb_lines_bigram_fold1/vocab.txt").read_text().split()
    assert len(vocab) == 703


def test_full_smoke_dag_plans_every_paper_target(tmp_path, fixtures):
    config = base_config()
    config["scale"] = "smoke"
    proc = run_snakemake(tmp_path, config, "all", "-n")
    out = proc.stdout + proc.stderr
    for rule in ("download", "ptb_text", "ptb_lines_fold", "evaluate_text", "analyse_positions"):
        assert f"rule {rule}:" in out
    targets = makers.targets(config)  # every table and figure the catalogues declare
    assert len(targets) == len(papers.outputs())
    assert "results/tables/multi_matrix_table3.md" in targets
    for target in targets:
        assert target in out, target
