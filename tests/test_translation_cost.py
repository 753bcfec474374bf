"""The translation runs' cost: the FLOP count of LuongNMT against torch's FLOP counter, its
scaling with the run's settings, and the paper-scale runs' estimate and SLURM request."""

from __future__ import annotations

import copy
import math
import shutil
from dataclasses import replace

import pytest
import torch
from pipeline_utils import ROOT, base_config
from torch.utils.flop_counter import FlopCounterMode

from rnnrepro import config as cfg
from rnnrepro import cost
from rnnrepro.cost import translation as tc
from rnnrepro.evaluation.translation import batch_nll, beam_search, pair_batch
from rnnrepro.models.seq2seq import LuongNMT
from rnnrepro.preflight import cost_summary
from rnnrepro.resources import run_resources
from rnnrepro.scripts import estimate_cost

BOS, EOS = 1, 2
# two sides of a layer's split (Major and Minor), a plain layer, and Minors on the feed
SHAPES = [
    tc.NMTShape(50, 8, (12, 10, 14), (0.75, 1.0, 0.5)),
    tc.NMTShape(37, 6, (9, 9), (1.0, 1.0)),
]
PAIRS = [
    ([3, 4, 5, 6, 7], [5, 6, 7]),
    ([3, 4], [8, 9, 10, 11, 12, 13]),
    ([5, 6, 7, 8, 9, 10, 11], [3]),
]


def build(shape: tc.NMTShape) -> LuongNMT:
    torch.manual_seed(0)
    vocab = [str(i) for i in range(shape.vocab_size)]
    return LuongNMT(
        vocab, shape.embedding_dim, list(shape.layer_sizes), list(shape.major_proportions)
    )


def counted(fn) -> int:
    """FLOPs of ``fn()`` by torch's counter; oneDNN's fused CPU LSTM (the decoder's one-step
    calls) is switched off, as the counter does not see inside it."""
    with torch.backends.mkldnn.flags(enabled=False), FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


@pytest.mark.filterwarnings("ignore:TF32 acceleration")
@pytest.mark.parametrize("shape", SHAPES)
def test_step_count_is_torchs_flop_count(shape):
    model = build(shape)
    batch = pair_batch(PAIRS, BOS, EOS, torch.device("cpu"))
    sources, targets = [len(s) for s, _ in PAIRS], [len(t) for _, t in PAIRS]
    with torch.no_grad():
        forward = counted(lambda: batch_nll(model, batch))
    assert forward == tc.pair_batch_flops(shape, sources, targets, train=False)
    step = counted(lambda: batch_nll(model, batch).backward())
    assert step == tc.pair_batch_flops(shape, sources, targets)
    # the backward pass is twice the forward but for the encoder's zero initial states
    assert step == 3 * forward - 2 * len(PAIRS) * shape.first_step_macs()
    assert model.num_parameters() == shape.parameters()


@pytest.mark.filterwarnings("ignore:TF32 acceleration")
def test_beam_count_is_torchs_flop_count():
    shape = SHAPES[0]
    model = build(shape)
    with torch.no_grad():
        model.generator.bias[EOS] = -1e9  # no hypothesis ends: every step holds the full beam
    source = torch.tensor([4, 5, 6, 7, 8, 9])
    found = counted(lambda: beam_search(model, source, BOS, EOS, max_length=7, width=3))
    assert found == tc.beam_flops(shape, len(source), 7, 3)


def test_paper_models_have_table_xiis_parameters_and_these_counts():
    config = base_config()
    runs = {r.model: r for r in cfg.jobs(config, "major_minor") if r.dataset == "wmt14_de_en"}
    flops = {m: tc.run_flops(config, r) for m, r in runs.items()}
    assert flops["nmt_lstm"].parameters == 170_700_201
    assert flops["nmt_mmlstm"].parameters == 172_832_363
    # 27 + 27 pieces, 1.3 padding, batch 128: 2.68 and 2.75 TFLOP a step, 340,000 steps
    assert flops["nmt_lstm"].step == pytest.approx(2.679e12, rel=1e-3)
    assert flops["nmt_mmlstm"].step == pytest.approx(2.754e12, rel=1e-3)
    for f in flops.values():
        assert f.steps == 340_000 and f.epochs == 10
        assert f.training == pytest.approx(f.steps * f.step + 10 * f.validation)
        assert 0 < f.evaluation < 1e-3 * f.total  # test sets: a small part of the run
    # the encoder's sizes differ from the decoder's inputs: Minors read the embedding (1000)
    # in the encoder and [h̃; e] (2070) in the decoder
    hparams = cfg.run_config(config, "major_minor", "wmt14_de_en", "nmt_mmlstm")["hparams"]
    mm = tc.NMTShape.from_hparams(33201, hparams)
    assert mm.encoder_lstms()[:2] == [(1000, 749), (1000, 321)]
    assert mm.decoder_lstms()[:3] == [(2070, 749), (2070, 321), (1070, 749)]


def test_expected_batch_is_a_batch_of_mean_pairs():
    shape = SHAPES[0]
    exact = tc.Lengths(6.0, 4.0, 1.0, 1.0, "test")
    assert tc.expected_batch_flops(shape, 5, exact) == tc.pair_batch_flops(shape, [6] * 5, [4] * 5)
    padded = tc.expected_batch_flops(shape, 5, replace(exact, target_padding=1.5))
    assert padded > tc.expected_batch_flops(shape, 5, exact) * 1.3


def test_count_scales_with_the_steps_and_the_hours_with_the_rate():
    config = base_config()
    run = next(r for r in cfg.jobs(config) if r.model == "nmt_lstm")
    rate = tc.FlopRate(1e13, "test")
    base = cost.run_cost(config, run, None, math.inf, "test", flop_rate=rate)
    longer = copy.deepcopy(config)
    longer["translation"]["max_steps"] *= 2
    double = cost.run_cost(longer, run, None, math.inf, "test", flop_rate=rate)
    steps = base.flops.steps * base.flops.step
    assert double.flops.training == pytest.approx(base.flops.training + steps)
    assert double.upper_hours - base.upper_hours == pytest.approx(steps / 1e13 / 3600)
    fast = cost.run_cost(
        config, run, None, math.inf, "test", flop_rate=replace(rate, flops_per_s=4e13)
    )
    assert fast.upper_hours == pytest.approx(base.upper_hours / 4)
    assert base.upper_hours == pytest.approx(base.flops.total / 1e13 / 3600)
    with pytest.raises(cost.CostError, match="nor FLOP rate"):
        cost.run_cost(config, run, None, math.inf, "test")


def test_a_measured_epoch_replaces_the_rate_and_prices_the_other_model():
    config = base_config()
    runs = {r.model: r for r in cfg.jobs(config) if r.dataset == "wmt14_de_en"}
    times = {("major_minor", "wmt14_de_en", "nmt_lstm"): 3000.0}
    guess = tc.FlopRate(1e12, "test")
    lstm = cost.run_cost(config, runs["nmt_lstm"], None, 10, "test", None, times, guess)
    mm = cost.run_cost(config, runs["nmt_mmlstm"], None, 10, "test", None, times, guess)
    assert lstm.seconds_per_epoch == pytest.approx(3000.0) and lstm.epoch_proxy is None
    assert mm.epoch_proxy == "nmt_lstm" and mm.flop_rate == lstm.flop_rate
    assert mm.seconds_per_epoch == pytest.approx(3000.0 * mm.flops.epoch / lstm.flops.epoch)
    # the paper-scale measurement says nothing of the stand-in's runs
    config["scale"] = "cpu"
    small = cost.run_cost(config, runs["nmt_lstm"], None, 10, "test", None, times, guess)
    assert small.flop_rate == guess


def test_paper_translation_runs_get_a_finite_cost_and_a_gpus_time_limit(tmp_path):
    config = base_config()
    times = cost.read_epoch_times(ROOT / "benchmarks/results/epoch_times.csv")
    rate = tc.derived_rate(times, ROOT / "benchmarks/results/major_minor_flops.csv", "major_minor")
    assert rate is not None and 1e10 < rate.flops_per_s < 1e12  # a CPU's tens of GFLOP/s
    throughput = cost.read_throughput(ROOT / "benchmarks/results/cells.csv")
    costs = cost.estimate(config, throughput, tmp_path, epoch_times=times, flop_rate=rate)
    mine = [c for c in costs if c.run.dataset == "wmt14_de_en"]
    assert [c.run.model for c in mine] == ["nmt_lstm", "nmt_mmlstm"]
    for c in mine:
        assert math.isfinite(c.upper_hours) and c.upper_hours == c.expected_hours > 1000
        assert c.epochs_basis == "no early stopping"
    summary = cost.translation_summary(costs)
    assert summary.jobs == 2 and summary.hours == pytest.approx(sum(c.upper_hours for c in mine))
    assert 10 < summary.assumed_gpu_hours < 100
    # without a rate they are left out, as text runs without an epoch are
    assert not [c for c in cost.estimate(config, throughput, tmp_path) if c.flops]

    limits = config["cluster"]["runtime"]
    for run in (c.run for c in mine):
        found = run_resources(config, run, tmp_path / "none")  # no GPU tables: assumed rate
        epoch = tc.run_flops(config, run).epoch / tc.ASSUMED_GPU.flops_per_s
        assert found.gpu == 1
        assert found.runtime == math.ceil(limits["margin"] * 10 * epoch / 60)
        assert limits["min"] < found.runtime < limits["max"]
        assert "assumed" in found.basis
    measured = tmp_path / "measured"
    (measured / "gpu").mkdir(parents=True)
    (measured / "gpu" / "epoch_times.csv").write_text(
        "experiment,dataset,model,epoch_seconds\nmajor_minor,wmt14_de_en,nmt_lstm,600\n"
    )
    found = run_resources(config, mine[0].run, measured)
    assert found.runtime == math.ceil(limits["margin"] * 10 * 600 / 60)
    assert "measured" in found.basis


def test_cli_and_preflight_print_the_translation_runs(tmp_path, capsys):
    argv = ["--config", str(ROOT / "config.yaml"), "--runs-dir", str(tmp_path)]
    assert estimate_cost.main(argv) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("of which translation"))
    assert "2 job(s)" in line and "340,000" in line and "derived" in line
    assert "GPU-hours at 20.1 TFLOP/s (assumed" in out
    assert estimate_cost.main([*argv, "--translation-tflops", "30"]) == 0
    assert "at 30 TFLOP/s (measured: --translation-tflops)" in capsys.readouterr().out
    assert estimate_cost.main([*argv, "--scale", "cpu"]) == 0
    assert "of which translation: 2 job(s)" in capsys.readouterr().out
    config = base_config()
    summary = cost_summary(config, cfg.jobs(config), ROOT, tmp_path)
    assert "of which translation: 2 job(s)" in summary and "GPU-hours at an assumed" in summary


def test_gpu_costs_name_the_uncounted_runs_and_no_second_gpu_rate(tmp_path, capsys):
    """``--gpu`` on a GPU's tables: the translation hours are already GPU-hours (no line at the
    assumed rate beside them), and the runs left out are named."""
    gpu = tmp_path / "gpu"
    gpu.mkdir()
    shutil.copyfile(ROOT / "benchmarks" / "results" / "cells.csv", gpu / "cells.csv")
    (gpu / "epoch_times.csv").write_text(
        "experiment,dataset,model,epoch_seconds\nmajor_minor,wmt14_de_en,nmt_lstm,600\n"
    )
    argv = ["--config", str(ROOT / "config.yaml"), "--runs-dir", str(tmp_path), "--gpu"]
    argv += ["--throughput", str(tmp_path / "cells.csv")]  # the CPU's; --gpu reads gpu/ beside it
    assert estimate_cost.main(argv) == 0
    out = capsys.readouterr().out
    assert "of which translation: 2 job(s)" in out and "nmt_lstm's epoch of 600 s" in out
    assert "on a GPU:" not in out
    assert "memory/ptb_stream/lstm_650" in next(x for x in out.splitlines() if "Not counted" in x)
