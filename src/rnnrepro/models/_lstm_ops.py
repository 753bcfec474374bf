"""Pointwise LSTM gate math for hand-written (fused) forward/backward recurrences.

Models whose recurrence is an LSTM with an unusual recurrent term (several cells, multiplicative
or multi-matrix transitions) run their time loop inside a ``torch.autograd.Function``: the
forward loop keeps what the backward needs, and the backward loop walks time in reverse. This
module holds the part that is the same for all of them: the gate nonlinearities and the
cell update, and their derivatives.

Layout. Fused kernels keep the gate pre-activations of one step as ``gates [B, 4, *, h]``:
gate-major, in the order ``GATE_ORDER = (o, i, f, g)`` (the three sigmoid gates first, so one
op activates them; ``i, f, g`` last, so one op scales them by the cell-state gradient). ``*``
are optional extra dims, e.g. S parallel cells: ``[B, 4, S, h]``. Parameters stay in PyTorch's
layout (cell-major blocks ``[i; f; g; o]``); ``fused_gate_index`` gives the row permutation from
PyTorch's layout to the fused one (apply it to weights and biases before the time loop).

Per step (forward), given activated gates o, i, f, g and the previous cell state c_prev:
    c = f * c_prev + i * g,   h = o * tanh(c).
Backward, with dh, dc the gradients w.r.t. (h, c) of this step:
    dc_total = dc + dh * o * (1 - tanh(c)^2)
    dG_o = dh * tanh(c) * o(1-o),  dG_i = dc_total * g * i(1-i)
    dG_f = dc_total * c_prev * f(1-f),  dG_g = dc_total * i * (1-g^2)
    dc_prev = dc_total * f   (summed by the caller over whatever shares c_prev)
Everything except the products with (dh, dc_total) is precomputed for all steps at once by
``lstm_backward_factors``, leaving three small ops per step in ``lstm_pointwise_backward``.
"""

from __future__ import annotations

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


def lstm_pointwise_forward(
    gates: Tensor, c_prev: Tensor, c: Tensor, tanh_c: Tensor, h: Tensor
) -> None:
    """One step of the LSTM pointwise update, written into preallocated outputs.

    gates:  [B, 4, *, h] pre-activations (``GATE_ORDER``); activated in place (kept for backward)
    c_prev: broadcastable to [B, *, h]
    c, tanh_c, h: [B, *, h] outputs (new cell state, its tanh, new hidden state)
    """
    sig, g = gates[:, :3], gates[:, 3]
    sig.sigmoid_()
    g.tanh_()
    o, i, f = sig.unbind(1)
    torch.mul(f, c_prev, out=c)
    c.addcmul_(i, g)
    torch.tanh(c, out=tanh_c)
    torch.mul(o, tanh_c, out=h)


def lstm_backward_factors(gates: Tensor, c_prev: Tensor, tanh_c: Tensor) -> tuple[Tensor, Tensor]:
    """Local derivatives of all steps at once (before the backward time loop).

    gates:  [T, B, 4, *, h] activated gates saved by the forward loop
    c_prev: broadcastable to [T, B, *, h], cell state each step started from
    tanh_c: [T, B, *, h] tanh of each step's new cell state
    Returns (jac [T, B, 4, *, h], q [T, B, *, h]) with, per gate, the factor that multiplies
    dh (gate o) or dc_total (gates i, f, g) to give the pre-activation gradient, and
    q = o * (1 - tanh_c^2) (the factor from dh to the cell state).
    """
    o, i, f, g = gates.unbind(2)
    jac = torch.empty_like(gates)
    sig = gates[:, :, :3]
    torch.mul(sig, sig, out=jac[:, :, :3])
    torch.sub(sig, jac[:, :, :3], out=jac[:, :, :3])  # σ' = σ(1-σ) for o, i, f
    jo, ji, jf, jg = jac.unbind(2)
    jo.mul_(tanh_c)
    ji.mul_(g)
    jf.mul_(c_prev)
    torch.addcmul(i, i * g, g, value=-1, out=jg)  # i * (1 - g^2)
    q = torch.addcmul(o, o * tanh_c, tanh_c, value=-1)
    return jac, q


def lstm_pointwise_backward(jac: Tensor, q: Tensor, dh: Tensor, dc: Tensor) -> None:
    """One backward step, in place: turns ``jac`` into dL/d(pre-activation gates).

    jac: [B, 4, *, h] this step's factors from ``lstm_backward_factors``; becomes dG
    q:   [B, *, h]    this step's q
    dh, dc: [B, *, h] gradients w.r.t. this step's (h, c); ``dc`` becomes dc_total, so the
            caller gets dc_prev as ``dc * f`` (f = activated forget gate).
    """
    dc.addcmul_(dh, q)
    jac[:, 1:].mul_(dc.unsqueeze(1))
    jac[:, 0].mul_(dh)
