"""general_second_order's models (docs/methods.md §6.1): the general second-order RNN and its two
baselines.

Inputs are one-hot over the vocabulary, so every matrix applied to x_t is an embedding lookup
(precomputed for all steps before the time loop). With h_0 = 0 and φ ∈ {tanh, identity}:

    general:     h_t = φ(A(B x_t ⊙ C h_{t-1}) + D x_t + E h_{t-1} + f)       (D, E optional)
    first-order: h_t = tanh(U x_t + W h_{t-1} + b)
    MI-RNN:      h_t = φ(α ⊙ U x_t ⊙ W h_{t-1} + β1 ⊙ U x_t + β2 ⊙ W h_{t-1} + b)

Output: logits_t = W_o h_t + b_o (Linear(h, V), counted in the 500k budget, docs/methods.md §6.4).

The general and MI recurrences share ``SecondOrderRecurrence``: a fused autograd Function with a
hand-written BPTT. The MI-RNN is its A = I, E = 0 case after rewriting
    α ⊙ Ux ⊙ Wh + β2 ⊙ Wh = (α ⊙ Ux + β2) ⊙ Wh,
so its input-dependent gate (α ⊙ Ux + β2) and offset (β1 ⊙ Ux + b) are computed for all steps
outside the loop. The first-order RNN is the ``TanhRecurrence`` of rnn.py.

Initialisation (the seed gives none) **[A]**: input-side matrices (B, D, U: embedding rows of a
one-hot input) ~ N(0, 1) (``nn.Embedding``'s default, so that the multiplicative gate B x_t starts
at order 1); recurrent matrices C, E, W ~ U(±1/√h) and A ~ U(±1/√m) (PyTorch's recurrent default,
fan-in); biases f, b = 0; MI α = β1 = β2 = 1 (docs/methods.md §6.1); decoder U(±0.1), bias 0
(docs/methods.md §5.2).
"""

from __future__ import annotations

from functools import partial

import torch
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from .base import RNNModel
from .rnn import TanhRecurrence, uniform_

ACTIVATIONS = ("tanh", "identity")


class SecondOrderRecurrence(torch.autograd.Function):
    """pre_t = A (x_b_t ⊙ C h_{t-1}) + E h_{t-1} + x_d_t;  h_t = φ(pre_t), for t = 1..T.

    forward(x_b [T, B, m], x_d [T, B, n], h0 [B, n], w_a [n, m] or None (A = I, needs m = n),
            w_rec [m, n] (C) or [m + n, n] (C stacked over E), tanh: bool) -> h [T, B, n].

    Forward, per step: one matmul u_t = h_{t-1} [C; E]ᵀ, the product with x_b_t, A, the sum, φ.
    Backward, per step (δ_t = ∂L/∂pre_t): ∂m_t = δ_t A, ∂u_t = [∂m_t ⊙ x_b_t | δ_t] (without E
    just ∂m_t ⊙ x_b_t), ∂h_{t-1} = ∂u_t [C; E] (one matmul), δ_{t-1} = φ'_{t-1} ⊙ (∂L/∂h_{t-1} +
    ∂h_{t-1}).
    The weight gradients are one matmul each over all steps after the loop:
    ∂A = Σ_t δ_tᵀ m_t, ∂[C; E] = Σ_t ∂u_tᵀ h_{t-1}. No per-example n×n matrix is formed.
    """

    @staticmethod
    def forward(ctx, x_b, x_d, h0, w_a, w_rec, tanh):
        T, B, m = x_b.shape
        n = h0.shape[1]
        k = w_rec.shape[0]  # m, or m + n with E
        if w_a is None and m != n:
            raise ValueError("A = I needs inner size = hidden size")
        hs = x_d.new_empty(T + 1, B, n)
        hs[0] = h0
        us = x_d.new_empty(T, B, k)  # [C h_{t-1} | E h_{t-1}]
        ms = None if w_a is None else torch.empty_like(x_b)  # m_t = x_b_t ⊙ C h_{t-1}
        w_t = w_rec.t()
        a_t = None if w_a is None else w_a.t()
        for t in range(T):
            h_prev, h, u = hs[t], hs[t + 1], us[t]
            torch.mm(h_prev, w_t, out=u)
            u_c = u[:, :m]
            if k > m:  # E h_{t-1}
                torch.add(x_d[t], u[:, m:], out=h)
                if a_t is None:
                    h.addcmul_(x_b[t], u_c)
                else:
                    torch.mul(x_b[t], u_c, out=ms[t])
                    h.addmm_(ms[t], a_t)
            elif a_t is None:
                torch.addcmul(x_d[t], x_b[t], u_c, out=h)
            else:
                torch.mul(x_b[t], u_c, out=ms[t])
                torch.addmm(x_d[t], ms[t], a_t, out=h)
            if tanh:
                h.tanh_()
        ctx.tanh = tanh
        ctx.save_for_backward(x_b, w_a, w_rec, hs, us, ms)
        return hs[1:]

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_h):
        x_b, w_a, w_rec, hs, us, ms = ctx.saved_tensors
        T, B, m = x_b.shape
        n = hs.shape[2]
        k = w_rec.shape[0]
        # ∂u_t = [∂(C h_{t-1}) | δ_t] (with E: one buffer, so that ∂h_{t-1} is one matmul; without
        # E, ∂u_t = ∂(C h_{t-1}) and δ gets its own contiguous buffer for the input gradients)
        if k > m:
            d_u = x_b.new_empty(T, B, k)
            d_c, d_pre = d_u[:, :, :m], d_u[:, :, m:]
        else:
            d_u = d_c = x_b.new_empty(T, B, m)
            d_pre = x_b.new_empty(T, B, n)
        slope = None
        if ctx.tanh:
            slope = 1 - hs[1:] * hs[1:]
            torch.mul(slope, grad_h, out=d_pre)  # completed step by step below
        else:
            d_pre.copy_(grad_h)
        d_m = d_pre if w_a is None else x_b.new_empty(T, B, m)  # ∂m_t
        d_h = x_b.new_empty(B, n)
        for t in reversed(range(T)):
            if w_a is not None:
                torch.mm(d_pre[t], w_a, out=d_m[t])
            torch.mul(d_m[t], x_b[t], out=d_c[t])
            torch.mm(d_u[t], w_rec, out=d_h)
            if t > 0:
                if slope is None:
                    d_pre[t - 1].add_(d_h)
                else:
                    d_pre[t - 1].addcmul_(slope[t - 1], d_h)
        d_x_b = d_m * us[:, :, :m]
        d_w_rec = d_u.view(T * B, k).t() @ hs[:-1].reshape(T * B, n)
        d_w_a = None
        if w_a is not None:
            d_w_a = d_pre.reshape(T * B, n).t() @ ms.view(T * B, m)
        return d_x_b, d_pre, d_h, d_w_a, d_w_rec, None


class OneHotRecurrence(nn.Module):
    """Body of general_second_order's models (an ``RNNModel`` without embedding): a recurrence
    over one-hot tokens. Subclasses implement
    ``recurrence(tokens [T, B], h0 [B, h]) -> h [T, B, h]``. State: h [B, h] after the last
    step (h_0 = 0 when ``state`` is None).
    """

    def __init__(self, vocab_size: int, hidden_size: int, activation: str):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, not {activation!r}")
        self.vocab_size, self.hidden_size, self.activation = vocab_size, hidden_size, activation

    def recurrence(self, tokens: Tensor, h0: Tensor) -> Tensor:
        raise NotImplementedError

    def forward(self, x: Tensor, state: Tensor | None = None, tokens: Tensor | None = None):
        if state is None:
            weight = next(
                self.parameters()
            )  # x holds token ids: the state takes the weights' dtype
            state = weight.new_zeros(x.shape[1], self.hidden_size)
        hs = self.recurrence(x, state)  # [T, B, h]
        return hs, hs[-1]


class SecondOrderRNN(OneHotRecurrence):
    """General second-order RNN (Maupomé & Meurs): h_t = φ(A(B x_t ⊙ C h_{t-1}) + D x_t +
    E h_{t-1} + f), hidden size h, inner (multiplicative) size m.

    Parameters: ``A`` [h, m], ``B`` Embedding(V, m), ``C`` [m, h], ``D`` Embedding(V, h) (if
    ``use_d``), ``E`` [h, h] (if ``use_e``), ``f`` [h], and the language model's decoder
    Linear(h, V). Count (docs/methods.md §6.4): h·m + m·V + m·h + δ_D h·V + δ_E h² + h + V·h + V.
    ``recurrent_parameters`` = all but the decoder (A, B, C, D, E, f). ``b_init_std``: B's rows
    start at N(0, b_init_std²) (docs/methods.md §6.3: 1 by default).
    """

    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        inner_size: int,
        use_d: bool = True,
        use_e: bool = True,
        activation: str = "tanh",
        b_init_std: float = 1.0,
    ):
        super().__init__(vocab_size, hidden_size, activation)
        h, m, V = hidden_size, inner_size, self.vocab_size
        self.inner_size, self.use_d, self.use_e = m, use_d, use_e
        self.A = nn.Parameter(uniform_(torch.empty(h, m), m))
        self.B = nn.Embedding(V, m)  # N(0, 1) rows, scaled (the same draws for every std)
        if b_init_std <= 0:
            raise ValueError(f"b_init_std must be > 0, got {b_init_std}")
        with torch.no_grad():
            self.B.weight.mul_(b_init_std)
        self.C = nn.Parameter(uniform_(torch.empty(m, h), h))
        self.D = nn.Embedding(V, h) if use_d else None
        self.E = nn.Parameter(uniform_(torch.empty(h, h), h)) if use_e else None
        self.f = nn.Parameter(torch.zeros(h))

    def recurrence(self, tokens: Tensor, h0: Tensor) -> Tensor:
        x_d = self.f.expand(*tokens.shape, self.hidden_size)
        if self.D is not None:
            x_d = self.D(tokens) + self.f
        w_rec = self.C if self.E is None else torch.cat((self.C, self.E))
        tanh = self.activation == "tanh"
        return SecondOrderRecurrence.apply(self.B(tokens), x_d, h0, self.A, w_rec, tanh)


class FirstOrderRNN(OneHotRecurrence):
    """First-order (Elman) RNN with one bias: h_t = tanh(U x_t + W h_{t-1} + b).

    Parameters: ``U`` Embedding(V, h), ``W`` [h, h], ``b`` [h], decoder Linear(h, V).
    Count h² + (2V + 1)h + V; ``recurrent_parameters`` = U, W, b (all but the decoder).
    """

    def __init__(self, vocab_size: int, hidden_size: int):
        super().__init__(vocab_size, hidden_size, "tanh")
        h = hidden_size
        self.U = nn.Embedding(self.vocab_size, h)
        self.W = nn.Parameter(uniform_(torch.empty(h, h), h))
        self.b = nn.Parameter(torch.zeros(h))

    def recurrence(self, tokens: Tensor, h0: Tensor) -> Tensor:
        return TanhRecurrence.apply(self.U(tokens) + self.b, h0, self.W)


class MIRNN(OneHotRecurrence):
    """General multiplicative-integration RNN (Wu et al. 2016):
    h_t = φ(α ⊙ U x_t ⊙ W h_{t-1} + β1 ⊙ U x_t + β2 ⊙ W h_{t-1} + b).

    Parameters: ``U`` Embedding(V, h), ``W`` [h, h], ``alpha``, ``beta1``, ``beta2`` (init 1),
    ``b`` (init 0), decoder Linear(h, V). Count h² + (2V + 4)h + V; ``recurrent_parameters`` =
    all but the decoder. Equals the general model with m = h, A = diag(α), B = U, C = W,
    D = diag(β1) U, E = diag(β2) W, f = b (general_second_order eqs. 10-12).
    """

    def __init__(self, vocab_size: int, hidden_size: int, activation: str = "tanh"):
        super().__init__(vocab_size, hidden_size, activation)
        h = hidden_size
        self.U = nn.Embedding(self.vocab_size, h)
        self.W = nn.Parameter(uniform_(torch.empty(h, h), h))
        self.alpha = nn.Parameter(torch.ones(h))
        self.beta1 = nn.Parameter(torch.ones(h))
        self.beta2 = nn.Parameter(torch.ones(h))
        self.b = nn.Parameter(torch.zeros(h))

    def recurrence(self, tokens: Tensor, h0: Tensor) -> Tensor:
        ux = self.U(tokens)  # [T, B, h]
        gate = torch.addcmul(self.beta2, self.alpha, ux)  # multiplies W h_{t-1}
        offset = torch.addcmul(self.b, self.beta1, ux)
        tanh = self.activation == "tanh"
        return SecondOrderRecurrence.apply(gate, offset, h0, None, self.W, tanh)


class SecondOrderRNNLM(RNNModel):
    """The general second-order RNN language model (``SecondOrderRNN`` body, one-hot inputs)."""

    def __init__(
        self,
        vocab: list[str],
        hidden_size: int,
        inner_size: int,
        use_d: bool = True,
        use_e: bool = True,
        activation: str = "tanh",
        dropout: float = 0.0,
        b_init_std: float = 1.0,
    ):
        body = partial(
            SecondOrderRNN,
            hidden_size=hidden_size,
            inner_size=inner_size,
            use_d=use_d,
            use_e=use_e,
            activation=activation,
            b_init_std=b_init_std,
        )
        super().__init__(vocab, body, None, dropout=dropout)


class FirstOrderRNNLM(RNNModel):
    """The first-order (Elman) baseline (``FirstOrderRNN`` body, one-hot inputs)."""

    def __init__(self, vocab: list[str], hidden_size: int, dropout: float = 0.0):
        body = partial(FirstOrderRNN, hidden_size=hidden_size)
        super().__init__(vocab, body, None, dropout=dropout)


class MIRNNLM(RNNModel):
    """The multiplicative-integration baseline (``MIRNN`` body, one-hot inputs)."""

    def __init__(
        self, vocab: list[str], hidden_size: int, activation: str = "tanh", dropout: float = 0.0
    ):
        body = partial(MIRNN, hidden_size=hidden_size, activation=activation)
        super().__init__(vocab, body, None, dropout=dropout)
