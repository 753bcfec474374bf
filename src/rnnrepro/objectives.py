"""Training / evaluation objectives: the single definition of every loss in the suite."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def sequence_loss(
    logits: torch.Tensor,
    targets: torch.Tensor,
    output: str,
    pad_id: int,
    close_type: torch.Tensor | None = None,
) -> tuple[torch.Tensor, int]:
    """Summed NLL (nats, 0-d tensor with grad) and the number of scored targets.

    - ``output == "vocab"``: logits [T, B, V]; cross-entropy over every non-pad target.
    - ``output == "close"``: logits [T, B, k] over the closing-bracket types; cross-entropy
      against ``close_type[targets]`` at the positions whose target is a closing bracket
      (``close_type``: LongTensor [V], -1 for tokens that are not closing brackets).
    """
    if output == "vocab":
        flat_targets = targets.reshape(-1)
        loss = F.cross_entropy(
            logits.reshape(-1, logits.size(-1)), flat_targets, ignore_index=pad_id, reduction="sum"
        )
        return loss, int((flat_targets != pad_id).sum())
    if output == "close":
        if close_type is None:
            raise ValueError('output "close" needs close_type')
        gold = close_type.to(targets.device)[targets]
        scored = gold >= 0
        loss = F.cross_entropy(logits[scored], gold[scored], reduction="sum")
        return loss, int(scored.sum())
    raise ValueError(f'unknown output {output!r} (expected "vocab" or "close")')
