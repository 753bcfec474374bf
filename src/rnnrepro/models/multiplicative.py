"""Multiplicative RNN and LSTM (mRNN, mLSTM; MODELS §2.2), seed 001's baselines.

With W_mh dropped (h = m, MODELS §2.2 [A]) the input-dependent transition is

    m_t = (W_mx x_t) ⊙ h_{t-1}
    mRNN:  h_t = tanh(W_hx x_t + W_hm m_t + b)
    mLSTM: [i, f, o, g] = W_hx x_t + W_hm m_t + b;  c_t = σ(f) ⊙ c_{t-1} + σ(i) ⊙ tanh(g);
           h_t = σ(o) ⊙ tanh(c_t)

The recurrence runs as one autograd Function with a hand-written BPTT loop: the input projections
are computed for all steps in one matmul outside the loop, and the weight gradient is one matmul
over all steps after the backward loop. The cell helpers below are shared with multi_matrix.py.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from .rnn import EmbeddingLM, uniform_

# grad * (1 - y^2) and grad * y * (1 - y) from the outputs y (``grad_input=`` is the out argument)
tanh_backward = torch.ops.aten.tanh_backward
sigmoid_backward = torch.ops.aten.sigmoid_backward


def cell_step(pre: Tensor, t: int, hs: Tensor, cs: Tensor | None, acts: Tensor | None) -> None:
    """Output nonlinearity of step t, writing h_t into hs[t + 1] (and c_t, gate activations).

    pre: [B, G·n] pre-activations. RNN (cs is None, G = 1): h_t = tanh(pre).
    LSTM (G = 4, gate order i, f, o, g): cs [T+1, B, n] cell states, acts [T, B, 4n] activations.
    """
    if cs is None:
        torch.tanh(pre, out=hs[t + 1])
        return
    n = hs.shape[-1]
    act = acts[t]
    torch.sigmoid(pre[:, : 3 * n], out=act[:, : 3 * n])
    torch.tanh(pre[:, 3 * n :], out=act[:, 3 * n :])
    i, f, o, g = act.chunk(4, 1)
    torch.addcmul(f * cs[t], i, g, out=cs[t + 1])
    torch.mul(o, torch.tanh(cs[t + 1]), out=hs[t + 1])


def cell_step_backward(
    t: int,
    dh: Tensor,
    dc: Tensor | None,
    hs: Tensor,
    cs: Tensor | None,
    acts: Tensor | None,
    out: Tensor,
) -> Tensor | None:
    """Backward of ``cell_step``: write ∂pre_t [B, G·n] into ``out`` given ∂h_t (and, for the
    LSTM, ∂c_t from later steps); return ∂c_{t-1} (None for the RNN)."""
    if cs is None:
        tanh_backward(dh, hs[t + 1], grad_input=out)
        return None
    n = hs.shape[-1]
    act = acts[t]
    i, f, o, g = act.chunk(4, 1)
    tanh_c = torch.tanh(cs[t + 1])
    dc = dc + tanh_backward(dh * o, tanh_c)
    d_act = torch.cat((dc, dc, dh, dc), 1) * torch.cat((g, cs[t], tanh_c, i), 1)  # ∂(i, f, o, g)
    sigmoid_backward(d_act[:, : 3 * n], act[:, : 3 * n], grad_input=out[:, : 3 * n])
    tanh_backward(d_act[:, 3 * n :], g, grad_input=out[:, 3 * n :])
    return dc * f


class MultiplicativeRecurrence(torch.autograd.Function):
    """pre_t = x_pre_t + W_hm ((x_m_t) ⊙ h_{t-1}); h_t = cell(pre_t), for t = 1..T.

    forward(x_pre [T, B, G·n], x_m [T, B, n], h0 [B, n], c0 [B, n] or None, w_hm [G·n, n])
    returns h [T, B, n] and, for the LSTM (c0 given), c_T [B, n].
    """

    @staticmethod
    def forward(ctx, x_pre, x_m, h0, c0, w_hm):
        T, B, n = x_m.shape
        hs = x_m.new_empty(T + 1, B, n)
        hs[0] = h0
        ms = torch.empty_like(x_m)  # m_t = x_m_t ⊙ h_{t-1}
        cs = acts = None
        if c0 is not None:
            cs = x_m.new_empty(T + 1, B, n)
            cs[0] = c0
            acts = torch.empty_like(x_pre)
        w_t = w_hm.t()
        for t in range(T):
            torch.mul(x_m[t], hs[t], out=ms[t])
            cell_step(torch.addmm(x_pre[t], ms[t], w_t), t, hs, cs, acts)
        ctx.save_for_backward(x_m, w_hm, hs, ms, cs, acts)
        return (hs[1:],) if cs is None else (hs[1:], cs[T])

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_h, grad_c=None):
        x_m, w_hm, hs, ms, cs, acts = ctx.saved_tensors
        d_pre = hs.new_empty(*x_m.shape[:2], w_hm.shape[0])  # [T, B, G·n]
        d_m = torch.empty_like(x_m)
        dh, dc = torch.zeros_like(hs[0]), grad_c
        for t in reversed(range(len(x_m))):
            dc = cell_step_backward(t, grad_h[t] + dh, dc, hs, cs, acts, out=d_pre[t])
            dh = torch.mm(d_pre[t], w_hm, out=d_m[t]) * x_m[t]
        d_w = d_pre.flatten(0, 1).t() @ ms.flatten(0, 1)
        return d_pre, d_m * hs[:-1], dh, dc, d_w


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

    def forward(self, x: Tensor, state=None) -> tuple[Tensor, Tensor | tuple[Tensor, Tensor]]:
        if state is None:
            h0 = x.new_zeros(x.shape[1], self.hidden_size)
            state = (h0, h0) if self.lstm else h0
        h0, c0 = state if self.lstm else (state, None)
        out = MultiplicativeRecurrence.apply(self.input(x), self.input_m(x), h0, c0, self.weight_hm)
        h = out[0]  # [T, B, n]
        return h, ((h[-1], out[1]) if self.lstm else h[-1])


class MRNNLM(EmbeddingLM):
    """mRNN language model (h = m); state h [B, h]."""

    def __init__(
        self, vocab: list[str], embedding_dim: int, hidden_size: int, dropout: float = 0.0
    ):
        super().__init__(vocab, embedding_dim, hidden_size, dropout)
        self.rnn = MultiplicativeRNN(embedding_dim, hidden_size, lstm=False)


class MLSTMLM(EmbeddingLM):
    """mLSTM language model (h = m); state (h, c), each [B, h]."""

    def __init__(
        self, vocab: list[str], embedding_dim: int, hidden_size: int, dropout: float = 0.0
    ):
        super().__init__(vocab, embedding_dim, hidden_size, dropout)
        self.rnn = MultiplicativeRNN(embedding_dim, hidden_size, lstm=True)
