"""Shared interface of every recurrent model in the suite.

Every model maps a time-major batch of token ids to logits:

    logits, state = model(tokens, state=None)
    tokens: LongTensor [T, B]
    logits: FloatTensor [T, B, V]  when model.output == "vocab" (a language model)
            FloatTensor [T, B, k]  when model.output == "close" (a closing-bracket
                                   classifier over the k bracket types, e.g. Dyck-RNN)
    state:  model-specific recurrent state after the last step (detached by the caller
            when carried across stream batches); ``None`` in means a zero state.
"""

from __future__ import annotations

from torch import nn


class RecurrentLM(nn.Module):
    """Base class: subclasses implement ``forward`` and may override the hooks."""

    output: str = "vocab"

    def set_epoch(self, epoch: int) -> None:
        """Called by the training loop at the start of each epoch (0-based)."""

    def recurrent_parameters(self) -> int:
        """Number of parameters in the recurrent cell(s) only (seed 000's convention)."""
        raise NotImplementedError

    def num_parameters(self, trainable_only: bool = True) -> int:
        """All parameters (trainable ones by default)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not trainable_only)
