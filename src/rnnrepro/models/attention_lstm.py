"""Second-order LSTMs of seed 000 (MODELS.md §1.2): S LSTM cells mixed per step.

Every cell reads the shared previous state (h_{t-1}, c_{t-1}); the new state is a convex
combination of the cells' outputs, with weights α_t ∈ R^S per token:

    h^(s), c^(s) = LSTMCell_s(x_t, (h_{t-1}, c_{t-1}))          s = 1..S
    h_t = Σ_s α_{t,s} h^(s),   c_t = Σ_s α_{t,s} c^(s)

- ``AttentionLSTMLM``: α_t = softmax(V_att x_t / τ), τ = temperature_decay ** epoch; with
  ``hard = True`` α_t = onehot(argmax V_att x_t) (τ → 0, used at test time).
- ``AssignmentLSTMLM``: α_t = onehot(cell(x_t)) for a fixed token -> cell map.

The recurrence runs in ``MixedLSTMFunction``, a hand-written BPTT (see ``_lstm_ops``): all
input projections are one matmul before the loop, and all weight gradients one matmul after it.
"""

from __future__ import annotations

import math
import re

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._lstm_ops import (
    fused_gate_index,
    lstm_backward_factors,
    lstm_pointwise_backward,
    lstm_pointwise_forward,
)
from .base import RecurrentLM


class MixedLSTMFunction(torch.autograd.Function):
    """S LSTM cells on a shared state, mixed by α each step; forward and BPTT by hand.

    Inputs (fused gate layout, ``_lstm_ops.GATE_ORDER``):
        xw        [T, B, 4·S·h]  input projections plus bias, x_t W_ihᵀ + b
        alpha     [T, B, S]      mixture weights
        weight_hh [4·S·h, h]     recurrent weights of all cells
        h0, c0    [B, h]         initial state
    Output: states [T, B, 2, h], the mixed (h_t, c_t) after every step.
    """

    @staticmethod
    def forward(ctx, xw: Tensor, alpha: Tensor, weight_hh: Tensor, h0: Tensor, c0: Tensor):
        T, B, _ = xw.shape
        S, h = alpha.shape[2], weight_hh.shape[1]
        states = xw.new_empty(T + 1, B, 2, h)  # mixed (h, c); states[0] = initial state
        states[0, :, 0] = h0
        states[0, :, 1] = c0
        gates = xw.new_empty(T, B, 4, S, h)  # activated gates, kept for backward
        cells = xw.new_empty(T, B, S, 2, h)  # per-cell (h^(s), c^(s))
        tanh_c = xw.new_empty(T, B, S, h)

        # per-step views, built once (indexing inside the loop costs more than the math)
        xw_t = xw.unbind(0)
        alpha_t = alpha.unsqueeze(2).unbind(0)  # [B, 1, S]
        h_prev = states[:-1, :, 0].unbind(0)  # [B, h]
        c_prev = states[:-1, :, 1].unsqueeze(2).unbind(0)  # [B, 1, h], broadcast over cells
        mixed = states[1:].view(T, B, 1, 2 * h).unbind(0)
        gates_t = gates.unbind(0)
        gates_2d = gates.view(T, B, 4 * S * h).unbind(0)
        cells_h, cells_c = (cells[:, :, :, k].unbind(0) for k in range(2))
        cells_2d = cells.view(T, B, S, 2 * h).unbind(0)
        tanh_t = tanh_c.unbind(0)
        w_t = weight_hh.t()
        for t in range(T):
            torch.addmm(xw_t[t], h_prev[t], w_t, out=gates_2d[t])
            lstm_pointwise_forward(gates_t[t], c_prev[t], cells_c[t], tanh_t[t], cells_h[t])
            torch.bmm(alpha_t[t], cells_2d[t], out=mixed[t])  # [B, 1, 2h]

        ctx.save_for_backward(alpha, weight_hh, states, gates, cells, tanh_c)
        return states[1:]

    @staticmethod
    def backward(ctx, d_out: Tensor):
        alpha, weight_hh, states, gates, cells, tanh_c = ctx.saved_tensors
        T, B, _, S, h = gates.shape
        # jac becomes dL/d(pre-activation gates) in place, step by step
        jac, q = lstm_backward_factors(gates, states[:-1, :, 1].unsqueeze(2), tanh_c)
        forget = gates[:, :, 2]  # [T, B, S, h]
        d_states = torch.cat([d_out.new_zeros(1, B, 2, h), d_out])  # grads w.r.t. states[t]
        d_alpha = torch.empty_like(alpha) if ctx.needs_input_grad[1] else None

        d_cells = d_out.new_empty(B, S, 2, h)  # per-cell (dh^(s), dc^(s)) of the current step
        dh_s, dc_s = d_cells.unbind(2)
        dc_f = d_out.new_empty(B, S, h)
        ones = d_out.new_ones(B, 1, S)
        d_cells_2d = d_cells.view(B, S, 2 * h)
        d_next = d_states[1:].view(T, B, 2 * h).unbind(0)
        dh_prev = d_states[:-1, :, 0].unbind(0)  # [B, h]
        dc_prev = d_states[:-1, :, 1].unsqueeze(1).unbind(0)  # [B, 1, h]
        alpha_t = alpha.unsqueeze(3).unbind(0)  # [B, S, 1]
        cells_2d = cells.view(T, B, S, 2 * h).unbind(0)
        d_alpha_t = d_alpha.unsqueeze(3).unbind(0) if d_alpha is not None else None
        jac_t, jac_2d = jac.unbind(0), jac.view(T, B, 4 * S * h).unbind(0)
        q_t, forget_t = q.unbind(0), forget.unbind(0)
        for t in reversed(range(T)):
            d = d_next[t]  # [B, 2h]
            if d_alpha_t is not None:
                torch.bmm(cells_2d[t], d.unsqueeze(2), out=d_alpha_t[t])
            torch.bmm(alpha_t[t], d.unsqueeze(1), out=d_cells_2d)
            lstm_pointwise_backward(jac_t[t], q_t[t], dh_s, dc_s)
            torch.mul(dc_s, forget_t[t], out=dc_f)
            dh_prev[t].addmm_(jac_2d[t], weight_hh)
            dc_prev[t].baddbmm_(ones, dc_f)  # sum over cells

        d_xw = jac.view(T, B, 4 * S * h)
        d_weight = d_xw.view(T * B, -1).t() @ states[:-1, :, 0].reshape(T * B, h)
        return d_xw, d_alpha, d_weight, d_states[0, :, 0], d_states[0, :, 1]


class _MixedLSTMLM(RecurrentLM):
    """Embedding -> S mixed LSTM cells -> Linear; subclasses choose the mixture weights α."""

    def __init__(
        self,
        vocab: list[str],
        embedding_dim: int,
        hidden_size: int,
        cells: int = 2,
        dropout: float = 0.0,
        embedding_dropout: float = 0.0,
    ):
        super().__init__()
        V, e, h, S = len(vocab), embedding_dim, hidden_size, cells
        self.embedding_dim, self.hidden_size, self.cells = e, h, S
        self.encoder = nn.Embedding(V, e)
        self.embedding_dropout = nn.Dropout(embedding_dropout)
        # S cells stacked as in nn.LSTM: cell s owns rows [4h·s, 4h·(s+1)) in order (i, f, g, o)
        self.weight_ih = nn.Parameter(torch.empty(S * 4 * h, e))
        self.weight_hh = nn.Parameter(torch.empty(S * 4 * h, h))
        self.bias = nn.Parameter(torch.empty(S * 4 * h))
        self.dropout = nn.Dropout(dropout)
        self.decoder = nn.Linear(h, V)
        self.register_buffer("gate_index", fused_gate_index(h, S), persistent=False)
        bound = 1 / math.sqrt(h)  # nn.LSTMCell's default init
        for w in (self.weight_ih, self.weight_hh, self.bias):
            nn.init.uniform_(w, -bound, bound)
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def mixture_weights(self, tokens: Tensor, x: Tensor) -> Tensor:
        """α [T, B, S] for tokens [T, B] with (dropped-out) embeddings x [T, B, e]."""
        raise NotImplementedError

    def forward(
        self, tokens: Tensor, state: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """tokens [T, B] -> logits [T, B, V], state (h [B, h], c [B, h])."""
        T, B = tokens.shape
        x = self.embedding_dropout(self.encoder(tokens))  # [T, B, e]
        alpha = self.mixture_weights(tokens, x)  # [T, B, S]
        if state is None:
            state = (x.new_zeros(B, self.hidden_size), x.new_zeros(B, self.hidden_size))
        idx = self.gate_index
        xw = torch.addmm(self.bias[idx], x.view(T * B, -1), self.weight_ih[idx].t())
        states = MixedLSTMFunction.apply(xw.view(T, B, -1), alpha, self.weight_hh[idx], *state)
        logits = self.decoder(self.dropout(states[:, :, 0]))  # [T, B, V]
        return logits, (states[-1, :, 0], states[-1, :, 1])

    def recurrent_weight_matrices(self) -> list[Tensor]:
        """Each cell's recurrent weights W_hh^(s) [4h, h] (all four gates), for PABS (§7.6)."""
        return list(self.weight_hh.detach().split(4 * self.hidden_size))

    def recurrent_parameters(self) -> int:
        """S cells × (4h(e+h) + 4h), one bias vector per cell (seed 000's convention)."""
        e, h = self.embedding_dim, self.hidden_size
        return self.cells * (4 * h * (e + h) + 4 * h)


class AttentionLSTMLM(_MixedLSTMLM):
    """Attention-based second-order LSTM: α_t = softmax(V_att x_t / τ) (seed 000 §3.2.2).

    ``temperature`` (τ) is set by ``set_epoch`` to ``temperature_decay ** epoch``; with
    ``hard = True``, α_t = onehot(argmax V_att x_t) and V_att gets no gradient.
    """

    def __init__(
        self,
        vocab: list[str],
        embedding_dim: int,
        hidden_size: int,
        cells: int = 2,
        temperature_decay: float = 0.9,
        dropout: float = 0.0,
        embedding_dropout: float = 0.0,
    ):
        super().__init__(vocab, embedding_dim, hidden_size, cells, dropout, embedding_dropout)
        self.attention = nn.Linear(embedding_dim, cells, bias=False)  # V_att [S, e]
        self.temperature_decay = temperature_decay
        self.temperature = 1.0
        self.hard = False

    def set_epoch(self, epoch: int) -> None:
        self.temperature = self.temperature_decay**epoch

    def mixture_weights(self, tokens: Tensor, x: Tensor) -> Tensor:
        scores = self.attention(x)  # [T, B, S]
        if self.hard:
            return F.one_hot(scores.argmax(-1), self.cells).to(scores.dtype)
        return torch.softmax(scores / self.temperature, dim=-1)

    def attention_weights(self, tokens: Tensor) -> Tensor:
        """α [T, B, S] that ``forward`` uses for tokens [T, B] (current τ / ``hard``)."""
        return self.mixture_weights(tokens, self.embedding_dropout(self.encoder(tokens)))

    def recurrent_parameters(self) -> int:
        """S cells × (4h(e+h) + 4h) plus the attention matrix V_att (S·e)."""
        return super().recurrent_parameters() + self.cells * self.embedding_dim


def bracket_cell_map(vocab: list[str], cells: int) -> Tensor:
    """Token id -> cell: bracket tokens "(x" / "x)" go to cell (type index of x) mod cells,
    types indexed in sorted order (a -> 0, b -> 1, ...); all other tokens go to cell 0."""
    bracket = re.compile(r"^\((\w+)$|^(\w+)\)$")
    types = [next(g for g in m.groups() if g) if (m := bracket.match(w)) else None for w in vocab]
    order = {name: k for k, name in enumerate(sorted({t for t in types if t is not None}))}
    return torch.tensor([0 if t is None else order[t] % cells for t in types])


class AssignmentLSTMLM(_MixedLSTMLM):
    """Assignment second-order LSTM: α_t = onehot(cell(x_t)) for a fixed map (seed 000 §3.2.1).

    The map is ``bracket_cell_map`` (Dyck: type a -> cell 0, type b -> cell 1, others -> 0).
    """

    def __init__(
        self,
        vocab: list[str],
        embedding_dim: int,
        hidden_size: int,
        cells: int = 2,
        dropout: float = 0.0,
        embedding_dropout: float = 0.0,
    ):
        super().__init__(vocab, embedding_dim, hidden_size, cells, dropout, embedding_dropout)
        self.register_buffer("cell_of_token", bracket_cell_map(vocab, cells), persistent=False)

    def mixture_weights(self, tokens: Tensor, x: Tensor) -> Tensor:
        return F.one_hot(self.cell_of_token[tokens], self.cells).to(x.dtype)
