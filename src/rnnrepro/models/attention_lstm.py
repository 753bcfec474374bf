"""Second-order LSTMs of second_order_lstm (docs/methods.md §4.2): S LSTM cells mixed per step.

Every cell reads the shared previous state (h_{t-1}, c_{t-1}); the new state is a convex
combination of the cells' outputs, with weights α_t ∈ R^S per token:

    h^(s), c^(s) = LSTMCell_s(x_t, (h_{t-1}, c_{t-1}))          s = 1..S
    h_t = Σ_s α_{t,s} h^(s),   c_t = Σ_s α_{t,s} c^(s)

- ``AttentionLSTMLM``: α_t = softmax(V_att x_t / τ), τ = temperature_decay ** epoch; with
  ``hard = True`` α_t = onehot(argmax V_att x_t) (τ → 0, used at test time).
- ``AssignmentLSTMLM``: α_t = onehot(cell(x_t)) for a fixed token -> cell map.

Choices where the paper is silent: the attention reads the same (dropped-out) embedding x_t as
the cells; each cell has one bias vector per gate; state = (h [B, h], c [B, h]).

The recurrence runs in ``MixedLSTMFunction``, a hand-written BPTT (see ``_lstm_ops``): all
input projections are one matmul before the loop, and all weight gradients one matmul after it.
"""

from __future__ import annotations

import math
import re
from functools import partial

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from . import native
from ._lstm_ops import (
    fused_gate_index,
    gate_views,
    lstm_backward_coefficients,
    lstm_pointwise_backward,
    lstm_pointwise_forward,
)
from .base import RNNModel


class MixedLSTMFunction(torch.autograd.Function):
    """S LSTM cells on a shared state, mixed by α each step; forward and BPTT by hand.

    Inputs (fused gate layout, ``_lstm_ops.GATE_ORDER``):
        xw        [T, B, 4·S·h]  input projections plus bias, x_t W_ihᵀ + b
        alpha     [T, B, S]      mixture weights
        weight_hh [4·S·h, h]     recurrent weights of all cells
        h0, c0    [B, h]         initial state
        g_mask    [T, B, h]      optional dropout mask on the candidate g (0 or 1/(1-p))
    Outputs: hs [T, B, h] (h_t after every step) and c_T [B, h].
    On CPU at small sizes both loops run compiled (``native``); otherwise in Python, per step
    forward 9 torch ops, backward 3 (small steps cost per op and per view, so the loops reuse
    work buffers and index only what changes per step). The forward keeps the activated gates
    and mixed states; the backward rebuilds the rest in batched ops.
    """

    @staticmethod
    def forward(
        ctx,
        xw: Tensor,
        alpha: Tensor,
        weight_hh: Tensor,
        h0: Tensor,
        c0: Tensor,
        g_mask: Tensor | None = None,
    ):
        T, B, _ = xw.shape
        S, h = alpha.shape[2], weight_hh.shape[1]
        kernels = native.use_native(xw, alpha, weight_hh, hidden_size=h)
        ctx.native = kernels is not None
        if kernels is not None:
            mask = native.empty(xw) if g_mask is None else g_mask.contiguous()
            hs, cs, acts, cell_c = kernels.mixed_lstm_forward(
                xw.contiguous(), alpha.contiguous(), weight_hh.t().contiguous(), h0.contiguous(),
                c0.contiguous(), mask,
            )  # fmt: skip
            ctx.save_for_backward(alpha, weight_hh, h0, c0, hs, cs, acts, cell_c, mask)
            return hs, cs[-1]
        G = 4 * S * h
        # One step's work row [activated gates (4, S, h) | mixed state (h_t, c_t)], with views
        # built once; after each step it is copied to history[t].
        row = xw.new_empty(B, G + 2 * h)
        history = xw.new_empty(T, B, G + 2 * h)
        row[:, G : G + h] = h0
        row[:, G + h :] = c0
        gates_2d, gates = row[:, :G], gate_views(row[:, :G].view(B, 4, S, h))
        h_prev, c_prev = row[:, G : G + h], row[:, G + h :].unsqueeze(1)  # c_prev [B, 1, h]
        state = row[:, G:].unsqueeze(1)  # [B, 1, 2h]
        cells = xw.new_empty(B, S, 2, h)  # per-cell (h^(s), c^(s))
        cells_h, cells_c, cells_2d = cells[:, :, 0], cells[:, :, 1], cells.view(B, S, 2 * h)
        tanh_c = xw.new_empty(B, S, h)

        w_t = weight_hh.t()
        masks = [None] * T if g_mask is None else g_mask.unsqueeze(2).unbind(0)  # [B, 1, h]
        steps = zip(
            xw.unbind(0), alpha.unsqueeze(2).unbind(0), history.unbind(0), masks, strict=True
        )
        for xw_t, a, history_t, mask in steps:
            torch.addmm(xw_t, h_prev, w_t, out=gates_2d)  # [B, 4·S·h]
            lstm_pointwise_forward(gates, c_prev, cells_c, tanh_c, cells_h, mask)
            torch.bmm(a, cells_2d, out=state)  # Σ_s α_s (h^(s), c^(s)); a [B, 1, S]
            history_t.copy_(row)

        ctx.save_for_backward(alpha, weight_hh, h0, c0, history, g_mask)
        return history[:, :, G : G + h], history[-1, :, G + h :]

    @staticmethod
    def backward(ctx, d_hs: Tensor, d_c_last: Tensor):
        if ctx.native:
            return _mixed_lstm_native_backward(ctx, d_hs, d_c_last)
        alpha, weight_hh, h0, c0, history, g_mask = ctx.saved_tensors
        T, B, S, h = *alpha.shape, weight_hh.shape[1]
        G, K = 4 * S * h, 4 * S + 1  # K gradient slots per step: 4·S gates, then dc_{t-1}
        gates = history[:, :, :G].view(T, B, 4, S, h)
        o, i, f, g = gates.unbind(2)
        initial = torch.cat([h0, c0], 1).unsqueeze(0)
        prev = torch.cat([initial, history[:-1, :, G:]]).view(T, B, 2, h)  # (h_{t-1}, c_{t-1})
        c_prev = prev[:, :, 1].unsqueeze(2)  # [T, B, 1, h]
        c_s = f * c_prev + i * g  # [T, B, S, h]
        tanh_c = torch.tanh(c_s)
        mask = None if g_mask is None else g_mask.unsqueeze(2)  # [T, B, 1, h]
        coef_c, coef_h = lstm_backward_coefficients(gates, c_prev, tanh_c, alpha, mask)

        # grads[t] = [dG of step t (4S slots) | dc_{t-1} | dh_{t-1}]  [T+1, B, K+1, h];
        # the dh slots start with dL/dh_{t-1} from the outputs, the dc slots are overwritten
        grads = d_hs.new_empty(T + 1, B, K + 1, h)
        grads[0, :, K] = 0
        grads[1:, :, K] = d_hs
        grads[T, :, K - 1] = d_c_last
        steps = zip(
            coef_c.unbind(0),
            coef_h.unbind(0),
            grads[1:, :, K - 1 : K].unbind(0),  # dc_t [B, 1, h]
            grads[1:, :, K:].unbind(0),  # dh_t [B, 1, h]
            grads[:-1, :, :K].unbind(0),  # [dG_t, dc_{t-1}]
            grads[:-1, :, : K - 1].flatten(2).unbind(0),  # dG_t [B, 4·S·h]
            grads[:-1, :, K].unbind(0),  # dh_{t-1} [B, h]
            strict=True,
        )
        for cc, ch, dc, dh, out, d_gates, dh_prev in reversed(list(steps)):
            lstm_pointwise_backward(cc, ch, dc, dh, out)
            dh_prev.addmm_(d_gates, weight_hh)

        d_xw = grads[:-1, :, : K - 1].reshape(T, B, 4 * S * h)
        d_weight = d_xw.view(T * B, -1).t() @ prev[:, :, 0].reshape(T * B, h)
        d_alpha = None
        if ctx.needs_input_grad[1]:  # dα_{t,s} = c^(s)·dc_t + h^(s)·dh_t
            cells = torch.stack([c_s, o * tanh_c], dim=3).view(T * B, S, 2 * h)
            d_states = grads[1:, :, K - 1 :].reshape(T * B, 2 * h, 1)  # (dc_t, dh_t)
            d_alpha = torch.bmm(cells, d_states).view(T, B, S)
        return d_xw, d_alpha, d_weight, grads[0, :, K], grads[0, :, K - 1], None


def _mixed_lstm_native_backward(ctx, d_hs: Tensor, d_c_last: Tensor) -> tuple:
    """``MixedLSTMFunction.backward`` with the compiled loop (``native``)."""
    alpha, weight_hh, h0, c0, hs, cs, acts, cell_c, mask = ctx.saved_tensors
    T, B, h = hs.shape
    d_xw, d_alpha, d_h0, d_c0 = native.kernels().mixed_lstm_backward(
        d_hs.contiguous(), d_c_last.contiguous(), alpha, weight_hh.t().contiguous(), c0, hs, cs,
        acts, cell_c, mask,
    )  # fmt: skip
    h_prev = torch.cat((h0.unsqueeze(0), hs[:-1])).view(T * B, h)
    d_weight = d_xw.view(T * B, -1).t() @ h_prev
    return d_xw, d_alpha, d_weight, d_h0, d_c0, None


class MixedLSTM(nn.Module):
    """Body: S LSTM cells mixed per step; subclasses choose the mixture weights α.

    Reads the (dropped) embeddings x [T, B, e]; state (h [B, h], c [B, h]).
    """

    def __init__(self, input_size: int, hidden_size: int, cells: int = 2):
        super().__init__()
        e, h, S = input_size, hidden_size, cells
        self.input_size, self.hidden_size, self.cells = e, h, S
        # S cells stacked as in nn.LSTM: cell s owns rows [4h·s, 4h·(s+1)) in order (i, f, g, o)
        self.weight_ih = nn.Parameter(torch.empty(S * 4 * h, e))
        self.weight_hh = nn.Parameter(torch.empty(S * 4 * h, h))
        self.bias = nn.Parameter(torch.empty(S * 4 * h))
        self.register_buffer("gate_index", fused_gate_index(h, S), persistent=False)
        bound = 1 / math.sqrt(h)  # nn.LSTMCell's default init
        for w in (self.weight_ih, self.weight_hh, self.bias):
            nn.init.uniform_(w, -bound, bound)

    def mixture_weights(self, tokens: Tensor, x: Tensor) -> Tensor:
        """α [T, B, S] for tokens [T, B] with (dropped-out) embeddings x [T, B, e]."""
        raise NotImplementedError

    def forward(
        self, x: Tensor, state: tuple[Tensor, Tensor] | None, tokens: Tensor
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """x [T, B, e] -> h [T, B, h], state (h [B, h], c [B, h])."""
        T, B = tokens.shape
        alpha = self.mixture_weights(tokens, x)  # [T, B, S]
        if state is None:
            state = (x.new_zeros(B, self.hidden_size), x.new_zeros(B, self.hidden_size))
        idx = self.gate_index
        xw = torch.addmm(self.bias[idx], x.view(T * B, -1), self.weight_ih[idx].t())
        hs, c = MixedLSTMFunction.apply(xw.view(T, B, -1), alpha, self.weight_hh[idx], *state)
        return hs, (hs[-1], c)

    def recurrent_weight_matrices(self) -> list[Tensor]:
        """Each cell's recurrent weights W_hh^(s) [4h, h] (all four gates), for PABS (§7.6)."""
        return list(self.weight_hh.detach().split(4 * self.hidden_size))

    def recurrent_parameters(self) -> int:
        """S cells × (4h(e+h) + 4h), one bias vector per cell (second_order_lstm's convention)."""
        e, h = self.input_size, self.hidden_size
        return self.cells * (4 * h * (e + h) + 4 * h)


# below this τ the softmax of the attention is checked for overflow (checked only there: the
# check waits for the device); from about 1e-9 on it is one-hot to float32's precision already
TINY_TEMPERATURE = 1e-30


class AttentionMixedLSTM(MixedLSTM):
    """α_t = softmax(V_att x_t / τ); ``hard``: α_t = onehot(argmax V_att x_t)."""

    def __init__(
        self, input_size: int, hidden_size: int, cells: int = 2, temperature_decay: float = 0.9
    ):
        super().__init__(input_size, hidden_size, cells)
        self.attention = nn.Linear(input_size, cells, bias=False)  # V_att [S, e]
        self.temperature_decay = temperature_decay
        self.temperature = 1.0
        self.hard = False

    def set_epoch(self, epoch: int) -> None:
        self.temperature = self.temperature_decay**epoch

    def mixture_weights(self, tokens: Tensor, x: Tensor) -> Tensor:
        scores = self.attention(x)  # [T, B, S]
        if self.hard:
            return F.one_hot(scores.argmax(-1), self.cells).to(scores.dtype)
        weights = torch.softmax(scores / self.temperature, dim=-1)
        if self.temperature < TINY_TEMPERATURE and not torch.isfinite(weights).all():
            # τ = 0.9**epoch leaves the float range near epoch 830 (float32): scores / τ
            # overflows and the softmax is NaN. Its limit there is the hard attention, which
            # the softmax already equals wherever it is finite (docs/methods.md §4.2)
            return F.one_hot(scores.argmax(-1), self.cells).to(scores.dtype)
        return weights

    def recurrent_parameters(self) -> int:
        """S cells × (4h(e+h) + 4h) plus the attention matrix V_att (S·e)."""
        return super().recurrent_parameters() + self.cells * self.input_size


class AttentionLSTMLM(RNNModel):
    """Attention-based second-order LSTM: α_t = softmax(V_att x_t / τ) (second_order_lstm §3.2.2).

    ``temperature`` (τ) is set by ``set_epoch`` to ``temperature_decay ** epoch``; with
    ``body.hard = True``, α_t = onehot(argmax V_att x_t) and V_att gets no gradient.
    """

    def __init__(
        self,
        vocab: list[str],
        embedding_dim: int,
        hidden_size: int,
        cells: int = 2,
        temperature_decay: float = 0.9,
        dropout: float = 0.0,
        dropouti: float = 0.0,
        dropoute: float = 0.0,
    ):
        body = partial(
            AttentionMixedLSTM,
            hidden_size=hidden_size,
            cells=cells,
            temperature_decay=temperature_decay,
        )
        super().__init__(
            vocab, body, embedding_dim, dropout=dropout, dropouti=dropouti, dropoute=dropoute
        )

    def attention_weights(self, tokens: Tensor) -> Tensor:
        """α [T, B, S] that ``forward`` uses for tokens [T, B] (current τ / ``body.hard``)."""
        return self.body.mixture_weights(tokens, self.embed(tokens))


def bracket_type(token: str) -> str | None:
    """Bracket type of an opening "(x" or closing "x)" token, e.g. "a"; None otherwise."""
    match = re.fullmatch(r"\((\w+)|(\w+)\)", token)
    return (match[1] or match[2]) if match else None


def bracket_cell_map(vocab: list[str], cells: int) -> Tensor:
    """Token id -> cell: brackets of the k-th type (in sorted order: a, b, ...) go to cell
    k mod cells; all other tokens (<pad>, <start>, <end>, words) go to cell 0."""
    types = [bracket_type(token) for token in vocab]
    order = sorted({t for t in types if t is not None})
    return torch.tensor([0 if t is None else order.index(t) % cells for t in types])


class AssignmentMixedLSTM(MixedLSTM):
    """α_t = onehot(cell(x_t)) for a fixed token -> cell map."""

    def __init__(self, input_size: int, hidden_size: int, cell_of_token: Tensor, cells: int = 2):
        super().__init__(input_size, hidden_size, cells)
        self.register_buffer("cell_of_token", cell_of_token, persistent=False)

    def mixture_weights(self, tokens: Tensor, x: Tensor) -> Tensor:
        return F.one_hot(self.cell_of_token[tokens], self.cells).to(x.dtype)


class AssignmentLSTMLM(RNNModel):
    """Assignment second-order LSTM: α_t = onehot(cell(x_t)) for a fixed map (second_order_lstm
    §3.2.1).

    The map is ``bracket_cell_map`` (Dyck: type a -> cell 0, type b -> cell 1, others -> 0).
    """

    def __init__(
        self,
        vocab: list[str],
        embedding_dim: int,
        hidden_size: int,
        cells: int = 2,
        dropout: float = 0.0,
        dropouti: float = 0.0,
    ):
        body = partial(
            AssignmentMixedLSTM,
            hidden_size=hidden_size,
            cell_of_token=bracket_cell_map(vocab, cells),
            cells=cells,
        )
        super().__init__(vocab, body, embedding_dim, dropout=dropout, dropouti=dropouti)
