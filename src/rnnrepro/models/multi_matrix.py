"""Multi-matrix RNN and LSTM (mmRNN, mmLSTM; docs/methods.md §5.4), multi_matrix's proposed models.

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

from functools import partial

import torch
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from . import native
from .base import RNNModel
from .multiplicative import cell_backward_step, lstm_backward_factors, lstm_cell_forward
from .rnn import uniform_

# Up to this many elements (8 MB in float32), the backward precomputes every step's state
# Jacobian and the time loop is one baddbmm per step (small sizes, where the cost is per call).
JACOBIAN_MAX_ELEMENTS = 2**21
# Beyond that, up to this hidden size a group-major loop with few torch calls per step; above
# it (matmuls dominate) the plain step-by-step BPTT, which has the least memory traffic.
FEW_CALLS_MAX_HIDDEN = 64


class MultiMatrixRecurrence(torch.autograd.Function):
    """The recurrence of one layer over T steps (G groups, K choices, hidden size n).

    forward(x_pre [T, B, G·n], x_v [T, B, G·K], h0 [B, n], c0 [B, n] or None, v0 [B, G·K],
            choices [G, K, n, n], w_vh [G·K, n], w_vv [G·K, G·K] (block-diagonal over groups))
    returns h [T, B, n], v_T [B, G·K] and, for the LSTM (c0 given), c_T [B, n].

    On CPU at small sizes both loops run compiled (``native``). In Python, where at small sizes
    the cost is per torch call, the loops are short. Forward, per step: 6
    (mmRNN) / 11 (mmLSTM) calls on a work row copied to a history buffer: z_t = x_v_t +
    [h_{t-1} | V_{t-1}] W_z (one addmm), u_t = h_{t-1} [W_g[k]]ᵀ (one mm), v_t = softmax(z_t)
    written straight into V_t, pre_t = x_pre_t + V_t u_t (one baddbmm), then the cell. V_t
    [B, G, G·K] holds v_t block-diagonally (row g = v_t[g] in the columns of group g, zeros
    elsewhere), so that one bmm over the batch mixes every group's K products and [h_t | V_t]
    feeds z_{t+1} directly. Backward: precomputed state Jacobians (one baddbmm per step) while
    they fit in ``JACOBIAN_MAX_ELEMENTS``; else a group-major loop with few calls per step for
    hidden sizes up to ``FEW_CALLS_MAX_HIDDEN``; else the plain step-by-step BPTT.
    """

    @staticmethod
    def forward(ctx, x_pre, x_v, h0, c0, v0, choices, w_vh, w_vv):
        T, B, GK = x_v.shape
        G, K, n = choices.shape[:3]
        lstm = c0 is not None
        kernels = native.use_native(x_pre, x_v, choices, hidden_size=n)
        ctx.native = kernels is not None
        if kernels is not None:
            hs, vs, cs, acts, us = kernels.multi_matrix_forward(
                *(t.contiguous() for t in (x_pre, x_v, h0)),
                native.empty(h0) if c0 is None else c0.contiguous(),
                *(t.contiguous() for t in (v0, choices, w_vh, w_vv)),
            )
            ctx.save_for_backward(choices, w_vh, w_vv, hs, vs, cs, acts, us)
            return (hs[1:], vs[T]) if not lstm else (hs[1:], vs[T], cs[T])
        # One work row [h | V (G·G·K) | c | tanh(c) | gates (4n)] (LSTM; [h | V] for the RNN),
        # views built once, copied to history[t] after step t. V holds v block-diagonally
        # (zeros off the diagonal blocks); [h | V] is what z of the next step reads.
        sizes = (n, G * GK, *((n, n, G * n) if lstm else ()))
        row = x_pre.new_zeros(B, sum(sizes))
        history = x_pre.new_empty(T, B, row.shape[1])
        h, v_blocks, *cell = row.split(sizes, 1)
        state = row[:, : n + G * GK]
        v_blocks = v_blocks.view(B, G, GK)
        v = v_blocks.view(B, G, G, K).diagonal(0, 1, 2).transpose(1, 2)  # v_t [B, G, K]
        h.copy_(h0)
        v.copy_(v0.view(B, G, K))
        # z's weights on [h | V]: w_vhᵀ on h, and on V row g the rows of group g of w_vvᵀ
        w_z = x_pre.new_zeros(n + G * GK, GK)
        w_z[:n] = w_vh.t()
        w_z[n:].view(G, G, K, GK).diagonal(0, 0, 1).copy_(w_vv.t().view(G, K, GK).permute(1, 2, 0))
        w_u = choices.reshape(G * K * n, n).t()  # [n, G·K·n]
        z = x_pre.new_empty(B, G, K)
        u = x_pre.new_empty(B, G * K, n)
        steps = zip(
            x_v.unbind(0), x_pre.reshape(T, B, G, n).unbind(0), history.unbind(0), strict=True
        )
        if not lstm:
            h_3d = h.unsqueeze(1)  # pre_t, then h_t [B, 1, n]
            for x_v_t, x_pre_t, history_t in steps:
                torch.addmm(x_v_t, state, w_z, out=z.view(B, GK))
                torch.mm(h, w_u, out=u.view(B, G * K * n))
                torch.softmax(z, -1, out=v)
                torch.baddbmm(x_pre_t, v_blocks, u, out=h_3d).tanh_()
                history_t.copy_(row)
        else:
            c, tanh_c, gates = cell
            gates_3d = gates.view(B, G, n)
            views = (gates[:, : 3 * n], *gates_3d.unbind(1))
            c.copy_(c0)
            for x_v_t, x_pre_t, history_t in steps:
                torch.addmm(x_v_t, state, w_z, out=z.view(B, GK))
                torch.mm(h, w_u, out=u.view(B, G * K * n))
                torch.softmax(z, -1, out=v)
                torch.baddbmm(x_pre_t, v_blocks, u, out=gates_3d)
                lstm_cell_forward(*views, c, c, tanh_c, h)
                history_t.copy_(row)
        hs, v_all, *cell = history.split(sizes, 2)
        hs = torch.cat((h0.unsqueeze(0), hs))
        v_all = v_all.view(T, B, G, G, K).diagonal(0, 2, 3).transpose(2, 3).reshape(T, B, GK)
        vs = torch.cat((v0.unsqueeze(0), v_all))
        cs = acts = tanh_c = None
        if lstm:
            cs, tanh_c, acts = cell
            cs = torch.cat((c0.unsqueeze(0), cs))
        ctx.save_for_backward(choices, w_vh, w_vv, hs, vs, cs, acts, tanh_c)
        return (hs[1:], vs[T]) if not lstm else (hs[1:], vs[T], cs[T])

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_h, grad_v, grad_c=None):
        choices, w_vh, w_vv, hs, vs, *_ = ctx.saved_tensors
        d_pre, d_z, d_h0, d_c0, d_v0, d_u = _state_backward(ctx, grad_h, grad_v, grad_c)
        G, K, n = choices.shape[:3]
        T, B = grad_h.shape[:2]
        GK = G * K
        # weight gradients over all steps; d_pre [T, B, G, n], d_z [T, B, G·K]
        d_z_2d = d_z.reshape(T * B, GK)
        d_w_z = d_z_2d.t() @ torch.cat((hs[:-1], vs[:-1]), -1).view(T * B, n + GK)
        h_prev = hs[:-1].reshape(T * B, n)
        if d_u is not None:  # ∂u[g, k] = v[g, k] ∂pre[g], from the compiled loop
            d_choices = (d_u.view(T * B, GK * n).t() @ h_prev).view_as(choices)
        else:
            v_all = vs[1:].view(T * B, G, K)
            d_choices = torch.empty_like(choices)
            for g in range(G):
                weighted = v_all[:, g, :, None] * d_pre[:, :, g].reshape(T * B, 1, n)  # ∂u
                torch.mm(weighted.view(T * B, K * n).t(), h_prev, out=d_choices[g].view(K * n, n))
        return (
            d_pre.reshape(T, B, G * n),
            d_z_2d.view(T, B, GK),
            d_h0,
            d_c0,
            d_v0,
            d_choices,
            d_w_z[:, :n],
            d_w_z[:, n:],
        )


def _state_backward(ctx, grad_h, grad_v, grad_c):
    """The time loop of the backward: ∂pre [T, B, G, n], ∂z [T, B, G·K], ∂h_0, ∂c_0 (LSTM,
    else None), ∂v_0 and ∂u [T, B, G·K·n] (u[g, k] = W_g[k] h_{t-1}; None from Python); compiled
    (``native``) when the forward was, else the Python loop for the size (see
    ``MultiMatrixRecurrence``)."""
    if ctx.native:
        choices, w_vh, w_vv, hs, vs, cs, acts, us = ctx.saved_tensors
        lstm = grad_c is not None
        d_pre, d_z, d_h0, d_c0, d_v0, d_u = native.kernels().multi_matrix_backward(
            grad_h.contiguous(), grad_v.contiguous(),
            grad_c.contiguous() if lstm else native.empty(hs),
            choices.contiguous(), w_vh.contiguous(), w_vv.contiguous(), hs, vs, cs, acts, us,
        )  # fmt: skip
        d_pre = d_pre.view(*grad_h.shape[:2], choices.shape[0], -1)
        return d_pre, d_z, d_h0, d_c0 if lstm else None, d_v0, d_u
    saved = ctx.saved_tensors
    choices, cs = saved[0], saved[5]
    n, GK = choices.shape[2], choices.shape[0] * choices.shape[1]
    T, B = grad_h.shape[:2]
    S = (n if cs is None else 2 * n) + GK  # size of the recurrent state (h[, c], v)
    if T * B * S * S <= JACOBIAN_MAX_ELEMENTS:
        loop = _jacobian_backward
    elif n <= FEW_CALLS_MAX_HIDDEN:
        loop = _few_calls_backward
    else:
        loop = _loop_backward
    return *loop(*saved, grad_h, grad_v, grad_c), None


def _jacobian_backward(choices, w_vh, w_vv, hs, vs, cs, acts, tanh_c, grad_h, grad_v, grad_c):
    """BPTT through per-step Jacobians of the state d = [∂h; ∂c (LSTM); ∂v] (small sizes).

    Step t (state t-1 -> t) gives d_{t-1} = g_{t-1} + J_t d_t (g: gradients from the outputs),
    one baddbmm per step; J_t [S, S] per example is built for all steps in batched ops from
        ∂pre[g] = coef_c[g] ∂c + coef_h[g] ∂h,            ∂z = Σ (∂v + U ∂pre),  U[g, k] = u[g, k]ᵀ,
        Σ = blockdiag_g(diag(v_g) - v_g v_gᵀ),              u[g, k] = W_g[k] h_{t-1},
        ∂h_{t-1} = Σ_g M_gᵀ ∂pre[g] + W_vhᵀ ∂z,             M_g = Σ_k v[g, k] W_g[k],
        ∂c_{t-1} = coef_c[G] ∂c + coef_h[G] ∂h,            ∂v_{t-1} = W_vvᵀ ∂z.
    Returns ∂pre [T, B, G, n], ∂z [T, B, G·K], ∂h_0, ∂c_0 (LSTM), ∂v_0.
    """
    G, K, n = choices.shape[:3]
    T, B = grad_h.shape[:2]
    TB, GK, lstm = T * B, G * K, cs is not None
    N = 2 * n if lstm else n  # ∂h (and ∂c) part of the state
    S = N + GK
    if lstm:
        coef_c, coef_h = lstm_backward_factors(acts, cs, tanh_c, slot_major=False)
        coef = torch.cat((coef_h, coef_c), 3).view(TB, 5, N)  # per input unit of ∂h, ∂c
    else:
        coef = (1 - hs[1:] * hs[1:]).view(TB, 1, n)
    v = vs[1:].reshape(TB, G, K)
    u = (hs[:-1].reshape(TB, n) @ choices.view(GK * n, n).t()).view(TB, G, K, n)
    mixed = torch.bmm(v.view(TB * G, 1, K), u.view(TB * G, K, n)).view(TB, G, 1, n)  # Σ_k v u
    sigma_u = (u - mixed).mul_(v.unsqueeze(3))  # Σ U, per group [T·B, G, K, n]
    d_z = v.new_empty(TB, GK, S)  # ∂z / ∂[∂h, ∂c, ∂v]
    d_z_hc = d_z[:, :, :N].view(TB, G, K, N)
    torch.mul(sigma_u.repeat(1, 1, 1, N // n), coef[:, :G].unsqueeze(2), out=d_z_hc)
    d_z[:, :, N:] = 0
    sigma = (
        d_z[:, :, N:].view(TB, G, K, G, K).diagonal(0, 1, 3).permute(0, 3, 1, 2)
    )  # [.., G, K, K]
    sigma.copy_(torch.diag_embed(v) - v.unsqueeze(3) * v.unsqueeze(2))
    jac = v.new_zeros(T, B, S, S)
    jac_2d = jac.view(TB, S, S)
    # ∂h_{t-1} rows: Σ_g M_gᵀ ∂pre[g] = Σ_{g,k} v[g,k] W_g[k]ᵀ (coef[g] ⊙ ·), diagonal in the
    # input unit i, so one bmm with the input units as batch; then + W_vhᵀ ∂z
    a = (v.unsqueeze(3) * coef[:, :G].unsqueeze(2)).view(TB, GK, N)  # [T·B, G·K, N]
    w_in = choices.view(GK, n, n).transpose(0, 1)  # [i, G·K, j]
    if lstm:
        w_in = torch.cat((w_in, w_in))
    h_rows = torch.bmm(a.permute(2, 0, 1), w_in)  # [N, T·B, n]
    jac_2d[:, :n, :N] = h_rows.permute(1, 2, 0)
    jac_2d[:, :n].add_(torch.matmul(w_vh.t(), d_z))
    if lstm:  # ∂c_{t-1} rows: diagonal in ∂h and ∂c
        jac_2d[:, n:N, :n].diagonal(0, 1, 2).copy_(coef[:, G, :n])
        jac_2d[:, n:N, n:N].diagonal(0, 1, 2).copy_(coef[:, G, n:])
    jac_2d[:, N:] = torch.matmul(w_vv.t(), d_z)
    # the loop: d[t] = [∂h_t; ∂c_t; ∂v_t] for state t (t = 0: the initial state)
    d = v.new_empty(T + 1, B, S, 1)
    d[T, :, :n, 0] = grad_h[T - 1]
    if lstm:
        d[T, :, n:N, 0] = grad_c
    d[T, :, N:, 0] = grad_v
    g_out = v.new_zeros(T, B, S, 1)
    g_out[1:, :, :n, 0] = grad_h[:-1]
    steps = zip(g_out.unbind(0), jac.unbind(0), d[1:].unbind(0), d[:-1].unbind(0), strict=True)
    for g_t, jac_t, d_next, d_prev in reversed(list(steps)):
        torch.baddbmm(g_t, jac_t, d_next, out=d_prev)
    # gradients of every step from the states' gradients, in batched ops
    d_state = d[1:].view(TB, S)
    d_pre = (coef[:, :G] * d_state[:, None, :N]).view(TB, G, N // n, n).sum(2)  # [T·B, G, n]
    d_z_all = torch.bmm(d_z, d_state.unsqueeze(2))  # [T·B, G·K, 1]
    d0 = d[0, :, :, 0]
    d_c0 = d0[:, n:N] if lstm else None
    return d_pre.view(T, B, G, n), d_z_all.view(T, B, GK), d0[:, :n], d_c0, d0[:, N:]


def _few_calls_backward(choices, w_vh, w_vv, hs, vs, cs, acts, tanh_c, grad_h, grad_v, grad_c):
    """BPTT with precomputed pointwise factors, group-major buffers, no [S, S] matrices (for
    small hidden sizes beyond ``JACOBIAN_MAX_ELEMENTS``: 6 (mmRNN) / 9 (mmLSTM) calls per step).

    Per step: ∂pre_t from precomputed pointwise factors, p = W_g[k]ᵀ ∂pre_t[g] (one bmm over
    groups), ∂v_t = ∂v_t(from z_{t+1}) + p·h_{t-1}, ∂z_t (softmax backward), and one bmm of
    [v_t[g] | ∂z_t[g]] with [p; W_vh[g] W_vv[g]] gives Σ_k v p (to ∂h_{t-1}) and ∂z_t's
    contributions to ∂h_{t-1} and ∂v_{t-1}; the LSTM sums that over groups. Same returns as
    ``_jacobian_backward``.
    """
    G, K, n = choices.shape[:3]
    T, B = grad_h.shape[:2]
    GK, W = G * K, n + G * K
    lstm = cs is not None
    # pointwise factors, slot-major [T, slots, B, n]: ∂pre_t (and ∂c_{t-1}) =
    # e_t + coef_c ∂c_t + coef_h ∂h'_t, with ∂h'_t the part of ∂h_t from step t + 1
    if lstm:
        coef_c, coef_h = lstm_backward_factors(acts, cs, tanh_c, slot_major=True)
    else:
        coef_h = (1 - hs[1:] * hs[1:]).unsqueeze(1)
    e = coef_h * grad_h.unsqueeze(1)
    grads = torch.empty_like(e)  # grads[t] = [∂pre_t (G slots) | ∂c_{t-1} (LSTM)]
    # Per group and example, one bmm: [v_t | ∂z_t] (2K) @ [[p | 0]; [W_vh | W_vv]] (2K × W)
    # = [Σ_k v_t[k] p[k] + ∂z_t W_vh | ∂z_t W_vv], the group's share of [∂h'_{t-1} | ∂v_{t-1}]
    # (W_vh, W_vv: the group's rows), where p[k] = ∂pre_t[g] W_g[k] = ∂(W_g[k] h_{t-1}).
    mix_left = vs.new_empty(T, G, B, 2 * K)
    mix_left[:, :, :, :K] = vs[1:].view(T, B, G, K).transpose(1, 2)
    mix_right = vs.new_zeros(G, B, 2 * K, W)
    mix_right[:, :, K:, :n] = w_vh.view(G, 1, K, n)
    mix_right[:, :, K:, n:] = w_vv.view(G, 1, K, GK)
    w_p = choices.new_zeros(G, n, K, W)  # p (with zero columns) = ∂pre_t[g] @ w_p[g]
    w_p[..., :n] = choices.transpose(1, 2)
    w_p = w_p.view(G, n, K * W)
    p_out = mix_right.view(G, B, 2 * K * W)[:, :, : K * W]
    p = mix_right.view(G * B, 2 * K, W)[:, :K, :n]
    h_rep = hs[:-1].unsqueeze(1).expand(T, G, B, n).reshape(T, G * B, n, 1)
    mixed = vs.new_empty(G, B, W)
    d_v = vs.new_empty(G * B, K, 1)  # ∂v_t
    d_v_3d = d_v.view(G, B, K)
    d_z = vs.new_empty(T, G, B, K)
    if G == 1:  # [∂h'_{t-1} | ∂v_{t-1}] = mixed[0]
        d_h, d_v_in = mixed[:, :, :n], mixed[0, :, n:].unsqueeze(2)
        d_v_last = grad_v.view(B, K, 1)
    else:  # summed over groups; ∂v_{t-1} in group-major order
        summed = vs.new_empty(1, B, W)
        d_h, d_v_in = summed[:, :, :n], summed[0, :, n:].view(B, G, K).transpose(0, 1)
        d_v_last = grad_v.view(B, G, K).transpose(0, 1)
    steps = [
        e.unbind(0),
        coef_h.unbind(0),
        grads.unbind(0),
        grads[:, :G].unbind(0),
        h_rep.unbind(0),
        mix_left[:, :, :, :K].unbind(0),
        d_z.unbind(0),
        mix_left[:, :, :, K:].unbind(0),
        mix_left.view(T, G * B, 1, 2 * K).unbind(0),
        [d_h] * (T - 1) + [grad_h.new_zeros(1, B, n)],
        [d_v_in] * (T - 1) + [d_v_last],
    ]
    if lstm:
        steps.append(coef_c.unbind(0))
        steps.append([*grads[1:, 4:].unbind(0), grad_c.unsqueeze(0)])  # ∂c_t [1, B, n]
    mixed_3d, right = mixed.view(G * B, 1, W), mix_right.view(G * B, 2 * K, W)
    softmax_backward = torch.ops.aten._softmax_backward_data.out
    for e_t, ch, out, d_pre, h_prev, v, dz, dz_left, left, dh, dv_in, *c in reversed(
        list(zip(*steps, strict=True))
    ):
        if lstm:
            torch.addcmul(e_t, c[0], c[1], out=out)
            out.addcmul_(ch, dh)
        else:
            torch.addcmul(e_t, ch, dh, out=out)
        torch.bmm(d_pre, w_p, out=p_out)
        if G == 1:
            torch.baddbmm(dv_in, p, h_prev, out=d_v)
        else:
            torch.bmm(p, h_prev, out=d_v)
            d_v_3d.add_(dv_in)
        softmax_backward(d_v_3d, v, -1, v.dtype, grad_input=dz)  # needs a contiguous out
        dz_left.copy_(dz)
        torch.bmm(left, right, out=mixed_3d)
        if G > 1:
            torch.sum(mixed, 0, keepdim=True, out=summed)
    d_pre = grads[:, :G].transpose(1, 2)  # [T, B, G, n]
    d_v0 = d_v_in.reshape(G, B, K).transpose(0, 1).reshape(B, GK)
    d_c0 = grads[0, 4] if lstm else None
    return d_pre, d_z.transpose(1, 2), d_h.reshape(B, n).clone(), d_c0, d_v0


def _loop_backward(choices, w_vh, w_vv, hs, vs, cs, acts, tanh_c, grad_h, grad_v, grad_c):
    """Step-by-step BPTT for large sizes. Same returns as ``_jacobian_backward``."""
    G, K, n = choices.shape[:3]
    T, B = grad_h.shape[:2]
    # w_t[g] = [W_g[1]^T; ...; W_g[K]^T] [K·n, n] (bmm is fastest with it transposed)
    w_t = choices.transpose(2, 3).reshape(G, K * n, n)
    w_z = torch.cat((w_vh, w_vv), 1)  # [G·K, n + G·K]: z's weights on [h; v]
    d_pre = hs.new_empty(T, B, G * n)
    d_z = vs.new_empty(T, B, G * K)
    dh, dv, dc = torch.zeros_like(hs[0]), grad_v, grad_c
    for t in reversed(range(T)):
        dc = cell_backward_step(t, grad_h[t] + dh, dc, hs, cs, acts, tanh_c, out=d_pre[t])
        # p[g, b, k] = W_g[k]^T ∂pre_t[b, g]  [G, B, K, n]
        p = torch.bmm(d_pre[t].view(B, G, n).transpose(0, 1), w_t.mT).view(G, B, K, n)
        v = vs[t + 1].view(B, G, K)
        dv = dv.view(B, G, K) + (p @ hs[t].view(1, B, n, 1)).view(G, B, K).transpose(0, 1)
        dz = torch.mul(v, dv - (dv * v).sum(-1, keepdim=True), out=d_z[t].view(B, G, K))
        ds = dz.view(B, G * K) @ w_z  # [B, n + G·K]
        dh = (v.transpose(0, 1).unsqueeze(2) @ p).sum(0).view(B, n) + ds[:, :n]
        dv = ds[:, n:]
    return d_pre.view(T, B, G, n), d_z, dh, dc, dv


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
        self.hidden_size = hidden_size
        self.layers = nn.ModuleList(
            MultiMatrixLayer(input_size if i == 0 else hidden_size, hidden_size, choices, lstm)
            for i in range(num_layers)
        )

    def forward(
        self, x: Tensor, state: tuple | None = None, tokens: Tensor | None = None
    ) -> tuple[Tensor, tuple]:
        states = []
        for i, layer in enumerate(self.layers):
            x, s = layer(x, None if state is None else state[i])
            states.append(s)
        return x, tuple(states)


class MMRNNLM(RNNModel):
    """mmRNN language model."""

    lstm = False

    def __init__(
        self,
        vocab: list[str],
        embedding_dim: int,
        hidden_size: int,
        num_layers: int = 1,
        choices: int = 4,
        dropout: float = 0.0,
    ):
        body = partial(
            MultiMatrixRNN,
            hidden_size=hidden_size,
            num_layers=num_layers,
            choices=choices,
            lstm=self.lstm,
        )
        super().__init__(vocab, body, embedding_dim, dropout=dropout)


class MMLSTMLM(MMRNNLM):
    """mmLSTM language model (one key vector and choice set per gate)."""

    lstm = True
