"""Luong et al. (2015)'s attention-based encoder-decoder with LSTM or Major-Minor LSTM layers
(major_minor §V-D4, Tables XI-XII; docs/methods.md §12.7).

Source and target share one subword vocabulary (index 0 is ``<pad>``) and have an embedding
each. The encoder is a stack of layers over the source; the decoder a stack over the target with
input feeding: its first layer reads [h̃_{t-1}; e(y_t)], h̃ the previous attentional vector.
Global attention with the "general" score: a_t = softmax_s(h_t^T W_a h̄_s) over the (unpadded)
source states of the top encoder layer, c_t = Σ_s a_ts h̄_s, h̃_t = tanh(W_c [c_t; h_t]),
p(y_t) = softmax(W_s h̃_t). Every parameter starts uniform in ±0.1 (Luong's initialisation).

A layer is ``awd.MajorMinorLSTM`` (the language models' own): size L with Major proportion p is
a Major LSTM of round(p·L) units on the layer below and a Minor LSTM of the rest; every encoder
Minor reads the source embedding, every decoder Minor reads [h̃_{t-1}; e(y_t)] (§V-D4), and the
encoder and decoder layers of one depth have equal Major and Minor sizes, so that each branch
hands its final (h, c) to its decoder counterpart. p = 1 is a plain LSTM layer (the baseline).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from .awd import MajorMinorLSTM

PAD = 0


class LuongNMT(nn.Module):
    """Encoder-decoder over one shared vocabulary; ``forward(src, src_lengths, tgt_in)`` gives
    the target logits [T, B, V] (teacher forcing); ``encode`` and ``decode_step`` serve beam
    search. ``dropout`` is applied to every layer's input above the first and to h̃ (Zaremba
    et al.'s placement, which Luong et al. follow)."""

    def __init__(
        self,
        vocab: list[str],
        embedding_dim: int,
        layer_sizes: list[int],
        major_proportions: list[float] | None = None,
        dropout: float = 0.0,
        init_range: float = 0.1,
    ):
        super().__init__()
        proportions = major_proportions or [1.0] * len(layer_sizes)
        if len(proportions) != len(layer_sizes):
            raise ValueError(
                f"major_proportions {proportions} needs one entry per layer ({layer_sizes})"
            )
        V, e, top = len(vocab), embedding_dim, layer_sizes[-1]
        self.vocab_size, self.dropout = V, dropout
        self.src_embedding = nn.Embedding(V, e, padding_idx=PAD)
        self.tgt_embedding = nn.Embedding(V, e, padding_idx=PAD)
        feed = top + e  # [h̃_{t-1}; e(y_t)]
        below = [e, *layer_sizes[:-1]]
        self.encoder = nn.ModuleList(
            MajorMinorLSTM(n_in, e, size, p, 0.0)
            for n_in, size, p in zip(below, layer_sizes, proportions, strict=True)
        )
        self.decoder = nn.ModuleList(
            MajorMinorLSTM(feed if i == 0 else n_in, feed, size, p, 0.0)
            for i, (n_in, size, p) in enumerate(zip(below, layer_sizes, proportions, strict=True))
        )
        self.attention = nn.Linear(top, top, bias=False)  # W_a ("general")
        self.combine = nn.Linear(2 * top, top, bias=False)  # W_c
        self.generator = nn.Linear(top, V)  # W_s
        for parameter in self.parameters():
            nn.init.uniform_(parameter, -init_range, init_range)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def recurrent_parameters(self) -> int:
        """The parameters of the encoder's and decoder's recurrent layers."""
        layers = [*self.encoder, *self.decoder]
        return sum(p.numel() for layer in layers for p in layer.parameters())

    def set_epoch(self, epoch: int) -> None:
        """The training loop's per-epoch hook (no schedule of the model's own here)."""

    def _drop(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.dropout, self.training)

    def encode(self, src: Tensor, src_lengths: Tensor) -> tuple[Tensor, Tensor, list]:
        """Source states of the top layer [S, B, H], the source mask [B, S] (True at real
        tokens) and each layer's final (major, minor) states, from padded ``src`` [S, B]."""
        emb = self.src_embedding(src)
        lengths = src_lengths.cpu()

        def packed(x: Tensor) -> PackedSequence:
            return pack_padded_sequence(x, lengths, enforce_sorted=False)

        x, minor_x, finals = packed(emb), packed(emb), []
        for i, layer in enumerate(self.encoder):
            if i > 0:
                x = x._replace(data=self._drop(x.data))
            y, major_state = layer.major(x)
            minor_state = None
            if layer.minor is not None:
                y_minor, minor_state = layer.minor(minor_x)
                y = y._replace(data=torch.cat([y.data, y_minor.data], dim=-1))
            finals.append((major_state, minor_state))
            x = y
        states, _ = pad_packed_sequence(x, total_length=src.size(0))
        mask = src.ne(PAD).t()
        return states, mask, finals

    def attend(self, h: Tensor, states: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """h̃_t and a_t for decoder top states ``h`` [B, H] over ``states`` [S, B, H]."""
        scores = torch.einsum("bh,sbh->bs", self.attention(h), states)
        weights = F.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
        context = torch.einsum("bs,sbh->bh", weights, states)
        return torch.tanh(self.combine(torch.cat([context, h], dim=-1))), weights

    def decode_step(
        self, y: Tensor, feed: Tensor, state: list, states: Tensor, mask: Tensor
    ) -> tuple[Tensor, Tensor, list]:
        """One target step: log-probabilities [B, V] of the next token after ``y`` [B], the new
        attentional vector h̃ and the layers' states."""
        inputs = torch.cat([feed, self.tgt_embedding(y)], dim=-1).unsqueeze(0)  # [1, B, H+e]
        x, new_state = inputs, []
        for i, layer in enumerate(self.decoder):
            if i > 0:
                x = self._drop(x)
            x, layer_state = layer(x, inputs, state[i])
            new_state.append(layer_state)
        attentional, _ = self.attend(x[0], states, mask)
        attentional = self._drop(attentional)
        return F.log_softmax(self.generator(attentional), dim=-1), attentional, new_state

    def initial_feed(self, batch: int, device: torch.device) -> Tensor:
        return torch.zeros(batch, self.attention.in_features, device=device)

    def forward(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor:
        """Log-probabilities [T, B, V] of the target given ``tgt_in`` [T, B] (teacher forcing)."""
        states, mask, state = self.encode(src, src_lengths)
        feed = self.initial_feed(src.size(1), src.device)
        out = []
        for y in tgt_in:
            log_probs, feed, state = self.decode_step(y, feed, state, states, mask)
            out.append(log_probs)
        return torch.stack(out)
