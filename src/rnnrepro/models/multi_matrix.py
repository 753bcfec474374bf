"""Multi-matrix RNN and LSTM (mmRNN, mmLSTM; MODELS §2.3-2.5), seed 001's proposed models.

Each of G groups (G = 1 for the mmRNN; G = 4 for the mmLSTM, one per gate i, f, o, g) has K
choice matrices W_g[k] ∈ R^{n×n} and a key vector v_g ∈ R^K (v_0 uniform):

    v_t   = softmax(W_proj [v_{t-1}; h_{t-1}; x_t])          W_proj ∈ R^{K×(K+n+e)}, no bias
    pre_t = Σ_k v_t[k] W[k] h_{t-1} + W_hx x_t + b
    mmRNN:  h_t = tanh(pre_t);   mmLSTM: LSTM gates over the four groups' pre-activations

Per-example matrices Σ_k v[k] W[k] (B×n×n) are never formed (§2.5): h_{t-1} is multiplied by all
K·G matrices in one matmul and the results are mixed by v. The recurrence is one autograd Function
with a hand-written BPTT loop; input projections (W_hx x, the x-slice of W_proj) are matmuls over
all steps, and the weight gradients are matmuls over all steps after the backward loop.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from .multiplicative import cell_step, cell_step_backward
from .rnn import EmbeddingLM, uniform_


class MultiMatrixRecurrence(torch.autograd.Function):
    """The recurrence of one layer over T steps (G groups, K choices, hidden size n).

    forward(x_pre [T, B, G·n], x_v [T, B, G·K], h0 [B, n], c0 [B, n] or None, v0 [B, G·K],
            choices [G, K, n, n], w_vh [G·K, n], w_vv [G·K, G·K] (block-diagonal over groups))
    returns h [T, B, n], v_T [B, G·K] and, for the LSTM (c0 given), c_T [B, n].
    """

    @staticmethod
    def forward(ctx, x_pre, x_v, h0, c0, v0, choices, w_vh, w_vv):
        T, B, GK = x_v.shape
        G, K, n = choices.shape[:3]
        hs = x_pre.new_empty(T + 1, B, n)
        vs = x_pre.new_empty(T + 1, B, GK)
        hs[0], vs[0] = h0, v0
        cs = acts = None
        if c0 is not None:
            cs = x_pre.new_empty(T + 1, B, n)
            cs[0] = c0
            acts = torch.empty_like(x_pre)
        w_all = choices.reshape(G * K * n, n).t()  # [n, G·K·n]
        w_vh_t, w_vv_t = w_vh.t(), w_vv.t()
        for t in range(T):
            u = torch.mm(hs[t], w_all).view(B * G, K, n)  # W_g[k] h_{t-1}
            z = torch.addmm(x_v[t], hs[t], w_vh_t).addmm_(vs[t], w_vv_t)  # [B, G·K]
            v = torch.softmax(z.view(B, G, K), -1, out=vs[t + 1].view(B, G, K))
            rec = torch.bmm(v.view(B * G, 1, K), u).view(B, G * n)  # Σ_k v[k] W_g[k] h_{t-1}
            cell_step(rec.add_(x_pre[t]), t, hs, cs, acts)
        ctx.save_for_backward(choices, w_vh, w_vv, hs, vs, cs, acts)
        return (hs[1:], vs[T]) if cs is None else (hs[1:], vs[T], cs[T])

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_h, grad_v, grad_c=None):
        choices, w_vh, w_vv, hs, vs, cs, acts = ctx.saved_tensors
        G, K, n = choices.shape[:3]
        T, B = grad_h.shape[:2]
        # w_t[g] = [W_g[1]^T; ...; W_g[K]^T] [K·n, n] (bmm is fastest with it transposed)
        w_t = choices.transpose(2, 3).reshape(G, K * n, n)
        w_z = torch.cat((w_vh, w_vv), 1)  # [G·K, n + G·K]: z's weights on [h; v]
        d_pre = hs.new_empty(T, B, G * n)
        d_z = vs.new_empty(T, B, G * K)
        dh, dv, dc = torch.zeros_like(hs[0]), grad_v, grad_c
        for t in reversed(range(T)):
            dc = cell_step_backward(t, grad_h[t] + dh, dc, hs, cs, acts, out=d_pre[t])
            # p[g, b, k] = W_g[k]^T ∂pre_t[b, g]  [G, B, K, n]
            p = torch.bmm(d_pre[t].view(B, G, n).transpose(0, 1), w_t.mT).view(G, B, K, n)
            v = vs[t + 1].view(B, G, K)
            dv = dv.view(B, G, K) + (p @ hs[t].view(1, B, n, 1)).view(G, B, K).transpose(0, 1)
            dz = torch.mul(v, dv - (dv * v).sum(-1, keepdim=True), out=d_z[t].view(B, G, K))
            ds = dz.view(B, G * K) @ w_z  # [B, n + G·K]
            dh = (v.transpose(0, 1).unsqueeze(2) @ p).sum(0).view(B, n) + ds[:, :n]
            dv = ds[:, n:]
        # weight gradients over all steps
        d_w_z = d_z.flatten(0, 1).t() @ torch.cat((hs[:-1], vs[:-1]), -1).flatten(0, 1)
        h_prev = hs[:-1].flatten(0, 1)  # [T·B, n]
        d_pre_g = d_pre.view(T * B, G, n)
        v_all = vs[1:].view(T * B, G, K)
        d_choices = torch.empty_like(choices)
        for g in range(G):
            for k in range(K):
                torch.mm((d_pre_g[:, g] * v_all[:, g, k, None]).t(), h_prev, out=d_choices[g, k])
        return d_pre, d_z, dh, dc, dv, d_choices, d_w_z[:, :n], d_w_z[:, n:]


class MultiMatrixLayer(nn.Module):
    """One mmRNN (lstm=False) or mmLSTM (lstm=True) layer over x [T, B, e].

    State: (h, v) or, for the mmLSTM, (h, c, v); h, c [B, n], v [B, G·K].
    Parameters: G [K n² + n e + n + K (K + n + e)].
    """

    def __init__(self, input_size: int, hidden_size: int, choices: int = 4, lstm: bool = False):
        super().__init__()
        n, K = hidden_size, choices
        G = 4 if lstm else 1
        self.hidden_size, self.groups, self.num_choices, self.lstm = n, G, K, lstm
        self.input = nn.Linear(input_size, G * n)  # W_hx, b (all groups)
        self.choices = nn.Parameter(uniform_(torch.empty(G, K, n, n), n))  # W_g[k]
        # W_proj = [W_vv | W_vh | W_vx] per group, initialised like one nn.Linear(K + n + e, K)
        fan_in = K + n + input_size
        self.proj_v = nn.Parameter(uniform_(torch.empty(G, K, K), fan_in))
        self.proj_h = nn.Parameter(uniform_(torch.empty(G * K, n), fan_in))
        self.proj_x = nn.Linear(input_size, G * K, bias=False)
        uniform_(self.proj_x.weight, fan_in)

    def forward(self, x: Tensor, state: tuple[Tensor, ...] | None = None):
        if state is None:
            B = x.shape[1]
            h0 = x.new_zeros(B, self.hidden_size)
            v0 = x.new_full((B, self.groups * self.num_choices), 1 / self.num_choices)
            state = (h0, h0, v0) if self.lstm else (h0, v0)
        h0, c0, v0 = state if self.lstm else (state[0], None, state[1])
        w_vv = torch.block_diag(*self.proj_v)  # [G·K, G·K]
        h, v, *c = MultiMatrixRecurrence.apply(
            self.input(x), self.proj_x(x), h0, c0, v0, self.choices, self.proj_h, w_vv
        )
        return h, (h[-1], *c, v)


class MultiMatrixRNN(nn.Module):
    """Stack of multi-matrix layers; layer l > 1 reads layer l-1's h. State: tuple per layer."""

    def __init__(
        self, input_size: int, hidden_size: int, num_layers: int, choices: int, lstm: bool
    ):
        super().__init__()
        self.layers = nn.ModuleList(
            MultiMatrixLayer(input_size if i == 0 else hidden_size, hidden_size, choices, lstm)
            for i in range(num_layers)
        )

    def forward(self, x: Tensor, state: tuple | None = None) -> tuple[Tensor, tuple]:
        states = []
        for i, layer in enumerate(self.layers):
            x, s = layer(x, None if state is None else state[i])
            states.append(s)
        return x, tuple(states)


class MMRNNLM(EmbeddingLM):
    """mmRNN language model."""

    def __init__(
        self,
        vocab: list[str],
        embedding_dim: int,
        hidden_size: int,
        num_layers: int = 1,
        choices: int = 4,
        dropout: float = 0.0,
    ):
        super().__init__(vocab, embedding_dim, hidden_size, dropout)
        self.rnn = MultiMatrixRNN(embedding_dim, hidden_size, num_layers, choices, lstm=False)


class MMLSTMLM(EmbeddingLM):
    """mmLSTM language model (one key vector and choice set per gate)."""

    def __init__(
        self,
        vocab: list[str],
        embedding_dim: int,
        hidden_size: int,
        num_layers: int = 1,
        choices: int = 4,
        dropout: float = 0.0,
    ):
        super().__init__(vocab, embedding_dim, hidden_size, dropout)
        self.rnn = MultiMatrixRNN(embedding_dim, hidden_size, num_layers, choices, lstm=True)
