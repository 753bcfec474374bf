"""Shared interface of every recurrent model in the suite, and the one language-model shell.

Every model maps a time-major batch of token ids to logits:

    logits, state = model(tokens, state=None)
    tokens: LongTensor [T, B]
    logits: FloatTensor [T, B, V]  when model.output == "vocab" (a language model)
            FloatTensor [T, B, k]  when model.output == "close" (a closing-bracket
                                   classifier over the k bracket types, e.g. Dyck-RNN)
    state:  model-specific recurrent state after the last step (detached by the caller
            when carried across stream batches); ``None`` in means a zero state.

Language models are ``RNNModel``s (after pytorch/examples' word_language_model): an embedding
(or none: one-hot inputs), a recurrent *body*, dropouts with AWD-LSTM's names and a decoder.
"""

from __future__ import annotations

from collections.abc import Callable

import torch.nn.functional as F
from torch import Tensor, nn


class RecurrentLM(nn.Module):
    """Base class: subclasses implement ``forward`` and may override the hooks."""

    output: str = "vocab"

    def forward_aux(self, tokens: Tensor, state=None) -> tuple:
        """``(logits, state, aux)``: ``forward`` plus the auxiliary outputs that procedures turn
        into loss terms (``rnnrepro.procedures.Procedure.objective``): ``output`` (the dropped
        output fed to the decoder, for AR), ``raw_output`` (undropped, for TAR) and ``losses``
        (name -> scalar term the model adds itself). None here."""
        logits, state = self(tokens, state)
        return logits, state, {}

    def set_epoch(self, epoch: int) -> None:
        """Called by the training loop at the start of each epoch (0-based)."""

    def set_hard(self, hard: bool) -> None:
        """Test-time argmax of a soft choice (the attention LSTM's "arbitrarily low"
        temperature, second_order_lstm); no-op for models without one."""

    def recurrent_parameters(self) -> int:
        """Number of parameters in the recurrent cell(s) only (second_order_lstm's convention)."""
        raise NotImplementedError

    def num_parameters(self, trainable_only: bool = True) -> int:
        """All parameters (trainable ones by default)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not trainable_only)


def embedding_dropout(embedding: nn.Embedding, tokens: Tensor, p: float, training: bool) -> Tensor:
    """Embedding lookup with whole rows (word types) dropped with probability ``p`` and the kept
    rows scaled by 1 / (1 - p) (AWD-LSTM's ``dropoute``); a plain lookup when not training."""
    if not training or p == 0:
        return embedding(tokens)
    weight = embedding.weight
    mask = weight.new_empty(weight.shape[0], 1).bernoulli_(1 - p) / (1 - p)
    return F.embedding(tokens, weight * mask, embedding.padding_idx)


class RNNModel(RecurrentLM):
    """encoder -> [dropoute, dropouti] -> body -> [dropout] -> decoder.

    ``make_body(input_size)`` builds the recurrent body, a module mapping ``(x, state, tokens)``
    to ``(output [T, B, h], state)`` (optionally a third item: a dict of auxiliary outputs,
    e.g. ``losses`` or a policy's ``action_log_prob``, merged into ``forward_aux``'s). ``x`` is
    the dropped embedding [T, B, e], or the token ids when ``embedding_dim`` is None (one-hot
    inputs: the body does its own lookups). Modules are built in the order encoder,
    body, decoder; the encoder and decoder weights are then drawn from U(±0.1), the decoder bias
    is 0 (docs/methods.md §5.2); with ``tie_weights`` the decoder's weight is the embedding. The
    body sets ``hidden_size`` and may define ``recurrent_parameters`` and ``set_epoch``.
    """

    def __init__(
        self,
        vocab: list[str],
        make_body: Callable[[int], nn.Module],
        embedding_dim: int | None,
        dropout: float = 0.0,
        dropouti: float = 0.0,
        dropoute: float = 0.0,
        tie_weights: bool = False,
    ):
        super().__init__()
        V = len(vocab)
        self.vocab_size, self.embedding_dim = V, embedding_dim
        self.encoder = nn.Embedding(V, embedding_dim) if embedding_dim else None
        self.body = make_body(embedding_dim or V)
        self.hidden_size = self.body.hidden_size
        self.decoder = nn.Linear(self.hidden_size, V)
        self.dropouti, self.dropout, self.dropoute = (
            nn.Dropout(dropouti),
            nn.Dropout(dropout),
            dropoute,
        )
        if self.encoder is not None:
            nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        if tie_weights:  # the decoder's weight is the embedding (Inan et al.; needs h = e)
            if self.encoder is None or self.hidden_size != embedding_dim:
                raise ValueError(
                    f"tie_weights needs an embedding of the body's output size "
                    f"({self.hidden_size}), not {embedding_dim}"
                )
            self.decoder.weight = self.encoder.weight
        else:
            nn.init.uniform_(self.decoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def embed(self, tokens: Tensor) -> Tensor:
        """The body's input for ``tokens``: dropped embeddings, or the ids themselves."""
        if self.encoder is None:
            return tokens
        x = embedding_dropout(self.encoder, tokens, self.dropoute, self.training)
        return self.dropouti(x)

    def forward_aux(self, tokens: Tensor, state=None) -> tuple:
        out = self.body(self.embed(tokens), state, tokens)
        raw, state, extra = out if len(out) == 3 else (*out, {})
        output = self.dropout(raw)
        aux = {"output": output, "raw_output": raw, "losses": {}, **extra}
        return self.decoder(output), state, aux

    def forward(self, tokens: Tensor, state=None) -> tuple[Tensor, object]:
        logits, state, _ = self.forward_aux(tokens, state)
        return logits, state

    @property
    def temperature(self) -> float | None:
        """The body's softmax temperature, if it has one (attention LSTM)."""
        return getattr(self.body, "temperature", None)

    def set_epoch(self, epoch: int) -> None:
        if hasattr(self.body, "set_epoch"):
            self.body.set_epoch(epoch)

    def set_hard(self, hard: bool) -> None:
        if hasattr(self.body, "hard"):
            self.body.hard = hard

    def recurrent_parameters(self) -> int:
        """The body's own count when it defines one, else all of its parameters."""
        if hasattr(self.body, "recurrent_parameters"):
            return self.body.recurrent_parameters()
        return sum(p.numel() for p in self.body.parameters())


def map_state(fn: Callable[[Tensor], Tensor], state):
    """``fn`` applied to every tensor of a (nested tuple/list) recurrent state; None stays."""
    if isinstance(state, Tensor):
        return fn(state)
    if isinstance(state, (tuple, list)):
        return type(state)(map_state(fn, s) for s in state)
    return state
