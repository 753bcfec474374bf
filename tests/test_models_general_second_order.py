"""general_second_order's models: the general second-order RNN, the first-order RNN and the
MI-RNN."""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F
from model_checks import assert_matches_naive
from pipeline_utils import load_script

from rnnrepro.budget import parameter_count
from rnnrepro.models import build_model
from rnnrepro.models.second_order import SecondOrderRecurrence

VOCAB = [f"c{i}" for i in range(9)]
V = len(VOCAB)


def tokens(T: int = 6, B: int = 3) -> torch.Tensor:
    return torch.randint(V, (T, B), generator=torch.Generator().manual_seed(1))


def general(use_d=True, use_e=True, activation="tanh", h=5, m=4, dtype=torch.float64):
    torch.manual_seed(0)
    model = build_model(
        "second_order_rnn",
        VOCAB,
        hidden_size=h,
        inner_size=m,
        use_d=use_d,
        use_e=use_e,
        activation=activation,
    ).to(dtype)
    with torch.no_grad():  # f and the decoder bias start at 0: make every term non-trivial
        model.body.f.normal_(0, 0.3)
        model.decoder.bias.normal_()
    return model


def mi_rnn(activation="tanh", h=5, dtype=torch.float64):
    torch.manual_seed(0)
    model = build_model("mi_rnn", VOCAB, hidden_size=h, activation=activation).to(dtype)
    with torch.no_grad():  # move α, β1, β2, b away from their 1 / 0 initialisation
        for p in (
            model.body.alpha,
            model.body.beta1,
            model.body.beta2,
            model.body.b,
            model.decoder.bias,
        ):
            p.add_(0.3 * torch.randn_like(p))
    return model


def act(name):
    return torch.tanh if name == "tanh" else (lambda x: x)


# ---------------------------------------------------------------------------------------------
# naive per-step references (plain autograd, row-vector convention)


def naive_general(model, x):
    """h_t = φ(A(B x_t ⊙ C h_{t-1}) + D x_t + E h_{t-1} + f), step by step."""
    phi = act(model.body.activation)
    h = model.body.f.new_zeros(x.shape[1], model.hidden_size)
    outputs = []
    for x_t in x:
        pre = (model.body.B.weight[x_t] * (h @ model.body.C.T)) @ model.body.A.T + model.body.f
        if model.body.D is not None:
            pre = pre + model.body.D.weight[x_t]
        if model.body.E is not None:
            pre = pre + h @ model.body.E.T
        h = phi(pre)
        outputs.append(h)
    return model.decoder(torch.stack(outputs))


def naive_first_order(model, x):
    h = model.body.b.new_zeros(x.shape[1], model.hidden_size)
    outputs = []
    for x_t in x:
        h = torch.tanh(model.body.U.weight[x_t] + h @ model.body.W.T + model.body.b)
        outputs.append(h)
    return model.decoder(torch.stack(outputs))


def naive_mi(model, x):
    """h_t = φ(α ⊙ U x ⊙ W h + β1 ⊙ U x + β2 ⊙ W h + b) (Wu et al. 2016, general form)."""
    phi = act(model.body.activation)
    h = model.body.b.new_zeros(x.shape[1], model.hidden_size)
    outputs = []
    for x_t in x:
        ux, wh = model.body.U.weight[x_t], h @ model.body.W.T
        h = phi(
            model.body.alpha * ux * wh
            + model.body.beta1 * ux
            + model.body.beta2 * wh
            + model.body.b
        )
        outputs.append(h)
    return model.decoder(torch.stack(outputs))


def assert_same_outputs_and_gradients(model, naive):
    x = tokens()
    weights = torch.randn(
        *x.shape, V, dtype=torch.float64, generator=torch.Generator().manual_seed(2)
    )
    assert_matches_naive(model, x, weights, naive)


COMBOS = list(itertools.product([True, False], [True, False], ["tanh", "identity"]))


@pytest.mark.parametrize("use_d,use_e,activation", COMBOS)
def test_general_model_equals_naive_per_step_formula(use_d, use_e, activation):
    model = general(use_d, use_e, activation)
    names = {name.split(".")[0] for name, _ in model.body.named_parameters()}
    assert ("D" in names) == use_d and ("E" in names) == use_e
    assert_same_outputs_and_gradients(model, naive_general)


@pytest.mark.parametrize("m", [2, 8])  # inner size smaller and larger than h = 5
def test_general_model_with_other_inner_sizes(m):
    assert_same_outputs_and_gradients(general(m=m), naive_general)


def test_first_order_rnn_equals_naive_formula():
    torch.manual_seed(0)
    model = build_model("first_order_rnn", VOCAB, hidden_size=5).double()
    with torch.no_grad():
        model.body.b.normal_(0, 0.3)
    assert_same_outputs_and_gradients(model, naive_first_order)


@pytest.mark.parametrize("activation", ["tanh", "identity"])
def test_mi_rnn_equals_naive_formula(activation):
    assert_same_outputs_and_gradients(mi_rnn(activation), naive_mi)


@pytest.mark.parametrize("with_a", [True, False])
@pytest.mark.parametrize("with_e", [True, False])
@pytest.mark.parametrize("tanh", [True, False])
def test_recurrence_passes_gradcheck(with_a, with_e, tanh):
    torch.manual_seed(0)
    T, B, n = 3, 2, 3
    m = 4 if with_a else n  # A = I (the MI-RNN path) needs m = n

    def rand(*shape):
        return torch.randn(*shape, dtype=torch.float64, requires_grad=True)

    w_a = rand(n, m) if with_a else None
    w_rec = rand(m + n if with_e else m, n)
    args = (rand(T, B, m), rand(T, B, n), rand(B, n), w_a, w_rec, tanh)
    assert torch.autograd.gradcheck(SecondOrderRecurrence.apply, args)


def test_recurrence_with_one_step_passes_gradcheck():
    torch.manual_seed(0)

    def rand(*shape):
        return torch.randn(*shape, dtype=torch.float64, requires_grad=True)

    args = (rand(1, 2, 4), rand(1, 2, 3), rand(2, 3), rand(3, 4), rand(7, 3), True)
    assert torch.autograd.gradcheck(SecondOrderRecurrence.apply, args)


# ---------------------------------------------------------------------------------------------
# special cases (general_second_order §3)


def test_general_model_without_e_is_sutskevers_mrnn():
    """E = 0: h_t = tanh(W_hx x + W_hm((W_mx x) ⊙ (W_mh h)) + b) with x one-hot column vectors."""
    h, m = 5, 4
    g = torch.Generator().manual_seed(3)
    W_hx, W_mx = torch.randn(h, V, generator=g), torch.randn(m, V, generator=g)
    W_mh, W_hm = torch.randn(m, h, generator=g) / 2, torch.randn(h, m, generator=g) / 2
    b = torch.randn(h, generator=g)
    W_hx, W_mx, W_mh, W_hm, b = (t.double() for t in (W_hx, W_mx, W_mh, W_hm, b))
    model = general(use_d=True, use_e=False, h=h, m=m)
    with torch.no_grad():  # A = W_hm, B = W_mx, C = W_mh, D = W_hx, f = b
        model.body.A.copy_(W_hm)
        model.body.B.weight.copy_(W_mx.T)
        model.body.C.copy_(W_mh)
        model.body.D.weight.copy_(W_hx.T)
        model.body.f.copy_(b)
    x = tokens()
    state = torch.zeros(h, x.shape[1], dtype=torch.float64)  # column vectors, one per example
    outputs = []
    for x_t in x:
        onehot = F.one_hot(x_t, V).T.double()  # [V, B]
        state = torch.tanh(W_hx @ onehot + W_hm @ ((W_mx @ onehot) * (W_mh @ state)) + b[:, None])
        outputs.append(state.T)
    expected = model.decoder(torch.stack(outputs))
    with torch.no_grad():
        logits, last = model(x)
    torch.testing.assert_close(logits, expected.detach())
    torch.testing.assert_close(last, state.T)


@pytest.mark.parametrize("activation", ["tanh", "identity"])
def test_mi_rnn_is_a_constrained_general_model(activation):
    """m = h, A = diag(α), B = U, C = W, D = diag(β1) U, E = diag(β2) W, f = b (eqs. 10-12)."""
    mi = mi_rnn(activation)
    model = general(use_d=True, use_e=True, activation=activation, h=5, m=5)
    with torch.no_grad():
        model.body.A.copy_(torch.diag(mi.body.alpha))
        model.body.B.weight.copy_(
            mi.body.U.weight
        )  # Embedding rows are the columns U x for one-hot x
        model.body.C.copy_(mi.body.W)
        model.body.D.weight.copy_(mi.body.U.weight * mi.body.beta1)  # row v of D: β1 ⊙ U e_v
        model.body.E.copy_(mi.body.beta2[:, None] * mi.body.W)
        model.body.f.copy_(mi.body.b)
        model.decoder.load_state_dict(mi.decoder.state_dict())
        x = tokens()
        (mi_logits, mi_state), (logits, state) = mi(x), model(x)
    torch.testing.assert_close(logits, mi_logits)
    torch.testing.assert_close(state, mi_state)


# ---------------------------------------------------------------------------------------------
# interface, state, counts

MODELS = [
    ("second_order_rnn", {"hidden_size": 5, "inner_size": 4}),
    ("second_order_rnn", {"hidden_size": 5, "inner_size": 7, "use_e": False}),
    ("first_order_rnn", {"hidden_size": 5}),
    ("mi_rnn", {"hidden_size": 5, "activation": "identity"}),
]


@pytest.mark.parametrize("name,hparams", MODELS)
def test_forward_shape_and_carried_state(name, hparams):
    torch.manual_seed(0)
    model = build_model(name, VOCAB, **hparams)
    assert model.output == "vocab"
    x = tokens(T=7)
    logits, state = model(x)
    assert logits.shape == (7, 3, V) and state.shape == (3, 5)
    first, carried = model(x[:4])
    second, last = model(x[4:], carried)
    torch.testing.assert_close(torch.cat((first, second)), logits)
    torch.testing.assert_close(last, state)


@pytest.mark.parametrize("name,hparams", MODELS)
def test_dropout_only_in_training(name, hparams):
    model = build_model(name, VOCAB, dropout=0.5, **hparams)
    x = tokens()
    model.train()
    assert not torch.equal(model(x)[0], model(x)[0])
    model.eval()
    torch.testing.assert_close(model(x)[0], model(x)[0], rtol=0, atol=0)


def test_bad_activation_is_rejected():
    with pytest.raises(ValueError, match="activation"):
        build_model("second_order_rnn", VOCAB, hidden_size=3, inner_size=3, activation="relu")


GENERAL_SECOND_ORDER_COUNTS = [
    ("second_order_rnn", 27, {"hidden_size": 7, "inner_size": 5, "use_d": d, "use_e": e})
    for d, e in itertools.product([True, False], repeat=2)
] + [
    ("second_order_rnn", 703, {"hidden_size": 4, "inner_size": 9, "use_d": False, "use_e": False}),
    ("first_order_rnn", 27, {"hidden_size": 11}),
    ("mi_rnn", 27, {"hidden_size": 11}),
]
MULTI_MATRIX_COUNTS = [
    ("rnn", 13, {"embedding_dim": 6, "hidden_size": 5}),
    ("rnn", 13, {"embedding_dim": 6, "hidden_size": 5, "num_layers": 3}),
    ("lstm", 13, {"embedding_dim": 6, "hidden_size": 5, "num_layers": 2}),
    ("mrnn", 13, {"embedding_dim": 6, "hidden_size": 5}),
    ("mlstm", 13, {"embedding_dim": 6, "hidden_size": 5}),
    ("mmrnn", 13, {"embedding_dim": 6, "hidden_size": 5}),
    ("mmrnn", 13, {"embedding_dim": 6, "hidden_size": 5, "num_layers": 2, "choices": 3}),
    ("mmlstm", 13, {"embedding_dim": 6, "hidden_size": 5, "choices": 2}),
    ("mmlstm", 13, {"embedding_dim": 6, "hidden_size": 5, "num_layers": 2, "choices": 3}),
]


@pytest.mark.parametrize(
    "name,vocab_size,hparams", GENERAL_SECOND_ORDER_COUNTS + MULTI_MATRIX_COUNTS
)
def test_parameter_count_formula_equals_torch_model(name, vocab_size, hparams):
    model = build_model(name, [f"t{i}" for i in range(vocab_size)], **hparams)
    total = model.num_parameters()
    assert total == parameter_count(name, vocab_size, hparams)
    if name in ("second_order_rnn", "first_order_rnn", "mi_rnn"):  # all but the decoder
        assert model.recurrent_parameters() == total - (hparams["hidden_size"] + 1) * vocab_size


@pytest.mark.parametrize("activation", ["tanh", "identity"])
@pytest.mark.parametrize("use_e", [False, True])
def test_stability_measures_equal_autograds_step_jacobians(activation, use_e):
    """The benchmark's Lyapunov exponent is the mean log growth of a perturbation under the
    step Jacobians ∂h_t/∂h_{t-1} (autograd here), and its gain is the step's linear map."""
    stability = load_script("studies/tanh_divergence/second_order_stability.py")
    torch.manual_seed(0)
    model = build_model(
        "second_order_rnn",
        list("abcde"),
        hidden_size=6,
        inner_size=5,
        use_d=True,
        use_e=use_e,
        activation=activation,
    )
    body = model.body
    with torch.no_grad():
        for parameter in body.parameters():
            parameter.mul_(3)  # away from the contracting start, so that the two can differ
    ids = [0, 3, 1, 4, 2, 2, 1, 0, 3]
    tokens = torch.tensor(ids).unsqueeze(1)
    hs, _ = body(tokens)
    generator = torch.Generator().manual_seed(0)
    v = torch.randn(1, 6, generator=generator)
    v /= v.norm()
    logs = []
    for t in range(1, len(ids)):

        def step(h, t=t):
            return body(tokens[t : t + 1], h.unsqueeze(0))[0][0, 0]

        jacobian = torch.autograd.functional.jacobian(step, hs[t - 1, 0].detach())
        w = v @ jacobian.t()
        logs.append(float(w.norm().log()))
        v = w / w.norm()
    exponent, _ = stability.lyapunov(body, [ids])
    assert exponent == pytest.approx(sum(logs) / len(logs), abs=1e-5)
    linear = body.A @ torch.diag(body.B.weight[2]) @ body.C + (0 if body.E is None else body.E)
    assert torch.allclose(stability.transition(body, torch.tensor(2)), linear, atol=1e-6)


def test_b_init_std_scales_only_b_and_keeps_the_draws():
    """A variant's initialisation (studies/tanh_variants): B's rows N(0, std²), every other weight
    and the random stream as with the default, so variants differ in B alone."""
    vocab = [chr(97 + i) for i in range(27)]
    torch.manual_seed(3)
    default = build_model("second_order_rnn", vocab, hidden_size=8, inner_size=6)
    torch.manual_seed(3)
    scaled = build_model("second_order_rnn", vocab, hidden_size=8, inner_size=6, b_init_std=0.1)
    for name, weight in default.state_dict().items():
        expected = weight * 0.1 if name.endswith("B.weight") else weight
        assert torch.equal(scaled.state_dict()[name], expected), name
    assert parameter_count("second_order_rnn", 27, {"hidden_size": 8, "inner_size": 6}) == sum(
        p.numel() for p in scaled.parameters()
    )
    with pytest.raises(ValueError, match="b_init_std must be > 0"):
        build_model("second_order_rnn", vocab, hidden_size=8, inner_size=6, b_init_std=0.0)
