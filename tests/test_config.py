"""Invalid configurations stop before any job with a message naming the key."""

from __future__ import annotations

import copy

import pytest
from pipeline_utils import base_config, run_snakemake

from rnnrepro import config as cfg


def smoke() -> dict:
    config = base_config()
    config["scale"] = "smoke"
    return config


def mutate_unknown_model(c):
    c["experiments"]["seed000"]["models"]["lstm"]["architecture"] = "transformer"


def mutate_misspelled_key(c):
    c["training"]["seed000_dyck"]["learning_rate"] = 0.1


def mutate_negative_size(c):
    c["scales"]["smoke"]["dyck"]["sizes"]["train"] = -5


def mutate_bad_scale(c):
    c["scale"] = "huge"


def mutate_missing_training(c):
    c["experiments"]["seed001"]["models"]["rnn"]["training"] = "nonexistent"


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (mutate_unknown_model, "transformer"),
        (mutate_misspelled_key, "learning_rate"),
        (mutate_negative_size, "train"),
        (mutate_bad_scale, "huge"),
        (mutate_missing_training, "nonexistent"),
    ],
)
def test_invalid_config_stops_before_any_job(tmp_path, mutate, expected):
    config = smoke()
    mutate(config)
    proc = run_snakemake(tmp_path, config, "-n", check=False)
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    assert expected in output
    assert "Job stats" not in output
    assert not (tmp_path / "results").exists()


def test_negative_size_message_names_the_key_path(tmp_path):
    config = smoke()
    mutate_negative_size(config)
    proc = run_snakemake(tmp_path, config, "-n", check=False)
    output = proc.stdout + proc.stderr
    assert "'sizes'" in output and "-5" in output


def test_run_config_resolves_per_m_and_scale_cap():
    config = smoke()
    run = cfg.run_config(config, "seed000", "dyck_m6", "attention_lstm")
    assert run["hparams"]["hidden_size"] == 18
    assert "hidden_size_per_m" not in run["hparams"]
    assert run["training"]["max_epochs"] == 2
    paper = copy.deepcopy(config)
    paper["scale"] = "paper"
    assert cfg.run_config(paper, "seed000", "dyck_m6", "lstm")["training"]["max_epochs"] == 300


def test_runs_cover_every_experiment_model_dataset_and_seed():
    config = base_config()
    runs = cfg.runs(config)
    models = sum(len(e["models"]) for e in config["experiments"].values())
    assert len(runs) == models * 3 * 3
    assert len(set(runs)) == len(runs)
