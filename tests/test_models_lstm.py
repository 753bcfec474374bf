"""LSTM baseline, attention/assignment second-order LSTMs and the fused recurrence."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from rnnrepro.models import build_model
from rnnrepro.models._lstm_ops import fused_gate_index
from rnnrepro.models.attention_lstm import MixedLSTMFunction, bracket_cell_map
from rnnrepro.models.base import embedding_dropout

DYCK = ["<pad>", "<start>", "<end>", "(a", "a)", "(b", "b)"]
NAMES = ("lstm", "attention_lstm", "assignment_lstm")


def make(name: str, e: int = 6, h: int = 5, **kw):
    torch.manual_seed(0)
    return build_model(name, DYCK, embedding_dim=e, hidden_size=h, **kw).double()


def naive_mixed_lstm(x, alpha, w_ih, w_hh, bias, h, c):
    """Reference: per-step autograd, PyTorch weight layout (cell blocks [i; f; g; o])."""
    S, hidden = alpha.shape[-1], h.shape[1]
    outputs = []
    for t in range(x.shape[0]):
        new_h, new_c = 0, 0
        for s in range(S):
            rows = slice(4 * hidden * s, 4 * hidden * (s + 1))
            gates = x[t] @ w_ih[rows].T + bias[rows] + h @ w_hh[rows].T
            i, f, g, o = gates.chunk(4, dim=1)
            c_s = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h_s = torch.sigmoid(o) * torch.tanh(c_s)
            new_h = new_h + alpha[t, :, s : s + 1] * h_s
            new_c = new_c + alpha[t, :, s : s + 1] * c_s
        h, c = new_h, new_c
        outputs.append(h)
    return torch.stack(outputs), c


def random_inputs(T=7, B=3, e=4, h=5, S=2, seed=0):
    g = torch.Generator().manual_seed(seed)

    def rand(*shape, scale=1.0):
        return (scale * torch.randn(*shape, generator=g, dtype=torch.float64)).requires_grad_()

    x = rand(T, B, e)
    alpha = rand(T, B, S)  # logits; softmax applied in the graph so α gets a real gradient
    w_ih, w_hh, bias = rand(S * 4 * h, e, scale=0.5), rand(S * 4 * h, h, scale=0.5), rand(S * 4 * h)
    return x, alpha, w_ih, w_hh, bias, rand(B, h), rand(B, h)


@pytest.mark.parametrize("S", [1, 2, 3])
def test_fused_function_matches_naive_outputs_and_gradients(S):
    inputs = random_inputs(S=S)
    x, alpha_logits, w_ih, w_hh, bias, h0, c0 = inputs
    alpha = torch.softmax(alpha_logits, -1)
    h = h0.shape[1]

    ref_hs, ref_c = naive_mixed_lstm(x, alpha, w_ih, w_hh, bias, h0, c0)
    idx = fused_gate_index(h, S)
    xw = x @ w_ih[idx].T + bias[idx]
    hs, c = MixedLSTMFunction.apply(xw, alpha, w_hh[idx], h0, c0)
    torch.testing.assert_close(hs, ref_hs)
    torch.testing.assert_close(c, ref_c)

    g = torch.Generator().manual_seed(1)
    d_hs, d_c = torch.randn(hs.shape, generator=g, dtype=hs.dtype), torch.randn_like(c)
    ref_loss = (ref_hs * d_hs).sum() + (ref_c * d_c).sum()
    ref_grads = torch.autograd.grad(ref_loss, inputs, retain_graph=True)  # α's softmax is shared
    grads = torch.autograd.grad((hs * d_hs).sum() + (c * d_c).sum(), inputs)
    names = ["x", "alpha", "w_ih", "w_hh", "bias", "h0", "c0"]
    for name, got, want in zip(names, grads, ref_grads, strict=True):
        torch.testing.assert_close(got, want, msg=f"gradient of {name}")


def test_fused_function_gradcheck():
    T, B, S, h = 3, 2, 2, 2
    g = torch.Generator().manual_seed(0)
    inputs = [
        torch.randn(T, B, 4 * S * h, generator=g, dtype=torch.float64),
        torch.softmax(torch.randn(T, B, S, generator=g, dtype=torch.float64), -1),
        torch.randn(4 * S * h, h, generator=g, dtype=torch.float64),
        torch.randn(B, h, generator=g, dtype=torch.float64),
        torch.randn(B, h, generator=g, dtype=torch.float64),
    ]
    assert torch.autograd.gradcheck(MixedLSTMFunction.apply, [t.requires_grad_() for t in inputs])


@pytest.mark.parametrize("name", NAMES)
def test_shapes_and_state_carry(name):
    model = make(name)
    tokens = torch.randint(0, len(DYCK), (9, 4), generator=torch.Generator().manual_seed(0))
    logits, (h, c) = model(tokens)
    assert logits.shape == (9, 4, len(DYCK))
    assert h.shape[-2:] == c.shape[-2:] == (4, 5)
    # running two halves with the state carried over equals one pass
    first, state = model(tokens[:4])
    second, state2 = model(tokens[4:], state)
    torch.testing.assert_close(torch.cat([first, second]), logits)
    torch.testing.assert_close(state2[0], h)
    torch.testing.assert_close(state2[1], c)


@pytest.mark.parametrize("name", NAMES)
def test_padding_does_not_change_real_positions(name):
    model = make(name)
    g = torch.Generator().manual_seed(0)
    short = torch.randint(1, len(DYCK), (5, 1), generator=g)
    long = torch.randint(1, len(DYCK), (8, 1), generator=g)
    batch = torch.cat([F.pad(short, (0, 0, 0, 3)), long], dim=1)  # short right-padded with 0
    logits, _ = model(batch)
    torch.testing.assert_close(logits[:5, 0], model(short)[0][:, 0])
    torch.testing.assert_close(logits[:, 1], model(long)[0][:, 0])


@pytest.mark.parametrize(("m", "lstm_count"), [(4, 2064), (6, 3528), (8, 5280)])
def test_recurrent_parameter_counts(m, lstm_count):
    e, h = 30, 3 * m
    kw = dict(embedding_dim=e, hidden_size=h)
    assert build_model("lstm", DYCK, **kw).recurrent_parameters() == lstm_count
    assert build_model("assignment_lstm", DYCK, **kw).recurrent_parameters() == 2 * lstm_count
    attention = build_model("attention_lstm", DYCK, **kw)
    assert attention.recurrent_parameters() == 2 * lstm_count + 2 * e
    # the count is that of the real cell tensors (one bias per cell-gate) plus V_att
    cell_params = sum(
        p.numel() for n, p in attention.body.named_parameters() if n.startswith(("weight_", "bias"))
    )
    cell_params += attention.body.attention.weight.numel()
    assert cell_params == attention.recurrent_parameters()


def test_wikitext2_baseline_count():
    model = build_model("lstm", ["w"] * 10, embedding_dim=300, hidden_size=600)
    assert model.recurrent_parameters() == 2_162_400


def test_single_cell_attention_lstm_equals_nn_lstm():
    model = make("attention_lstm", cells=1)
    lstm = torch.nn.LSTM(6, 5).double()
    with torch.no_grad():
        lstm.weight_ih_l0.copy_(model.body.weight_ih)
        lstm.weight_hh_l0.copy_(model.body.weight_hh)
        lstm.bias_ih_l0.copy_(model.body.bias)
        lstm.bias_hh_l0.zero_()
    tokens = torch.randint(0, len(DYCK), (12, 3), generator=torch.Generator().manual_seed(0))
    logits, (h, c) = model(tokens)
    out, (ref_h, ref_c) = lstm(model.encoder(tokens))
    torch.testing.assert_close(logits, model.decoder(out))
    torch.testing.assert_close(h, ref_h[0])
    torch.testing.assert_close(c, ref_c[0])


def test_model_gradients_match_naive_reference():
    model = make("attention_lstm", cells=2)
    model.set_epoch(2)
    tokens = torch.randint(0, len(DYCK), (6, 3), generator=torch.Generator().manual_seed(0))
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), tokens.flatten())
    params = [
        model.encoder.weight,
        model.body.attention.weight,
        model.body.weight_ih,
        model.body.weight_hh,
    ]
    params += [model.body.bias, model.decoder.weight]
    grads = torch.autograd.grad(loss, params)

    x = model.encoder(tokens)
    alpha = torch.softmax(model.body.attention(x) / model.temperature, -1)
    zeros = x.new_zeros(3, 5)
    hs, _ = naive_mixed_lstm(
        x, alpha, model.body.weight_ih, model.body.weight_hh, model.body.bias, zeros, zeros
    )
    ref_loss = F.cross_entropy(model.decoder(hs).flatten(0, 1), tokens.flatten())
    torch.testing.assert_close(loss, ref_loss)
    for got, want in zip(grads, torch.autograd.grad(ref_loss, params), strict=True):
        torch.testing.assert_close(got, want)
    assert grads[1].abs().sum() > 0  # V_att learns through α


def test_temperature_schedule_and_soft_weights():
    model = make("attention_lstm", cells=3, temperature_decay=0.9)
    tokens = torch.arange(len(DYCK)).view(-1, 1)
    scores = model.body.attention(model.encoder(tokens))
    sharpness = []
    for epoch in (0, 1, 5, 20):
        model.set_epoch(epoch)
        assert model.temperature == pytest.approx(0.9**epoch)
        alpha = model.attention_weights(tokens)
        torch.testing.assert_close(alpha, torch.softmax(scores / 0.9**epoch, -1))
        sharpness.append(alpha.max(-1).values.mean().item())
    assert sharpness == sorted(sharpness) and sharpness[-1] > sharpness[0]


def test_hard_mode_is_one_hot_argmax_without_attention_gradient():
    model = make("attention_lstm", cells=3)
    tokens = torch.randint(0, len(DYCK), (10, 2), generator=torch.Generator().manual_seed(0))
    soft = model.attention_weights(tokens)
    model.body.hard = True
    hard = model.attention_weights(tokens)
    assert set(hard.unique().tolist()) == {0.0, 1.0}
    torch.testing.assert_close(hard.sum(-1), torch.ones(10, 2, dtype=hard.dtype))
    assert torch.equal(hard.argmax(-1), soft.argmax(-1))
    logits, _ = model(tokens)
    logits.sum().backward()
    assert model.body.attention.weight.grad is None
    assert model.body.weight_hh.grad.abs().sum() > 0


@pytest.mark.parametrize("epoch", [829, 900, 1000])
def test_a_temperature_past_the_float_range_gives_the_hard_attention_not_nan(epoch):
    """τ = 0.9**epoch overflows scores / τ near epoch 830 (float32) and the softmax is NaN; the
    weights are then the hard attention, its limit, and a training step stays finite."""
    model = make("attention_lstm", cells=3).float()  # as the pipeline trains
    tokens = torch.randint(0, len(DYCK), (10, 2), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        model.body.attention.weight.mul_(100)  # scores of tens: past float32 from about τ 1e-37
    scores = model.body.attention(model.encoder(tokens))
    model.set_epoch(epoch)
    assert not torch.isfinite(torch.softmax(scores / model.temperature, -1)).all()
    alpha = model.attention_weights(tokens)
    torch.testing.assert_close(alpha, F.one_hot(scores.argmax(-1), 3).to(alpha.dtype))
    logits, _ = model(tokens)
    logits.sum().backward()
    assert torch.isfinite(logits).all() and torch.isfinite(model.body.weight_hh.grad).all()


def test_a_finite_softmax_is_kept_bit_for_bit_at_any_temperature():
    """Where the softmax at τ is finite, even far below 1e-30, the weights are exactly it."""
    model = make("attention_lstm", cells=3).float()
    tokens = torch.randint(0, len(DYCK), (10, 2), generator=torch.Generator().manual_seed(0))
    scores = model.body.attention(model.encoder(tokens))
    for epoch in (0, 7, 200, 655, 800):
        model.set_epoch(epoch)
        soft = torch.softmax(scores / model.temperature, -1)
        assert torch.isfinite(soft).all()
        assert torch.equal(model.attention_weights(tokens), soft)


def test_assignment_map_on_dyck_vocabulary():
    assert bracket_cell_map(DYCK, 2).tolist() == [0, 0, 0, 0, 0, 1, 1]
    assert bracket_cell_map(DYCK, 1).tolist() == [0] * 7
    vocab3 = DYCK + ["(c", "c)"]
    assert bracket_cell_map(vocab3, 2).tolist() == [0, 0, 0, 0, 0, 1, 1, 0, 0]
    assert bracket_cell_map(vocab3, 3).tolist() == [0, 0, 0, 0, 0, 1, 1, 2, 2]

    model = make("assignment_lstm")
    tokens = torch.tensor([[1, 3, 5, 6, 4, 2]]).T
    alpha = model.body.mixture_weights(tokens, model.encoder(tokens))
    assert alpha[:, 0].tolist() == [[1, 0], [1, 0], [0, 1], [0, 1], [1, 0], [1, 0]]
    zeros = torch.zeros(1, 5, dtype=torch.float64)
    x = model.encoder(tokens)
    hs, _ = naive_mixed_lstm(
        x, alpha, model.body.weight_ih, model.body.weight_hh, model.body.bias, zeros, zeros
    )
    torch.testing.assert_close(model(tokens)[0], model.decoder(hs))


def test_recurrent_weight_matrices_are_cell_blocks():
    model = make("attention_lstm", cells=3)
    blocks = model.body.recurrent_weight_matrices()
    assert len(blocks) == 3 and all(b.shape == (20, 5) for b in blocks)
    torch.testing.assert_close(torch.cat(blocks), model.body.weight_hh.detach())


def test_dropout_only_in_training():
    model = make("attention_lstm", dropout=0.5, dropouti=0.5)
    tokens = torch.randint(0, len(DYCK), (5, 2), generator=torch.Generator().manual_seed(0))
    model.eval()
    torch.testing.assert_close(model(tokens)[0], model(tokens)[0])
    model.train()
    assert not torch.allclose(model(tokens)[0], model(tokens)[0])


def test_default_init_ranges():
    model = build_model("attention_lstm", DYCK, embedding_dim=30, hidden_size=12)
    bound = 1 / math.sqrt(12)
    assert model.body.weight_hh.abs().max() <= bound and model.encoder.weight.abs().max() <= 0.1
    assert torch.count_nonzero(model.decoder.bias) == 0


def test_dropoute_drops_whole_embedding_rows_in_training_only():
    embedding = nn.Embedding(50, 6)
    tokens = torch.arange(50).repeat(4, 1)  # every word type four times
    torch.manual_seed(0)
    dropped = embedding_dropout(embedding, tokens, 0.5, training=True)
    kept = (dropped != 0).all(-1)
    assert (kept == kept[0]).all()  # a type is dropped everywhere or nowhere
    assert 10 < int(kept[0].sum()) < 40
    torch.testing.assert_close(dropped[:, kept[0]], 2 * embedding(tokens)[:, kept[0]])
    torch.testing.assert_close(embedding_dropout(embedding, tokens, 0.5, False), embedding(tokens))


def test_dropouth_splits_the_layers_with_the_same_weights_and_eval_output():
    torch.manual_seed(3)
    fused = build_model("lstm", DYCK, embedding_dim=5, hidden_size=7, num_layers=2)
    torch.manual_seed(3)
    split = build_model("lstm", DYCK, embedding_dim=5, hidden_size=7, num_layers=2, dropouth=0.4)
    assert len(split.body.layers) == 2 and len(fused.body.layers) == 1
    flat = [p for layer in split.body.layers for p in layer.parameters()]
    for a, b in zip(fused.body.parameters(), flat, strict=True):
        torch.testing.assert_close(a, b)
    tokens = torch.randint(0, len(DYCK), (6, 3))
    (a, (ha, ca)), (b, (hb, cb)) = fused.eval()(tokens), split.eval()(tokens)
    torch.testing.assert_close(a, b)
    torch.testing.assert_close((ha, ca), (hb, cb))
    split.train()
    assert not torch.allclose(split(tokens)[0], split(tokens)[0])  # dropout between layers


def test_forward_aux_gives_the_dropped_and_raw_outputs():
    torch.manual_seed(0)
    model = build_model("attention_lstm", DYCK, embedding_dim=5, hidden_size=7, dropout=0.5)
    tokens = torch.randint(0, len(DYCK), (6, 3))
    logits, _, aux = model.forward_aux(tokens)
    torch.testing.assert_close(logits, model.decoder(aux["output"]))
    assert aux["raw_output"].shape == (6, 3, 7) and aux["losses"] == {}
    zeroed = aux["output"] == 0
    assert zeroed.any() and not (aux["raw_output"] == 0).any()
