"""multi_matrix's models: RNN, mRNN, mLSTM, mmRNN, mmLSTM and the Dyck-RNN."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from model_checks import assert_matches_naive

from rnnrepro.data.dyck import close_type_ids, generate, vocabulary
from rnnrepro.models import build_model
from rnnrepro.models.multi_matrix import MultiMatrixRecurrence
from rnnrepro.models.multiplicative import MultiplicativeRecurrence

VOCAB = [f"w{i}" for i in range(11)]


LM_CONFIGS = [
    ("rnn", {"num_layers": 2}),
    ("mrnn", {}),
    ("mlstm", {}),
    ("mmrnn", {"num_layers": 2, "choices": 3}),
    ("mmlstm", {"num_layers": 2, "choices": 3}),
]


def lm(name: str, dtype=torch.float32, **hparams):
    torch.manual_seed(0)
    model = build_model(name, VOCAB, embedding_dim=6, hidden_size=5, **hparams)
    return model.to(dtype)


def tokens(T: int = 7, B: int = 3) -> torch.Tensor:
    return torch.randint(len(VOCAB), (T, B), generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("name,hparams", LM_CONFIGS)
def test_forward_shape_and_carried_state(name, hparams):
    model = lm(name, **hparams)
    x = tokens()
    logits, _ = model(x)
    assert logits.shape == (7, 3, len(VOCAB))
    # running the sequence in two windows with the carried state gives the same logits
    first, state = model(x[:4])
    second, _ = model(x[4:], state)
    torch.testing.assert_close(torch.cat((first, second)), logits)


# (name, V, e, h, layers, total from docs/methods.md §5.5)
PAPER_SIZES = [
    ("rnn", 50, 128, 2032, 1, 4.501e6),
    ("rnn", 50, 128, 1194, 2, 4.501e6),
    ("mrnn", 50, 128, 1972, 1, 4_500_638),
    ("mlstm", 50, 128, 977, 1, 4_502_604),
    ("mmrnn", 50, 128, 1038, 1, 4.507e6),
    ("mmrnn", 50, 128, 696, 2, 4.500e6),
    ("mmlstm", 50, 128, 512, 1, 4.501e6),
    ("mmlstm", 50, 128, 345, 2, 4.507e6),
    ("rnn", 10000, 64, 133, 1, 2.006e6),
    ("mmrnn", 10000, 64, 128, 1, 2.005e6),
    ("mmlstm", 10000, 64, 112, 1, 2.003e6),
    ("mmlstm", 10000, 64, 97, 2, 1.990e6),
]


@pytest.mark.parametrize("name,V,e,h,layers,expected", PAPER_SIZES)
def test_parameter_counts_match_paper_table(name, V, e, h, layers, expected):
    hparams = {"num_layers": layers} if layers > 1 else {}
    model = build_model(
        name, [f"t{i}" for i in range(V)], embedding_dim=e, hidden_size=h, **hparams
    )
    total = model.num_parameters()
    assert abs(total - expected) <= 0.005 * expected
    if name in ("mrnn", "mlstm"):  # exact counts of docs/methods.md §5.3
        assert total == expected
    assert total == model.recurrent_parameters() + V * e + (h * V + V)


def naive_multiplicative(layer, x):
    """mRNN/mLSTM with W_hh(t) = W_hm diag(W_mx x_t) formed per example: [B, G·n, n]."""
    n, B = layer.hidden_size, x.shape[1]
    h = c = x.new_zeros(B, n)
    outputs = []
    for x_t in x:
        w_hh = layer.weight_hm * layer.input_m(x_t)[:, None, :]  # [B, G·n, n]
        pre = (w_hh @ h[:, :, None]).squeeze(2) + layer.input(x_t)
        h, c = naive_cell(pre, c, layer.lstm)
        outputs.append(h)
    return torch.stack(outputs)


def naive_multi_matrix(layer, x):
    """mmRNN/mmLSTM with W_hh(t) = Σ_k v_t[k] W[k] formed per example and group: [B, G, n, n]."""
    G, K, n, B = layer.groups, layer.num_choices, layer.hidden_size, x.shape[1]
    h = c = x.new_zeros(B, n)
    v = x.new_full((B, G, K), 1 / K)
    w_v = layer.proj_v  # [G, K, K]
    w_h = layer.proj_h.view(G, K, n)
    w_x = layer.proj_x.weight.view(G, K, -1)
    outputs = []
    for x_t in x:
        z = torch.stack([v[:, g] @ w_v[g].T + h @ w_h[g].T + x_t @ w_x[g].T for g in range(G)], 1)
        v = torch.softmax(z, -1)  # [B, G, K]
        w_hh = (v[:, :, :, None, None] * layer.choices).sum(2)  # [B, G, n, n]
        pre = (w_hh @ h[:, None, :, None]).reshape(B, G * n) + layer.input(x_t)
        h, c = naive_cell(pre, c, layer.lstm)
        outputs.append(h)
    return torch.stack(outputs)


def naive_cell(pre, c, lstm):
    if not lstm:
        return torch.tanh(pre), c
    i, f, o, g = pre.chunk(4, 1)  # the models' gate order
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


def naive_forward(model, x):
    h = model.encoder(x)
    if hasattr(model.body, "layers"):
        for layer in model.body.layers:
            h = naive_multi_matrix(layer, h)
    else:
        h = naive_multiplicative(model.body, h)
    return model.decoder(h)


@pytest.mark.parametrize("name,hparams", LM_CONFIGS[1:])
def test_efficient_recurrence_equals_naive_per_example_matrices(name, hparams):
    model = lm(name, torch.float64, **hparams)
    x = tokens()
    weights = torch.randn(7, 3, len(VOCAB), dtype=torch.float64)
    assert_matches_naive(model, x, weights, naive_forward)


@pytest.mark.parametrize("lstm", [False, True])
def test_recurrences_pass_gradcheck(lstm):
    torch.manual_seed(0)
    T, B, n, K, G = 3, 2, 3, 2, 4 if lstm else 1

    def rand(*shape):
        return torch.randn(*shape, dtype=torch.float64, requires_grad=True)

    c0 = rand(B, n) if lstm else None
    args = (rand(T, B, G * n), rand(T, B, n), rand(B, n), c0, rand(G * n, n))
    assert torch.autograd.gradcheck(MultiplicativeRecurrence.apply, args, fast_mode=True)
    v0 = torch.softmax(torch.randn(B, G * K, dtype=torch.float64), -1).requires_grad_()
    args = (rand(T, B, G * n), rand(T, B, G * K), rand(B, n), c0, v0, rand(G, K, n, n))
    args += (rand(G * K, n), rand(G * K, G * K))
    assert torch.autograd.gradcheck(MultiMatrixRecurrence.apply, args, fast_mode=True)


@pytest.mark.parametrize("name", ["mmrnn", "mmlstm"])
def test_multi_layer_wiring(name):
    model = lm(name, num_layers=2)
    first, second = model.body.layers
    assert first.input.in_features == 6 and second.input.in_features == 5
    x = model.encoder(tokens())
    h1, s1 = first(x)
    h2, s2 = second(h1)
    out, state = model.body(x)
    torch.testing.assert_close(out, h2)
    assert len(state) == 2 and len(state[0]) == (3 if name == "mmlstm" else 2)
    for got, want in zip(state, (s1, s2), strict=True):
        for a, b in zip(got, want, strict=True):
            torch.testing.assert_close(a, b)


@pytest.mark.parametrize("name,hparams", LM_CONFIGS)
def test_dropout_only_in_training(name, hparams):
    model = lm(name, dropout=0.5, **hparams)
    x = tokens()
    model.train()
    assert not torch.equal(model(x)[0], model(x)[0])
    model.eval()
    torch.testing.assert_close(model(x)[0], model(x)[0], rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------
# Dyck-RNN


def encode(vocab, seqs):
    """Inputs <start> + seq and closing-type targets for seq + <end> (-1: not a close), [T, B]."""
    ids = {tok: i for i, tok in enumerate(vocab)}
    close_type = torch.tensor(close_type_ids(vocab))
    T = max(map(len, seqs)) + 1
    inputs = torch.zeros(T, len(seqs), dtype=torch.long)
    targets = torch.zeros_like(inputs)
    for b, seq in enumerate(seqs):
        x = [ids[tok] for tok in seq]
        inputs[: len(x) + 1, b] = torch.tensor([ids["<start>"], *x])
        targets[: len(x) + 1, b] = torch.tensor([*x, ids["<end>"]])
    return inputs, close_type[targets]


def accuracy(model, inputs, targets):
    with torch.no_grad():
        logits, _ = model(inputs)
    mask = targets >= 0
    return (logits.argmax(-1)[mask] == targets[mask]).float().mean().item()


@pytest.mark.parametrize("m", [4, 6, 8])
def test_dyck_rnn_has_five_trainable_parameters(m):
    model = build_model("dyck_rnn", vocabulary(2), stack_depth=m)
    assert model.output == "close"
    assert model.num_parameters() == 5
    assert model.recurrent_parameters() == 1
    logits, state = model(torch.ones(3, 2, dtype=torch.long))
    assert logits.shape == (3, 2, 2) and state.shape == (2, m, 1)


def test_dyck_rnn_unfrozen_two_dim_embedding():
    vocab = vocabulary(2)
    model = build_model("dyck_rnn", vocab, stack_depth=4, slot_dim=2, trainable_embedding=True)
    assert model.num_parameters() == len(vocab) * 2 + 2 + (2 * 2 + 2)
    logits, state = model(torch.ones(3, 2, dtype=torch.long))
    assert logits.shape == (3, 2, 2) and state.shape == (2, 4, 2)  # hidden size 2m
    with pytest.raises(ValueError):
        build_model("dyck_rnn", vocab, stack_depth=4, slot_dim=2)


HAND_MADE = {2: "(a (b (b b) (a a) b) (a a) a)", 3: "(c (a (c c) (b b) a) c) (b (c c) b)"}


@pytest.mark.parametrize("k", [2, 3])
def test_dyck_rnn_with_hand_set_weights_is_an_exact_stack(k):
    vocab = vocabulary(k)
    m = 3
    model = build_model("dyck_rnn", vocab, stack_depth=m)
    with torch.no_grad():
        model.proj.weight.fill_(40.0)  # push on opens (e > 0), pop on closes (e = -1)
        types = torch.arange(1, k + 1, dtype=torch.float)  # top value of type j is j + 1
        model.readout.weight.copy_(types[:, None])  # logit_j = (j+1)·top - (j+1)²/2
        model.readout.bias.copy_(-(types**2) / 2)
    seq = HAND_MADE[k].split()
    inputs, targets = encode(vocab, [seq])
    logits, _ = model(inputs)
    mask = targets >= 0
    assert mask.sum() == len(seq) // 2
    assert torch.equal(logits.argmax(-1)[mask], targets[mask])
    # the hidden state is the stack of open types (type j stored as j + 1), top first
    stack: list[float] = []
    for t, tok in enumerate(seq):
        if tok.startswith("("):
            stack.insert(0, "abc".index(tok[1]) + 1.0)
        else:
            stack.pop(0)
        _, h = model(inputs[: t + 2])
        torch.testing.assert_close(h[0, :, 0], torch.tensor(stack + [0.0] * (m - len(stack))))


def test_dyck_rnn_learns_dyck_2_with_adam():
    torch.manual_seed(0)
    vocab = vocabulary(2)
    train = encode(vocab, generate(500, k=2, m=4, min_len=2, max_len=24, seed=1))
    test = encode(vocab, generate(500, k=2, m=4, min_len=2, max_len=24, seed=2))
    model = build_model("dyck_rnn", vocab, stack_depth=4)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    inputs, targets = train
    mask = targets >= 0
    for step in range(1000):
        logits, _ = model(inputs)  # one batch: 500 sequences <= batch size 512
        loss = F.cross_entropy(logits[mask], targets[mask])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 25 == 0 and accuracy(model, *test) == 1.0:  # early stopping on held-out data
            break
    assert accuracy(model, *test) == 1.0
    assert accuracy(model, *train) == 1.0


# ---------------------------------------------------------------------------------------------
# Fused recurrences: both backward paths and the nn.RNN replacement


@pytest.mark.parametrize("few_calls_max_hidden", [64, 0])
@pytest.mark.parametrize("name,hparams", LM_CONFIGS[1:])
def test_loop_backward_paths_equal_naive(name, hparams, few_calls_max_hidden, monkeypatch):
    """Larger sizes use per-step loops instead of precomputed state Jacobians: force them."""
    from rnnrepro.models import multi_matrix, multiplicative

    monkeypatch.setattr(multiplicative, "JACOBIAN_MAX_ELEMENTS", 0)
    monkeypatch.setattr(multi_matrix, "JACOBIAN_MAX_ELEMENTS", 0)
    monkeypatch.setattr(multi_matrix, "FEW_CALLS_MAX_HIDDEN", few_calls_max_hidden)
    test_efficient_recurrence_equals_naive_per_example_matrices(name, hparams)
    test_recurrences_pass_gradcheck(name in ("mlstm", "mmlstm"))


def test_recurrences_with_one_step_pass_gradcheck():
    torch.manual_seed(0)
    B, n, K = 2, 3, 2
    for lstm in (False, True):
        G = 4 if lstm else 1

        def rand(*shape):
            return torch.randn(*shape, dtype=torch.float64, requires_grad=True)

        c0 = rand(B, n) if lstm else None
        args = (rand(1, B, G * n), rand(1, B, n), rand(B, n), c0, rand(G * n, n))
        assert torch.autograd.gradcheck(MultiplicativeRecurrence.apply, args)
        v0 = torch.softmax(torch.randn(B, G * K, dtype=torch.float64), -1).requires_grad_()
        args = (rand(1, B, G * n), rand(1, B, G * K), rand(B, n), c0, v0, rand(G, K, n, n))
        args += (rand(G * K, n), rand(G * K, G * K))
        assert torch.autograd.gradcheck(MultiMatrixRecurrence.apply, args)


def test_fused_tanh_rnn_equals_nn_rnn():
    from torch import nn

    from rnnrepro.models.rnn import TanhRecurrence, TanhRNN

    torch.manual_seed(0)
    rnn = TanhRNN(4, 5, num_layers=2).double()
    x = torch.randn(6, 3, 4, dtype=torch.float64)
    h0 = torch.randn(2, 3, 5, dtype=torch.float64)
    weights = torch.randn(6, 3, 5, dtype=torch.float64)

    def run(forward):
        rnn.zero_grad()
        out, h_n = forward(rnn, x, h0)
        ((out * weights).sum() + h_n.sum()).backward()
        return out.detach(), h_n.detach(), [p.grad.clone() for p in rnn.parameters()]

    fused, reference = run(TanhRNN.forward), run(nn.RNN.forward)
    got_all, want_all = fused[:2] + tuple(fused[2]), reference[:2] + tuple(reference[2])
    for got, want in zip(got_all, want_all, strict=True):
        torch.testing.assert_close(got, want)

    def rand(*shape):
        return torch.randn(*shape, dtype=torch.float64, requires_grad=True)

    args = (rand(4, 2, 3), rand(2, 3), rand(3, 3))
    assert torch.autograd.gradcheck(TanhRecurrence.apply, args)
