"""Dynamic evaluation's two modes (``dynamic_eval.<name>.mode``, docs/methods.md §12.2): ``mos``
keeps the weight drop on (seeded from the run's seed) and skips a last window of one target, as
zihangdai/mos dynamiceval.py; ``krause`` runs with no dropout and scores every window."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jsonschema
import pytest
import torch
import yaml
from pipeline_utils import base_config

from rnnrepro.evaluation.dynamic import (
    DynamicEvalSettings,
    Progress,
    adapt,
    decay_rates,
    gradient_statistics,
    set_mode,
)
from rnnrepro.models import build_model
from rnnrepro.models.awd import WeightDropLSTM

ROOT = Path(__file__).resolve().parents[1]
VOCAB = ["<eos>", *[f"w{i}" for i in range(11)]]
HPARAMS = dict(embedding_dim=6, layer_sizes=[10, 6], major_proportions=[0.8, 1.0], experts=2,
               dropout=0.3, dropouth=0.3, dropouti=0.3, dropoute=0.1, dropoutl=0.3)  # fmt: skip
KRAUSE = DynamicEvalSettings(batch_size=4, lr=0.01, epsilon=0.001, lamb=0.02, bptt=5)
MOS = dataclasses.replace(KRAUSE, mode="mos")


def model(weight_drop=0.5):
    torch.manual_seed(0)
    return build_model("awd_lstm", VOCAB, **HPARAMS, weight_drop=weight_drop)


def stream(n, seed):
    return torch.randint(0, len(VOCAB), (n,), generator=torch.Generator().manual_seed(seed))


def run(lm, settings, train, ids, seed=1, stop_after=None):
    """Gradient statistics on ``train``, then adaptation to ``ids``: (MS, progress, weights)."""
    ms = gradient_statistics(lm, train, settings, seed=seed)
    theta0 = {n: p.detach().clone() for n, p in lm.named_parameters()}
    progress = Progress()
    windows = [0]

    def stop():
        windows[0] += 1
        return windows[0] == stop_after

    adapt(lm, ids, ms, decay_rates(ms, settings.lamb), theta0, settings, progress, "cpu", stop,
          seed=seed, stream="test")  # fmt: skip
    return ms, progress, {n: p.detach().clone() for n, p in lm.named_parameters()}


# 4 columns of 51 tokens: 50 targets each, 10 full windows; a stream of 56 tokens: 55 targets,
# 11 full windows (neither ends in a window of one target)
TRAIN, EVAL = stream(204, 1), stream(56, 2)


def test_mos_mode_keeps_only_the_weight_drop_on():
    lm = model()
    set_mode(lm, "mos")
    on = {name for name, m in lm.named_modules() if m.training}
    dropped = {name for name, m in lm.named_modules() if isinstance(m, WeightDropLSTM)}
    assert dropped and on == dropped | {f"{name}.lstm" for name in dropped}
    set_mode(lm, "krause")
    assert not any(m.training for m in lm.modules())


def test_mos_mode_draws_weight_drop_masks():
    ms_krause, krause, _ = run(model(), KRAUSE, TRAIN, EVAL)
    ms_mos, mos, _ = run(model(), MOS, TRAIN, EVAL)
    assert krause.tokens == mos.tokens == 55 and krause.windows == mos.windows == 11
    assert mos.nll != pytest.approx(krause.nll, rel=1e-4)
    assert not torch.allclose(ms_mos["layers.0.major.lstm.weight_hh_l0"],
                              ms_krause["layers.0.major.lstm.weight_hh_l0"])  # fmt: skip


def test_without_weight_drop_the_modes_agree():
    """No weight drop and no single-target last window: the modes are the same computation (the
    other dropouts are off in both, and nothing else is sampled)."""
    ms_krause, krause, weights_krause = run(model(0.0), KRAUSE, TRAIN, EVAL)
    ms_mos, mos, weights_mos = run(model(0.0), MOS, TRAIN, EVAL)
    assert (mos.nll, mos.tokens, mos.windows) == (krause.nll, krause.tokens, krause.windows)
    for n in ms_krause:
        assert torch.equal(ms_mos[n], ms_krause[n]), n
        assert torch.equal(weights_mos[n], weights_krause[n]), n


def test_a_last_window_of_one_target_is_skipped_in_mos_mode_only():
    ids = stream(57, 3)  # 56 targets: 11 windows of 5 and a last one of 1
    _, krause, _ = run(model(0.0), KRAUSE, TRAIN, ids)
    assert (krause.windows, krause.tokens) == (12, 56)
    _, mos, _ = run(model(0.0), MOS, TRAIN, ids)
    assert (mos.windows, mos.tokens) == (11, 55)
    _, first_11, _ = run(model(0.0), KRAUSE, TRAIN, ids, stop_after=11)
    assert (first_11.windows, first_11.nll) == (mos.windows, mos.nll)
    # the gradient statistics too: 4 columns of 57 tokens, 56 targets, the last window of one
    train = stream(228, 4)
    ms_krause = gradient_statistics(model(0.0), train, KRAUSE)
    ms_mos = gradient_statistics(model(0.0), train, MOS)
    ms_first_11 = gradient_statistics(
        model(0.0), train, dataclasses.replace(KRAUSE, max_batches=11)
    )
    for n in ms_mos:
        assert torch.equal(ms_mos[n], ms_first_11[n]), n
    assert any(not torch.equal(ms_mos[n], ms_krause[n]) for n in ms_mos)


def seeded(lm, torch_seed):
    torch.manual_seed(torch_seed)  # the process's random state before the pass
    return lm


def test_mos_mode_is_deterministic_given_the_seed():
    """The masks depend on the run's seed only, not on the process's random state."""
    ms_a, a, weights_a = run(seeded(model(), 11), MOS, TRAIN, EVAL, seed=1)
    ms_b, b, weights_b = run(seeded(model(), 22), MOS, TRAIN, EVAL, seed=1)
    assert a.nll == b.nll
    for n in ms_a:
        assert torch.equal(ms_a[n], ms_b[n]) and torch.equal(weights_a[n], weights_b[n]), n
    _, other, _ = run(model(), MOS, TRAIN, EVAL, seed=2)
    assert other.nll != a.nll  # other masks


def test_the_caller_random_state_is_restored():
    lm = model()
    ms = gradient_statistics(lm, TRAIN, MOS)
    theta0 = {n: p.detach().clone() for n, p in lm.named_parameters()}
    torch.manual_seed(99)
    state = torch.get_rng_state()
    gradient_statistics(lm, TRAIN, MOS)
    adapt(lm, EVAL, ms, decay_rates(ms, MOS.lamb), theta0, MOS, Progress())
    assert torch.equal(torch.get_rng_state(), state)


def test_a_bad_mode_names_the_config_key():
    settings = {"batch_size": 4, "lr": 0.01, "epsilon": 0.001, "lamb": 0.02, "bptt": 5}
    with pytest.raises(ValueError, match=r"dynamic_eval\.<name>\.mode.*'moss'.*mos, krause"):
        DynamicEvalSettings.from_dict({**settings, "mode": "moss"})
    assert DynamicEvalSettings.from_dict(settings).mode == "krause"  # the default
    # the workflow validates config.yaml first: the schema's error names the key
    entries = base_config()["dynamic_eval"]
    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    section = {**schema["properties"]["dynamic_eval"], "$defs": schema["$defs"]}
    validator = jsonschema.validators.validator_for(schema)(section)
    validator.validate(entries)
    entries["mos_ptb"]["mode"] = "moss"
    errors = list(validator.iter_errors(entries))
    assert [list(e.absolute_path) for e in errors] == [["mos_ptb", "mode"]]


def test_major_minor_runs_mos_mode():
    config = base_config()
    assert {s.get("mode") for s in config["dynamic_eval"].values()} == {"mos"}
