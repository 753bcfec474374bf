"""Cost estimate: token counts, job counts, scaling with epochs and throughput, CLI."""

from __future__ import annotations

import copy
import csv
import statistics
import subprocess
import sys
from dataclasses import replace

import pytest
from pipeline_utils import ROOT, base_config

from rnnrepro import config as cfg
from rnnrepro import cost
from rnnrepro.data import dyck
from rnnrepro.scripts import estimate_cost

CELLS = ROOT / "benchmarks" / "results" / "cells.csv"


@pytest.fixture(scope="module")
def throughput() -> cost.Throughput:
    return cost.read_throughput(CELLS)


def tiny_config(min_len: int = 4, max_len: int = 4) -> dict:
    """Smoke scale with 7 / 3 sequences of lengths min_len..max_len."""
    config = base_config()
    config["scale"] = "smoke"
    dyck_scale = config["scales"]["smoke"]["dyck"]
    dyck_scale.update(min_length=min_len, max_length=max_len, m=[2])
    dyck_scale["sizes"] = {"train": 7, "val": 3, "test": 3}
    return config


def test_mean_length_matches_the_sampler():
    exact = cost.mean_length(3, 6, 30)
    lengths = [len(s) for s in dyck.generate(600, 2, 3, 6, 30, seed=11)]
    stderr = statistics.stdev(lengths) / len(lengths) ** 0.5
    assert abs(exact - statistics.mean(lengths)) < 4 * stderr
    probs = [p for _, p in cost.length_distribution(3, 6, 30)]
    assert sum(probs) == pytest.approx(1.0)
    assert cost.expected_max_length(3, 6, 30, 1) == pytest.approx(exact)
    assert exact < cost.expected_max_length(3, 6, 30, 8) <= 30


def test_token_counting_on_a_tiny_config(throughput):
    config = tiny_config()  # every sequence has exactly 4 brackets: no padding
    run = cfg.runs(config, "second_order_lstm", "lstm")[0]
    c = cost.run_cost(config, run, throughput, expected_epochs=1, basis="fraction")
    assert c.train_tokens == pytest.approx(7 * 5)  # 4 brackets + <end>
    assert c.computed_tokens == pytest.approx(7 * 5 + cost.VAL_COST * 3 * 5)
    assert c.seconds_per_epoch == pytest.approx(c.computed_tokens / c.tokens_per_s)


def test_padding_adds_tokens_only_for_batches_of_mixed_lengths(throughput):
    config = tiny_config(4, 30)
    config["training"]["second_order_lstm_dyck"]["batch_size"] = 1
    run = cfg.runs(config, "second_order_lstm", "lstm")[0]
    unpadded = cost.run_cost(config, run, throughput, 1, "fraction")
    validation = cost.VAL_COST * cost.padded_tokens(3, cost.VAL_BATCH_SIZE, 2, 4, 30)
    assert validation > cost.VAL_COST * 3 / 7 * unpadded.train_tokens  # one padded batch of 3
    assert unpadded.computed_tokens == pytest.approx(unpadded.train_tokens + validation)
    config["training"]["second_order_lstm_dyck"]["batch_size"] = 7
    padded = cost.run_cost(config, run, throughput, 1, "fraction")
    assert padded.train_tokens == unpadded.train_tokens
    assert padded.computed_tokens > unpadded.computed_tokens * 1.2


@pytest.mark.parametrize("scale", ["paper", "smoke"])
def test_job_counts_equal_the_number_of_runs(throughput, scale):
    config = base_config()
    config["scale"] = scale
    rows = cost.summarise(cost.estimate(config, throughput))
    jobs = {r.experiment: r.jobs for r in rows}
    dyck = [r for r in cfg.runs(config) if cfg.family(r.dataset) == "dyck"]
    assert jobs["total"] == len(dyck)  # text runs need measured epoch times
    for experiment in ("second_order_lstm", "multi_matrix"):
        assert jobs[experiment] == sum(r.experiment == experiment for r in dyck)


def test_text_runs_use_measured_epoch_times(throughput):
    config = base_config()
    times = {("general_second_order", "ptb_lines_unigram", "so_tanh"): 120.0}
    costs = cost.estimate(config, throughput, epoch_times=times)
    text = [c for c in costs if c.run.experiment == "general_second_order"]
    measured = [c for c in text if c.run.model == "so_tanh"]
    assert len(measured) == 5  # five folds
    assert all(c.seconds_per_epoch == 120.0 and c.epoch_proxy is None for c in measured)
    assert measured[0].upper_hours == pytest.approx(25 * 120.0 / 3600)
    # an unmeasured model of the same architecture and batch size: so_tanh's epoch, scaled by
    # the parameter counts; the other architectures have no measured model and are left out
    scaled = next(c for c in text if c.run.model == "so_de_tanh")

    def count(model: str) -> int:
        return cfg.run_config(config, "general_second_order", "ptb_lines_unigram_fold1", model)[
            "budget"
        ]["params"]

    assert scaled.epoch_proxy == "so_tanh"
    assert scaled.seconds_per_epoch == pytest.approx(120.0 * count("so_de_tanh") / count("so_tanh"))
    assert scaled.seconds_per_epoch != 120.0
    assert not {c.run.model for c in text} & {"first_order_rnn", "mi_rnn"}


def test_paper_dyck_runs_use_measured_epoch_times_of_their_m(throughput, tmp_path):
    config = base_config()
    times = {("second_order_lstm", "dyck_m8", "lstm"): 7.0}
    costs = cost.estimate(config, throughput, epoch_times=times)
    lstm = {
        c.run.dataset: c
        for c in costs
        if (c.run.experiment, c.run.model, c.run.seed) == ("second_order_lstm", "lstm", 1)
    }
    assert [lstm[d].seconds_per_epoch == 7.0 for d in ("dyck_m4", "dyck_m6", "dyck_m8")] == [
        False,
        False,
        True,
    ]
    assert lstm["dyck_m8"].upper_hours == pytest.approx(1000 * 7.0 / 3600)
    # the literal reading stops only on rises in a row, which no run has done: the whole budget
    assert lstm["dyck_m8"].expected_epochs == 1000
    assert lstm["dyck_m8"].epochs_basis == "no early stopping"
    plateau = [c for c in costs if c.run.experiment == "multi_matrix" and "dyck" in c.run.dataset]
    assert plateau and {c.epochs_basis for c in plateau} == {"fraction"}
    assert lstm["dyck_m4"].seconds_per_epoch == pytest.approx(
        lstm["dyck_m4"].computed_tokens / lstm["dyck_m4"].tokens_per_s
    )
    # the CSV's Dyck rows keep their m; a scale with other Dyck data ignores them
    path = tmp_path / "epoch_times.csv"
    path.write_text(
        "experiment,dataset,model,epoch_seconds\nsecond_order_lstm,dyck_m8,lstm,7.0\n"
        "second_order_lstm,dyck_m4,lstm,4.0\n"
        "general_second_order,ptb_lines_unigram_fold1,so_tanh,120.0\n"
    )
    read = cost.read_epoch_times(path)
    assert read == {
        ("second_order_lstm", "dyck_m8", "lstm"): 7.0,
        ("second_order_lstm", "dyck_m4", "lstm"): 4.0,
        ("general_second_order", "ptb_lines_unigram", "so_tanh"): 120.0,
    }
    config["scale"] = "cpu"
    small = cost.estimate(config, throughput, epoch_times=read)
    dyck_lstm = [c for c in small if c.run.model == "lstm" and "dyck" in c.run.dataset]
    assert dyck_lstm and all(c.epoch_seconds is None for c in dyck_lstm)


def test_hours_scale_linearly_with_epochs(throughput):
    config = base_config()
    low_runs = cost.estimate(config, throughput, expected_fraction=0.1)
    high_runs = cost.estimate(config, throughput, expected_fraction=0.3)

    def hours(runs, fraction: bool) -> float:
        return sum(c.expected_hours for c in runs if (c.epochs_basis == "fraction") == fraction)

    assert hours(high_runs, True) == pytest.approx(3 * hours(low_runs, True))
    assert hours(low_runs, False) > 0  # the literal Dyck reading: its whole budget
    assert hours(high_runs, False) == pytest.approx(hours(low_runs, False))
    low, high = cost.summarise(low_runs)[-1], cost.summarise(high_runs)[-1]
    assert high.upper_hours == pytest.approx(low.upper_hours)

    capped = copy.deepcopy(config)
    for training in capped["training"].values():
        training["max_epochs"] //= 2  # 1000, 100, 200 halve exactly
    half = cost.summarise(cost.estimate(capped, throughput))[-1]
    assert half.upper_hours == pytest.approx(low.upper_hours / 2)


def test_hours_scale_inversely_with_throughput(throughput):
    config = base_config()
    faster = replace(
        throughput, tokens_per_s={k: 4 * v for k, v in throughput.tokens_per_s.items()}
    )
    base = cost.summarise(cost.estimate(config, throughput))[-1]
    fast = cost.summarise(cost.estimate(config, faster))[-1]
    assert fast.expected_hours == pytest.approx(base.expected_hours / 4)
    assert fast.upper_hours == pytest.approx(base.upper_hours / 4)


def test_missing_architecture_names_it(throughput):
    table = {k: v for k, v in throughput.tokens_per_s.items() if k != ("dyck", "mmlstm")}
    with pytest.raises(cost.CostError, match="'mmlstm'.*'dyck'"):
        cost.estimate(base_config(), replace(throughput, tokens_per_s=table))


def test_finished_runs_give_the_expected_epochs(tmp_path, throughput):
    config = base_config()
    done = cfg.Run("multi_matrix", "dyck_m4", "dyck_rnn", 1)
    history = tmp_path / done.path / "history.csv"
    history.parent.mkdir(parents=True)
    history.write_text("epoch,train_loss,seconds\n1,0.5,10\n2,0.4,20\n3,0.3,30\n")
    costs = {c.run: c for c in cost.estimate(config, throughput, tmp_path, 0.5)}
    assert (costs[done].expected_epochs, costs[done].epochs_basis) == (3, "history")
    assert costs[done].measured_seconds_per_epoch == pytest.approx(20)
    sibling = costs[cfg.Run("multi_matrix", "dyck_m8", "dyck_rnn", 2)]
    assert (sibling.expected_epochs, sibling.epochs_basis) == (3, "same model")
    other = costs[cfg.Run("multi_matrix", "dyck_m4", "dyck_rnn_1d", 1)]
    assert (other.expected_epochs, other.epochs_basis) == (50, "fraction")

    # the same model on another family of data is no sibling: Dyck epochs do not tell PTB's
    lstm = cfg.Run("multi_matrix", "dyck_m4", "lstm", 1)
    history = tmp_path / lstm.path / "history.csv"
    history.parent.mkdir(parents=True)
    history.write_text("epoch,train_loss,seconds\n1,0.5,10\n")
    times = {("multi_matrix", "ptb_char", "lstm"): 100.0}
    costs = {c.run: c for c in cost.estimate(config, throughput, tmp_path, 0.5, times)}
    assert costs[cfg.Run("multi_matrix", "dyck_m8", "lstm", 2)].epochs_basis == "same model"
    ptb = [c for r, c in costs.items() if r.model == "lstm" and r.dataset == "ptb_char"]
    assert ptb and all(c.epochs_basis == "fraction" for c in ptb)


def test_cli_on_the_shipped_config(tmp_path, capsys):
    out = tmp_path / "cost.csv"
    args = ["--config", str(ROOT / "config.yaml"), "--throughput", str(CELLS)]
    no_times = ["--epoch-times", str(tmp_path / "none.csv")]
    code = estimate_cost.main([*args, *no_times, "--runs-dir", str(tmp_path), "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    config = base_config()
    dyck = [r for r in cfg.runs(config) if cfg.family(r.dataset) == "dyck"]
    assert f"{len(dyck)} training jobs" in printed
    # with no measured epoch, neither the text runs nor the translation runs (whose CPU rate
    # comes from the measured language models) are priced
    assert f"Not counted: {len(cfg.jobs(config)) - len(dyck)} text or translation run(s)" in printed
    assert "of which translation" not in printed
    assert "CPU, 1 thread" in printed and "device-hours" in printed
    with out.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["experiment"] for r in rows] == ["second_order_lstm", "multi_matrix", "total"]
    assert float(rows[-1]["upper_bound_hours"]) > float(rows[-1]["expected_hours"]) > 0

    code = estimate_cost.main([*args, "--scale", "huge"])
    assert code == 2
    assert "huge" in capsys.readouterr().err


def test_cli_runs_as_a_module():
    proc = subprocess.run(
        [sys.executable, "-m", "rnnrepro.scripts.estimate_cost", "--scale", "smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Cost of scale 'smoke'" in proc.stdout


def test_fine_tuning_is_a_job_and_the_awd_recipe_runs_every_epoch(throughput):
    config = base_config()
    times = {("major_minor", "ptb_stream", "awd_mmlstm_mos"): 100.0}
    costs = cost.estimate(config, throughput, epoch_times=times)
    mine = [c for c in costs if c.run.model == "awd_mmlstm_mos"]
    assert [c.run.stage for c in mine] == ["train", "finetune"]
    train, tune = mine
    assert train.epochs_basis == "no early stopping" and train.expected_epochs == 1000
    # fine-tuning stops at the non-monotone condition: the default fraction of its cap
    assert tune.epochs_basis == "fraction" and tune.expected_epochs == 250
    assert tune.upper_hours == pytest.approx(1000 * 100 / 3600)


def test_studies_share_is_their_own_runs_priced_from_the_main_models(throughput):
    config = base_config()
    times = cost.read_epoch_times(ROOT / "benchmarks/results/epoch_times.csv")
    costs = cost.estimate(config, throughput, epoch_times=times)
    shares = {g.experiment: g for g in cost.group_shares(config, costs)}
    studies = shares["major_minor_studies"]
    assert studies.jobs == 101 and studies.expected_hours > 0
    assert sum(1 for c in costs if c.epoch_proxy) == 101  # every study job, no main one
    scaled = {c.run.model: c for c in costs if c.epoch_proxy and c.run.dataset == "ptb_stream"}
    # a MoS sweep point takes AWD-LSTM-MoS-sized epochs, an AWD-LSTM one AWD-LSTM's
    assert scaled["awd_lstm_mos_layer1_1200"].epoch_proxy in {
        "awd_lstm_mos",
        "awd_lstm_mos_minus",
        "awd_mmlstm_mos",
    }
    assert scaled["awd_lstm_layer1_200"].epoch_proxy == "awd_lstm"
    main = next(c for c in costs if (c.run.model, c.run.dataset) == ("awd_lstm", "ptb_stream"))
    small = scaled["awd_lstm_layer1_200"]
    assert small.seconds_per_epoch < main.seconds_per_epoch  # fewer parameters, shorter epoch
