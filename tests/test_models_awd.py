"""major_minor's components on their own (docs/methods.md §12): embedding dropout, locked dropout,
weight drop, the mixture of softmaxes, Major-Minor layers, and the AWD models' parameter counts."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from pipeline_utils import base_config
from torch import nn

from rnnrepro import config as cfg
from rnnrepro.budget import parameter_count
from rnnrepro.models import build_model
from rnnrepro.models.awd import (
    AWDLSTMLM,
    MajorMinorLSTM,
    MixtureOfSoftmaxes,
    WeightDropLSTM,
    locked_dropout,
)
from rnnrepro.models.base import embedding_dropout
from rnnrepro.reporting.paper_numbers import load_paper_numbers

VOCAB = [f"w{i}" for i in range(50)]


def small(**hparams) -> AWDLSTMLM:
    settings = dict(embedding_dim=8, layer_sizes=[20, 20, 10], experts=3, dropout=0.4,
                    dropouth=0.25, dropouti=0.4, dropoute=0.1, dropoutl=0.3,
                    weight_drop=0.5)  # fmt: skip
    return build_model("awd_lstm", VOCAB, **{**settings, **hparams})


def test_embedding_dropout_drops_whole_word_types():
    torch.manual_seed(0)
    embedding = nn.Embedding(20, 6)
    tokens = torch.arange(20).repeat(5, 1)  # every word type in every row
    out = embedding_dropout(embedding, tokens, 0.5, training=True)
    dropped = (out == 0).all(-1)  # [5, 20]: a type is dropped everywhere or nowhere
    assert dropped.any() and not dropped.all()
    assert (dropped == dropped[0]).all()
    kept = ~dropped[0]
    assert torch.allclose(out[0, kept], embedding.weight[kept] * 2)
    assert torch.equal(embedding_dropout(embedding, tokens, 0.5, training=False), embedding(tokens))


def test_locked_dropout_shares_one_mask_over_time():
    torch.manual_seed(0)
    x = torch.ones(30, 4, 16)
    out = locked_dropout(x, 0.5, training=True)
    assert (out == out[0]).all()  # the same units of each column dropped at every step
    assert set(out.unique().tolist()) == {0.0, 2.0}
    assert not (out[:, 0] == out[:, 1]).all()  # each column its own mask
    assert torch.equal(locked_dropout(x, 0.5, training=False), x)


def test_weight_drop_is_dropconnect_on_weight_hh_and_keeps_the_parameters():
    torch.manual_seed(0)
    layer = WeightDropLSTM(5, 7, weight_drop=0.5)
    reference = nn.LSTM(5, 7)
    reference.load_state_dict(layer.lstm.state_dict())
    x = torch.randn(6, 3, 5)
    assert [n for n, _ in layer.named_parameters()] == [
        f"lstm.{n}" for n, _ in reference.named_parameters()
    ]
    torch.manual_seed(1)
    out, _ = layer(x)
    torch.manual_seed(1)  # the same mask, applied by hand
    dropped = F.dropout(reference.weight_hh_l0.detach(), 0.5, training=True)
    with torch.no_grad():
        reference.weight_hh_l0.copy_(dropped)
    expected, _ = reference(x)
    assert torch.allclose(out, expected, atol=1e-6)
    out.sum().backward()
    grad = layer.lstm.weight_hh_l0.grad
    assert grad is not None and torch.equal(grad == 0, dropped == 0)  # no gradient where dropped
    layer.eval()
    reference.load_state_dict(layer.lstm.state_dict())
    assert torch.equal(layer(x)[0], reference(x)[0])  # no drop in evaluation


def test_weight_drop_draws_a_new_mask_per_call():
    torch.manual_seed(0)
    layer = WeightDropLSTM(5, 7, weight_drop=0.5)
    x = torch.randn(4, 2, 5)
    assert not torch.equal(layer(x)[0], layer(x)[0])


def test_mixture_of_softmaxes_is_the_mixture_of_the_experts_softmaxes():
    torch.manual_seed(0)
    head = MixtureOfSoftmaxes(input_size=6, embedding_dim=4, experts=3, dropoutl=0.0)
    decoder = nn.Linear(4, 11)
    output = torch.randn(5, 2, 6)
    log_p = head(output, decoder)
    prior = F.softmax(head.prior(output), -1)  # [5, 2, 3]
    latent = torch.tanh(head.latent(output)).view(5, 2, 3, 4)
    expected = (prior.unsqueeze(-1) * F.softmax(decoder(latent), -1)).sum(2)
    assert torch.allclose(log_p.exp(), expected, atol=1e-6)
    assert torch.allclose(log_p.exp().sum(-1), torch.ones(5, 2), atol=1e-6)


def test_one_expert_is_a_softmax_of_the_tanh_latent():
    torch.manual_seed(0)
    head = MixtureOfSoftmaxes(input_size=6, embedding_dim=4, experts=1, dropoutl=0.0)
    decoder = nn.Linear(4, 11)
    output = torch.randn(5, 2, 6)
    expected = F.log_softmax(decoder(torch.tanh(head.latent(output))), -1)
    assert torch.allclose(head(output, decoder), expected, atol=1e-6)


def test_major_minor_layer_sizes_and_minor_input():
    layer = MajorMinorLSTM(input_size=12, minor_input_size=8, size=20, proportion=0.6,
                           weight_drop=0.0)  # fmt: skip
    assert layer.major.hidden_size == 12 and layer.minor.hidden_size == 8
    x, emb = torch.randn(5, 3, 12), torch.randn(5, 3, 8)
    y, (major_state, minor_state) = layer(x, emb)
    assert y.shape == (5, 3, 20) and major_state[0].shape == (1, 3, 12)
    y2, _ = layer(torch.randn(5, 3, 12), emb)  # another previous-layer output
    assert torch.equal(y[..., 12:], y2[..., 12:])  # the Minor part reads only the embedding
    assert not torch.equal(y[..., :12], y2[..., :12])
    plain = MajorMinorLSTM(12, 8, 20, 1.0, 0.0)
    assert plain.minor is None and plain(x, emb)[0].shape == (5, 3, 20)


def test_every_minor_lstm_reads_the_embedding_in_the_model():
    torch.manual_seed(0)
    model = small(layer_sizes=[20, 20, 10], major_proportions=[0.9, 0.9, 0.6], experts=0,
                  embedding_dim=10).eval()  # fmt: skip
    tokens = torch.randint(0, len(VOCAB), (6, 2))
    outputs = {}
    for i, layer in enumerate(model.layers):
        layer.register_forward_hook(lambda mod, args, out, i=i: outputs.__setitem__(i, out[0]))
    model(tokens)
    before = {i: o.clone() for i, o in outputs.items()}
    with torch.no_grad():  # change layer 1's Major LSTM: layers 2-3 see another input
        model.layers[0].major.lstm.weight_ih_l0.add_(1.0)
    model(tokens)
    for i, size in ((1, 18), (2, 6)):
        assert torch.equal(outputs[i][..., size:], before[i][..., size:])  # Minor: unchanged
        assert not torch.equal(outputs[i][..., :size], before[i][..., :size])
    minor_previous = small(major_proportions=[0.9, 0.9, 0.6], minor_input="previous")
    assert minor_previous.layers[1].minor.lstm.input_size == 20


def test_model_state_is_carried_and_log_probs_are_normalised():
    torch.manual_seed(0)
    model = small(major_proportions=[0.9, 0.9, 0.6]).eval()
    tokens = torch.randint(0, len(VOCAB), (9, 3))
    whole, _ = model(tokens)
    first, state = model(tokens[:4])
    second, _ = model(tokens[4:], state)
    assert torch.allclose(whole, torch.cat([first, second]), atol=1e-5)
    assert torch.allclose(whole.exp().sum(-1), torch.ones(9, 3), atol=1e-5)
    model.train()
    logits, _, aux = model.forward_aux(tokens)
    assert aux["raw_output"].shape == aux["output"].shape == (9, 3, 10)


def test_tying_needs_an_embedding_sized_last_layer_or_a_mixture():
    with pytest.raises(ValueError, match="tie_weights"):
        small(experts=0)  # last layer 10, embedding 8
    model = small(experts=0, embedding_dim=10)
    assert model.decoder.weight is model.encoder.weight
    with pytest.raises(ValueError, match="one entry per layer"):
        small(major_proportions=[0.9, 0.9])


# The paper's counts that follow from its printed sizes (docs/methods.md §12.1; two biases per
# LSTM, tied embedding, MoS)
COUNTS = [
    ("MoS PTB", 10000, 280, [960, 960, 620], None, 15, 21.50e6),
    ("MMLSTM PTB", 10000, 280, [1080, 1080, 620], [0.9, 0.9, 0.6], 15, 21.32e6),
    ("MoS- PTB", 10000, 280, [972, 972, 372], None, 15, 18.83e6),
    ("MoS WT2", 33278, 300, [1150, 1150, 650], None, 15, 34.91e6),
    ("MMLSTM WT2", 33278, 300, [1200, 1200, 650], [0.9, 0.9, 0.6], 15, 32.26e6),
    ("MoS- WT2", 33278, 300, [1080, 1080, 390], None, 15, 29.39e6),
    ("LM# PTB", 10000, 280, [1080, 1080, 620], None, 15, 24.87e6),
    ("WT103 LSTM", 267735, 256, [1024, 256], None, 0, 75.37e6),
    ("WT103 MMLSTM", 267735, 256, [1100, 256], [0.9, 0.9], 0, 75.17e6),
]


@pytest.mark.parametrize("name, V, e, sizes, proportions, experts, expected", COUNTS)
def test_parameter_counts_match_the_papers(name, V, e, sizes, proportions, experts, expected):
    with torch.device("meta"):  # no memory for the 68M-parameter WikiText-103 embedding
        model = AWDLSTMLM([str(i) for i in range(V)], e, sizes, proportions, experts=experts)
    assert model.num_parameters() == pytest.approx(expected, rel=0.005), name
    # the closed form the cost estimate uses (rnnrepro.budget) counts the same model
    hparams = {"embedding_dim": e, "layer_sizes": sizes, "experts": experts}
    if proportions:
        hparams["major_proportions"] = proportions
    assert parameter_count("awd_lstm", V, hparams) == model.num_parameters()


@pytest.mark.parametrize(
    "hparams",
    [
        {"minor_input": "previous", "major_proportions": [0.9, 0.5, 0.6]},
        {"major_proportions": [1.0, 0.9, 1.0], "experts": 0, "layer_sizes": [20, 20, 8]},
        {"tie_weights": False},
        {"tie_weights": False, "experts": 0},
    ],
)
def test_closed_form_count_of_every_awd_variant(hparams):
    model = small(**hparams)
    settings = {"embedding_dim": 8, "layer_sizes": [20, 20, 10], "experts": 3, **hparams}
    assert parameter_count("awd_lstm", len(VOCAB), settings) == model.num_parameters()


# Where a printed count and the printed sizes disagree by more than 0.5 %: docs/methods.md §12.6.
EXPLAINED = {
    ("Table X", "ptb_stream", "awd_mmlstm_mos_no_minor2"),  # 1030 gives 21.79M, printed 21.5M
    ("Table IX", "wikitext2", "awd_mmlstm_ratio_7_3"),  # 1440 gives 33.97M, printed 33.8M
}


def study_counts() -> list[tuple]:
    config = {**base_config(), "scale": "paper"}
    rows = load_paper_numbers("major_minor", ["Table VIII", "Table IX", "Table X", "Section V-C"])
    rows = rows[rows["metric"] == "params_total"]
    out = []
    for _, row in rows.iterrows():
        settings = cfg.run_config(config, "major_minor", row["dataset"], row["model"])
        vocab = cfg.TEXT_FAMILIES[row["dataset"]]["vocab_size"]
        count = parameter_count("awd_lstm", vocab, settings["hparams"])
        out.append((row["table"], row["dataset"], row["model"], row["value"], count))
    return out


def test_study_counts_match_the_printed_ones_within_half_a_percent_or_are_explained():
    counts = study_counts()
    assert len(counts) == 4 + 12 + 8 + 2
    for table, dataset, model, printed, count in counts:
        off = abs(count / printed - 1)
        if (table, dataset, model) in EXPLAINED:
            assert off > 0.005, (table, dataset, model, count)  # else drop it from EXPLAINED
        else:
            assert off <= 0.005, (table, dataset, model, count, printed)
