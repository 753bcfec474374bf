"""Vanilla (Elman, tanh) RNN language model (docs/methods.md §5.2, multi_matrix baseline).

The recurrence is ``TanhRNN``, an ``nn.RNN`` (same parameters, state and results) whose time loop
is a hand-written BPTT (``TanhRecurrence``): on CPU, ``nn.RNN`` records several autograd nodes per
step (about 4x the time of ``nn.LSTM``, which runs as one oneDNN call, at the Dyck size).

multi_matrix's language models (this one, mRNN/mLSTM and mmRNN/mmLSTM) are ``RNNModel``s with
dropout on h before the output layer (multi_matrix §5.3).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from . import native
from .base import RNNModel


class RNNLM(RNNModel):
    """Stacked tanh RNN (``nn.RNN``, two bias vectors); state: h [num_layers, B, h]."""

    def __init__(
        self,
        vocab: list[str],
        embedding_dim: int,
        hidden_size: int,
        num_layers: int = 1,
        dropout: float = 0.0,
    ):
        super().__init__(
            vocab,
            lambda n_in: TanhRNN(n_in, hidden_size, num_layers, nonlinearity="tanh"),
            embedding_dim,
            dropout=dropout,
        )


class TanhRecurrence(torch.autograd.Function):
    """h_t = tanh(x_pre_t + W_hh h_{t-1}) for t = 1..T, with a hand-written BPTT.

    forward(x_pre [T, B, n] (input projections plus both biases), h0 [B, n], w_hh [n, n])
    returns h [T, B, n]. On CPU at small sizes both loops run compiled (``native``, the
    multiplicative kernel without its multiplier); in Python two torch calls per step in each
    direction: the backward step is ∂pre_t = e_t + (1 - h_t^2) ⊙ (∂pre_{t+1} W_hh), with
    e_t = (1 - h_t^2) ⊙ ∂L/∂h_t precomputed.
    """

    @staticmethod
    def forward(ctx, x_pre, h0, w_hh):
        kernels = native.use_native(x_pre, w_hh, hidden_size=h0.shape[-1])
        ctx.native = kernels is not None
        if kernels is not None:
            none = native.empty(h0)
            hs = kernels.multiplicative_forward(
                x_pre.contiguous(), none, w_hh.t().contiguous(), h0.contiguous(), none
            )[0]
            ctx.save_for_backward(w_hh, hs)
            return hs[1:]
        hs = x_pre.new_empty(x_pre.shape[0] + 1, *h0.shape)
        hs[0] = h0
        w_t = w_hh.t()
        steps = zip(x_pre.unbind(0), hs[:-1].unbind(0), hs[1:].unbind(0), strict=True)
        for x_t, h_prev, h in steps:
            torch.addmm(x_t, h_prev, w_t, out=h).tanh_()
        ctx.save_for_backward(w_hh, hs)
        return hs[1:]

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_h):
        w_hh, hs = ctx.saved_tensors
        T = grad_h.shape[0]
        if ctx.native:
            none = native.empty(hs)
            d_pre, _, d_h0, _ = native.kernels().multiplicative_backward(
                grad_h.contiguous(), none, none, w_hh.t().contiguous(), hs, none, none
            )
            d_w = d_pre.view(T * hs.shape[1], -1).t() @ hs[:-1].reshape(-1, hs.shape[2])
            return d_pre, d_h0, d_w
        slope = 1 - hs[1:] * hs[1:]
        d_pre = slope * grad_h  # e_t, completed in place step by step
        d_h = torch.empty_like(hs[0])
        steps = zip(d_pre[:-1].unbind(0), slope[:-1].unbind(0), d_pre[1:].unbind(0), strict=True)
        for out, s, d_next in reversed(list(steps)):
            torch.mm(d_next, w_hh, out=d_h)
            out.addcmul_(s, d_h)
        d_w = d_pre.view(T * hs.shape[1], -1).t() @ hs[:-1].reshape(-1, hs.shape[2])
        return d_pre, d_pre[0] @ w_hh, d_w


class TanhRNN(nn.RNN):
    """``nn.RNN`` (tanh, unidirectional, time-major) with the time loop of ``TanhRecurrence``.

    Same parameters, state and results as ``nn.RNN`` (dropout between layers included); other
    configurations and packed sequences fall back to ``nn.RNN.forward``.
    """

    def forward(self, input, hx=None, tokens=None):  # noqa: A002 (nn.RNN's signature)
        if (
            not isinstance(input, Tensor)
            or input.dim() != 3
            or self.mode != "RNN_TANH"
            or self.bidirectional
            or self.batch_first
        ):
            return super().forward(input, hx)
        if hx is None:
            hx = input.new_zeros(self.num_layers, input.shape[1], self.hidden_size)
        x, last = input, []
        for layer in range(self.num_layers):
            if layer > 0 and self.dropout > 0:
                x = F.dropout(x, self.dropout, self.training)
            w_ih, w_hh = getattr(self, f"weight_ih_l{layer}"), getattr(self, f"weight_hh_l{layer}")
            bias = None
            if self.bias:
                bias = getattr(self, f"bias_ih_l{layer}") + getattr(self, f"bias_hh_l{layer}")
            x = TanhRecurrence.apply(F.linear(x, w_ih, bias), hx[layer], w_hh)
            last.append(x[-1])
        return x, torch.stack(last)


def uniform_(tensor: Tensor, fan_in: int) -> Tensor:
    """PyTorch's default recurrent-weight init: U(-1/sqrt(fan_in), 1/sqrt(fan_in)), in place."""
    bound = fan_in**-0.5
    with torch.no_grad():
        return tensor.uniform_(-bound, bound)
