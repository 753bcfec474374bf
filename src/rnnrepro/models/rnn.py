"""Vanilla (Elman, tanh) RNN language model (MODELS §0.1, seed 001 baseline).

Also defines ``EmbeddingLM``, the embedding -> recurrence -> dropout -> Linear(h, V) shell shared
by seed 001's language models (dropout on h before the output layer, seed 001 §5.3).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .base import RecurrentLM


class EmbeddingLM(RecurrentLM):
    """Token embedding, a recurrent body ``self.rnn`` (set by subclasses), dropout and decoder.

    ``self.rnn`` maps (x [T, B, e], state) -> (output [T, B, h], state).
    """

    rnn: nn.Module

    def __init__(self, vocab: list[str], embedding_dim: int, hidden_size: int, dropout: float):
        super().__init__()
        self.vocab_size = len(vocab)
        self.encoder = nn.Embedding(self.vocab_size, embedding_dim)
        self.drop = nn.Dropout(dropout)
        self.decoder = nn.Linear(hidden_size, self.vocab_size)
        # embedding and decoder init of pytorch/examples word_language_model (MODELS §0.4)
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, tokens: Tensor, state=None) -> tuple[Tensor, object]:
        x = self.encoder(tokens)  # [T, B, e]
        output, state = self.rnn(x, state)  # [T, B, h]
        return self.decoder(self.drop(output)), state  # [T, B, V]

    def recurrent_parameters(self) -> int:
        return sum(p.numel() for p in self.rnn.parameters())


class RNNLM(EmbeddingLM):
    """Stacked tanh RNN (``nn.RNN``, two bias vectors); state: h [num_layers, B, h]."""

    def __init__(
        self,
        vocab: list[str],
        embedding_dim: int,
        hidden_size: int,
        num_layers: int = 1,
        dropout: float = 0.0,
    ):
        super().__init__(vocab, embedding_dim, hidden_size, dropout)
        self.rnn = nn.RNN(embedding_dim, hidden_size, num_layers, nonlinearity="tanh")


def uniform_(tensor: Tensor, fan_in: int) -> Tensor:
    """PyTorch's default recurrent-weight init: U(-1/sqrt(fan_in), 1/sqrt(fan_in)), in place."""
    bound = fan_in**-0.5
    with torch.no_grad():
        return tensor.uniform_(-bound, bound)
