"""Dyck evaluation (docs/methods.md §3.1-3.3): loss / perplexity, LDPA per distance and WCPA.

Positions are input positions: input 0 is ``<start>`` and input i is ``seq[i-1]``; the model's
output at time i (after reading input i) predicts ``seq[i]``. A prediction is correct iff the
probability of the gold close type, renormalised over the k close types, is > 0.8 (Hewitt's
strict threshold; second_order_lstm says "at least 80%").

WCPA is the minimum LDPA over every distance with at least one event (the papers' reading); a
distance seen once then decides it. ``robust_wcpa`` is the minimum over distances with at least
``min_events`` events (config ``dyck.wcpa_min_events``).
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

    - ``"close"`` (second_order_lstm): positions whose next token is a closing bracket; distance =
      index of the close - index of its open.
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
    """Mean objective loss (nats), perplexity (vocab models only), LDPA counts (distance ->
    (correct, events)), WCPA and the WCPA over distances with at least ``min_events`` events."""

    loss: float
    ppl: float | None
    n_targets: int
    ldpa: dict[int, tuple[int, int]]
    wcpa: float
    robust_wcpa: float
    min_events: int


def ldpa_rows(ldpa: dict[int, tuple[int, int]]) -> list[dict]:
    """One row per distance (ascending): distance, correct, total, accuracy."""
    return [
        {"distance": d, "correct": c, "total": n, "accuracy": c / n}
        for d, (c, n) in sorted(ldpa.items())
        if n > 0
    ]


def wcpa(ldpa: dict[int, tuple[int, int]], min_events: int = 1) -> float:
    """Worst-case accuracy over distances with >= ``min_events`` events (nan when none has)."""
    rows = ldpa_rows(ldpa)
    return min((r["accuracy"] for r in rows if r["total"] >= min_events), default=math.nan)


def wcpa_support(ldpa: dict[int, tuple[int, int]], min_events: int) -> dict:
    """How much evidence decides the WCPA: the events at the worst distance (the fewest among
    tied ones), the distances seen and those with fewer than ``min_events`` events."""
    rows = ldpa_rows(ldpa)
    worst = min(rows, key=lambda r: (r["accuracy"], r["total"]), default=None)
    return {
        "wcpa_distance": worst and worst["distance"],
        "wcpa_events": worst and worst["total"],
        "distances": len(rows),
        "rare_distances": sum(r["total"] < min_events for r in rows),
        "wcpa_min_events": min_events,
    }


class DyckEvalSet:
    """Sequences prepared once for repeated evaluation (validation every epoch): token ids and,
    per sequence, its evaluated positions as tensors (input position, distance, gold type)."""

    def __init__(self, sequences: Sequence[Sequence[str]], vocab: Sequence[str], reading: str):
        self.vocab = list(vocab)
        self.ids = Vocabulary(vocab)
        self.encoded = [self.ids.encode(seq) for seq in sequences]
        self.events = []
        for seq in sequences:
            rows = closing_positions(seq, reading)
            self.events.append(torch.tensor(rows, dtype=torch.long).view(len(rows), 3))
        self.max_distance = max((int(e[:, 1].max()) for e in self.events if len(e)), default=0)


def _tally_batch(
    correct: torch.Tensor,
    events: torch.Tensor,
    probs: torch.Tensor,
    batch_indices: Sequence[int],
    eval_set: DyckEvalSet,
) -> None:
    """Add one batch's judgements to the per-distance counts ``correct`` and ``events``."""
    parts = [
        torch.cat((eval_set.events[s], torch.full((len(eval_set.events[s]), 1), col)), 1)
        for col, s in enumerate(batch_indices)
    ]
    rows = torch.cat(parts) if parts else torch.empty(0, 4, dtype=torch.long)
    if not len(rows):
        return
    position, distance, gold, column = rows.unbind(1)
    ok = probs[position, column, gold] > THRESHOLD
    size = len(events)
    events += torch.bincount(distance, minlength=size)
    correct += torch.bincount(distance, weights=ok.to(torch.float64), minlength=size).long()


def evaluate_dyck(
    model: RecurrentLM,
    sequences: Sequence[Sequence[str]] | DyckEvalSet,
    vocab: Sequence[str],
    batch_size: int = 64,
    reading: str = "close",
    device: str | torch.device = "cpu",
    min_events: int = 1,
) -> DyckResult:
    """Loss, perplexity and LDPA/WCPA of ``model`` on whole Dyck sequences (one episode each);
    ``robust_wcpa`` over distances with at least ``min_events`` events. ``sequences`` may be a
    ``DyckEvalSet`` prepared once (then ``vocab`` and ``reading`` are its own).

    Runs in eval mode without gradients (the model's previous mode is restored).
    """
    eval_set = (
        sequences if isinstance(sequences, DyckEvalSet) else DyckEvalSet(sequences, vocab, reading)
    )
    voc = eval_set.ids
    close_type = torch.tensor(close_type_ids(eval_set.vocab), dtype=torch.long, device=device)
    close_ids = close_token_ids(eval_set.vocab)
    total_loss, n_targets = 0.0, 0
    correct = torch.zeros(eval_set.max_distance + 1, dtype=torch.long)
    events = torch.zeros(eval_set.max_distance + 1, dtype=torch.long)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for batch in padded_batches(
                eval_set.encoded, batch_size, voc.bos_id, voc.eos_id, voc.pad_id, shuffle=False
            ):
                logits, _ = model(batch.inputs.to(device))
                loss, n = sequence_loss(
                    logits, batch.targets.to(device), model.output, voc.pad_id, close_type
                )
                total_loss += float(loss)
                n_targets += n
                probs = close_probabilities(logits, model.output, close_ids).cpu()
                _tally_batch(correct, events, probs, batch.indices, eval_set)
    finally:
        model.train(was_training)
    ldpa = {d: (int(c), int(n)) for d, (c, n) in enumerate(zip(correct, events, strict=True)) if n}
    loss = total_loss / n_targets if n_targets else math.nan
    ppl = math.exp(loss) if model.output == "vocab" else None
    return DyckResult(
        loss=loss,
        ppl=ppl,
        n_targets=n_targets,
        ldpa=ldpa,
        wcpa=wcpa(ldpa),
        robust_wcpa=wcpa(ldpa, min_events),
        min_events=min_events,
    )
