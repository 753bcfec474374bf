"""Parameter-budget solver (rnnrepro.budget) against docs/methods.md §6.4 and §5.5."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rnnrepro.budget import parameter_count, solve

BUDGET = 500_000
NO_DE = {"use_d": False, "use_e": False}


def test_budget_module_does_not_import_torch():
    """The Snakefile imports it to build the DAG: keep it free of torch."""
    code = "import sys, rnnrepro.budget; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


# docs/methods.md §6.4, V = 27: (architecture, fixed, the spec's h, solver's h, count at
# solver's h). The spec's "h≈" values are the real root h* of P(h) = 500,000 rounded to the
# NEAREST integer, while the solver rounds down (docs/methods.md §6.4's own rule: the count must
# not exceed the budget).
# They differ by one where h* has a fraction above .5: D+E h* = 394.8 (P(395) = 500,492 > 500k),
# D only h* = 479.9 (P(480) = 500,187), MI-RNN h* = 678.7 (P(679) = 500,450).
ABLATIONS = [
    ("second_order_rnn", {"use_d": True, "use_e": True}, 395, 394, 498_043),
    ("second_order_rnn", {"use_d": True, "use_e": False}, 480, 479, 498_187),
    ("second_order_rnn", {"use_d": False, "use_e": True}, 399, 399, 499_575),
    ("second_order_rnn", NO_DE, 486, 486, 499_149),
    ("first_order_rnn", {}, 680, 680, 499_827),
    ("mi_rnn", {}, 679, 678, 499_035),
]


@pytest.mark.parametrize("name,fixed,models_h,h,params", ABLATIONS)
def test_ablation_sizes_match_models_md(name, fixed, models_h, h, params):
    result = solve(name, 27, BUDGET, **fixed)
    assert result["hidden_size"] == h and result["params"] == params
    assert abs(h - models_h) <= 1
    if name == "second_order_rnn":
        assert result["inner_size"] == h  # ratio 1: m = h
    else:
        assert "inner_size" not in result
    assert BUDGET * 0.995 <= params <= BUDGET
    # h is the largest that fits; the spec's h (when different) exceeds the budget
    bigger = {**fixed, "hidden_size": h + 1}
    if name == "second_order_rnn":
        bigger["inner_size"] = h + 1
    assert parameter_count(name, 27, bigger) > BUDGET


RATIOS = (0.1, 0.2, 0.5, 1, 2, 5, 10, 20)
# docs/methods.md §6.4 ratio tables, (h, m) per ratio, model without D and E
SPEC_TABLE = {
    27: [(1506, 151), (1077, 215), (687, 343), (486, 486), (343, 687), (216, 1078), (151, 1508),
         (105, 2099)],
    703: [(563, 56), (481, 96), (354, 177), (259, 259), (177, 354), (96, 482), (56, 564),
          (31, 624)],
}  # fmt: skip
# The solver (round h down, m = round(r·h) half up, count <= budget):
SOLVED = {
    27: [(1504, 150), (1077, 215), (686, 343), (486, 486), (343, 686), (215, 1075), (150, 1500),
         (104, 2080)],
    703: [(563, 56), (481, 96), (354, 177), (259, 259), (177, 354), (96, 480), (56, 560),
          (31, 620)],
}  # fmt: skip
# Why they differ: the spec's table is h = round(h*), m = round(r·h*) from the real root h* of
# 2r h² + (rV + V + 1)h + V = 500,000 (every one of its 16 pairs is reproduced that way), not its
# own "round h down, m = round(r·h)" rule. So (a) h is one higher where h* has a fraction >= .5
# (V=27: r = 0.5, 5, 10, 20), and those pairs exceed the budget (e.g. (105, 2099): 500,430;
# (1506, 151): 501,084); (b) m = round(r·h*) != round(r·h) when r > 1 (V=27 r=2: 687 vs 686;
# V=703 r = 5, 10, 20). V=27 r=0.1: round(0.1·1505) = 151 (half up) makes h = 1505 exceed the
# budget (500,754), so h = 1504.
# Budget gaps: with m tied to round(r·h) the counts are coarse. For r > 1 one step of h adds
# about 4r·h + (r + 1)V to the count; for r < 1 every step of m adds 2h + V. So at extreme ratios
# the best fitting count can be more than 0.5% below 500k: V=27 r = 0.1 (0.52%), 5 (0.54%),
# 10 (1.05%), 20 (1.65%); V=703 r = 10 (0.69%), 20 (0.63%). No (h, round(r·h)) pair gets closer
# (h + 1 exceeds the budget; checked below). solve(..., fill=True) then grows the larger of h and
# m into the leftover budget: all 16 end within 0.11% of 500k, with a ratio off by at most 1.7%
# (20.34 instead of 20 at V=27).
OVER_HALF_PERCENT = {(27, 0.1), (27, 5), (27, 10), (27, 20), (703, 10), (703, 20)}


def ratio_cases():
    for V, pairs in SOLVED.items():
        for r, solved, models in zip(RATIOS, pairs, SPEC_TABLE[V], strict=True):
            yield V, r, solved, models


@pytest.mark.parametrize("V,r,solved,models", list(ratio_cases()))
def test_ratio_tables(V, r, solved, models):
    result = solve("second_order_rnn", V, BUDGET, ratio=r, **NO_DE)
    h, m = result["hidden_size"], result["inner_size"]
    assert (h, m) == solved
    assert result["params"] == parameter_count(
        "second_order_rnn", V, {"hidden_size": h, "inner_size": m, **NO_DE}
    )
    assert abs(h - models[0]) <= 2 and abs(m - models[1]) <= max(1, round(r))
    # closed form of docs/methods.md §6.4 for the model without D and E
    assert result["params"] == 2 * h * m + m * V + h + V * h + V
    assert result["params"] <= BUDGET
    gap = 1 - result["params"] / BUDGET
    assert (gap > 0.005) == ((V, r) in OVER_HALF_PERCENT)
    # optimal: the next h (with its own rounded m) does not fit
    m_next = int(r * (h + 1) + 0.5 + 1e-9)
    bigger = {"hidden_size": h + 1, "inner_size": m_next, **NO_DE}
    assert parameter_count("second_order_rnn", V, bigger) > BUDGET
    # filling the leftover budget: within 0.5% (0.11% here), ratio within 2%
    filled = solve("second_order_rnn", V, BUDGET, ratio=r, fill=True, **NO_DE)
    assert BUDGET * 0.995 <= filled["params"] <= BUDGET
    assert filled["inner_size"] / filled["hidden_size"] == pytest.approx(r, rel=0.02)


# docs/methods.md §5.5 (multi_matrix): (architecture, V, e, layers, h, the spec's count in
# millions, target).
# All are within 0.5% of the paper's "≈4.5M" / "≈2M" except the 2-layer word LSTM (h = 115):
# 1,989,980 is 0.501% below 2M. That is the paper's own size (MODELS lists 1.990M ✓; h = 116,
# 2,003,024, would be closer but above 2M), so it is checked against the spec's count only.
PAPER_SIZES = [
    ("rnn", 50, 128, 1, 2032, 4.501, 4.5e6),
    ("rnn", 50, 128, 2, 1194, 4.501, 4.5e6),
    ("lstm", 50, 128, 1, 991, 4.500, 4.5e6),
    ("lstm", 50, 128, 2, 589, 4.510, 4.5e6),
    ("mrnn", 50, 128, 1, 1972, 4.501, 4.5e6),
    ("mlstm", 50, 128, 1, 977, 4.503, 4.5e6),
    ("mmrnn", 50, 128, 1, 1038, 4.507, 4.5e6),
    ("mmrnn", 50, 128, 2, 696, 4.500, 4.5e6),
    ("mmlstm", 50, 128, 1, 512, 4.501, 4.5e6),
    ("mmlstm", 50, 128, 2, 345, 4.507, 4.5e6),
    ("rnn", 10000, 64, 1, 133, 2.006, 2e6),
    ("lstm", 10000, 64, 1, 125, 1.996, 2e6),
    ("lstm", 10000, 64, 2, 115, 1.990, None),  # 0.501% below 2M, see above
    ("mmrnn", 10000, 64, 1, 128, 2.005, 2e6),
    ("mmlstm", 10000, 64, 1, 112, 2.003, 2e6),
    ("mmlstm", 10000, 64, 2, 97, 1.990, 2e6),
]


@pytest.mark.parametrize("name,V,e,layers,h,millions,target", PAPER_SIZES)
def test_multi_matrix_paper_sizes_are_within_half_a_percent(
    name, V, e, layers, h, millions, target
):
    hparams = {"embedding_dim": e, "hidden_size": h}
    if name not in ("mrnn", "mlstm"):
        hparams["num_layers"] = layers
    count = parameter_count(name, V, hparams)
    assert round(count / 1e6, 3) == millions
    if target is None:
        assert abs(count - 2e6) <= 0.00502 * 2e6
        return
    assert abs(count - target) <= 0.005 * target
    # the solver lands on the paper's h or just below it (the paper's sizes are "≈", some above)
    fixed = {k: v for k, v in hparams.items() if k != "hidden_size"}
    assert h - 2 <= solve(name, V, target, **fixed)["hidden_size"] <= h + 1


def test_exact_counts_of_models_md():
    assert parameter_count("mrnn", 50, {"embedding_dim": 128, "hidden_size": 1972}) == 4_500_638
    assert parameter_count("mlstm", 50, {"embedding_dim": 128, "hidden_size": 977}) == 4_502_604


def test_fixed_inner_size_and_defaults():
    result = solve("second_order_rnn", 27, BUDGET, inner_size=100, **NO_DE)
    h = result["hidden_size"]
    assert result["inner_size"] == 100
    assert parameter_count("second_order_rnn", 27, {"hidden_size": h, "inner_size": 100, **NO_DE})
    assert solve("lstm", 50, 4.5e6, embedding_dim=128) == {"hidden_size": 991, "params": 4_499_644}
    # defaults: one layer, 4 choices, D and E on
    assert parameter_count("mmrnn", 50, {"embedding_dim": 128, "hidden_size": 10}) == (
        parameter_count("mmrnn", 50, {"embedding_dim": 128, "hidden_size": 10, "choices": 4})
    )
    assert solve("second_order_rnn", 27, BUDGET)["hidden_size"] == 394
    # hyper-parameters without parameters are accepted
    assert parameter_count("mi_rnn", 27, {"hidden_size": 3, "dropout": 0.1, "activation": "tanh"})


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: solve("gru", 27, BUDGET), "unknown architecture"),
        (lambda: parameter_count("gru", 27, {"hidden_size": 3}), "unknown architecture"),
        (lambda: solve("second_order_rnn", 27, 100), "budget"),
        (lambda: solve("lstm", 50, 10, embedding_dim=128), "budget"),
        (lambda: solve("lstm", 50, BUDGET), "missing"),
        (lambda: solve("lstm", 50, BUDGET, embedding_dim=8, choices=4), "unknown hyper"),
        (lambda: solve("lstm", 50, BUDGET, embedding_dim=8, hidden_size=4), "hidden_size"),
        (lambda: solve("mi_rnn", 27, BUDGET, ratio=2.0), "ratio"),
        (lambda: solve("second_order_rnn", 27, BUDGET, ratio=0), "ratio"),
        (lambda: solve("second_order_rnn", 27, BUDGET, ratio=2.0, inner_size=4), "not both"),
        (lambda: parameter_count("rnn", 5, {"embedding_dim": 2, "hidden_size": 0}), "positive"),
    ],
)
def test_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()
