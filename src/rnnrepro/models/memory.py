"""Memory-augmented LSTMs of the memory paper (Yogatama et al. 2018; docs/methods.md §11).

A one-layer LSTM (``CandidateDropoutLSTM``: recurrent dropout on the candidate) whose output
is combined with a memory read m_t:
h̃_t = W_hh h_t + W_hm m_t (no nonlinearity), fed to the tied decoder. The memory never feeds
back into the LSTM recurrence [A], so the LSTM runs fused over the whole window and only the
memory steps through time. Memories (their state is carried across BPTT windows, detached):

- ``AttentionMemory``: attention over the previous K hidden states, s_i = w_aᵀ tanh(W_Y h_i +
  W_q h_t), slots before the stream's start masked [A] (the paper's score degenerates). No loop
  over time: slot k of every step is one contiguous slice of [buffer; window].
- ``ContinuousStack`` / ``DiscreteStack``: single-computation stacks of K slots (top = slot 0)
  with a linear policy π = softmax(W_π [x_t; m_0; m_1] + b) over (STAY, PUSH, POP); the
  continuous stack mixes the three results, the discrete one samples an action (argmax when not
  training) and returns its log-probability for REINFORCE (``rnnrepro.tasks``).
- ``MultipopStack``: the multipop adaptive computation stack (K pops at most) in the vectorised
  form of docs/methods.md §11.1: all depths' policies at once, and the new stack as one batched
  product of a per-example Toeplitz matrix with the old stack.
"""

from __future__ import annotations

from functools import partial

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._lstm_ops import fused_gate_index
from .attention_lstm import MixedLSTMFunction
from .base import RNNModel

STAY, PUSH, POP = 0, 1, 2


def push(stack: Tensor, h: Tensor) -> Tensor:
    """h on top of stack [B, K, d]; the bottom slot falls off."""
    return torch.cat((h.unsqueeze(1), stack[:, :-1]), 1)


def pop(stack: Tensor) -> Tensor:
    """stack [B, K, d] without its top slot; an empty (zero) slot enters at the bottom."""
    return torch.cat((stack[:, 1:], torch.zeros_like(stack[:, :1])), 1)


class AttentionMemory(nn.Module):
    """Attention over the previous ``slots`` hidden states. State: (buffer [B, K, d] of the
    last K states, valid [B, K]: False for slots before the stream's start)."""

    def __init__(self, input_size: int, hidden_size: int, slots: int):
        super().__init__()
        self.slots = slots
        self.keys = nn.Linear(hidden_size, hidden_size, bias=False)  # W_Y
        self.query = nn.Linear(hidden_size, hidden_size, bias=False)  # W_q
        self.score = nn.Linear(hidden_size, 1, bias=False)  # w_a

    def forward(self, x: Tensor, hs: Tensor, state) -> tuple[Tensor, tuple, dict]:
        """x [T, B, e] (unused), hs [T, B, d] -> reads m [T, B, d], state, no aux."""
        T, B, d = hs.shape
        K = self.slots
        if state is None:
            state = (hs.new_zeros(B, K, d), torch.zeros(B, K, dtype=torch.bool, device=hs.device))
        buffer, valid = state
        seq = torch.cat((buffer.transpose(0, 1), hs))  # [K + T, B, d]: slot t..t+K-1 precede t
        ok = torch.cat((valid.t(), valid.new_ones(T, B)))  # [K + T, B]
        keys, query = self.keys(seq), self.query(hs)
        # slot k of every step t is row t + k of the sequence: K contiguous slices, no copies
        scores = torch.stack(
            [self.score(torch.tanh(keys[k : k + T] + query)).squeeze(-1) for k in range(K)], -1
        )  # [T, B, K]
        mask = torch.stack([ok[k : k + T] for k in range(K)], -1)
        weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1)
        weights = weights.masked_fill(~mask, 0.0)  # no valid slot (stream start): m_t = 0
        reads = sum(weights[..., k, None] * seq[k : k + T] for k in range(K))
        return reads, (seq[-K:].transpose(0, 1), ok[-K:].t()), {}


class _Stack(nn.Module):
    """Shared parts of the stacks: K slots of size d and the linear policy over
    [x_t; m_0; m_1], split so that its input part is one matmul for all steps."""

    def __init__(self, input_size: int, hidden_size: int, slots: int):
        super().__init__()
        self.slots, self.hidden_size = slots, hidden_size
        self.policy_x = nn.Linear(input_size, 3)  # W_x and b of W_π [x; m_0; m_1] + b
        self.policy_m = nn.Linear(2 * hidden_size, 3, bias=False)  # W_0, W_1

    def initial(self, hs: Tensor) -> Tensor:
        return hs.new_zeros(hs.shape[1], self.slots, self.hidden_size)

    def logits(self, px: Tensor, stack: Tensor) -> Tensor:
        """Policy logits [B, 3] for the input part px [B, 3] and the top two slots."""
        return px + self.policy_m(stack[:, :2].flatten(1))


class ContinuousStack(_Stack):
    """Single-computation continuous stack: M_t = a_STAY M + a_PUSH PUSH(M, h_t) + a_POP POP(M),
    a = π(· | x_t, M_{t-1}[0], M_{t-1}[1]); m_t = M_t[0]. State: M [B, K, d]."""

    def forward(self, x: Tensor, hs: Tensor, state) -> tuple[Tensor, Tensor, dict]:
        stack = self.initial(hs) if state is None else state
        px = self.policy_x(x)  # [T, B, 3]
        reads = []
        for t in range(hs.shape[0]):
            a = torch.softmax(self.logits(px[t], stack), -1)[:, :, None, None]  # [B, 3, 1, 1]
            stack = a[:, STAY] * stack + a[:, PUSH] * push(stack, hs[t]) + a[:, POP] * pop(stack)
            reads.append(stack[:, 0])
        return torch.stack(reads), stack, {}


class DiscreteStack(_Stack):
    """Single-computation discrete stack: one action a_t ~ π (argmax when not training) applied
    exactly. Returns ``action_log_prob`` [T, B] (log π(a_t)) for the REINFORCE loss."""

    def forward(self, x: Tensor, hs: Tensor, state) -> tuple[Tensor, Tensor, dict]:
        stack = self.initial(hs) if state is None else state
        px = self.policy_x(x)
        reads, log_probs = [], []
        for t in range(hs.shape[0]):
            log_pi = torch.log_softmax(self.logits(px[t], stack), -1)  # [B, 3]
            if self.training:
                action = torch.multinomial(log_pi.detach().exp(), 1).squeeze(1)
            else:
                action = log_pi.argmax(-1)
            log_probs.append(log_pi.gather(1, action[:, None]).squeeze(1))
            choice = action.view(-1, 1, 1)
            stack = torch.where(
                choice == STAY, stack, torch.where(choice == PUSH, push(stack, hs[t]), pop(stack))
            )
            reads.append(stack[:, 0])
        return torch.stack(reads), stack, {"action_log_prob": torch.stack(log_probs)}


class MultipopStack(_Stack):
    """Multipop adaptive computation stack (K = ``slots``): k = 0..K pops, then STAY or PUSH.

    For depth k the policy reads the top two slots of POP^k(M); P(STAY_k) = r_k π_k(STAY),
    P(PUSH_k) = r_k π_k(PUSH) with r_k = Π_{j<k} π_j(POP), and POP is masked at k = K (STAY and
    PUSH renormalised there) so the 2(K + 1) probabilities sum to one. The new stack is
    M_t = T_t M_{t-1} + e_0 (Σ_k P(PUSH_k)) h_tᵀ with T_t[j, i] = s_{i-j} + [j ≥ 1] p_{i-j+1}
    (``toeplitz``). ``step_reference`` is the definition, depth by depth (the test oracle).
    """

    def __init__(self, input_size: int, hidden_size: int, slots: int):
        super().__init__(input_size, hidden_size, slots)
        K = slots
        offsets = torch.arange(K).view(1, K) - torch.arange(K).view(K, 1)  # i - j
        self.register_buffer("offsets", offsets, persistent=False)

    def action_probs(self, px: Tensor, stack: Tensor) -> tuple[Tensor, Tensor]:
        """(P(STAY_k), P(PUSH_k)), each [B, K + 1], for the input part px [B, 3]."""
        B, K, d = stack.shape
        padded = torch.cat((stack, stack.new_zeros(B, 2, d)), 1)  # POP^k tops for k = 0..K
        tops = torch.stack((padded[:, : K + 1], padded[:, 1 : K + 2]), 2)  # [B, K + 1, 2, d]
        logits = px.unsqueeze(1) + self.policy_m(tops.flatten(2))  # [B, K + 1, 3]
        last_pop = torch.zeros_like(logits, dtype=torch.bool)
        last_pop[:, K, POP] = True
        pi = torch.softmax(logits.masked_fill(last_pop, float("-inf")), -1)
        reach = torch.cumprod(F.pad(pi[:, :-1, POP], (1, 0), value=1.0), 1)  # r_k
        return reach * pi[..., STAY], reach * pi[..., PUSH]

    def toeplitz(self, stay: Tensor, push_: Tensor) -> Tensor:
        """T [B, K, K] with T[j, i] = s_{i-j} + [j >= 1] p_{i-j+1} (zero outside 0..K)."""
        B, K = stay.shape[0], self.slots
        # index n + K - 1 of the padded vectors holds s_n / p_n for n = -(K-1) .. K
        s = F.pad(stay[:, :K], (K - 1, 0))
        p = F.pad(push_, (K - 1, 0))
        idx = (self.offsets + K - 1).expand(B, K, K)
        from_stay = s.gather(1, idx.flatten(1)).view(B, K, K)
        from_push = p.gather(1, (idx + 1).flatten(1)).view(B, K, K)
        from_push[:, 0] = 0
        return from_stay + from_push

    def step(self, px: Tensor, stack: Tensor, h: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """One vectorised step: (new stack, P(STAY_k), P(PUSH_k))."""
        stay, push_ = self.action_probs(px, stack)
        new = torch.bmm(self.toeplitz(stay, push_), stack)
        new = (
            new + F.pad(push_.sum(1, keepdim=True), (0, self.slots - 1)).unsqueeze(-1) * h[:, None]
        )
        return new, stay, push_

    def step_reference(self, px: Tensor, stack: Tensor, h: Tensor) -> Tensor:
        """The same step from the definition: a loop over depths (tests only)."""
        K = self.slots
        new, reach, popped = torch.zeros_like(stack), 1.0, stack
        for k in range(K + 1):
            logits = px + self.policy_m(popped[:, :2].flatten(1))
            if k == K:
                logits = logits.clone()
                logits[:, POP] = float("-inf")
            pi = torch.softmax(logits, -1)
            stay_k, push_k = reach * pi[:, STAY], reach * pi[:, PUSH]
            new = new + stay_k[:, None, None] * popped + push_k[:, None, None] * push(popped, h)
            reach = reach * pi[:, POP]
            popped = pop(popped)
        return new

    def forward(self, x: Tensor, hs: Tensor, state) -> tuple[Tensor, Tensor, dict]:
        stack = self.initial(hs) if state is None else state
        px = self.policy_x(x)
        reads = []
        for t in range(hs.shape[0]):
            stack, _, _ = self.step(px[t], stack, hs[t])
            reads.append(stack[:, 0])
        return torch.stack(reads), stack, {}


CANDIDATE_MASKS = ("step", "window")


class CandidateDropoutLSTM(nn.LSTM):
    """One ``nn.LSTM`` layer whose candidate is dropped in training, c_t = f c_{t-1} + i ⊙
    drop(g_t) (recurrent dropout of Semeniuta et al. 2016; the memory paper's 0.1), with a new
    mask every step (``candidate_mask: step``) or one mask for the whole BPTT window
    (``window``: deepmind/lamb's ``update_dropout``). Same parameters and results as
    ``nn.LSTM`` when not training or at p = 0; in training the recurrence is
    ``MixedLSTMFunction`` with one cell and the mask.

    deepmind/lamb's cell (docs/methods.md §11.2) as settings: ``forget_bias`` is added to the
    forget gate's bias at initialisation (its bias centred on 1), and ``cap_input_gate`` caps the
    input gate at 1 − f, c_t = f c_{t-1} + min(i, 1 − f) ⊙ g_t, a recurrence that runs step by
    step under autograd (slower; never through cuDNN)."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        candidate_dropout: float = 0.0,
        candidate_mask: str = "step",
        forget_bias: float = 0.0,
        cap_input_gate: bool = False,
    ):
        super().__init__(input_size, hidden_size)
        if candidate_mask not in CANDIDATE_MASKS:
            raise ValueError(
                f"candidate_mask must be one of {', '.join(CANDIDATE_MASKS)}, not "
                f"{candidate_mask!r}"
            )
        self.candidate_dropout, self.candidate_mask = candidate_dropout, candidate_mask
        self.cap_input_gate = cap_input_gate
        with torch.no_grad():  # PyTorch's gate order (i, f, g, o): the second block is f's
            self.bias_ih_l0[hidden_size : 2 * hidden_size] += forget_bias
        self.register_buffer("gate_index", fused_gate_index(hidden_size), persistent=False)

    def dropout_mask(self, x: Tensor) -> Tensor | None:
        """The candidate's mask [T, B, h] (0 or 1 / (1 − p)), or None when not dropping."""
        p = self.candidate_dropout
        if not self.training or p == 0:
            return None
        T, B, _ = x.shape
        rows = T if self.candidate_mask == "step" else 1
        mask = x.new_empty(rows, B, self.hidden_size).bernoulli_(1 - p).div_(1 - p)
        return mask.expand(T, -1, -1).contiguous()

    def forward(self, x: Tensor, state=None):
        mask = self.dropout_mask(x)
        if mask is None and not self.cap_input_gate:
            return super().forward(x, state)
        T, B, _ = x.shape
        h = self.hidden_size
        if state is None:
            h0 = c0 = x.new_zeros(B, h)
        else:
            h0, c0 = state[0][0], state[1][0]
        if self.cap_input_gate:
            hs, c = self.capped(x, h0, c0, mask)
            return hs, (hs[-1].unsqueeze(0), c.unsqueeze(0))
        idx = self.gate_index
        bias = (self.bias_ih_l0 + self.bias_hh_l0)[idx]
        xw = torch.addmm(bias, x.reshape(T * B, -1), self.weight_ih_l0[idx].t()).view(T, B, -1)
        alpha = x.new_ones(T, B, 1)
        hs, c = MixedLSTMFunction.apply(xw, alpha, self.weight_hh_l0[idx], h0, c0, mask)
        return hs, (hs[-1].unsqueeze(0), c.unsqueeze(0))

    def capped(self, x: Tensor, h: Tensor, c: Tensor, mask: Tensor | None):
        """The recurrence with the input gate capped at 1 − f, step by step (autograd)."""
        xw = F.linear(x, self.weight_ih_l0, self.bias_ih_l0 + self.bias_hh_l0)
        outputs = []
        for t in range(x.shape[0]):
            i, f, g, o = (xw[t] + h @ self.weight_hh_l0.t()).chunk(4, dim=1)
            f, g = torch.sigmoid(f), torch.tanh(g)
            i = torch.minimum(torch.sigmoid(i), 1 - f)
            c = f * c + i * (g if mask is None else g * mask[t])
            h = torch.sigmoid(o) * torch.tanh(c)
            outputs.append(h)
        return torch.stack(outputs), c


MEMORIES = {
    "attention": AttentionMemory,
    "continuous_stack": ContinuousStack,
    "discrete_stack": DiscreteStack,
    "multipop_stack": MultipopStack,
}


class MemoryLSTM(nn.Module):
    """Body: one LSTM layer and a memory; output h̃_t = W_hh h_t + W_hm m_t.

    Memory "none" is the plain LSTM (h̃_t = h_t, the paper's baselines). State: ((h, c) of the
    LSTM, the memory's state). Aux: the memory's (``action_log_prob`` of the discrete stack).
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        memory: str,
        slots: int,
        candidate_dropout: float = 0.0,
        **cell,
    ):
        super().__init__()
        if memory != "none" and memory not in MEMORIES:
            known = ", ".join(["none", *MEMORIES])
            raise ValueError(f"memory must be one of {known}, not {memory!r}")
        self.hidden_size = hidden_size
        self.lstm = CandidateDropoutLSTM(input_size, hidden_size, candidate_dropout, **cell)
        self.memory = None if memory == "none" else MEMORIES[memory](input_size, hidden_size, slots)
        if self.memory is not None:
            self.from_h = nn.Linear(hidden_size, hidden_size, bias=False)  # W_hh
            self.from_m = nn.Linear(hidden_size, hidden_size, bias=False)  # W_hm

    def forward(self, x: Tensor, state=None, tokens: Tensor | None = None):
        lstm_state, memory_state = (None, None) if state is None else state
        hs, lstm_state = self.lstm(x, lstm_state)
        if self.memory is None:
            return hs, (lstm_state, None), {}
        reads, memory_state, aux = self.memory(x, hs, memory_state)
        return self.from_h(hs) + self.from_m(reads), (lstm_state, memory_state), aux


class MemoryLSTMLM(RNNModel):
    """Tied one-layer LSTM language model with a memory (embedding = hidden = d); memory
    "none" is the paper's LSTM baseline."""

    def __init__(
        self,
        vocab: list[str],
        hidden_size: int,
        memory: str,
        slots: int = 10,
        dropout: float = 0.0,
        dropouti: float = 0.0,
        candidate_dropout: float = 0.0,
        candidate_mask: str = "step",
        forget_bias: float = 0.0,
        cap_input_gate: bool = False,
    ):
        cell = {"candidate_mask": candidate_mask, "forget_bias": forget_bias,
                "cap_input_gate": cap_input_gate}  # fmt: skip
        body = partial(MemoryLSTM, hidden_size=hidden_size, memory=memory, slots=slots,
                       candidate_dropout=candidate_dropout, **cell)  # fmt: skip
        super().__init__(
            vocab, body, hidden_size, dropout=dropout, dropouti=dropouti, tie_weights=True
        )

    def recurrent_parameters(self) -> int:
        """Everything but the tied embedding and the decoder bias."""
        return sum(p.numel() for p in self.body.parameters())
