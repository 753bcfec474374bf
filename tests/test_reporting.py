"""Reporting: reference numbers, result tables, analyses and figures (on small fixtures)."""

from __future__ import annotations

import importlib
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from pipeline_utils import TOLERANCES

from rnnrepro import papers
from rnnrepro.data.dyck import read_sequences
from rnnrepro.models import build_model, save_model
from rnnrepro.papers import Ordering
from rnnrepro.provenance import KEPT_FROM_ARCHIVE
from rnnrepro.reporting.analysis import (
    attention_heatmap,
    final_training_epoch,
    heatmap_sequence,
    principal_angles,
)
from rnnrepro.reporting.figures import FIGURES, read_runs
from rnnrepro.reporting.metrics import collect_metrics
from rnnrepro.reporting.orderings import check_orderings
from rnnrepro.reporting.paper_numbers import load_paper_numbers
from rnnrepro.reporting.run_lines import (
    describe_kept,
    describe_readings,
    excess_lines,
    training_lines,
)
from rnnrepro.reporting.tables import build_table, verdict_tally, write_table

REPO = Path(__file__).resolve().parents[1]
VOCAB = ["<pad>", "<start>", "<end>", "(a", "a)", "(b", "b)"]
TOLERANCE_OPTION = ["--tolerances", json.dumps(TOLERANCES)]  # as every table job is given
TABLE1 = [*TOLERANCE_OPTION, "--paper", "second_order_lstm", "--table", "Table 1"]


def run_script(name: str, argv: list) -> None:
    """Run ``rnnrepro.scripts.<name>``'s ``main`` in-process (no interpreter start-up cost)."""
    importlib.import_module(f"rnnrepro.scripts.{name}").main([str(arg) for arg in argv])


def run_dir(root: Path, model: str, seed: int, dataset: str = "dyck_m4") -> Path:
    path = root / "runs" / "second_order_lstm" / dataset / model / f"seed{seed}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_metrics(
    root: Path,
    model: str,
    seed: int,
    test_ppl: float | None,
    test_wcpa: float,
    dataset: str = "dyck_m4",
    recurrent: int = 2064,
) -> Path:
    metrics = {
        "experiment": "second_order_lstm",
        "dataset": dataset,
        "model": model,
        "seed": seed,
        "params": {"total": recurrent + 500, "recurrent": recurrent},
        "epochs": 10,
        "train_seconds": 120.0,
        "reading": "lm",
        "val": {"loss": 0.87, "ppl": test_ppl, "wcpa": test_wcpa},
        "test": {"loss": 0.87, "ppl": test_ppl, "wcpa": test_wcpa},
    }
    path = run_dir(root, model, seed, dataset) / "metrics.json"
    path.write_text(json.dumps(metrics))
    return path


def reference(*rows: tuple) -> pd.DataFrame:
    cols = ["paper", "dataset", "model", "metric", "value", "comparison"]
    return pd.DataFrame(
        [dict(zip(cols, ("second_order_lstm", "dyck_m4", *row), strict=True)) for row in rows]
    )


def test_reference_has_table1_numbers():
    t1 = load_paper_numbers("second_order_lstm", "Table 1")
    assert len(t1) == 30
    row = t1[(t1.dataset == "dyck_m4") & (t1.model == "lstm") & (t1.metric == "test_ppl")]
    assert row["value"].item() == pytest.approx(2.393)
    m8 = t1[(t1.dataset == "dyck_m8") & (t1.model == "attention_lstm")].set_index("metric")
    assert m8.loc["test_wcpa", "value"] == pytest.approx(0.667)
    assert m8.loc["params", "value"] == 8600
    assert t1["source"].str.startswith("second_order_lstm, Table 1").all()
    multi_matrix = load_paper_numbers("multi_matrix")
    assert set(multi_matrix["comparison"]) == {"=", "<", "<="}
    assert (
        multi_matrix.query("metric == 'test_wcpa' and model == 'dyck_rnn'")["value"] == 1.0
    ).all()


def test_collect_metrics_and_mean_std(tmp_path):
    paths = [write_metrics(tmp_path, "lstm", s, p, 1.0) for s, p in [(1, 2.39), (2, 2.41)]]
    runs = collect_metrics(paths)
    assert list(runs["seed"]) == [1, 2]
    assert runs["train_minutes"].tolist() == [2.0, 2.0]
    table = build_table(reference(("lstm", "test_ppl", 2.393, "=")), runs, {}, TOLERANCES)
    row = table.iloc[0]
    assert row["mean"] == pytest.approx(2.40)
    assert row["std"] == pytest.approx(np.std([2.39, 2.41], ddof=1))
    assert row["reproduced"] == "2.400 ± 0.014"
    assert row["n_seeds"] == 2 and row["params"] == 2064


def test_build_table_verdicts(tmp_path):
    runs = collect_metrics(
        [
            write_metrics(tmp_path, "lstm", 1, 2.395, 0.97),
            write_metrics(tmp_path, "attention_lstm", 1, 2.60, 0.80),
            write_metrics(tmp_path, "rnn", 1, None, 0.40),
            write_metrics(tmp_path, "rnn", 2, None, 0.55),
            write_metrics(tmp_path, "mmrnn", 1, None, 0.30),
        ]
    )
    ref = reference(
        ("lstm", "test_ppl", 2.393, "="),  # within 1 % -> match
        ("lstm", "test_wcpa", 1.0, "="),  # |0.03| <= 0.05 -> match
        ("attention_lstm", "test_ppl", 2.387, "="),  # 9 % off -> differs
        ("attention_lstm", "test_wcpa", 0.999, "="),  # differs
        ("assignment_lstm", "test_ppl", 2.4, "="),  # no run -> missing
        ("rnn", "test_wcpa", 0.5, "<="),  # seed 2 breaks the bound -> differs
        ("mmrnn", "test_wcpa", 0.5, "<="),  # bound holds -> match
        ("rnn", "test_ppl", 3.0, "="),  # close-bracket model: no ppl -> missing
        ("lstm", "epochs", 4, "="),  # no tolerance -> info
    )
    table = build_table(ref, runs, {"dyck_m4": {"train": 2.3, "val": 2.3, "test": 2.3}}, TOLERANCES)
    assert table["verdict"].tolist() == [
        "match",
        "match",
        "differs",
        "differs",
        "missing",
        "differs",
        "match",
        "missing",
        "info",
    ]
    assert table.loc[0, "floor"] == 2.3 and math.isnan(table.loc[1, "floor"])
    assert table.loc[2, "delta"] == pytest.approx(2.60 - 2.387)


def test_a_wcpa_is_compared_over_distances_with_enough_events(tmp_path):
    """A run's WCPA decided by a distance seen once is shown with that evidence; the WCPA over
    distances with at least ``wcpa_min_events`` events is the one compared."""
    paths = []
    for seed, (strict, events, robust) in enumerate([(0.0, 1, 0.97), (0.96, 25, 0.96)], 1):
        path = write_metrics(tmp_path, "lstm", seed, 2.39, strict)
        record = json.loads(path.read_text())
        evidence = {"wcpa_events": events, "wcpa_min_events": 20, "robust_wcpa": robust}
        record["test"] |= evidence
        path.write_text(json.dumps(record))
        paths.append(path)
    table = build_table(reference(("lstm", "test_wcpa", 1.0, "=")), collect_metrics(paths), {},
                        TOLERANCES)  # fmt: skip
    row = table.iloc[0]
    assert row["mean"] == pytest.approx(0.965) and row["verdict"] == "match"
    assert row["strict_wcpa"] == "0.480 ± 0.679; decided by < 20 events in 1 of 2 run(s) (fewest 1)"
    plain = build_table(reference(("lstm", "val_wcpa", 1.0, "=")), collect_metrics(paths), {},
                        TOLERANCES)  # fmt: skip
    assert plain.iloc[0]["mean"] == pytest.approx(0.48)  # no evidence recorded: the WCPA itself
    assert math.isnan(plain.iloc[0]["strict_wcpa"]) and plain.iloc[0]["verdict"] == "differs"


def test_diverged_runs_are_named_and_later_stages_kept_apart(tmp_path):
    paths = [write_metrics(tmp_path, "lstm", s, p, 1.0) for s, p in [(1, 2.39), (2, 2.41)]]
    record = json.loads(paths[1].read_text())
    paths[1].write_text(json.dumps({**record, "diverged": True}))
    finetuned = tmp_path / "finetune.json"  # a later stage of seed 1, far off: not in the row
    finetuned.write_text(json.dumps({**record, "seed": 1, "stage": "finetune", "test": {
        "loss": 9.0, "ppl": 9.0, "wcpa": 0.0}}))  # fmt: skip
    runs = collect_metrics([*paths, finetuned])
    assert runs["stage"].tolist() == ["train", "train", "finetune"]
    table = build_table(reference(("lstm", "test_ppl", 2.393, "=")), runs, {}, TOLERANCES)
    assert table.loc[0, "mean"] == pytest.approx(2.40) and table.loc[0, "n_seeds"] == 2
    assert table.loc[0, "verdict"] == "match; 1 of 2 run(s) diverged"


def test_below_floor_is_flagged(tmp_path):
    runs = collect_metrics([write_metrics(tmp_path, "lstm", 1, 2.20, 1.0)])
    floors = {"dyck_m4": {"train": 2.3, "val": 2.3, "test": 2.3}}
    table = build_table(reference(("lstm", "test_ppl", 2.2, "=")), runs, floors, TOLERANCES)
    assert table.loc[0, "verdict"] == "below floor"
    write_table(table, tmp_path / "t.csv", tmp_path / "t.md", "Test table", ["tolerance note"])
    md = (tmp_path / "t.md").read_text()
    assert "**BELOW FLOOR**" in md and "WARNING" in md and "tolerance note" in md
    assert pd.read_csv(tmp_path / "t.csv")["verdict"].tolist() == ["below floor"]


def test_reduced_scale_verdicts_name_the_scale(tmp_path):
    paths = [write_metrics(tmp_path, m, 1, None, w) for m, w in (("rnn", 0.0), ("lstm", 1.0))]
    for path in paths:  # as evaluate_dyck writes them at smoke scale
        path.write_text(json.dumps({**json.loads(path.read_text()), "scale": "smoke"}))
    runs = collect_metrics(paths)
    ref = reference(
        ("rnn", "test_wcpa", 0.5, "<="),  # holds trivially: the model learnt nothing
        ("lstm", "test_wcpa", 1.0, "="),
        ("mmrnn", "test_wcpa", 0.5, "<="),  # no run at this scale
    )
    table = build_table(ref, runs, {}, TOLERANCES, scale="smoke")
    assert table["verdict"].tolist() == [
        "smoke-scale match",
        "smoke-scale match",
        "not run at smoke scale",
    ]
    # the runs' own scale wins over the table's (a paper table must not read smoke runs as paper)
    assert (
        build_table(ref, runs, {}, TOLERANCES, scale="paper")["verdict"][0] == "smoke-scale match"
    )
    assert build_table(ref, runs.assign(scale="paper"), {}, TOLERANCES)["verdict"].tolist() == [
        "match",
        "match",
        "missing",
    ]


def test_make_table_cli(tmp_path):
    metrics = write_metrics(tmp_path, "lstm", 1, 2.393, 1.0)
    floor = tmp_path / "data" / "dyck_m4" / "floor.json"
    floor.parent.mkdir(parents=True)
    floor.write_text(json.dumps({"train": 2.30, "val": 2.31, "test": 2.32}))
    out_csv, out_md = tmp_path / "t1.csv", tmp_path / "t1.md"
    run_script(
        "make_table",
        [
            *TABLE1,
            "--metrics",
            metrics,
            "--floors",
            floor,
            "--out-csv",
            out_csv,
            "--out-md",
            out_md,
        ],
    )
    table = pd.read_csv(out_csv)
    assert len(table) == 30
    m4 = table[(table.dataset == "dyck_m4") & (table.model == "lstm")].set_index("metric")
    assert m4.loc["test_ppl", "verdict"] == "match" and m4.loc["test_ppl", "floor"] == 2.32
    assert m4.loc["params", "verdict"] == "match"  # 2064 vs printed 2.1 thousand
    assert (table[table.model == "attention_lstm"]["verdict"] == "missing").all()
    assert "Tolerances for a match: ppl 0.01 (relative)" in out_md.read_text()


def test_principal_angles_identical_and_orthogonal():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 2))
    same = principal_angles([torch.tensor(a), torch.tensor(a @ rng.standard_normal((2, 2)))])
    assert same["pair"].unique().tolist() == ["1-2"]
    assert np.allclose(same["angle_deg"], 0.0, atol=1e-6)
    e = np.eye(8)
    ortho = principal_angles([e[:, :2], e[:, 2:4], e[:, 4:6]])
    assert ortho["pair"].unique().tolist() == ["1-2", "1-3", "2-3"]
    assert np.allclose(ortho["angle_deg"], 90.0)


class FakeAttention:
    """Minimal stand-in for AttentionLSTMLM's attention interface."""

    hard = True
    temperature = 0.5

    def set_hard(self, hard: bool) -> None:
        self.hard = hard

    def attention_weights(self, tokens: torch.Tensor) -> torch.Tensor:
        scores = torch.stack([tokens.float(), -tokens.float()], dim=-1)
        return torch.softmax(scores / self.temperature, dim=-1)


def test_attention_heatmap(tmp_path):
    test = tmp_path / "test.txt"
    test.write_text("(a (b b) (a a) a)\n(a a)\n")
    sequence = heatmap_sequence(read_sequences(test), max_length=4)
    assert sequence == ["(a", "a)"]
    model = FakeAttention()
    heat = attention_heatmap(model, VOCAB, sequence)
    assert model.hard is False
    assert heat["token"].tolist()[::2] == ["<start>", "(a", "a)"]
    assert heat.groupby("position")["weight"].sum().to_numpy() == pytest.approx(1.0)
    # paper-scale lengths: no sequence that short, so a prefix of the first one
    assert heatmap_sequence(read_sequences(test)[:1], max_length=3) == ["(a", "(b", "b)"]
    with pytest.raises(ValueError, match="no test sequences"):
        heatmap_sequence([], max_length=3)


def test_analyse_attention_cli(tmp_path):
    hparams = {"embedding_dim": 6, "hidden_size": 3, "cells": 2}
    model = build_model("attention_lstm", VOCAB, **hparams)
    identity = {"experiment": "e", "dataset": "dyck_m4", "model": "m", "seed": 2, "stage": "train"}
    record = {"epochs": 9, "best_epoch": 3, "identity": identity}
    assert final_training_epoch(record) == 2
    save_model(model, tmp_path / "model.pt", "attention_lstm", VOCAB, hparams, **record)
    (tmp_path / "test.txt").write_text("(a (b b) a)\n")
    angles, heat = tmp_path / "pabs.csv", tmp_path / "heat.csv"
    run_script(
        "analyse_attention",
        [
            "--model",
            tmp_path / "model.pt",
            "--test",
            tmp_path / "test.txt",
            "--out-angles",
            angles,
            "--out-heatmap",
            heat,
        ],
    )
    pabs = pd.read_csv(angles)
    assert len(pabs) == 3 and pabs["angle_deg"].between(0, 90).all()
    assert (pabs[list(identity)] == pd.Series(identity)).all().all()
    weights = pd.read_csv(heat)
    assert len(weights) == 2 * 5 and weights["weight"].between(0, 1).all()


def figure_inputs(root: Path, kind: str) -> list[Path]:
    paths = []
    for dataset in ("dyck_m4", "dyck_m6"):
        for model in ("lstm", "attention_lstm"):
            for seed in (1, 2):
                path = run_dir(root, model, seed, dataset)
                if kind == "ldpa":
                    df = pd.DataFrame(
                        {
                            "split": "test",
                            "distance": range(1, 30),
                            "correct": 9,
                            "total": 10,
                            "accuracy": 0.9,
                        }
                    )
                elif kind == "val_wcpa":
                    df = pd.DataFrame({"epoch": range(1, 6), "val_wcpa": np.linspace(0.2, 1, 5)})
                elif kind == "pabs":
                    df = principal_angles(np.random.default_rng(seed).standard_normal((2, 12, 4)))
                else:
                    df = pd.DataFrame(
                        {
                            "position": np.repeat(range(25), 2),
                            "token": np.repeat(["<start>", *["(a"] * 24], 2),
                            "cell": [1, 2] * 25,
                            "weight": [0.7, 0.3] * 25,
                        }
                    )
                identity = {"experiment": "second_order_lstm", "dataset": dataset, "model": model}
                df = df.assign(**identity, seed=seed, stage="train")
                df.to_csv(path / f"{kind}.csv", index=False)
                paths.append(path / f"{kind}.csv")
    return paths[:1] if kind == "heatmap" else paths


SECOND_ORDER_LSTM_FIGURES = ("ldpa", "val_wcpa", "pabs", "heatmap")


@pytest.mark.parametrize("kind", SECOND_ORDER_LSTM_FIGURES)
def test_figures_write_png(tmp_path, kind):
    out = tmp_path / f"{kind}.png"
    FIGURES[kind](figure_inputs(tmp_path, kind), out)
    assert out.read_bytes()[:4] == b"\x89PNG" and out.stat().st_size > 5000


def test_figures_take_the_run_identity_from_the_files_not_their_paths(tmp_path):
    (path,) = figure_inputs(tmp_path, "heatmap")
    moved = tmp_path / "anywhere.csv"  # a path that says nothing of the run
    moved.write_text(path.read_text())
    runs = read_runs([moved])
    assert runs[["dataset", "model", "seed"]].iloc[0].tolist() == ["dyck_m4", "lstm", 1]
    bare = tmp_path / "bare.csv"
    pd.read_csv(moved).drop(columns=["seed", "stage"]).to_csv(bare, index=False)
    with pytest.raises(ValueError, match=r"bare.csv: no run identity columns \(seed, stage\)"):
        read_runs([bare])


# ---------------------------------------------------------------------------------------------
# Penn Treebank experiments of multi_matrix and general_second_order


def write_lm_metrics(
    root: Path,
    experiment: str,
    dataset: str,
    model: str,
    seed: int,
    bpc: float | None = None,
    ce: float | None = None,
    ratio: float | None = None,
    total: int = 4_500_000,
    scale: str = "paper",
) -> Path:
    """A metrics.json in the PTB format (bpc on character data, ce on word data)."""
    loss = ce if ce is not None else (bpc or 0.0) * math.log(2)
    split = {
        "loss": loss,
        "bpc": bpc,
        "ce": ce,
        "ppl": math.exp(loss),
        "wcpa": None,
        "tokens": 1000,
        "chars": 1000,
    }
    run = {"architecture": model, "hparams": {}, "training": {}}
    if ratio is not None:
        run["budget"] = {"budget": 500000, "ratio": ratio}
    metrics = {
        "experiment": experiment,
        "dataset": dataset,
        "model": model,
        "seed": seed,
        "architecture": model,
        "run": run,
        "params": {"total": total, "recurrent": total // 2},
        "epochs": 12,
        "best_epoch": 7,
        "train_seconds": 600.0,
        "stopped_because": "early_stopping",
        "scale": scale,
        "val": split,
        "test": split,
    }
    path = root / "runs" / experiment / dataset / model / f"seed{seed}"
    path.mkdir(parents=True, exist_ok=True)
    (path / "metrics.json").write_text(json.dumps(metrics))
    return path / "metrics.json"


def write_general_second_order_outputs(metrics_path: Path, shift: float = 0.0) -> list[Path]:
    """position_loss.csv and examples.json next to a metrics.json."""
    run = metrics_path.parent
    positions = pd.DataFrame(
        {
            "position": range(1, 16),
            "bits": [3.0 - 0.2 * k + shift for k in range(14)] + [1.5],
            "count": [5000 // k for k in range(1, 16)],
        }
    )
    positions.to_csv(run / "position_loss.csv", index=False)
    examples = [
        {"target": "but it s just one of those things that happened", "predicted": ""},
        {"target": "to land customers for their well paying stock", "predicted": ""},
        {"target": "a" * 130, "predicted": "a" * 129 + "b"},
    ]
    for doc in examples[:2]:
        doc["predicted"] = doc["target"].replace("t", "s")
    (run / "examples.json").write_text(json.dumps(examples))
    return [run / "position_loss.csv", run / "examples.json"]


def test_reference_has_ptb_numbers():
    t2 = load_paper_numbers("multi_matrix", "Table 2")
    char = t2[t2.dataset == "ptb_char"].set_index(["model", "metric"])["value"]
    word = t2[t2.dataset == "ptb_word"].set_index(["model", "metric"])["value"]
    assert len(char) == 20 and len(word) == 12
    assert char["mmlstm", "test_bpc"] == pytest.approx(1.301)
    assert char["mrnn", "test_bpc"] == pytest.approx(1.460)
    assert char["lstm_2l", "params_total"] == 4_500_000
    assert word["lstm_2l", "test_ce"] == pytest.approx(4.770)
    assert set(word.index.get_level_values("model")) == {
        "rnn",
        "mmrnn",
        "lstm",
        "mmlstm",
        "lstm_2l",
        "mmlstm_2l",
    }
    t1 = load_paper_numbers("multi_matrix", "Table 1")
    ptb1 = t1[t1.dataset.str.startswith("ptb")].set_index(["dataset", "model", "metric"])
    assert len(ptb1) == 32
    assert ptb1.loc[("ptb_char", "mmlstm_2l", "train_minutes"), "value"] == 252
    assert ptb1.loc[("ptb_word", "mmlstm_2l", "epochs"), "value"] == 50
    t3 = load_paper_numbers("multi_matrix", "Table 3")
    assert len(t3) == 24 and set(t3.dataset) == {f"ptb_char_cut{c}" for c in (25, 50, 75)}
    cut = t3[t3.metric == "test_bpc"].set_index(["dataset", "model"])["value"]
    assert cut["ptb_char_cut50", "mmlstm_2l"] == pytest.approx(1.411)
    s3 = load_paper_numbers("general_second_order", ["Table 1", "Section 4.1"])
    assert len(s3) == 20 and set(s3.dataset) == {"ptb_lines_unigram"}
    bpc = s3[s3.metric == "test_bpc"].set_index("model")["value"]
    assert bpc["so_tanh"] == pytest.approx(1.12) and bpc["so_e_id"] == pytest.approx(1.23)
    assert "mi_rnn_id" not in bpc and bpc["first_order_rnn"] == pytest.approx(1.27)
    assert (s3.loc[s3.metric == "params_total", "value"] == 500_000).all()
    for paper, table in (
        ("multi_matrix", "Table 2"),
        ("multi_matrix", "Table 3"),
        ("general_second_order", "Table 1"),
    ):
        rows = load_paper_numbers(paper, table)
        assert rows["source"].str.startswith(f"{paper}, {table}").all()


def test_bpc_ce_verdicts_and_dyck_metrics_mix(tmp_path):
    paths = [
        write_lm_metrics(tmp_path, "multi_matrix", "ptb_char", "lstm", 1, bpc=1.310),
        write_lm_metrics(tmp_path, "multi_matrix", "ptb_char", "lstm", 2, bpc=1.312),
        write_lm_metrics(tmp_path, "multi_matrix", "ptb_char", "mmlstm", 1, bpc=1.40),
        write_lm_metrics(tmp_path, "multi_matrix", "ptb_word", "lstm", 1, ce=4.83, total=1_996_000),
        write_lm_metrics(
            tmp_path, "multi_matrix", "ptb_word", "mmlstm", 1, ce=5.10, total=2_003_000
        ),
        write_lm_metrics(tmp_path, "multi_matrix", "ptb_char_cut25", "lstm", 1, bpc=1.2),
        write_metrics(tmp_path, "lstm", 1, 2.4, 0.9),  # Dyck format: no bpc / ce
    ]
    runs = collect_metrics(paths)
    assert runs["test_bpc"].isna().tolist() == [False] * 3 + [True] * 2 + [False, True]
    assert runs["test_ce"].notna().sum() == 2 and runs.loc[6, "test_ppl"] == 2.4
    ref = load_paper_numbers("multi_matrix", "Table 2")
    ref = ref[ref.model.isin(["lstm", "mmlstm", "rnn"])].reset_index(drop=True)
    table = build_table(ref, runs, {}, TOLERANCES).set_index(["dataset", "model", "metric"])
    assert table.loc[("ptb_char", "lstm", "test_bpc"), "verdict"] == "match"  # +0.3 %
    assert table.loc[("ptb_char", "lstm", "test_bpc"), "n_seeds"] == 2  # not the cut25 run
    assert table.loc[("ptb_char", "lstm", "test_bpc"), "reproduced"] == "1.311 ± 0.001"
    assert table.loc[("ptb_char", "mmlstm", "test_bpc"), "verdict"] == "differs"  # +7.6 %
    assert table.loc[("ptb_word", "lstm", "test_ce"), "verdict"] == "match"  # +0.3 %
    assert table.loc[("ptb_word", "mmlstm", "test_ce"), "verdict"] == "differs"  # +6.4 %
    assert table.loc[("ptb_char", "rnn", "test_bpc"), "verdict"] == "missing"
    assert table.loc[("ptb_word", "lstm", "params_total"), "verdict"] == "match"  # 2M ± 5 %
    assert table.loc[("ptb_char", "lstm", "params_total"), "verdict"] == "match"
    # a tighter bpc tolerance turns the 0.3 % bpc difference into "differs"
    strict = build_table(ref, runs, {}, {"bpc": 0.001, "ce": 0.01, "params": 0.05})
    strict = strict.set_index(["dataset", "model", "metric"])
    assert strict.loc[("ptb_char", "lstm", "test_bpc"), "verdict"] == "differs"
    assert strict.loc[("ptb_word", "lstm", "test_ce"), "verdict"] == "match"


def test_family_rows_aggregate_folds_and_seeds(tmp_path):
    values = {(1, 1): 1.10, (1, 2): 1.12, (2, 1): 1.13, (2, 2): 1.11, (3, 1): 1.14, (3, 2): 1.12}
    paths = [
        write_lm_metrics(
            tmp_path,
            "general_second_order",
            f"ptb_lines_unigram_fold{fold}",
            "so_tanh",
            seed,
            bpc=bpc,
        )
        for (fold, seed), bpc in values.items()
    ]
    paths += [
        write_lm_metrics(
            tmp_path, "general_second_order", "ptb_lines_bigram_fold1", "so_tanh", 1, bpc=2.0
        ),
        write_lm_metrics(
            tmp_path, "general_second_order", "ptb_lines_unigram_fold1", "so_id", 1, bpc=1.30
        ),
    ]
    runs = collect_metrics(paths)
    assert runs["family"].tolist()[:2] == ["ptb_lines_unigram"] * 2
    assert runs["fold"].tolist()[:3] == [1, 1, 2]
    ref = load_paper_numbers("general_second_order", "Table 1")
    table = build_table(ref, runs, {}, TOLERANCES).set_index("model")
    row = table.loc["so_tanh"]
    expected = list(values.values())
    assert row["n_seeds"] == 6  # 3 folds x 2 seeds; the bigram run is another family
    assert row["mean"] == pytest.approx(np.mean(expected))
    assert row["std"] == pytest.approx(np.std(expected, ddof=1))
    assert row["verdict"] == "match"  # 1.12 vs 1.12
    assert table.loc["so_id", "verdict"] == "differs"  # 1.30 vs 1.17
    assert table.loc["so_id", "n_seeds"] == 1 and table.loc["so_id", "reproduced"].endswith("n/a")
    assert table.loc["mi_rnn", "verdict"] == "missing"


def test_make_table_cli_notes_and_tolerances(tmp_path):
    paths = [
        write_lm_metrics(
            tmp_path, "general_second_order", f"ptb_lines_unigram_fold{k}", "so_d_tanh", 1, 1.15
        )
        for k in (1, 2)
    ]
    out_csv, out_md = tmp_path / "t.csv", tmp_path / "t.md"
    note1, note2 = "cpu scale: 1 fold, 3 epochs, hidden sizes ×0.25", "second note"
    run_script(
        "make_table",
        [
            "--paper",
            "general_second_order",
            "--table",
            "Table 1",
            "Section 4.1",
            "--metrics",
            *paths,
            "--tolerances",
            '{"params": 0.05, "bpc": 0.05}',
            "--note",
            note1,
            "--note",
            note2,
            "--out-csv",
            out_csv,
            "--out-md",
            out_md,
        ],
    )
    table = pd.read_csv(out_csv).set_index(["model", "metric"])
    assert len(table) == 20
    assert table.loc[("so_d_tanh", "test_bpc"), "verdict"] == "match"  # 1.15 vs 1.13 within 5 %
    assert table.loc[("so_d_tanh", "test_bpc"), "n_seeds"] == 2
    assert table.loc[("so_d_tanh", "params_total"), "verdict"] == "differs"  # 4.5M vs 500k
    md = out_md.read_text().splitlines()
    assert md[0].startswith("# general_second_order Table 1 + Section 4.1")
    header = md[: md.index("Columns:")]
    assert f"> {note1}  " in header and f"> {note2}  " in header
    assert any("Scale of the runs read: paper (2 runs)" in line for line in header)
    text = "\n".join(md)
    assert "Tolerances for a match: params 0.05 (relative), bpc 0.05 (relative)." in text
    assert "ppl" not in text.split("Tolerances for a match:")[1].splitlines()[0]
    orderings = text.split("## Orderings the paper states")[1]
    assert orderings.count("| missing |") == len(papers.orderings("general_second_order", None))


def test_orderings_hold_on_the_papers_numbers():
    """Every stated ordering is true of the paper's own numbers (else check_orderings raises),
    and each is checked on its table (none names a dataset or stage the table lacks)."""
    declared = [o for o in papers.outputs().values() if o.orderings]
    assert {o.name for o in declared} >= {
        "second_order_lstm_table2",
        "memory_table1",
        "general_second_order_table1",
        "multi_matrix_table2_ptb",
        "major_minor_table2",
        "major_minor_table3",
    }
    for output in declared:
        table = build_table(
            load_paper_numbers(output.paper, list(output.labels)), pd.DataFrame(), {}, TOLERANCES
        )
        checked = check_orderings(output.orderings, table)
        assert checked["ordering"].tolist() == [o.name for o in output.orderings]
        # a figure's values (Table IX's perplexities, Fig. 6) are not printed: no paper margin
        drawn = checked["paper margin"].isna()
        assert (checked["paper margin"][~drawn] > 0).all()
        assert output.name == "major_minor_table9" or not drawn.any()
        assert set(checked["verdict"]) == {"missing"}


def test_orderings_on_reproduced_means(tmp_path):
    """Margins and verdicts from the runs' means; a reduced scale is named; a reversed or
    unknown ordering is an error."""
    reference = load_paper_numbers("general_second_order", "Table 1")
    bpc = dict(zip(reference["model"], reference["value"], strict=True))
    bpc["first_order_rnn"] = 1.0  # better than every second-order model: two orderings fail
    paths = [
        write_lm_metrics(
            tmp_path, "general_second_order", "ptb_lines_unigram_fold1", m, 1, v, scale="fold1"
        )
        for m, v in bpc.items()
    ]
    table = build_table(reference, collect_metrics(paths), {}, TOLERANCES)
    declared = papers.orderings("general_second_order", ["Table 1"])
    checked = check_orderings(declared, table, {"fold1"})
    checked = checked.set_index("ordering")
    failing = [
        "every second-order model beats the first-order RNN",
        "the best model has neither first-order term, tanh",
    ]
    assert (checked.loc[failing, "verdict"] == "fold1-scale fails").all()
    assert (checked.drop(index=failing)["verdict"] == "fold1-scale holds").all()
    assert checked.loc[failing[0], "reproduced margin"] == pytest.approx(1.0 - 1.23)
    assert checked.loc[failing[1], "reproduced margin"] == pytest.approx(1.0 - 1.12)
    gap = checked.loc["the Eh_t-1 gap is larger with Id than with tanh"]
    assert gap["reproduced margin"] == pytest.approx((1.225 - 1.165) - (1.14 - 1.125))
    reversed_ = Ordering("reversed", "test", better=("first_order_rnn",), worse=("so_tanh",))
    with pytest.raises(ValueError, match="does not hold on the paper's numbers"):
        check_orderings((reversed_,), build_table(reference, pd.DataFrame(), {}, TOLERANCES))
    unknown = Ordering("unknown", "test", better=("so_tanh",), worse=("gru",))
    with pytest.raises(ValueError, match=r"no table row for model\(s\) \['gru'\]"):
        check_orderings((unknown,), table)


def test_a_margin_inside_the_seeds_noise_is_within_noise(tmp_path):
    """With several runs a margin inside the seeds' spread is neither holds nor fails; a model
    with one run takes the relative spread measured on the rows with several."""
    paths = [write_metrics(tmp_path, "lstm", s, v, 1.0) for s, v in ((1, 2.40), (2, 2.42))]
    paths += [write_metrics(tmp_path, "attention_lstm", s, v, 1.0)
              for s, v in ((1, 2.405), (2, 2.425))]  # fmt: skip
    paths += [write_metrics(tmp_path, "assignment_lstm", 1, 2.50, 1.0)]
    ref = reference(("lstm", "test_ppl", 2.393, "="), ("attention_lstm", "test_ppl", 2.387, "="),
                    ("assignment_lstm", "test_ppl", 2.45, "="))  # fmt: skip
    table = build_table(ref, collect_metrics(paths), {}, TOLERANCES)
    close = Ordering(
        "close", "test", better=("attention_lstm",), worse=("lstm",), metric="test_ppl"
    )
    far = Ordering("far", "test", better=("lstm",), worse=("assignment_lstm",), metric="test_ppl")
    checked = check_orderings((close, far), table).set_index("ordering")
    assert checked.loc["close", "reproduced margin"] == pytest.approx(-0.005)
    assert checked.loc["close", "verdict"] == "within noise"  # std 0.014 each: noise 0.02
    assert checked.loc["close", "evidence"] == "2 runs per model; seed noise ±0.02 (seeds)"
    # the one-run model's std: the rows' median relative spread (0.0141 / 2.41) × 2.50
    spread = np.median(
        [np.std([2.40, 2.42], ddof=1) / 2.41, np.std([2.405, 2.425], ddof=1) / 2.415]
    )
    noise = math.hypot(np.std([2.40, 2.42], ddof=1), spread * 2.50)
    assert checked.loc["far", "verdict"] == "holds"  # 0.08 > noise
    assert checked.loc["far", "evidence"] == (
        f"one run per model; seed noise ±{noise:.4g} (seeds of other rows)"
    )
    alone = check_orderings((far,), table, spreads={}).set_index("ordering")
    assert alone.loc["far", "evidence"].endswith("seed noise not measured for this metric")


def paper_means(paper: str, label: str) -> pd.DataFrame:
    """A ``build_table`` result whose reproduced means are the paper's numbers (2 runs each)."""
    table = build_table(load_paper_numbers(paper, label), pd.DataFrame(), {}, TOLERANCES)
    return table.assign(mean=table["paper"], n_seeds=2)


def test_orderings_pick_the_rows_of_their_dataset():
    """On a table of two corpora each ordering reads its corpus's rows: a WikiText-2 row made
    worse fails the WikiText-2 orderings only; without its corpus's rows an ordering is left
    out; one naming no dataset is an error there."""
    table = paper_means("memory", "Table 1")
    multipop = (table["model"] == "multipop_stack") & (table["metric"] == "test_ppl")
    table.loc[multipop & (table["dataset"] == "wikitext2"), "mean"] = 80.0  # PTB's stays 63.5
    declared = papers.orderings("memory", ["Table 1"])
    checked = check_orderings(declared, table).set_index("ordering")
    failing = [
        "every stack beats the larger LSTM-920 (WikiText-2)",
        "the multipop stack is the best model (WikiText-2)",
    ]
    assert (checked.loc[failing, "verdict"] == "fails").all()
    assert (checked.drop(index=failing)["verdict"] == "holds").all()
    assert checked.loc[failing[0], "reproduced margin"] == pytest.approx(77.4 - 80.0)
    assert checked.loc[failing[1], "reproduced margin"] == pytest.approx(73.0 - 80.0)
    assert checked.loc[failing[1], "check"].startswith("wikitext2: multipop_stack < min(")
    outperform = checked.loc["every memory model beats the LSTM-650 (WikiText-2)"]
    assert outperform["reproduced margin"] == pytest.approx(80.8 - 80.0)
    ptb = checked.loc["the multipop stack beats every LSTM and attention model (PTB)"]
    assert ptb["reproduced margin"] == pytest.approx(63.6 - 63.5) == ptb["paper margin"]
    assert (checked["runs per model"] == 2).all()
    # make_table --datasets wikitext2: the PTB orderings are not this table's
    wikitext2 = check_orderings(declared, table[table["dataset"] == "wikitext2"])
    kept = [o.name for o in declared if o.dataset == "wikitext2"]
    assert wikitext2["ordering"].tolist() == kept and len(kept) == 6
    unnamed = Ordering(
        "no dataset", "test", better=("multipop_stack",), worse=("lstm_650",), metric="test_ppl"
    )
    with pytest.raises(ValueError, match="ptb_stream, wikitext2.*must name its dataset"):
        check_orderings((unnamed,), table)


def test_orderings_across_stages():
    """An ordering reads each model's row at its stage: a dynamic evaluation made worse than
    the fine-tuned model fails the orderings of that stage and of that step only; a stage the
    table lacks, or an ordering false of the paper's stages, is an error."""
    table = paper_means("major_minor", "Table II")
    mmlstm = (table["model"] == "awd_mmlstm_mos") & (table["metric"] == "test_ppl")
    table.loc[mmlstm & (table["stage"] == "dynamic_eval"), "mean"] = 54.0  # fine-tuned: 53.46
    declared = papers.orderings("major_minor", ["Table II"])
    checked = check_orderings(declared, table, {"cpu"}).set_index("ordering")
    failing = [
        "MMLSTM-MoS beats every other model (dynamic evaluation)",
        "dynamic evaluation improves MMLSTM-MoS",
    ]
    assert (checked.loc[failing, "verdict"] == "cpu-scale fails").all()
    assert (checked.drop(index=failing)["verdict"] == "cpu-scale holds").all()
    assert checked.loc[failing[0], "reproduced margin"] == pytest.approx(47.69 - 54.0)
    assert checked.loc[failing[0], "check"] == (
        "ptb_stream, dynamic_eval: awd_mmlstm_mos < min(awd_lstm, awd_lstm_mos_minus, awd_lstm_mos)"
    )
    assert checked.loc[failing[1], "reproduced margin"] == pytest.approx(53.46 - 54.0)
    assert checked.loc[failing[1], "check"] == (
        "ptb_stream: awd_mmlstm_mos (dynamic_eval) < awd_mmlstm_mos (finetune)"
    )
    tuned = checked.loc["fine-tuning improves MMLSTM-MoS"]
    assert tuned["reproduced margin"] == pytest.approx(54.51 - 53.46) == tuned["paper margin"]
    trained = checked.loc["MMLSTM-MoS beats every other model (trained)"]
    assert trained["reproduced margin"] == pytest.approx(55.97 - 54.51)
    helps = Ordering(
        "helps",
        "test",
        better=("awd_mmlstm_mos",),
        worse=("awd_mmlstm_mos",),
        metric="test_ppl",
        better_stage="finetune",
        worse_stage="train",
    )
    with pytest.raises(
        ValueError, match=r"no table row for model\(s\) \['awd_mmlstm_mos \(train\)'\]"
    ):
        check_orderings((helps,), table[table["stage"] != "train"])
    hurts = replace(helps, better_stage="train", worse_stage="finetune")
    with pytest.raises(ValueError, match="does not hold on the paper's numbers"):
        check_orderings((hurts,), table)


def test_make_table_states_the_orderings_of_every_stage(tmp_path):
    """make_table on staged runs (metrics.json with a stage): the orderings section checks each
    (model, stage) row's mean."""
    reference = load_paper_numbers("major_minor", "Table II")
    reference = reference[reference["metric"] == "test_ppl"]
    paths = []
    for model, stage, ppl in reference[["model", "stage", "value"]].itertuples(index=False):
        if (model, stage) == ("awd_mmlstm_mos", "dynamic_eval"):
            ppl = 54.0  # worse than fine-tuned (53.46) and than the others' dynamic evaluation
        path = write_lm_metrics(tmp_path / stage, "major_minor", "ptb_stream", model, 1, ce=0.0)
        metrics = json.loads(path.read_text())
        split = {**metrics["test"], "ce": math.log(ppl), "loss": math.log(ppl), "ppl": ppl}
        path.write_text(json.dumps({**metrics, "stage": stage, "val": split, "test": split}))
        paths.append(path)
    out_csv, out_md = tmp_path / "t.csv", tmp_path / "t.md"
    run_script(
        "make_table",
        [
            *TOLERANCE_OPTION,
            "--paper",
            "major_minor",
            "--table",
            "Table II",
            "--datasets",
            "ptb_stream",
        ]
        + ["--metrics", *paths, "--out-csv", out_csv, "--out-md", out_md],
    )
    orderings = out_md.read_text().split("## Orderings the paper states")[1]
    assert orderings.count("| holds |") == 12 and orderings.count("| fails |") == 2
    assert "| dynamic evaluation improves MMLSTM-MoS | ptb_stream: awd_mmlstm_mos " in orderings


def test_make_table_info_only_table(tmp_path):
    metrics = write_lm_metrics(
        tmp_path, "multi_matrix", "ptb_char", "lstm", 1, bpc=1.3, scale="cpu"
    )
    out_csv, out_md = tmp_path / "t.csv", tmp_path / "t.md"
    run_script(
        "make_table",
        [
            *TOLERANCE_OPTION,
            "--paper",
            "multi_matrix",
            "--table",
            "Table 1",
            "--datasets",
            "ptb_char",
            "ptb_word",
        ]
        + ["--metrics", metrics, "--out-csv", out_csv, "--out-md", out_md],
    )
    table = pd.read_csv(out_csv)
    assert len(table) == 32 and set(table["verdict"]) == {"info", "missing"}
    lstm = table[(table.model == "lstm") & (table.dataset == "ptb_char")].set_index("metric")
    assert lstm.loc["train_minutes", "mean"] == 10 and lstm.loc["epochs", "mean"] == 12
    md = out_md.read_text()
    assert "information only" in md and "Runs of another scale depart" in md


def general_second_order_ratio_inputs(root: Path) -> list[Path]:
    paths = []
    for family, base in (("ptb_lines_unigram", 1.2), ("ptb_lines_bigram", 1.4)):
        for ratio in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20):
            model = "ratio_" + f"{ratio:g}".replace(".", "_")
            for fold in (1, 2):
                for seed in (1, 2):
                    bpc = base + 0.02 * abs(math.log(ratio / 2)) + 0.01 * fold + 0.003 * seed
                    paths.append(
                        write_lm_metrics(
                            root,
                            "general_second_order",
                            f"{family}_fold{fold}",
                            model,
                            seed,
                            bpc,
                            ratio=ratio,
                        )
                    )
    return paths


def general_second_order_best_inputs(root: Path) -> list[Path]:
    """so_tanh has the best mean; mi_rnn has the single lowest run (a lucky fold)."""
    runs = {
        ("so_tanh", 1): 1.12,
        ("so_tanh", 2): 1.10,
        ("so_tanh", 3): 1.11,
        ("mi_rnn", 1): 1.05,
        ("mi_rnn", 2): 1.30,
        ("mi_rnn", 3): 1.30,
        ("so_id", 1): 1.20,
    }
    paths = []
    for (model, fold), bpc in runs.items():
        metrics = write_lm_metrics(
            root, "general_second_order", f"ptb_lines_unigram_fold{fold}", model, 1, bpc
        )
        paths += [metrics, *write_general_second_order_outputs(metrics, shift=bpc)]
    return paths


@pytest.mark.parametrize("kind", ["ratio", "position_loss", "examples"])
def test_general_second_order_figures_write_png(tmp_path, kind):
    inputs = (
        general_second_order_ratio_inputs(tmp_path)
        if kind == "ratio"
        else general_second_order_best_inputs(tmp_path)
    )
    out = tmp_path / f"{kind}.png"
    run_script("make_figure", [kind, "--inputs", *inputs, "--out", out])
    assert out.read_bytes()[:4] == b"\x89PNG" and out.stat().st_size > 5000


def test_ratio_figure_reads_ratio_from_metrics(tmp_path):
    from rnnrepro.reporting.figures import read_metrics

    df = read_metrics(general_second_order_ratio_inputs(tmp_path))
    assert sorted(df["ratio"].unique()) == [0.1, 0.2, 0.5, 1, 2, 5, 10, 20]
    assert set(df["family"]) == {"ptb_lines_unigram", "ptb_lines_bigram"}
    # the ratio is the parameter budget's, never read from a model's name
    metrics = [p for p in general_second_order_best_inputs(tmp_path) if p.name == "metrics.json"]
    assert read_metrics(metrics)["ratio"].isna().all()


def test_best_run_selection_for_position_loss_and_examples(tmp_path):
    from rnnrepro.reporting.figures import pick_best_run

    inputs = general_second_order_best_inputs(tmp_path)
    for name in ("position_loss.csv", "examples.json"):
        best, path, text = pick_best_run(inputs, name)
        # best model by mean over folds (so_tanh 1.11 < mi_rnn 1.22), then its best run (fold 2)
        assert (best["model"], best["fold"]) == ("so_tanh", 2)
        assert path.name == name and path.parent.parent.parent.name == "ptb_lines_unigram_fold2"
        assert "fold 2" in text and "1.100" in text
    # the best run's data file must be among the inputs
    without = [
        p for p in inputs if "so_tanh/seed1/position_loss" not in str(p) or "fold2" not in str(p)
    ]
    with pytest.raises(ValueError, match="not among the inputs"):
        pick_best_run(without, "position_loss.csv")
    # mismatched example lengths are rejected
    bad = tmp_path / "runs/general_second_order/ptb_lines_unigram_fold2/so_tanh/seed1/examples.json"
    bad.write_text(json.dumps([{"target": "abc", "predicted": "ab"}]))
    with pytest.raises(ValueError, match="lengths differ"):
        FIGURES["examples"](inputs, tmp_path / "bad.png")


def test_reference_has_the_memory_papers_table1():
    t1 = load_paper_numbers("memory", "Table 1")
    assert len(t1) == 10 * 2 * 3  # 10 models x (PTB, WikiText-2) x (dev, test, params)
    values = t1.set_index(["dataset", "model", "metric"])["value"]
    assert values["ptb_stream", "multipop_stack", "test_ppl"] == pytest.approx(63.5)
    assert values["wikitext2", "attention_10", "test_ppl"] == pytest.approx(73.7)
    assert values["wikitext2", "lstm_920", "params_total"] == 40_000_000
    assert t1["source"].str.startswith("memory, Table 1").all()


def test_the_readings_name_the_validation_temperature_of_attention_runs_only(tmp_path):
    runs = [
        ("lstm", 1, {"lr_decay": 0.5}),
        ("attention_lstm", 1, {"lr_decay": 0.5}),
        ("attention_lstm", 2, {"lr_decay": 0.5, "validation_temperature": "test"}),
    ]
    paths = []
    for model, seed, training in runs:
        path = write_metrics(tmp_path, model, seed, 2.40, 1.0)
        metrics = json.loads(path.read_text())
        path.write_text(json.dumps({**metrics, "architecture": model, "training": training}))
        paths.append(path)
    text = describe_readings(paths)
    plain = "`lr_decay_on: no_improvement` (threshold 0.0001), `stop_on: no_improvement`"
    assert f"{plain} (1 run)" in text
    assert f"{plain}, `validation_temperature: training` (1 run)" in text
    assert f"{plain}, `validation_temperature: test` (1 run)" in text


def test_dyck_tables_show_the_events_behind_wcpa_and_the_readings_used(tmp_path):
    """make_table --wcpa-min-events adds the robust-WCPA section; the title names the LR decay
    and early stopping readings from the runs' metrics."""
    paths = []
    for seed, (strict, events, robust) in enumerate([(0.0, 1, 0.96), (0.5, 2, 0.98)], start=1):
        path = write_metrics(tmp_path, "lstm", seed, 2.40, strict)
        metrics = json.loads(path.read_text())
        for split in ("val", "test"):
            metrics[split].update(
                wcpa_events=events, robust_wcpa=robust, rare_distances=7, distances=60
            )
        metrics["training"] = {"lr_decay": 0.5, "lr_decay_on": "increase", "stop_on": "increase"}
        path.write_text(json.dumps(metrics))
        paths.append(path)
    out_csv, out_md = tmp_path / "t1.csv", tmp_path / "t1.md"
    argv = [
        *TABLE1,
        "--metrics",
        *paths,
    ]
    run_script("make_table", [*argv, "--wcpa-min-events", 20, "--out-csv", out_csv,
                              "--out-md", out_md])  # fmt: skip
    text = out_md.read_text()
    assert "`lr_decay_on: increase`, `stop_on: increase` (2 runs)" in text
    section = text[text.index("## WCPA and the evidence behind it") :]
    row = next(line for line in section.splitlines() if line.startswith("| dyck_m4 | lstm"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3:7] == ["0.250 ± 0.354", "1.5 ± 0.7", "0.970 ± 0.014", "7 of 60"]
    run_script("make_table", [*argv, "--out-csv", out_csv, "--out-md", out_md])
    assert "evidence behind it" not in out_md.read_text()  # only when asked for


def test_the_fig3_claim_is_judged_per_m_from_the_histories(tmp_path):
    from rnnrepro.reporting.wcpa_claim import claim_table

    curves = {  # the attention LSTM reaches 0.9 at epoch 3 and stays; the LSTM oscillates
        "attention_lstm": [0.2, 0.6, 0.95, 0.97, 0.98],
        "lstm": [0.1, 0.95, 0.3, 0.92, 0.2, 0.96, 0.5],
    }
    paths = []
    for model, curve in curves.items():
        for seed in (1, 2):
            history = pd.DataFrame({"epoch": range(1, len(curve) + 1), "val_wcpa": curve})
            history = history.assign(
                experiment="second_order_lstm", dataset="dyck_m4", model=model, seed=seed
            )
            path = run_dir(tmp_path, model, seed) / "history.csv"
            history.to_csv(path, index=False)
            paths.append(path)
    per_run, verdicts = claim_table(paths, "lstm", "attention_lstm")
    (row,) = verdicts.to_dict("records")
    assert row["dataset"] == "dyck_m4" and row["metric"] == "WCPA"
    assert (row["faster"], row["steadier"], row["fewer epochs"]) == ("does not hold", "holds",
                                                                     "holds")  # fmt: skip
    assert row["claim"] == "fails"
    lstm = per_run[per_run.model == "lstm"].iloc[0]
    assert lstm["epochs_to_wcpa"] == 2 and lstm["drops"] == 3 and lstm["epochs"] == 7
    out = tmp_path / "claim.md"
    run_script("check_wcpa_claim", ["--histories", *paths, "--out-csv", tmp_path / "c.csv",
                                    "--out-md", out, "--title", "Fig. 3", "--models", "lstm",
                                    "attention_lstm", "--note", "the paper's words"])  # fmt: skip
    text = out.read_text()
    assert "| dyck_m4 | WCPA | 2 / 2 |" in text and "> the paper's words" in text
    assert "when attention_lstm's mean over seeds is lower than lstm's" in text


def test_a_fig3_claim_part_inside_the_seeds_noise_or_blind_is_not_decided(tmp_path):
    """Margins inside the seeds' noise are ``within noise``; a part that cannot tell the models
    apart (no run reaches 0.9, every run trained the same epochs) is not testable."""
    from rnnrepro.reporting.wcpa_claim import claim_table, claim_verdict

    curves = {  # seed -> curve; neither model ever reaches 0.9, all train 4 epochs
        "attention_lstm": {1: [0.1, 0.5, 0.6, 0.6], 2: [0.1, 0.3, 0.3, 0.8]},
        "lstm": {1: [0.1, 0.6, 0.5, 0.6], 2: [0.1, 0.2, 0.4, 0.8]},
    }
    paths = []
    for model, seeds in curves.items():
        for seed, curve in seeds.items():
            path = run_dir(tmp_path, model, seed) / "history.csv"
            history = pd.DataFrame({"epoch": range(1, 5), "val_wcpa": curve})
            history.assign(experiment="second_order_lstm", dataset="dyck_m4", model=model,
                           seed=seed).to_csv(path, index=False)  # fmt: skip
            paths.append(path)
    _, verdicts = claim_table(paths, "lstm", "attention_lstm")
    (row,) = verdicts.to_dict("records")
    assert row["faster"] == "not testable (2 run(s) of each never reach 0.9)"
    assert row["steadier"] == "within noise"
    assert row["fewer epochs"] == "not testable (every run trained 4 epochs)"
    assert row["claim"] == "within noise"
    parts = {"faster": "holds", "steadier": "holds", "fewer epochs": "not testable (...)"}
    assert claim_verdict(parts) == "holds where testable"
    assert claim_verdict({**parts, "fewer epochs": "holds"}) == "holds"
    assert claim_verdict({**parts, "faster": "does not hold"}) == "fails"


def write_history(root: Path, model: str, seed: int, train_losses: list, lrs: list) -> Path:
    """A Dyck run's history.csv: one row per epoch (validation loss falls throughout)."""
    epochs = len(train_losses)
    history = pd.DataFrame(
        {
            "experiment": "second_order_lstm",
            "dataset": "dyck_m4",
            "model": model,
            "seed": seed,
            "stage": "train",
            "epoch": range(1, epochs + 1),
            "train_loss": train_losses,
            "val_loss": np.linspace(1.0, 0.9, epochs),
            "lr": lrs,
        }
    )
    path = run_dir(root, model, seed) / "history.csv"
    history.to_csv(path, index=False)
    return path


def test_make_table_training_section_reads_the_best_epoch(tmp_path):
    paths, histories = [], []
    for seed, stop in ((1, "no improvement for 6 epochs"), (2, "reached max_epochs=3")):
        path = write_metrics(tmp_path, "lstm", seed, 2.42, 1.0)
        metrics = json.loads(path.read_text())
        metrics.update(epochs=3, best_epoch=2, stopped_because=stop)
        path.write_text(json.dumps(metrics))
        paths.append(path)
        # the best epoch's training loss (log 2.5), not the last one's (log 2.0), is reported
        losses = [math.log(3.0), math.log(2.5), math.log(2.0)]
        histories.append(write_history(tmp_path, "lstm", seed, losses, [1e-4, 5e-5, 2.5e-5 * seed]))
    floor = tmp_path / "data" / "dyck_m4" / "floor.json"
    floor.parent.mkdir(parents=True)
    floor.write_text(json.dumps({"train": 2.38, "val": 2.3846, "test": 2.385}))
    out_md = tmp_path / "t.md"
    run_script(
        "make_table",
        [
            *TABLE1,
            "--metrics",
            *paths,
        ]
        + ["--histories", *histories, "--floors", floor]
        + ["--out-csv", tmp_path / "t.csv", "--out-md", out_md],
    )
    md = out_md.read_text().splitlines()
    section = md[md.index("## How the runs trained") :]
    row = next(line for line in section if line.startswith("| dyck_m4 | lstm |"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[2:] == [
        "2",
        "3 (3-3)",
        "no improvement for 6 epochs (1); reached max_epochs=3 (1)",
        "3.8e-05",  # median of 2.5e-5 and 5e-5
        "2.5000 ± 0.0000",
        "2.4200 ± 0.0000",
        "2.3846",
    ]
    # without histories the table has no such section
    run_script(
        "make_table",
        [
            *TABLE1,
            "--metrics",
            *paths,
        ]
        + ["--out-csv", tmp_path / "t.csv", "--out-md", out_md],
    )
    assert "## How the runs trained" not in out_md.read_text()


def test_a_table_says_which_runs_older_code_trained(tmp_path):
    """Runs restored with `rnnrepro.scripts.archive restore --keep-runs-of-other-code` carry
    their archive row; the table names how many and the commit that trained them."""
    paths = [write_metrics(tmp_path, model, 1, 2.40, 1.0) for model in ("lstm", "attention_lstm")]
    assert describe_kept(paths) is None
    (paths[0].parent / KEPT_FROM_ARCHIVE).write_text(json.dumps({"commit": "e5ac5fd"}))
    note = describe_kept(paths)
    assert "1 trained at commit e5ac5fd" in note and "--keep-runs-of-other-code" in note


def test_a_dyck_table_says_where_the_loss_sits_above_the_floor(tmp_path):
    """Each run's excess by kind of target (metrics.json's ``excess``) becomes a section under
    the table: millinats per target and share of the total, mean over runs."""
    paths = []
    for seed, end_share in ((1, 0.5), (2, 0.7)):
        path = write_metrics(tmp_path, "lstm", seed, 2.40, 1.0)
        record = json.loads(path.read_text())
        record["test"]["excess"] = {
            "empty": {"excess": 0.01, "share": 0.2},
            "inside": {"excess": 0.005, "share": 0.8 - end_share},
            "end": {"excess": 1.5, "share": end_share},
        }
        path.write_text(json.dumps(record))
        paths.append(path)
    lines = excess_lines(collect_metrics(paths))
    assert lines[1] == "## Where the test loss sits above the generator's floor"
    row = next(line for line in lines if line.startswith("| dyck_m4 | lstm |"))
    assert row == "| dyck_m4 | lstm | 2 | 10.0 ± 0.0 | 20 | 5.0 ± 0.0 | 20 | 1500.0 ± 0.0 | 60 |"
    assert excess_lines(collect_metrics([write_metrics(tmp_path / "b", "lstm", 1, 2.4, 1.0)])) == []


def test_how_the_runs_trained_reads_the_best_validation_of_an_epoch_validated_twice(tmp_path):
    """With eval_every a history has several rows an epoch (each with its ``step``): the
    training perplexity shown is that of the best validation of the best epoch."""
    history = pd.DataFrame({
        "experiment": ["memory"] * 3, "dataset": ["ptb_stream"] * 3, "model": ["lstm_650"] * 3,
        "seed": [1] * 3, "epoch": [1, 1, 2], "step": [415, 830, 1245],
        "train_loss": [5.0, 4.8, 4.7], "val_loss": [5.1, 4.9, 5.0], "lr": [1e-3] * 3,
    })  # fmt: skip
    history.to_csv(tmp_path / "history.csv", index=False)
    runs = pd.DataFrame({
        "experiment": ["memory"], "dataset": ["ptb_stream"], "model": ["lstm_650"], "seed": [1],
        "stage": ["train"], "best_epoch": [1], "epochs": [2], "stopped_because": ["budget"],
        "val_ppl": [math.exp(4.9)],
    })  # fmt: skip
    lines = training_lines(runs, [tmp_path / "history.csv"], {})
    row = next(line for line in lines if line.startswith("| ptb_stream |"))
    assert f"| {math.exp(4.8):.4f} ± n/a |" in row  # epoch 1's second validation, the best


def test_verdict_tally_counts_settings_apart():
    table = pd.DataFrame(
        {
            "metric": ["test_ppl", "val_ppl", "params_total", "test_ppl"],
            "verdict": ["differs", "differs", "match", "missing"],
        }
    )
    assert verdict_tally(table) == (
        "Verdicts: differs 2, missing 1; settings checked (sized to the paper's, not results): "
        "match 1"
    )
    assert verdict_tally(table.iloc[:2]) == "Verdicts: differs 2"
    assert verdict_tally(table.iloc[2:3]).startswith("Verdicts: none; settings checked")
