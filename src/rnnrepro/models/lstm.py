"""Baseline LSTM language model (seed 000 §3.1, MODELS.md §1.1), after pytorch/examples."""

from __future__ import annotations

from torch import Tensor, nn

from .base import RecurrentLM


class LSTMLM(RecurrentLM):
    """Embedding(V, e) -> [dropout] -> nn.LSTM(e, h, num_layers) -> dropout -> Linear(h, V).

    No dropout between LSTM layers (MODELS.md §0.3). State: (h, c), each [num_layers, B, h].
    """

    def __init__(
        self,
        vocab: list[str],
        embedding_dim: int,
        hidden_size: int,
        num_layers: int = 1,
        dropout: float = 0.0,
        dropouti: float = 0.0,
    ):
        super().__init__()
        V = len(vocab)
        self.embedding_dim, self.hidden_size, self.num_layers = (
            embedding_dim,
            hidden_size,
            num_layers,
        )
        self.encoder = nn.Embedding(V, embedding_dim)
        self.dropouti = nn.Dropout(dropouti)
        self.rnn = nn.LSTM(embedding_dim, hidden_size, num_layers)
        self.dropout = nn.Dropout(dropout)
        self.decoder = nn.Linear(hidden_size, V)
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def forward(
        self, tokens: Tensor, state: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """tokens [T, B] -> logits [T, B, V], state (h, c) [num_layers, B, h]."""
        x = self.dropouti(self.encoder(tokens))  # [T, B, e]
        output, state = self.rnn(x, state)  # [T, B, h]
        return self.decoder(self.dropout(output)), state

    def recurrent_parameters(self) -> int:
        """Σ over layers of 4h(in+h) + 4h: one bias vector per gate (seed 000's convention;
        nn.LSTM itself holds two, b_ih and b_hh, so ``num_parameters`` counts 4h more per layer)."""
        e, h = self.embedding_dim, self.hidden_size
        return sum(4 * h * (n_in + h) + 4 * h for n_in in [e] + [h] * (self.num_layers - 1))
