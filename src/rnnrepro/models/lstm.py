"""Baseline LSTM language model (second_order_lstm §3.1, docs/methods.md §4.1), after
pytorch/examples."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .base import RNNModel


class LSTMBody(nn.Module):
    """LSTM layers as an ``RNNModel`` body: state (h, c), each [layers, B, h].

    Without ``dropouth`` one fused ``nn.LSTM`` and no dropout between layers (docs/methods.md §4.1);
    with it, one ``nn.LSTM`` per layer and dropout between them (AWD-LSTM's ``dropouth``). Both
    draw the same initial weights.
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int, dropouth: float):
        super().__init__()
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.dropouth = dropouth
        if dropouth and num_layers > 1:
            sizes = [input_size] + [hidden_size] * (num_layers - 1)
            self.layers = nn.ModuleList(nn.LSTM(n, hidden_size) for n in sizes)
        else:
            self.layers = nn.ModuleList([nn.LSTM(input_size, hidden_size, num_layers)])

    def forward(self, x: Tensor, state=None, tokens: Tensor | None = None):
        if len(self.layers) == 1:
            return self.layers[0](x, state)
        hs, cs = [], []
        for i, layer in enumerate(self.layers):
            if i > 0:
                x = F.dropout(x, self.dropouth, self.training)
            x, (h, c) = layer(
                x, None if state is None else (state[0][i : i + 1], state[1][i : i + 1])
            )
            hs.append(h)
            cs.append(c)
        return x, (torch.cat(hs), torch.cat(cs))

    def recurrent_parameters(self) -> int:
        """Σ over layers of 4h(in+h) + 4h: one bias vector per gate (second_order_lstm's convention;
        nn.LSTM itself holds two, b_ih and b_hh, so ``num_parameters`` counts 4h more per layer)."""
        e, h = self.input_size, self.hidden_size
        return sum(4 * h * (n_in + h) + 4 * h for n_in in [e] + [h] * (self.num_layers - 1))


class LSTMLM(RNNModel):
    """Embedding(V, e) -> [dropouti] -> LSTM(e, h, num_layers) -> [dropout] -> Linear(h, V)."""

    def __init__(
        self,
        vocab: list[str],
        embedding_dim: int,
        hidden_size: int,
        num_layers: int = 1,
        dropout: float = 0.0,
        dropouti: float = 0.0,
        dropouth: float = 0.0,
        dropoute: float = 0.0,
        tie_weights: bool = False,
    ):
        super().__init__(
            vocab,
            lambda n_in: LSTMBody(n_in, hidden_size, num_layers, dropouth),
            embedding_dim,
            dropout=dropout,
            dropouti=dropouti,
            dropoute=dropoute,
            tie_weights=tie_weights,
        )
        self.num_layers = num_layers
