"""LSTM gate math for hand-written (fused) forward/backward recurrences.

Models whose recurrence is an LSTM with an unusual recurrent term (several cells on one state,
multiplicative or multi-matrix transitions) run their time loop inside a
``torch.autograd.Function``. On CPU the cost of such a loop is the number of torch calls per
step, so this module keeps both loops short:

- forward: ``lstm_pointwise_forward`` is 6 ``out=``/in-place ops on a work buffer whose views
  (``gate_views``) are built once per sequence;
- backward: everything that does not depend on the incoming gradient is precomputed for all
  steps at once (``lstm_backward_coefficients``); per step, ``lstm_pointwise_backward`` is then
  two ops that give the pre-activation gate gradients and the gradient to c_{t-1}.

Views cost about as much as small ops, so loops should index only tensors that change per step
and reuse fixed work buffers (with views built once) for the rest.

Layout. Per step, gate pre-activations are ``[B, 4, S, h]``: gate-major in the order
``GATE_ORDER = (o, i, f, g)`` (the sigmoid gates first, so one op activates them), then S
cells that share the previous state (S = 1 for a plain LSTM: pass ``gates.unsqueeze(-2)``).
Parameters stay in PyTorch's layout (cell blocks ``[W_i; W_f; W_g; W_o]``); index them with
``fused_gate_index`` before the loop.

Math (per cell s, weight w_s = α_s mixes the cells' new states; w_s = 1 without mixing):
    c_s = f_s c_prev + i_s g_s,   h_s = o_s tanh(c_s),   h = Σ_s w_s h_s,   c = Σ_s w_s c_s
Given dh, dc (gradients w.r.t. the mixed h, c), with q_s = o_s (1 - tanh(c_s)^2):
    dc_s = w_s (dc + q_s dh)
    dG_o = w_s dh tanh(c_s) σ'(o_s),  dG_i = dc_s g_s σ'(i_s)
    dG_f = dc_s c_prev σ'(f_s),       dG_g = dc_s i_s (1 - g_s^2)
    dc_prev = Σ_s f_s dc_s
All of these are linear in (dh, dc) elementwise, so per step
    [dG (4·S slots), dc_prev (1 slot)] = coef_c * dc + coef_h * dh      each [B, 4S+1, h].
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

GATE_ORDER = ("o", "i", "f", "g")
_TORCH_GATE_ORDER = ("i", "f", "g", "o")


def fused_gate_index(hidden_size: int, cells: int = 1) -> Tensor:
    """Row index mapping PyTorch-stacked LSTM weights to the fused layout.

    ``weight[fused_gate_index(h, S)]`` turns a ``[S·4h, ·]`` matrix made of S cell blocks (each
    ``[W_i; W_f; W_g; W_o]``, as ``nn.LSTM``/``nn.LSTMCell`` store them) into ``[4·S·h, ·]`` rows
    ordered (gate in ``GATE_ORDER``, cell, unit); same for bias vectors.
    """
    h = hidden_size
    rows = [
        s * 4 * h + _TORCH_GATE_ORDER.index(gate) * h + torch.arange(h)
        for gate in GATE_ORDER
        for s in range(cells)
    ]
    return torch.cat(rows)


class GateViews(NamedTuple):
    """Views of one step's gates ``[B, 4, S, h]``."""

    sigmoid: Tensor  # [B, 3, S, h]: o, i, f
    o: Tensor  # [B, S, h]
    i: Tensor
    f: Tensor
    g: Tensor


def gate_views(gates: Tensor) -> GateViews:
    """Views of one step's gates [B, 4, S, h]; build them once for a reused work buffer."""
    o, i, f, g = gates.unbind(1)
    return GateViews(gates[:, :3], o, i, f, g)


def lstm_pointwise_forward(
    gates: GateViews,
    c_prev: Tensor,
    c: Tensor,
    tanh_c: Tensor,
    h: Tensor,
    g_mask: Tensor | None = None,
) -> None:
    """One step of the LSTM cell update, into preallocated outputs.

    gates:  views of this step's pre-activations [B, 4, S, h]; activated in place
    c_prev: [B, 1, h] (shared by the S cells) or [B, S, h]
    c, tanh_c, h: [B, S, h] outputs: new cell states, their tanh, new hidden states
    g_mask: [B, 1, h] dropout mask (0 or 1/(1-p)) on the candidate g (recurrent dropout of
            Semeniuta et al. 2016); the gates then hold the dropped candidate
    """
    gates.sigmoid.sigmoid_()
    gates.g.tanh_()
    if g_mask is not None:
        gates.g.mul_(g_mask)
    torch.mul(gates.f, c_prev, out=c)
    c.addcmul_(gates.i, gates.g)
    torch.tanh(c, out=tanh_c)
    torch.mul(gates.o, tanh_c, out=h)


def lstm_backward_coefficients(
    gates: Tensor,
    c_prev: Tensor,
    tanh_c: Tensor,
    weights: Tensor | None = None,
    g_mask: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Coefficients of the backward step for all steps at once (see the module docstring).

    gates:   [T, B, 4, S, h] activated gates
    c_prev:  [T, B, 1, h] or [T, B, S, h], cell state each step started from
    tanh_c:  [T, B, S, h] tanh of the cells' new cell states
    weights: [T, B, S] mixing weights of the cells (None: a single unmixed cell, S = 1)
    g_mask:  [T, B, 1, h] the candidate's dropout mask, if any (``gates`` then hold the dropped
             candidate g̃ = m g, whose slope is m (1 - g²) = m - g̃² / m, 0 where m = 0)
    Returns coef_c, coef_h, each [T, B, 4S+1, h], the factors of dc and dh: slots 0..4S-1 give
    dG in the gates' layout (gate-major, ``GATE_ORDER``), slot 4S gives dc_prev.
    """
    T, B, _, S, h = gates.shape
    o, i, f, g = gates.unbind(2)
    coef_c = gates.new_empty(T, B, 4 * S + 1, h)
    coef_h = gates.new_empty(T, B, 4 * S + 1, h)
    jac = coef_h[:, :, : 4 * S].view(T, B, 4, S, h)  # built in place, then split into c / h
    # each gate's partner in the cell update (o-tanh(c), i-g, f-c_prev, g-i) times its slope
    torch.stack([tanh_c, g, c_prev.expand_as(f), i], dim=2, out=jac)
    slope = gates * gates
    torch.sub(gates, slope, out=slope)  # σ' = σ - σ² for o, i, f
    torch.mul(g, g, out=slope[:, :, 3]).neg_().add_(1)  # tanh' = 1 - g² for g
    if g_mask is not None:
        kept = g_mask > 0
        slope_g = torch.where(kept, g_mask - g * g / g_mask.masked_fill(~kept, 1.0), 0.0)
        slope[:, :, 3] = slope_g
    jac.mul_(slope)
    forget = f
    if weights is not None:
        w = weights.unsqueeze(-1).expand_as(f).contiguous()  # [T, B, S, h]
        jac.mul_(w.unsqueeze(2))
        forget = f * w
    q = (1 - tanh_c * tanh_c).mul_(o)  # dc_s/dh through h_s = o tanh(c_s)
    coef_c[:, :, :S] = 0  # gate o does not see dc
    coef_c[:, :, S : 4 * S] = coef_h[:, :, S : 4 * S]
    coef_h[:, :, S : 4 * S].view(T, B, 3, S, h).mul_(q.unsqueeze(2))
    torch.sum(forget, 2, out=coef_c[:, :, 4 * S])
    torch.sum(forget * q, 2, out=coef_h[:, :, 4 * S])
    return coef_c, coef_h


def lstm_pointwise_backward(
    coef_c: Tensor, coef_h: Tensor, dc: Tensor, dh: Tensor, out: Tensor
) -> None:
    """One backward step: out [B, 4S+1, h] = coef_c * dc + coef_h * dh (dc, dh [B, 1, h]).

    ``out[:, :4S]`` is dL/d(pre-activation gates) of this step, ``out[:, 4S]`` the gradient
    that flows to c_{t-1} through the cells (add it to whatever else reaches c_{t-1}).
    """
    torch.mul(coef_c, dc, out=out)
    out.addcmul_(coef_h, dh)
