"""AWD-LSTM language models (Merity et al. 2018), their mixture-of-softmaxes head (Yang et al.
2018) and Major-Minor LSTM layers (major_minor), docs/methods.md §12.

Every regulariser is a function of the forward pass, never a change of another module's
parameters: ``locked_dropout`` draws one mask per column and unit for the whole window;
``WeightDropLSTM`` runs its ``nn.LSTM`` (the fused kernel) through ``torch.func.functional_call``
with a dropped copy of ``weight_hh_l0``, so the parameter, its name and its gradient stay the
module's own (the in-place ``WeightDrop`` of salesforce/awd-lstm-lm breaks on PyTorch >= 1.4).

A layer of total size L with Major proportion p is a Major LSTM of round(p·L) units reading the
previous layer's output and a Minor LSTM of the rest reading the (dropped) embedding; its output
is their concatenation (p = 1: a plain LSTM layer). With ``experts`` > 0 the decoder is a mixture
of softmaxes and the model's "logits" are the mixture's log-probabilities (already normalised,
so cross-entropy on them is the mixture's NLL).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call
from torch.utils.checkpoint import checkpoint

from .base import RecurrentLM, embedding_dropout

MINOR_INPUTS = ("embedding", "previous")


def locked_dropout(x: Tensor, p: float, training: bool) -> Tensor:
    """Variational dropout of ``x`` [T, B, H]: one mask [1, B, H] shared over the T steps, kept
    units scaled by 1 / (1 - p) (AWD-LSTM's ``LockedDropout``)."""
    if not training or p == 0:
        return x
    mask = x.new_empty(1, x.size(1), x.size(2)).bernoulli_(1 - p).div_(1 - p)
    return x * mask


class WeightDropLSTM(nn.Module):
    """One-layer ``nn.LSTM`` with DropConnect on its recurrent matrix: a new mask on
    ``weight_hh_l0`` per forward call (per minibatch) while training."""

    def __init__(self, input_size: int, hidden_size: int, weight_drop: float):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size)
        self.hidden_size, self.weight_drop = hidden_size, weight_drop

    def forward(self, x: Tensor, state=None):
        if not (self.training and self.weight_drop):
            return self.lstm(x, state)
        dropped = F.dropout(self.lstm.weight_hh_l0, self.weight_drop, training=True)
        return functional_call(self.lstm, {"weight_hh_l0": dropped}, (x, state))


class MajorMinorLSTM(nn.Module):
    """A layer of ``size`` outputs: a Major LSTM of round(proportion · size) units on ``x`` and,
    if any units are left, a Minor LSTM on ``minor_x``; state (major (h, c), minor (h, c))."""

    def __init__(
        self,
        input_size: int,
        minor_input_size: int,
        size: int,
        proportion: float,
        weight_drop: float,
    ):
        super().__init__()
        major = round(proportion * size)
        if not 0 < major <= size:
            raise ValueError(f"Major proportion {proportion} of {size} units leaves no Major LSTM")
        self.major = WeightDropLSTM(input_size, major, weight_drop)
        self.minor = (
            WeightDropLSTM(minor_input_size, size - major, weight_drop) if major < size else None
        )
        self.size = size

    def forward(self, x: Tensor, minor_x: Tensor, state=None):
        major_state, minor_state = (None, None) if state is None else state
        y, major_state = self.major(x, major_state)
        if self.minor is None:
            return y, (major_state, None)
        y_minor, minor_state = self.minor(minor_x, minor_state)
        return torch.cat([y, y_minor], dim=-1), (major_state, minor_state)


# The experts' softmaxes are [steps, B, K, V]: K times a softmax's memory. They are computed a
# few steps at a time (at most this many elements) and, when training, recomputed in the
# backward pass instead of being kept (activation checkpointing): memory stays bounded and the
# working set fits in cache (2-5x faster on CPU at WikiText-2's vocabulary than one piece).
MIXTURE_CHUNK_ELEMENTS = 1 << 22


def _mixture(latent: Tensor, prior: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """log Σ_k π_k softmax(W latent_k + b): latent [t, B, K, e], prior π [t, B, K]."""
    probs = F.softmax(F.linear(latent, weight, bias), dim=-1)  # [t, B, K, V]
    mixed = (prior.unsqueeze(-2) @ probs).squeeze(-2)  # [t, B, V]
    return mixed.clamp_min(torch.finfo(mixed.dtype).tiny).log()


class MixtureOfSoftmaxes(nn.Module):
    """Yang et al.'s head: K experts' softmaxes over a shared (tied) decoder, mixed by a prior.

    prior π = softmax(W_p out); latent_k = tanh(W_l out + b_l)_k (locked dropout ``dropoutl``,
    one mask for the whole window); log P = log Σ_k π_k softmax(decoder(latent_k)) (MoS adds
    1e-8 inside the log; here only an underflow to 0 is clamped)."""

    def __init__(self, input_size: int, embedding_dim: int, experts: int, dropoutl: float):
        super().__init__()
        self.prior = nn.Linear(input_size, experts, bias=False)
        self.latent = nn.Linear(input_size, experts * embedding_dim)
        self.experts, self.embedding_dim, self.dropoutl = experts, embedding_dim, dropoutl

    def forward(self, output: Tensor, decoder: nn.Linear) -> Tensor:
        T, B, _ = output.shape
        latent = locked_dropout(torch.tanh(self.latent(output)), self.dropoutl, self.training)
        latent = latent.view(T, B, self.experts, self.embedding_dim)
        prior = F.softmax(self.prior(output), dim=-1)  # [T, B, K]
        steps = max(1, MIXTURE_CHUNK_ELEMENTS // (B * self.experts * decoder.out_features))
        pieces = []
        for start in range(0, T, steps):
            args = (latent[start : start + steps], prior[start : start + steps])
            args += (decoder.weight, decoder.bias)
            if torch.is_grad_enabled():
                pieces.append(checkpoint(_mixture, *args, use_reentrant=False))
            else:
                pieces.append(_mixture(*args))
        return torch.cat(pieces)


class AWDLSTMLM(RecurrentLM):
    """Embedding -> [dropoute, locked dropouti] -> layers (locked dropouth between) -> [locked
    dropout] -> tied decoder or mixture of softmaxes (docs/methods.md §12.1).

    ``layer_sizes`` are the layers' output sizes; ``major_proportions`` (default all 1: plain
    weight-dropped LSTMs, AWD-LSTM-MoS) split each into Major and Minor LSTMs; the Minor LSTMs
    read the dropped embedding (``minor_input="embedding"``, MMLM-1) or the previous layer's
    output (``"previous"``, MMLM-2). ``experts`` = 0 gives a plain softmax decoder.
    """

    def __init__(
        self,
        vocab: list[str],
        embedding_dim: int,
        layer_sizes: list[int],
        major_proportions: list[float] | None = None,
        minor_input: str = "embedding",
        experts: int = 0,
        dropout: float = 0.0,
        dropouth: float = 0.0,
        dropouti: float = 0.0,
        dropoute: float = 0.0,
        dropoutl: float = 0.0,
        weight_drop: float = 0.0,
        tie_weights: bool = True,
    ):
        super().__init__()
        proportions = major_proportions or [1.0] * len(layer_sizes)
        if len(proportions) != len(layer_sizes):
            raise ValueError(
                f"major_proportions {proportions} needs one entry per layer ({layer_sizes})"
            )
        if minor_input not in MINOR_INPUTS:
            raise ValueError(f"minor_input must be one of {MINOR_INPUTS}, not {minor_input!r}")
        V, e = len(vocab), embedding_dim
        self.vocab_size, self.embedding_dim, self.minor_input = V, e, minor_input
        self.encoder = nn.Embedding(V, e)
        inputs = [e, *layer_sizes[:-1]]
        self.layers = nn.ModuleList(
            MajorMinorLSTM(n_in, e if minor_input == "embedding" else n_in, size, p, weight_drop)
            for n_in, size, p in zip(inputs, layer_sizes, proportions, strict=True)
        )
        self.hidden_size = layer_sizes[-1]
        self.mos = MixtureOfSoftmaxes(self.hidden_size, e, experts, dropoutl) if experts else None
        self.decoder = nn.Linear(e if experts else self.hidden_size, V)
        self.dropout, self.dropouth, self.dropouti, self.dropoute = (
            dropout,
            dropouth,
            dropouti,
            dropoute,
        )
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        if tie_weights:
            if self.decoder.in_features != e:
                raise ValueError(
                    f"tie_weights needs a last layer of the embedding size ({e}) or a mixture "
                    f"of softmaxes, not {self.hidden_size}"
                )
            self.decoder.weight = self.encoder.weight
        else:
            nn.init.uniform_(self.decoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def forward_aux(self, tokens: Tensor, state=None) -> tuple:
        emb = embedding_dropout(self.encoder, tokens, self.dropoute, self.training)
        x = locked_dropout(emb, self.dropouti, self.training)
        embedded, states = x, []
        for i, layer in enumerate(self.layers):
            minor_x = embedded if self.minor_input == "embedding" else x
            raw, layer_state = layer(x, minor_x, None if state is None else state[i])
            states.append(layer_state)
            if i < len(self.layers) - 1:
                x = locked_dropout(raw, self.dropouth, self.training)
        output = locked_dropout(raw, self.dropout, self.training)
        logits = self.mos(output, self.decoder) if self.mos is not None else self.decoder(output)
        aux = {"output": output, "raw_output": raw, "losses": {}}
        return logits, states, aux

    def forward(self, tokens: Tensor, state=None) -> tuple[Tensor, list]:
        logits, state, _ = self.forward_aux(tokens, state)
        return logits, state

    def recurrent_parameters(self) -> int:
        """Parameters of the LSTMs (both biases each, as ``nn.LSTM`` holds them)."""
        return sum(p.numel() for p in self.layers.parameters())
