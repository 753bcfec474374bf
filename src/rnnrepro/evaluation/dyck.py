"""Dyck evaluation (MODELS.md §7.1-7.2): loss / perplexity, LDPA per distance and WCPA.

Positions are input positions: input 0 is ``<start>`` and input i is ``seq[i-1]``; the model's
output at time i (after reading input i) predicts ``seq[i]``. A prediction is correct iff the
probability of the gold close type, renormalised over the k close types, is > 0.8 (Hewitt's
strict threshold; seed 000 says "at least 80%").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..data.batching import Vocabulary, padded_batches
from ..data.dyck import close_token_ids, close_type_ids, parse_bracket
from ..models.base import RecurrentLM
from ..objectives import sequence_loss

THRESHOLD = 0.8
READINGS = ("close", "stack")


def closing_positions(seq: Sequence[str], reading: str = "close") -> list[tuple[int, int, int]]:
    """Evaluated positions of one sequence as (input position, distance, gold close type).

    - ``"close"`` (seed 000): positions whose next token is a closing bracket; distance = index
      of the close - index of its open.
    - ``"stack"`` (Hewitt's reporter): every position with a non-empty stack; gold = type on top;
      distance = i - input position of the top's open bracket.
    """
    if reading not in READINGS:
        raise ValueError(f"unknown reading {reading!r}; expected one of {READINGS}")
    out = []
    stack: list[tuple[int, int]] = []  # (type, index in seq)
    for j, token in enumerate(seq):
        if reading == "stack" and stack:
            bracket_type, opened = stack[-1]
            out.append((j, j - (opened + 1), bracket_type))
        parsed = parse_bracket(token)
        if parsed is None:
            raise ValueError(f"{token!r} at position {j} is not a bracket")
        is_open, bracket_type = parsed
        if is_open:
            stack.append((bracket_type, j))
            continue
        if not stack or stack[-1][0] != bracket_type:
            raise ValueError(f"{token!r} at position {j} does not close the innermost bracket")
        _, opened = stack.pop()
        if reading == "close":
            out.append((j, j - opened, bracket_type))
    if stack:
        raise ValueError("sequence leaves brackets open")
    return out


def close_probabilities(
    logits: torch.Tensor, output: str, close_ids: Sequence[int] | None = None
) -> torch.Tensor:
    """Probabilities [T, B, k] over the k close types, renormalised among them.

    For ``"vocab"`` logits [T, B, V] this is softmax over V restricted to ``close_ids`` (the
    close-token ids in type order) and renormalised, computed as a softmax over those columns
    (identical, and stable when the close mass is tiny). For ``"close"`` logits: softmax.
    """
    if output == "vocab":
        if close_ids is None:
            raise ValueError('output "vocab" needs close_ids')
        return torch.softmax(logits[..., list(close_ids)], dim=-1)
    if output == "close":
        return torch.softmax(logits, dim=-1)
    raise ValueError(f'unknown output {output!r} (expected "vocab" or "close")')


@dataclass
class DyckResult:
    """Mean objective loss (nats), perplexity (vocab models only), LDPA counts and WCPA."""

    loss: float
    ppl: float | None
    n_targets: int
    ldpa: dict[int, tuple[int, int]]
    wcpa: float


def ldpa_rows(ldpa: dict[int, tuple[int, int]]) -> list[dict]:
    """One row per distance (ascending): distance, correct, total, accuracy."""
    return [
        {"distance": d, "correct": c, "total": n, "accuracy": c / n}
        for d, (c, n) in sorted(ldpa.items())
        if n > 0
    ]


def wcpa(ldpa: dict[int, tuple[int, int]]) -> float:
    """Worst-case accuracy over distances with >= 1 sample (nan when there are none)."""
    return min((row["accuracy"] for row in ldpa_rows(ldpa)), default=math.nan)


def _tally_batch(
    counts: dict[int, list[int]],
    probs: torch.Tensor,
    batch_indices: Sequence[int],
    positions: Sequence[list[tuple[int, int, int]]],
) -> None:
    """Add one batch's judgements to ``counts`` (distance -> [correct, total])."""
    rows = [(i, col, d, g) for col, s in enumerate(batch_indices) for i, d, g in positions[s]]
    if not rows:
        return
    t_idx, b_idx, dist, gold = (torch.tensor(x) for x in zip(*rows, strict=True))
    correct = probs[t_idx, b_idx, gold] > THRESHOLD
    for d, ok in zip(dist.tolist(), correct.tolist(), strict=True):
        tally = counts.setdefault(d, [0, 0])
        tally[0] += ok
        tally[1] += 1


def evaluate_dyck(
    model: RecurrentLM,
    sequences: Sequence[Sequence[str]],
    vocab: Sequence[str],
    batch_size: int = 64,
    reading: str = "close",
    device: str | torch.device = "cpu",
) -> DyckResult:
    """Loss, perplexity and LDPA/WCPA of ``model`` on whole Dyck sequences (one episode each).

    Runs in eval mode without gradients (the model's previous mode is restored).
    """
    voc = Vocabulary(vocab)
    encoded = [voc.encode(seq) for seq in sequences]
    positions = [closing_positions(seq, reading) for seq in sequences]
    close_type = torch.tensor(close_type_ids(vocab), dtype=torch.long, device=device)
    close_ids = close_token_ids(vocab)
    total_loss, n_targets = 0.0, 0
    counts: dict[int, list[int]] = {}
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for batch in padded_batches(
                encoded, batch_size, voc.bos_id, voc.eos_id, voc.pad_id, shuffle=False
            ):
                logits, _ = model(batch.inputs.to(device))
                loss, n = sequence_loss(
                    logits, batch.targets.to(device), model.output, voc.pad_id, close_type
                )
                total_loss += float(loss)
                n_targets += n
                probs = close_probabilities(logits, model.output, close_ids).cpu()
                _tally_batch(counts, probs, batch.indices, positions)
    finally:
        model.train(was_training)
    ldpa = {d: (c, n) for d, (c, n) in sorted(counts.items())}
    loss = total_loss / n_targets if n_targets else math.nan
    ppl = math.exp(loss) if model.output == "vocab" else None
    return DyckResult(loss=loss, ppl=ppl, n_targets=n_targets, ldpa=ldpa, wcpa=wcpa(ldpa))
