"""Dyck-RNN (docs/methods.md §5.1, multi_matrix §4.2): a linear RNN whose hidden state is a stack.

The hidden state holds m slots of size d (top = slot 0). Per step, with input embedding x_t:

    g_t = σ(W_proj x_t)                                  push ≈ 1 (open), pop ≈ 0 (close)
    h_t = g_t · [x_t; h_{t-1}[0:m-1]] + (1 - g_t) · [h_{t-1}[1:m]; 0]

i.e. W_hh(t) = g_t W1 + (1 - g_t) W2 with the fixed shift matrices W1 (push) and W2 (pop), and
W_hx = e_0 writing the pushed embedding into the top slot. The closing type is read from the top
slot: logits_t = A h_t[0] + b over the k bracket types.

Default: 1-d frozen embedding e("(a") = 1, e("(b") = 2, ..., closing brackets -1, specials 0 [A];
trainable parameters W_proj (1) + A (k) + b (k) = 5 for k = 2, for every m.
``trainable_embedding=True``: randomly initialised trainable embeddings of size d = slot_dim (hidden
size d·m), docs/methods.md §5.1's unfrozen variant.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from ..data.dyck import parse_bracket
from . import native
from .base import RecurrentLM


class DyckStackFunction(torch.autograd.Function):
    """The stack updates of all steps as one compiled loop each way (``native``).

    forward(x [T, B, d], gate [T, B], h0 [B, m, d]) returns the stacks [T, B, m, d];
    ``stack_updates`` is the Python loop it replaces (the fallback and the test oracle).
    """

    @staticmethod
    def forward(ctx, x, gate, h0):
        x, gate, h0 = x.contiguous(), gate.contiguous(), h0.contiguous()
        stacks = native.kernels().dyck_stack_forward(x, gate, h0)
        ctx.save_for_backward(x, gate, h0, stacks)
        return stacks

    @staticmethod
    @once_differentiable
    def backward(ctx, d_stacks):
        x, gate, h0, stacks = ctx.saved_tensors
        return tuple(
            native.kernels().dyck_stack_backward(d_stacks.contiguous(), x, gate, h0, stacks)
        )


def stack_updates(x: Tensor, gate: Tensor, h: Tensor) -> Tensor:
    """Stacks [T, B, m, d] after each step from x [T, B, d], gates [T, B] and h_0 [B, m, d]:
    h_t = g_t [x_t; h_{t-1}[0:m-1]] + (1 - g_t) [h_{t-1}[1:m]; 0]."""
    if native.use_native(x, gate, h) is not None:  # no matrix: compiled at every size
        return DyckStackFunction.apply(x, gate, h)
    stacks = []
    for x_t, g_t in zip(x.unsqueeze(2), gate[:, :, None, None], strict=True):
        pushed = torch.cat((x_t, h[:, :-1]), 1)
        popped = F.pad(h[:, 1:], (0, 0, 0, 1))
        h = torch.lerp(popped, pushed, g_t)  # g·pushed + (1 - g)·popped
        stacks.append(h)
    return torch.stack(stacks)


class DyckRNN(RecurrentLM):
    """Stack RNN over Dyck-k tokens [T, B]; logits [T, B, k] over closing types (a, b, ...).

    State: the stack h [B, m, d].
    """

    output = "close"

    def __init__(
        self,
        vocab: list[str],
        stack_depth: int,
        slot_dim: int = 1,
        trainable_embedding: bool = False,
    ):
        super().__init__()
        if slot_dim != 1 and not trainable_embedding:
            raise ValueError("the frozen hand-set embedding is 1-d: use slot_dim=1")
        brackets = [parse_bracket(tok) for tok in vocab]  # (is_open, type) or None
        num_types = sum(b is not None and b[0] for b in brackets)
        self.stack_depth, self.slot_dim = stack_depth, slot_dim
        if trainable_embedding:
            self.embedding = nn.Embedding(len(vocab), slot_dim)
        else:
            values = [0 if b is None else b[1] + 1 if b[0] else -1 for b in brackets]
            weight = torch.tensor(values, dtype=torch.float).unsqueeze(1)  # [V, 1]
            self.embedding = nn.Embedding.from_pretrained(weight, freeze=True)
        self.proj = nn.Linear(slot_dim, 1, bias=False)  # W_proj: the push/pop gate
        if not trainable_embedding:
            # [A] With opens > 0 > closes, only W_proj > 0 makes opens push; from W_proj < 0
            # training settles in a chance-level minimum (a stack of close brackets).
            nn.init.uniform_(self.proj.weight, 0.0, 1.0)
        self.readout = nn.Linear(slot_dim, num_types)  # top slot -> closing-type logits

    def forward(self, tokens: Tensor, state: Tensor | None = None) -> tuple[Tensor, Tensor]:
        x = self.embedding(tokens)  # [T, B, d]
        gates = torch.sigmoid(self.proj(x)).squeeze(2)  # [T, B]
        h = state
        if h is None:
            h = x.new_zeros(tokens.shape[1], self.stack_depth, self.slot_dim)  # [B, m, d]
        stacks = stack_updates(x, gates, h)
        return self.readout(stacks[:, :, 0]), stacks[-1]  # [T, B, k]

    def recurrent_parameters(self) -> int:
        return self.proj.weight.numel()
