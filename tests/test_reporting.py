"""Reporting: reference numbers, result tables, analyses and figures (on small fixtures)."""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from rnnrepro.data.dyck import read_sequences
from rnnrepro.models import build_model, save_model
from rnnrepro.reporting.analysis import (
    attention_heatmap,
    final_training_epoch,
    first_short_sequence,
    principal_angles,
)
from rnnrepro.reporting.figures import FIGURES, run_key
from rnnrepro.reporting.reference import load_reference
from rnnrepro.reporting.tables import build_table, collect_metrics, write_table

REPO = Path(__file__).resolve().parents[1]
VOCAB = ["<pad>", "<start>", "<end>", "(a", "a)", "(b", "b)"]


def run_script(name: str, argv: list) -> None:
    """Run ``rnnrepro.scripts.<name>``'s ``main`` in-process (no interpreter start-up cost)."""
    importlib.import_module(f"rnnrepro.scripts.{name}").main([str(arg) for arg in argv])


def run_dir(root: Path, model: str, seed: int, dataset: str = "dyck_m4") -> Path:
    path = root / "runs" / "seed000" / dataset / model / f"seed{seed}"
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
        "experiment": "seed000",
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
    cols = ["experiment", "dataset", "model", "metric", "value", "comparison"]
    return pd.DataFrame(
        [dict(zip(cols, ("seed000", "dyck_m4", *row), strict=True)) for row in rows]
    )


def test_reference_has_table1_numbers():
    t1 = load_reference("seed000", "Table 1")
    assert len(t1) == 30
    row = t1[(t1.dataset == "dyck_m4") & (t1.model == "lstm") & (t1.metric == "test_ppl")]
    assert row["value"].item() == pytest.approx(2.393)
    m8 = t1[(t1.dataset == "dyck_m8") & (t1.model == "attention_lstm")].set_index("metric")
    assert m8.loc["test_wcpa", "value"] == pytest.approx(0.667)
    assert m8.loc["params", "value"] == 8600
    assert t1["source"].str.startswith("seed 000, Table 1").all()
    seed001 = load_reference("seed001")
    assert set(seed001["comparison"]) == {"=", "<", "<="}
    assert (seed001.query("metric == 'test_wcpa' and model == 'dyck_rnn'")["value"] == 1.0).all()


def test_collect_metrics_and_mean_std(tmp_path):
    paths = [write_metrics(tmp_path, "lstm", s, p, 1.0) for s, p in [(1, 2.39), (2, 2.41)]]
    runs = collect_metrics(paths)
    assert list(runs["seed"]) == [1, 2]
    assert runs["train_minutes"].tolist() == [2.0, 2.0]
    table = build_table(reference(("lstm", "test_ppl", 2.393, "=")), runs, {})
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
    table = build_table(ref, runs, {"dyck_m4": {"train": 2.3, "val": 2.3, "test": 2.3}})
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


def test_below_floor_is_flagged(tmp_path):
    runs = collect_metrics([write_metrics(tmp_path, "lstm", 1, 2.20, 1.0)])
    floors = {"dyck_m4": {"train": 2.3, "val": 2.3, "test": 2.3}}
    table = build_table(reference(("lstm", "test_ppl", 2.2, "=")), runs, floors)
    assert table.loc[0, "verdict"] == "below floor"
    write_table(table, tmp_path / "t.csv", tmp_path / "t.md", "Test table", ["tolerance note"])
    md = (tmp_path / "t.md").read_text()
    assert "**BELOW FLOOR**" in md and "WARNING" in md and "tolerance note" in md
    assert pd.read_csv(tmp_path / "t.csv")["verdict"].tolist() == ["below floor"]


def test_make_table_cli(tmp_path):
    metrics = write_metrics(tmp_path, "lstm", 1, 2.393, 1.0)
    floor = tmp_path / "data" / "dyck_m4" / "floor.json"
    floor.parent.mkdir(parents=True)
    floor.write_text(json.dumps({"train": 2.30, "val": 2.31, "test": 2.32}))
    out_csv, out_md = tmp_path / "t1.csv", tmp_path / "t1.md"
    run_script(
        "make_table",
        [
            "--paper",
            "seed000",
            "--table",
            "Table 1",
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

    def attention_weights(self, tokens: torch.Tensor) -> torch.Tensor:
        scores = torch.stack([tokens.float(), -tokens.float()], dim=-1)
        return torch.softmax(scores / self.temperature, dim=-1)


def test_attention_heatmap(tmp_path):
    test = tmp_path / "test.txt"
    test.write_text("(a (b b) (a a) a)\n(a a)\n")
    sequence = first_short_sequence(read_sequences(test), max_length=4)
    assert sequence == ["(a", "a)"]
    model = FakeAttention()
    heat = attention_heatmap(model, VOCAB, sequence)
    assert model.hard is False
    assert heat["token"].tolist()[::2] == ["<start>", "(a", "a)"]
    assert heat.groupby("position")["weight"].sum().to_numpy() == pytest.approx(1.0)
    with pytest.raises(ValueError):
        first_short_sequence(read_sequences(test), max_length=1)


def test_analyse_attention_cli(tmp_path):
    hparams = {"embedding_dim": 6, "hidden_size": 3, "cells": 2}
    model = build_model("attention_lstm", VOCAB, **hparams)
    record = {"epochs": 9, "best_epoch": 3}
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
                df.to_csv(path / f"{kind}.csv", index=False)
                paths.append(path / f"{kind}.csv")
    return paths[:1] if kind == "heatmap" else paths


@pytest.mark.parametrize("kind", sorted(FIGURES))
def test_figures_write_png(tmp_path, kind):
    out = tmp_path / f"{kind}.png"
    FIGURES[kind](figure_inputs(tmp_path, kind), out)
    assert out.read_bytes()[:4] == b"\x89PNG" and out.stat().st_size > 5000


def test_run_key_rejects_unstructured_path():
    assert run_key("results/runs/seed000/dyck_m4/lstm/seed3/ldpa.csv")["seed"] == 3
    with pytest.raises(ValueError):
        run_key("ldpa.csv")
