"""Feature masking at test time (major_minor Fig. 5, docs/methods.md §12.6): the mask's rate,
scaling, locking over a window, seeding and the layers it touches, and the script's CSV."""

from __future__ import annotations

import csv
import json

import pytest
import torch

from rnnrepro.evaluation.feature_mask import chosen_layers, evaluate_masked
from rnnrepro.evaluation.text import evaluate_stream
from rnnrepro.models import build_model

VOCAB = [f"w{i}" for i in range(39)] + ["<eos>"]
IDS = torch.randint(0, len(VOCAB), (300,), generator=torch.Generator().manual_seed(0))


SETTINGS = dict(embedding_dim=8, layer_sizes=[24, 16, 8], major_proportions=[0.75, 0.75, 1.0])


def model(**hparams):
    torch.manual_seed(0)
    return build_model("awd_lstm", VOCAB, **{**SETTINGS, **hparams}).eval()


def masked(net, layer="all", p=0.3, seed=1):
    return evaluate_masked(net, IDS, layer, p, seed, batch_size=2, bptt=10).loss


def test_no_mask_is_the_plain_evaluation_and_hooks_are_removed():
    net = model()
    plain = evaluate_stream(net, IDS, 2, 10).loss
    assert masked(net, p=0.0) == plain
    assert masked(net) != plain
    assert evaluate_stream(net, IDS, 2, 10).loss == plain  # no hook left behind
    assert all(not layer._forward_hooks for layer in net.layers)


def test_a_mask_seed_gives_the_same_numbers_and_another_seed_others():
    net = model()
    assert masked(net, seed=3) == masked(net, seed=3)
    assert masked(net, seed=3) != masked(net, seed=4)
    assert masked(net, "1") != masked(net, "3") != masked(net, "all")


def test_the_mask_zeroes_a_share_p_scales_the_rest_and_is_locked_over_a_window():
    net = model()
    seen = []
    # layer 3 reads the (masked) output of layer 2
    handle = net.layers[2].register_forward_pre_hook(lambda m, args: seen.append(args[0].clone()))
    try:
        evaluate_masked(net, IDS, "2", 0.5, 1, batch_size=4, bptt=10)
    finally:
        handle.remove()
    features = torch.cat([s.reshape(-1, s.size(-1)) for s in seen])
    zero = features == 0
    assert 0.4 < zero.float().mean() < 0.6
    for window in seen:  # [T, B, H]: one mask per column and feature for the whole window
        dropped = window == 0
        assert (dropped == dropped[0:1]).all()
    # the kept features are the unmasked ones scaled by 1 / (1 - P)
    plain = []
    handle = net.layers[2].register_forward_pre_hook(lambda m, args: plain.append(args[0].clone()))
    try:
        evaluate_stream(net, IDS, 4, 10)
    finally:
        handle.remove()
    kept = ~(seen[0] == 0)
    assert torch.allclose(seen[0][kept], 2 * plain[0][kept])


def test_bad_layers_and_probabilities_are_refused():
    net = model()
    with pytest.raises(ValueError, match=r"masked layer '4': the model has layers 1-3"):
        chosen_layers(net, "4")
    with pytest.raises(ValueError, match=r"not in \[0, 1\)"):
        masked(net, p=1.0)
    lstm = build_model("lstm", VOCAB, embedding_dim=8, hidden_size=8)
    with pytest.raises(ValueError, match="no list of layers"):
        chosen_layers(lstm, "all")


def test_the_script_writes_a_row_per_layer_probability_and_seed(tmp_path):
    from rnnrepro.models import save_model
    from rnnrepro.scripts import evaluate_feature_mask

    net = model(experts=2)
    run = {
        "architecture": "awd_lstm",
        "task": "stream",
        "text": {"framing": "stream", "metric": "ppl"},
        "training": {"bptt": 10, "test_batch_size": 1, "max_eval_tokens": 200},
        "hparams": {},
    }
    identity = {
        "experiment": "major_minor",
        "dataset": "ptb_stream",
        "model": "m",
        "seed": 1,
        "stage": "train",
    }
    path = tmp_path / "model.pt"
    hparams = {**SETTINGS, "experts": 2}
    save_model(
        net, path, "awd_lstm", VOCAB, hparams, run=run, identity=identity, params={"total": 7}
    )
    test = tmp_path / "test.txt"
    test.write_text(" ".join(VOCAB[i] for i in IDS.tolist() if VOCAB[i] != "<eos>") + "\n")
    settings = {"layers": ["all", "2"], "probabilities": [0.0, 0.25], "mask_seeds": [1, 2]}
    out = tmp_path / "feature_mask.csv"
    evaluate_feature_mask.main(
        [
            "--model",
            str(path),
            "--test",
            str(test),
            "--settings",
            json.dumps(settings),
            "--scale",
            "smoke",
            "--out",
            str(out),
        ]
    )
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 2 * 2 * 2
    assert rows[0]["model"] == "m" and rows[0]["params_total"] == "7"
    unmasked = {r["test_ppl"] for r in rows if float(r["probability"]) == 0}
    assert len(unmasked) == 1  # P = 0 is evaluated once
    masked_rows = [r for r in rows if float(r["probability"]) > 0]
    assert len({r["test_ppl"] for r in masked_rows}) == 4
    assert all(float(r["test_ppl"]) > float(next(iter(unmasked))) * 0.5 for r in masked_rows)
