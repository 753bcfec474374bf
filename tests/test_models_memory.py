"""Memory-augmented LSTMs (the memory paper): attention buffer, single-computation stacks,
the vectorised multipop stack, REINFORCE, parameter counts and exact resume."""

from __future__ import annotations

import signal
import subprocess

import pandas as pd
import pytest
import torch
from pipeline_utils import train_signalled
from test_stream import outputs, train_cmd, write_corpus

from rnnrepro.models import build_model
from rnnrepro.models.memory import (
    POP,
    PUSH,
    STAY,
    AttentionMemory,
    CandidateDropoutLSTM,
    ContinuousStack,
    DiscreteStack,
    MultipopStack,
)
from rnnrepro.objectives import BASELINE_DECAY, reinforce_loss


def random_stack(B=3, K=4, d=5, e=6, seed=0):
    torch.manual_seed(seed)
    model = MultipopStack(e, d, K).double()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(3)  # peaky policies too
    stack = torch.randn(B, K, d, dtype=torch.double)
    stack[0, 2:] = 0  # a partly empty stack
    h = torch.randn(B, d, dtype=torch.double)
    px = model.policy_x(torch.randn(B, e, dtype=torch.double))
    return model, px, stack, h


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_multipop_action_probabilities_sum_to_one(seed):
    model, px, stack, _ = random_stack(seed=seed)
    stay, push = model.action_probs(px, stack)
    assert stay.shape == push.shape == (3, 5)  # K + 1 depths
    torch.testing.assert_close(stay.sum(1) + push.sum(1), torch.ones(3, dtype=torch.double))
    assert (stay >= 0).all() and (push >= 0).all()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vectorised_multipop_step_equals_the_definition_in_values_and_gradients(seed):
    model, px, stack, h = random_stack(seed=seed)
    stack.requires_grad_(True)
    h.requires_grad_(True)
    weights = torch.randn(3, 4, 5, dtype=torch.double)  # a random linear read-out of the stack
    fast, _, _ = model.step(px, stack, h)
    slow = model.step_reference(px, stack, h)
    torch.testing.assert_close(fast, slow)
    inputs = [stack, h, *model.parameters()]
    g_fast = torch.autograd.grad((fast * weights).sum(), inputs, retain_graph=True)
    g_slow = torch.autograd.grad((slow * weights).sum(), inputs)
    for a, b in zip(g_fast, g_slow, strict=True):
        torch.testing.assert_close(a, b)


def forced(stack_class, action: int, e=4, d=3, K=3):
    """A stack whose policy always takes ``action`` (a huge bias)."""
    model = stack_class(e, d, K)
    with torch.no_grad():
        model.policy_x.bias.copy_(torch.full((3,), -50.0))
        model.policy_x.bias[action] = 50.0
    return model


@pytest.mark.parametrize("stack_class", [ContinuousStack, DiscreteStack, MultipopStack])
def test_stacks_push_and_pop_as_defined(stack_class):
    torch.manual_seed(0)
    x, hs = torch.randn(4, 2, 4), torch.randn(4, 2, 3)
    reads, stack, _ = forced(stack_class, PUSH)(x, hs, None)
    torch.testing.assert_close(reads, hs)  # m_t = h_t right after a push
    torch.testing.assert_close(stack, hs.flip(0)[:3].transpose(0, 1))  # the bottom fell off
    reads, popped, _ = forced(stack_class, POP if stack_class is not MultipopStack else STAY)(
        x[:1], hs[:1], stack
    )
    expected = stack[:, 1] if stack_class is not MultipopStack else stack[:, 0]
    torch.testing.assert_close(reads[0], expected)


def test_discrete_stack_samples_in_training_and_takes_the_argmax_in_evaluation():
    torch.manual_seed(0)
    model = DiscreteStack(4, 3, 3)
    x, hs = torch.randn(50, 8, 4), torch.randn(50, 8, 3)
    _, _, aux = model.train()(x, hs, None)
    log_probs = aux["action_log_prob"]
    assert log_probs.shape == (50, 8) and log_probs.requires_grad
    assert (log_probs < 0).all()
    _, _, aux = model.eval()(x, hs, None)
    logits = model.logits(model.policy_x(x[0]), torch.zeros(8, 3, 3))
    torch.testing.assert_close(aux["action_log_prob"][0], torch.log_softmax(logits, -1).max(-1)[0])


def test_reinforce_loss_has_the_sign_and_baseline_of_the_spec():
    torch.manual_seed(0)
    T, B, V = 3, 2, 5
    logits, targets = torch.randn(T, B, V), torch.randint(0, V, (T, B))
    log_pi = torch.log(torch.full((T, B), 0.5)).requires_grad_(True)
    token = torch.log_softmax(logits, -1).gather(2, targets[..., None])[..., 0]
    reward = token.flip(0).cumsum(0).flip(0)  # R_t = Σ_{t' >= t} log p(x_{t'+1})
    loss, baseline = reinforce_loss(log_pi, logits, targets, baseline=-4.0)
    torch.testing.assert_close(loss, -((reward + 4.0) * log_pi).sum() / (T * B))
    assert baseline == pytest.approx(BASELINE_DECAY * -4.0 + (1 - BASELINE_DECAY) * reward.mean())
    (grad,) = torch.autograd.grad(loss, log_pi)
    # descending the loss raises log π(a) exactly where the reward beats the baseline
    assert ((-grad > 0) == (reward > -4.0)).all()
    _, first = reinforce_loss(log_pi, logits, targets, baseline=None)
    assert first == pytest.approx(reward.mean().item())  # the first batch starts the average


def test_attention_masks_slots_before_the_stream_and_carries_its_buffer():
    torch.manual_seed(0)
    memory = AttentionMemory(4, 3, slots=3)
    x, hs = torch.randn(7, 2, 4), torch.randn(7, 2, 3)
    reads, _, _ = memory(x, hs, None)
    assert (reads[0] == 0).all()  # nothing precedes the stream's first step
    torch.testing.assert_close(reads[1], hs[0])  # one valid slot: all weight on h_0
    first, state, _ = memory(x[:4], hs[:4], None)
    second, _, _ = memory(x[4:], hs[4:], state)
    torch.testing.assert_close(torch.cat((first, second)), reads)
    torch.testing.assert_close(state[0], hs[1:4].transpose(0, 1))


def naive_candidate_dropout_lstm(lstm, x, mask):
    """Per-step autograd reference: c_t = f c + i (m_t g_t), PyTorch's gate layout."""
    h = c = x.new_zeros(x.shape[1], lstm.hidden_size)
    outputs = []
    for t in range(x.shape[0]):
        gates = x[t] @ lstm.weight_ih_l0.t() + h @ lstm.weight_hh_l0.t()
        i, f, g, o = (gates + lstm.bias_ih_l0 + lstm.bias_hh_l0).chunk(4, -1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * (torch.tanh(g) * mask[t])
        h = torch.sigmoid(o) * torch.tanh(c)
        outputs.append(h)
    return torch.stack(outputs), c


def test_candidate_dropout_lstm_equals_the_per_step_definition_and_nn_lstm_in_evaluation():
    torch.manual_seed(0)
    lstm = CandidateDropoutLSTM(4, 5, candidate_dropout=0.3).double()
    x = torch.randn(6, 3, 4, dtype=torch.double)
    torch.manual_seed(1)
    mask = x.new_empty(6, 3, 5).bernoulli_(0.7).div_(0.7)
    torch.manual_seed(1)  # the module draws the same mask first
    hs, (h, c) = lstm.train()(x)
    ref_hs, ref_c = naive_candidate_dropout_lstm(lstm, x, mask)
    torch.testing.assert_close(hs, ref_hs)
    torch.testing.assert_close(c[0], ref_c)
    weights = torch.randn_like(hs)
    params = list(lstm.parameters())
    fast = torch.autograd.grad((hs * weights).sum() + c.sum(), params)
    slow = torch.autograd.grad((ref_hs * weights).sum() + ref_c.sum(), params)
    for a, b in zip(fast, slow, strict=True):
        torch.testing.assert_close(a, b)
    assert (mask == 0).any()
    plain, _ = torch.nn.LSTM.forward(lstm, x)
    torch.testing.assert_close(lstm.eval()(x)[0], plain)


def test_a_window_mask_drops_the_same_candidate_units_at_every_step():
    """``candidate_mask: window`` (deepmind/lamb's update dropout): one mask [B, h] for the
    whole window, the per-step definition with that mask repeated."""
    torch.manual_seed(0)
    lstm = CandidateDropoutLSTM(4, 5, candidate_dropout=0.4, candidate_mask="window").double()
    x = torch.randn(6, 3, 4, dtype=torch.double)
    torch.manual_seed(1)
    mask = x.new_empty(1, 3, 5).bernoulli_(0.6).div_(0.6).expand(6, -1, -1)
    torch.manual_seed(1)
    hs, (_, c) = lstm.train()(x)
    ref_hs, ref_c = naive_candidate_dropout_lstm(lstm, x, mask)
    torch.testing.assert_close(hs, ref_hs)
    torch.testing.assert_close(c[0], ref_c)
    assert (mask == 0).any() and (mask[0] != 0).any()
    with pytest.raises(ValueError, match="candidate_mask must be one of step, window"):
        CandidateDropoutLSTM(4, 5, candidate_mask="sequence")


def test_the_capped_input_gate_and_forget_bias_follow_their_definitions():
    """``cap_input_gate``: c_t = f c + min(i, 1 − f) g, in training (with the mask) and in
    evaluation; ``forget_bias`` moves the forget gate's bias only, by that much."""
    torch.manual_seed(0)
    plain = CandidateDropoutLSTM(4, 5).double()
    torch.manual_seed(0)
    lstm = CandidateDropoutLSTM(
        4, 5, candidate_dropout=0.3, forget_bias=1.0, cap_input_gate=True
    ).double()
    shift = lstm.bias_ih_l0 - plain.bias_ih_l0
    torch.testing.assert_close(shift[5:10], torch.ones(5, dtype=torch.double))
    assert (shift[:5] == 0).all() and (shift[10:] == 0).all()
    assert torch.equal(lstm.bias_hh_l0, plain.bias_hh_l0)

    def reference(x, mask):
        h = c = x.new_zeros(x.shape[1], 5)
        outputs = []
        for t in range(x.shape[0]):
            gates = x[t] @ lstm.weight_ih_l0.t() + h @ lstm.weight_hh_l0.t()
            i, f, g, o = (gates + lstm.bias_ih_l0 + lstm.bias_hh_l0).chunk(4, -1)
            f = torch.sigmoid(f)
            i = torch.where(torch.sigmoid(i) < 1 - f, torch.sigmoid(i), 1 - f)
            c = f * c + i * torch.tanh(g) * mask[t]
            h = torch.sigmoid(o) * torch.tanh(c)
            outputs.append(h)
        return torch.stack(outputs), c

    x = torch.randn(6, 3, 4, dtype=torch.double) * 3  # large inputs: the cap binds somewhere
    torch.manual_seed(1)
    mask = x.new_empty(6, 3, 5).bernoulli_(0.7).div_(0.7)
    torch.manual_seed(1)
    hs, (_, c) = lstm.train()(x)
    ref_hs, ref_c = reference(x, mask)
    torch.testing.assert_close(hs, ref_hs)
    torch.testing.assert_close(c[0], ref_c)
    ones = torch.ones_like(mask)
    ref_eval, _ = reference(x, ones)
    torch.testing.assert_close(lstm.eval()(x)[0], ref_eval)
    uncapped, _ = naive_candidate_dropout_lstm(lstm, x, ones)
    assert not torch.allclose(ref_eval, uncapped)  # the cap changed something


# docs/methods.md §11.1 (tied, d = 650; the counts it marks as matching the paper): PTB / WikiText-2
COUNTS = [
    ("memory_lstm", {"hidden_size": 650, "memory": "none"}, 10_000, 9.90e6),
    ("memory_lstm", {"hidden_size": 920, "memory": "none"}, 10_000, 15.99e6),
    ("lstm", {"embedding_dim": 650, "hidden_size": 650, "tie_weights": True}, 10_000, 9.90e6),
    ("lstm", {"embedding_dim": 650, "hidden_size": 650, "tie_weights": True}, 33_278, 25.05e6),
    ("lstm", {"embedding_dim": 920, "hidden_size": 920, "tie_weights": True}, 10_000, 15.99e6),
    ("memory_lstm", {"hidden_size": 650, "memory": "attention"}, 10_000, 11.6e6),
    ("memory_lstm", {"hidden_size": 650, "memory": "continuous_stack"}, 10_000, 10.75e6),
    ("memory_lstm", {"hidden_size": 650, "memory": "multipop_stack"}, 33_278, 25.9e6),
]


@pytest.mark.parametrize("name,hparams,vocab_size,expected", COUNTS)
def test_parameter_counts_match_the_spec(name, hparams, vocab_size, expected):
    model = build_model(name, [f"w{i}" for i in range(vocab_size)], **hparams)
    assert model.num_parameters() == pytest.approx(expected, rel=0.005)
    assert model.decoder.weight is model.encoder.weight  # tied


RUN = {
    "architecture": "memory_lstm",
    "task": "stream",
    "hparams": {
        "hidden_size": 8, "slots": 3, "dropout": 0.3, "dropouti": 0.3, "candidate_dropout": 0.1,
    },
    "training": {
        "lr": 5e-3, "batch_size": 4, "bptt": 10, "eval_batch_size": 3, "max_epochs": 3,
        "early_stopping_patience": 3, "optimizer": "rmsprop", "weight_decay": 1e-4,
    },
    "text": {"framing": "stream", "metric": "ppl"},
}  # fmt: skip


@pytest.mark.parametrize("memory", ["attention", "discrete_stack", "multipop_stack"])
def test_memory_run_killed_mid_epoch_resumes_to_identical_numbers(tmp_path, memory):
    write_corpus(tmp_path)
    run = {**RUN, "hparams": {**RUN["hparams"], "memory": memory}}
    subprocess.run(train_cmd(tmp_path, "whole", run), check=True, capture_output=True)
    returncode = train_signalled(train_cmd(tmp_path, "killed", run), signal.SIGTERM, 1, 1)
    assert returncode == 128 + signal.SIGTERM
    checkpoint = tmp_path / "killed.ckpt"
    state = torch.load(checkpoint, weights_only=True)
    assert state["partial"] and state["task"]["state"][1] is not None  # the memory's state
    if memory == "discrete_stack":
        assert state["task"]["baseline"] is not None
    subprocess.run(train_cmd(tmp_path, "killed", run), check=True, capture_output=True)
    whole_history, whole_state = outputs(tmp_path, "whole")
    history, resumed = outputs(tmp_path, "killed")
    pd.testing.assert_frame_equal(whole_history, history)
    assert all(torch.equal(whole_state[k], resumed[k]) for k in whole_state)
