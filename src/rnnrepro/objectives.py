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


# Decay of REINFORCE's moving-average baseline (docs/methods.md §11.1 [A]).
BASELINE_DECAY = 0.99


def reinforce_loss(
    action_log_prob: torch.Tensor,
    logits: torch.Tensor,
    targets: torch.Tensor,
    baseline: float | None,
) -> tuple[torch.Tensor, float]:
    """The policy loss of sampled actions and the updated baseline (docs/methods.md §11.1 [A]).

    action_log_prob [T, B] = log π(a_t) of the actions taken; the reward of step t is the
    log-likelihood of the window's words from t on, R_t = Σ_{t' ≥ t} log p(x_{t'+1}) (no
    gradient). Loss = −Σ_{t,b} (R_t − b) log π(a_t) / (T·B), with b a moving average of the
    mean reward (decay ``BASELINE_DECAY``; the first batch's mean reward when None).
    """
    with torch.no_grad():
        token_log_prob = -F.cross_entropy(
            logits.reshape(-1, logits.size(-1)), targets.reshape(-1), reduction="none"
        ).view(targets.shape)
        reward = token_log_prob.flip(0).cumsum(0).flip(0)  # [T, B]
        mean = reward.mean().item()
    b = mean if baseline is None else baseline
    loss = -((reward - b) * action_log_prob).sum() / action_log_prob.numel()
    return loss, BASELINE_DECAY * b + (1 - BASELINE_DECAY) * mean
