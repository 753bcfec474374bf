"""Multiplicative RNN and LSTM (mRNN, mLSTM; docs/methods.md §5.3), multi_matrix's baselines.

With W_mh dropped (h = m, docs/methods.md §5.3 [A]) the input-dependent transition is

    m_t = (W_mx x_t) ⊙ h_{t-1}
    mRNN:  h_t = tanh(W_hx x_t + W_hm m_t + b)
    mLSTM: [i, f, o, g] = W_hx x_t + W_hm m_t + b;  c_t = σ(f) ⊙ c_{t-1} + σ(i) ⊙ tanh(g);
           h_t = σ(o) ⊙ tanh(c_t)

The recurrence runs as one autograd Function with a hand-written BPTT loop: the input projections
are computed for all steps in one matmul outside the loop, and the weight gradient is one matmul
over all steps after the backward loop. The cell helpers below are shared with multi_matrix.py.
"""

from __future__ import annotations

from functools import partial

import torch
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from . import native
from .base import RNNModel
from .rnn import uniform_


def lstm_cell_forward(sig, i, f, o, g, c_prev, c, tanh_c, h) -> None:
    """One LSTM step, 6 in-place/``out=`` ops: activates the gate pre-activations (i, f, o, g;
    ``sig`` = i, f, o) in place, then c = f c_prev + i g (c may be c_prev), h = o tanh(c)."""
    sig.sigmoid_()  # i, f, o
    g.tanh_()
    torch.mul(f, c_prev, out=c)
    c.addcmul_(i, g)
    torch.tanh(c, out=tanh_c)
    torch.mul(o, tanh_c, out=h)


def lstm_backward_factors(
    acts: Tensor, cs: Tensor, tanh_c: Tensor, slot_major: bool
) -> tuple[Tensor, Tensor]:
    """Factors of the LSTM backward step for all steps at once.

    acts [T, B, 4n] activated gates (i, f, o, g), cs [T+1, B, n], tanh_c [T, B, n].
    Given ∂h_t and ∂c_t (from later steps), step t's gradients are elementwise linear in them:
        [∂pre_i, ∂pre_f, ∂pre_o, ∂pre_g, ∂c_{t-1}] = coef_c[t] * ∂c_t + coef_h[t] * ∂h_t
    (5 slots of n). Returns coef_c, coef_h of shape [T, B, 5, n] or, with ``slot_major``,
    [T, 5, B, n]. Derivation: with q = o (1 - tanh(c)^2), ∂c_total = ∂c + q ∂h and
        ∂pre_i = ∂c_total g σ'(i),  ∂pre_f = ∂c_total c_{t-1} σ'(f),  ∂pre_o = ∂h tanh(c) σ'(o),
        ∂pre_g = ∂c_total i (1 - g^2),  ∂c_{t-1} = ∂c_total f.
    """
    T, B, n = tanh_c.shape
    shape = (T, 5, B, n) if slot_major else (T, B, 5, n)
    coef_c, coef_h = acts.new_empty(shape), acts.new_empty(shape)
    cc, ch = (coef_c, coef_h) if slot_major else (coef_c.transpose(1, 2), coef_h.transpose(1, 2))
    i, f, o, g = acts.view(T, B, 4, n).unbind(2)
    torch.mul(g, i - i * i, out=cc[:, 0])
    torch.mul(cs[:-1], f - f * f, out=cc[:, 1])
    cc[:, 2] = 0  # the output gate does not see ∂c
    torch.mul(i, 1 - g * g, out=cc[:, 3])
    cc[:, 4] = f
    q = (1 - tanh_c * tanh_c).mul_(o)
    torch.mul(cc, q.unsqueeze(1), out=ch)
    torch.mul(tanh_c, o - o * o, out=ch[:, 2])
    return coef_c, coef_h


class MultiplicativeRecurrence(torch.autograd.Function):
    """pre_t = x_pre_t + W_hm ((x_m_t) ⊙ h_{t-1}); h_t = cell(pre_t), for t = 1..T.

    forward(x_pre [T, B, G·n], x_m [T, B, n], h0 [B, n], c0 [B, n] or None, w_hm [G·n, n])
    returns h [T, B, n] and, for the LSTM (c0 given), c_T [B, n].

    On CPU at small sizes both loops run compiled (``native``). In Python, where at small sizes
    the cost is per torch call, the loops are short: the forward is 3 (mRNN)
    or 9 (mLSTM: a work row copied to a history buffer) calls per step; the backward precomputes
    every step's state Jacobian (``_jacobian_backward``, one baddbmm per step) while that fits in
    ``JACOBIAN_MAX_ELEMENTS``, and otherwise (large sizes, where the matmuls dominate) runs the
    plain step-by-step BPTT of ``_loop_backward``.
    """

    @staticmethod
    def forward(ctx, x_pre, x_m, h0, c0, w_hm):
        T, B, n = x_m.shape
        kernels = native.use_native(x_pre, x_m, w_hm, hidden_size=n)
        ctx.native = kernels is not None
        if kernels is not None:
            hs, cs, acts, ms = kernels.multiplicative_forward(
                x_pre.contiguous(), x_m.contiguous(), w_hm.t().contiguous(), h0.contiguous(),
                native.empty(h0) if c0 is None else c0.contiguous(),
            )  # fmt: skip
            ctx.save_for_backward(x_m, w_hm, hs, ms, cs, acts)
            return (hs[1:],) if c0 is None else (hs[1:], cs[T])
        hs = x_m.new_empty(T + 1, B, n)
        hs[0] = h0
        ms = torch.empty_like(x_m)  # m_t = x_m_t ⊙ h_{t-1}
        w_t = w_hm.t()
        cs = acts = tanh_c = None
        if c0 is None:
            steps = zip(
                x_pre.unbind(0),
                x_m.unbind(0),
                ms.unbind(0),
                hs[:-1].unbind(0),
                hs[1:].unbind(0),
                strict=True,
            )
            for x_pre_t, x_m_t, m, h_prev, h in steps:
                torch.mul(x_m_t, h_prev, out=m)
                torch.addmm(x_pre_t, m, w_t, out=h).tanh_()
        else:
            # one work row [gates (4n) | c | tanh(c) | h | m] with views built once, copied to
            # history[t] after step t (fewer per-step views than writing into history directly)
            row = x_m.new_empty(B, 8 * n)
            history = x_m.new_empty(T, B, 8 * n)
            gates, c, tanh_c, h, m = row.split((4 * n, n, n, n, n), 1)
            views = (gates[:, : 3 * n], *gates.view(B, 4, n).unbind(1))
            h.copy_(h0)
            c.copy_(c0)
            steps = zip(x_pre.unbind(0), x_m.unbind(0), history.unbind(0), strict=True)
            for x_pre_t, x_m_t, history_t in steps:
                torch.mul(x_m_t, h, out=m)
                torch.addmm(x_pre_t, m, w_t, out=gates)
                lstm_cell_forward(*views, c, c, tanh_c, h)
                history_t.copy_(row)
            acts, cs, tanh_c, hs, ms = history.split((4 * n, n, n, n, n), 2)
            hs = torch.cat((h0.unsqueeze(0), hs))
            cs = torch.cat((c0.unsqueeze(0), cs))
        ctx.save_for_backward(x_m, w_hm, hs, ms, cs, acts, tanh_c)
        return (hs[1:],) if c0 is None else (hs[1:], cs[T])

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_h, grad_c=None):
        if ctx.native:
            return _native_backward(ctx, grad_h, grad_c)
        x_m, w_hm, hs, ms, cs, acts, tanh_c = ctx.saved_tensors
        T, B, n = x_m.shape
        G = w_hm.shape[0] // n
        S = n if cs is None else 2 * n  # size of the recurrent state (h or h, c)
        if T * B * S * S <= JACOBIAN_MAX_ELEMENTS:
            if cs is None:
                coef_c, coef_h = None, (1 - hs[1:] * hs[1:]).unsqueeze(2)  # [T, B, 1, n]
            else:
                coef_c, coef_h = lstm_backward_factors(acts, cs, tanh_c, slot_major=False)
            grads, d_m, d_h0, d_c0 = _jacobian_backward(x_m, w_hm, coef_c, coef_h, grad_h, grad_c)
            d_pre = grads[:, :, :G].reshape(T * B, G * n)
        else:
            d_pre, d_m, d_h0, d_c0 = _loop_backward(x_m, w_hm, hs, cs, acts, tanh_c, grad_h, grad_c)
            d_pre = d_pre.view(T * B, G * n)
        d_w = d_pre.t() @ ms.reshape(T * B, n)
        return d_pre.view(T, B, G * n), d_m * hs[:-1], d_h0, d_c0, d_w


def _native_backward(ctx, grad_h, grad_c):
    """``MultiplicativeRecurrence.backward`` with the compiled loop (``native``)."""
    x_m, w_hm, hs, ms, cs, acts = ctx.saved_tensors
    T, B, n = x_m.shape
    d_pre, d_m, d_h0, d_c0 = native.kernels().multiplicative_backward(
        grad_h.contiguous(), native.empty(hs) if grad_c is None else grad_c.contiguous(),
        x_m.contiguous(), w_hm.t().contiguous(), hs, cs, acts,
    )  # fmt: skip
    d_w = d_pre.view(T * B, -1).t() @ ms.view(T * B, n)
    return d_pre, d_m * hs[:-1], d_h0, d_c0 if grad_c is not None else None, d_w


# Up to this many elements (8 MB in float32), the backward precomputes every step's state
# Jacobian and the time loop is one baddbmm per step (small sizes, where the cost is per call).
JACOBIAN_MAX_ELEMENTS = 2**21


def _jacobian_backward(x_m, w_hm, coef_c, coef_h, grad_h, grad_c):
    """BPTT through per-step Jacobians of the state (h_t[, c_t]) -> (h_{t-1}[, c_{t-1}]).

    With ∂pre_t[s] = coef_c[t, s] ∂c_t + coef_h[t, s] ∂h_t (s < G) and ∂m_t = Σ_s W_s^T ∂pre_t[s]:
        ∂h_{t-1} = ∂L/∂h_{t-1} + x_m_t ⊙ ∂m_t,  ∂c_{t-1} = coef_c[t, G] ∂c_t + coef_h[t, G] ∂h_t,
    i.e. d_{t-1} = g_{t-1} + J_t d_t for d = [∂h; ∂c], J_t [S, S] per example, built for all
    steps with one bmm. Returns (∂pre_t with ∂c_{t-1}) [T, B, slots, n], ∂m [T, B, n], ∂h_0, ∂c_0.
    """
    T, B, n = x_m.shape
    G = w_hm.shape[0] // n
    lstm = coef_c is not None
    S = 2 * n if lstm else n
    # columns of the h-rows of J: for input unit i (of ∂h, then of ∂c), Σ_s W[s, i, :] coef[s, i]
    cols = coef_h[:, :, :G] if not lstm else torch.cat((coef_h[:, :, :G], coef_c[:, :, :G]), 3)
    w_cols = w_hm.view(G, n, n).transpose(0, 1)  # [i, s, j]
    if lstm:
        w_cols = torch.cat((w_cols, w_cols))
    h_rows = torch.bmm(cols.reshape(T * B, G, S).permute(2, 0, 1), w_cols)  # [S, T·B, n]
    jac = x_m.new_zeros(T, B, S, S)
    torch.mul(h_rows.permute(1, 2, 0).view(T, B, n, S), x_m.unsqueeze(3), out=jac[:, :, :n])
    if lstm:  # ∂c_{t-1} rows: diagonal in ∂h_t and ∂c_t
        jac[:, :, n:, :n].diagonal(0, 2, 3).copy_(coef_h[:, :, G])
        jac[:, :, n:, n:].diagonal(0, 2, 3).copy_(coef_c[:, :, G])
    d = x_m.new_empty(T + 1, B, S, 1)  # d[t] = [∂h_t; ∂c_t] (state t, h_0 first)
    d[T, :, :n, 0] = grad_h[T - 1]
    if lstm:
        d[T, :, n:, 0] = grad_c
    g = x_m.new_zeros(T, B, S, 1)  # gradients from the outputs: g[t] = [∂L/∂h_t; 0]
    g[1:, :, :n, 0] = grad_h[:-1]
    steps = zip(g.unbind(0), jac.unbind(0), d[1:].unbind(0), d[:-1].unbind(0), strict=True)
    for g_t, jac_t, d_next, d_prev in reversed(list(steps)):
        torch.baddbmm(g_t, jac_t, d_next, out=d_prev)
    d_h, d_c = d[1:, :, :n, 0].unsqueeze(2), d[1:, :, n:, 0].unsqueeze(2)
    grads = coef_h * d_h if not lstm else torch.addcmul(coef_h * d_h, coef_c, d_c)
    d_m = grads[:, :, :G].reshape(T * B, G * n).mm(w_hm).view(T, B, n)
    return grads, d_m, d[0, :, :n, 0], d[0, :, n:, 0] if lstm else None


def cell_backward_step(t, d_h, d_c, hs, cs, acts, tanh_c, out):
    """Backward of step t's cell: write ∂pre_t [B, G·n] into ``out`` given ∂h_t (and, for the
    LSTM, ∂c_t from later steps; cs is None for the RNN); return ∂c_{t-1} (None for the RNN)."""
    tanh_backward = torch.ops.aten.tanh_backward  # grad * (1 - y^2) from the output y
    if cs is None:
        tanh_backward(d_h, hs[t + 1], grad_input=out)
        return None
    n = hs.shape[-1]
    act = acts[t]
    i, f, o, g = act.chunk(4, 1)
    d_c = d_c + tanh_backward(d_h * o, tanh_c[t])
    d_act = torch.cat((d_c, d_c, d_h, d_c), 1) * torch.cat((g, cs[t], tanh_c[t], i), 1)
    torch.ops.aten.sigmoid_backward(d_act[:, : 3 * n], act[:, : 3 * n], grad_input=out[:, : 3 * n])
    tanh_backward(d_act[:, 3 * n :], g, grad_input=out[:, 3 * n :])
    return d_c * f


def _loop_backward(x_m, w_hm, hs, cs, acts, tanh_c, grad_h, grad_c):
    """Step-by-step BPTT for large sizes (no precomputed factors: least memory traffic).

    Returns ∂pre [T, B, G·n], ∂m [T, B, n], ∂h_0, ∂c_0 (None for the mRNN).
    """
    T, B, n = x_m.shape
    d_pre = x_m.new_empty(T, B, w_hm.shape[0])
    d_m = torch.empty_like(x_m)
    d_h, d_c = torch.zeros_like(hs[0]), grad_c
    for t in reversed(range(T)):
        d_c = cell_backward_step(t, grad_h[t] + d_h, d_c, hs, cs, acts, tanh_c, out=d_pre[t])
        d_h = torch.mm(d_pre[t], w_hm, out=d_m[t]) * x_m[t]
    return d_pre, d_m, d_h, d_c


class MultiplicativeRNN(nn.Module):
    """One mRNN (lstm=False) or mLSTM (lstm=True) layer over x [T, B, e].

    State: h [B, n] (mRNN) or (h, c) (mLSTM).
    """

    def __init__(self, input_size: int, hidden_size: int, lstm: bool):
        super().__init__()
        self.hidden_size, self.lstm = hidden_size, lstm
        gates = 4 if lstm else 1
        self.input = nn.Linear(input_size, gates * hidden_size)  # W_hx, b
        self.input_m = nn.Linear(input_size, hidden_size, bias=False)  # W_mx
        self.weight_hm = nn.Parameter(
            uniform_(torch.empty(gates * hidden_size, hidden_size), hidden_size)
        )

    def forward(
        self, x: Tensor, state=None, tokens: Tensor | None = None
    ) -> tuple[Tensor, Tensor | tuple[Tensor, Tensor]]:
        if state is None:
            h0 = x.new_zeros(x.shape[1], self.hidden_size)
            state = (h0, h0) if self.lstm else h0
        h0, c0 = state if self.lstm else (state, None)
        out = MultiplicativeRecurrence.apply(self.input(x), self.input_m(x), h0, c0, self.weight_hm)
        h = out[0]  # [T, B, n]
        return h, ((h[-1], out[1]) if self.lstm else h[-1])


class MRNNLM(RNNModel):
    """mRNN language model (h = m); state h [B, h]."""

    lstm = False

    def __init__(
        self, vocab: list[str], embedding_dim: int, hidden_size: int, dropout: float = 0.0
    ):
        body = partial(MultiplicativeRNN, hidden_size=hidden_size, lstm=self.lstm)
        super().__init__(vocab, body, embedding_dim, dropout=dropout)


class MLSTMLM(MRNNLM):
    """mLSTM language model (h = m); state (h, c), each [B, h]."""

    lstm = True
