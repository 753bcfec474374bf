"""Where a Dyck model's loss sits above the generator's floor (docs/methods.md §3.1).

Each target of a sequence (its tokens, then ``<end>``) is of one of three kinds, by the
generator's state before it: ``empty`` (the stack is empty and the target opens a bracket: the
generator's choice among the opens and, past ``min_len``, the end), ``inside`` (the stack is
not empty: open another or close the top) or ``end`` (the target is ``<end>``, only allowed once
the sequence is ``min_len`` long: a model must count to know it). Per kind: the model's and the
generator's cross-entropy summed over the targets, and the excess (model − generator), whose sum
over the kinds is the model's excess over the floor (its log-perplexity minus the floor's).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from ..data.batching import Vocabulary, padded_batches
from ..data.dyck import END, generator_steps
from ..models.base import RecurrentLM

KINDS = ("empty", "inside", "end")


def generator_targets(seq: Sequence[str], k: int, m: int, min_len: int) -> list[tuple[str, float]]:
    """(kind, generator's −log p) of each target of ``seq`` (its tokens, then ``<end>``)."""
    return [
        ("end" if token == END else ("inside" if depth else "empty"), -math.log(p))
        for depth, token, p in generator_steps(seq, k, m, min_len)
    ]


def excess_by_kind(
    model: RecurrentLM,
    sequences: Sequence[Sequence[str]],
    vocab: Sequence[str],
    k: int,
    m: int,
    min_len: int,
    batch_size: int = 64,
    device: str | torch.device = "cpu",
) -> dict[str, dict[str, float]]:
    """Per kind of target (``KINDS``): ``targets``, the model's and the generator's mean
    cross-entropy (nats per target), the ``excess`` per target and its ``share`` of the total
    excess (summed over targets). Needs a model over the whole vocabulary (``output ==
    "vocab"``); runs in eval mode without gradients (the previous mode is restored)."""
    if model.output != "vocab":
        raise ValueError("the excess over the floor needs a model of the whole vocabulary")
    ids = Vocabulary(vocab)
    encoded = [ids.encode(seq) for seq in sequences]
    sums = {kind: {"targets": 0, "model": 0.0, "generator": 0.0} for kind in KINDS}
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            batches = padded_batches(encoded, batch_size, ids.bos_id, ids.eos_id, ids.pad_id, False)
            for batch in batches:
                logits, _ = model(batch.inputs.to(device))
                nll = -torch.log_softmax(logits.double(), dim=-1).cpu()
                for column, index in enumerate(batch.indices):
                    targets = generator_targets(sequences[index], k, m, min_len)
                    gold = batch.targets[: len(targets), column]
                    model_nll = nll[torch.arange(len(targets)), column, gold].tolist()
                    for (kind, floor), value in zip(targets, model_nll, strict=True):
                        sums[kind]["targets"] += 1
                        sums[kind]["model"] += value
                        sums[kind]["generator"] += floor
    finally:
        model.train(was_training)
    total = sum(s["model"] - s["generator"] for s in sums.values())
    out = {}
    for kind, s in sums.items():
        n = s["targets"]
        excess = s["model"] - s["generator"]
        out[kind] = {
            "targets": n,
            "model_ce": s["model"] / n if n else math.nan,
            "generator_ce": s["generator"] / n if n else math.nan,
            "excess": excess / n if n else math.nan,
            "share": excess / total if total else math.nan,
        }
    return out
