"""Text evaluation (docs/methods.md §3.1): mean NLL per token, bits per character, average CE, and
general_second_order's per-position analyses (loss by character position in a word, prediction
examples).

``framing`` says how a sentence becomes (inputs, targets): ``"eos"`` scores x_1..x_n <eos> after
<eos> x_1..x_n (multi_matrix); ``"none"`` scores x_2..x_n after x_1..x_{n-1} (general_second_order).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..data.batching import IGNORE_INDEX, lm_batches, stream_batches
from ..models.base import RecurrentLM

EVAL_BATCH_SIZE = 64
WORD_BOUNDARY = "_"


@dataclass(frozen=True)
class TextResult:
    loss: float  # mean NLL in nats per scored token (= multi_matrix's "average CE" on words)
    tokens: int  # scored tokens
    chars: int  # characters covered by the scored tokens
    bpc: float  # total bits / chars

    def as_dict(self, metric: str) -> dict:
        return {
            "loss": self.loss,
            "bpc": self.bpc if metric == "bpc" else None,
            "ce": self.loss if metric == "ce" else None,
            "ppl": math.exp(self.loss),
            "wcpa": None,
            "tokens": self.tokens,
            "chars": self.chars,
        }


def framing_ids(framing: str, eos_id: int | None) -> dict:
    if framing == "eos":
        if eos_id is None:
            raise ValueError('framing "eos" needs the <eos> id')
        return {"bos_id": eos_id, "eos_id": eos_id}
    if framing == "none":
        return {}
    raise ValueError(f'unknown framing {framing!r} (expected "eos" or "none")')


@torch.no_grad()
def scored_targets(
    model: RecurrentLM,
    sequences: Sequence[Sequence[int]],
    framing: str,
    eos_id: int | None = None,
    batch_size: int = EVAL_BATCH_SIZE,
    device: str | torch.device = "cpu",
) -> Iterator[tuple[int, torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Yield (sequence index, targets [n], nll in nats [n], argmax prediction [n]) per sequence.

    Sequences are batched by length (no padding waste, same numbers as any other batching).
    """
    model.eval()
    order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
    sorted_seqs = [sequences[i] for i in order]
    for batch in lm_batches(sorted_seqs, batch_size, shuffle=False, **framing_ids(framing, eos_id)):
        logits, _ = model(batch.inputs.to(device))  # [T, B, V]
        targets = batch.targets.to(device)  # [T, B]
        nll = F.cross_entropy(
            logits.transpose(1, 2), targets, ignore_index=IGNORE_INDEX, reduction="none"
        )  # [T, B]
        predicted = logits.argmax(-1)  # [T, B]
        for col, index in enumerate(batch.indices):
            keep = targets[:, col] != IGNORE_INDEX
            yield (
                order[index],
                targets[keep, col].cpu(),
                nll[keep, col].cpu(),
                predicted[keep, col].cpu(),
            )


@torch.no_grad()
def evaluate_stream(
    model: RecurrentLM,
    ids: Sequence[int] | torch.Tensor,
    batch_size: int,
    bptt: int,
    device: str | torch.device = "cpu",
) -> TextResult:
    """Mean NLL per token of one token stream in ``batch_size`` columns and BPTT windows, the state
    carried across windows (docs/methods.md §3.1; pytorch/examples' ``evaluate``). Tokens past the
    last full column are not scored."""
    total, tokens, state = 0.0, 0, None
    for inputs, targets in stream_batches(ids, batch_size, bptt):
        logits, state = model(inputs.to(device), state)
        total += float(
            F.cross_entropy(
                logits.reshape(-1, logits.size(-1)), targets.to(device).reshape(-1), reduction="sum"
            )
        )
        tokens += targets.numel()
    return TextResult(loss=total / tokens, tokens=tokens, chars=0, bpc=math.nan)


def evaluate_text(
    model: RecurrentLM,
    sequences: Sequence[Sequence[int]],
    framing: str,
    char_lengths: Sequence[int],
    eos_id: int | None = None,
    batch_size: int = EVAL_BATCH_SIZE,
    device: str | torch.device = "cpu",
) -> TextResult:
    """Mean NLL per token and bits per character (``char_lengths[id]``: characters per token)."""
    lengths = torch.as_tensor(list(char_lengths), dtype=torch.long)
    total, tokens, chars = 0.0, 0, 0
    for _, targets, nll, _ in scored_targets(model, sequences, framing, eos_id, batch_size, device):
        total += float(nll.double().sum())
        tokens += len(targets)
        chars += int(lengths[targets].sum())
    if tokens == 0:
        raise ValueError("no tokens to evaluate")
    return TextResult(
        loss=total / tokens, tokens=tokens, chars=chars, bpc=total / math.log(2) / chars
    )


def positions_in_word(tokens: Sequence[str]) -> list[int]:
    """1-based position of each character token within its word; 0 for word boundaries."""
    out, position = [], 0
    for token in tokens:
        position = 0 if token == WORD_BOUNDARY else position + 1
        out.append(position)
    return out


def position_loss(
    model: RecurrentLM,
    sequences: Sequence[Sequence[int]],
    vocab: Sequence[str],
    device: str | torch.device = "cpu",
) -> list[dict]:
    """general_second_order Fig. 3: mean bits of predicting the character at each position of a
    word.

    Character-level ("none" framing) only; the first character of a document is never predicted.
    """
    sums: dict[int, float] = {}
    counts: dict[int, int] = {}
    for index, _, nll, _ in scored_targets(model, sequences, "none", device=device):
        tokens = [vocab[i] for i in sequences[index]]
        for position, bits in zip(
            positions_in_word(tokens)[1:], (nll / math.log(2)).tolist(), strict=True
        ):
            if position:
                sums[position] = sums.get(position, 0.0) + bits
                counts[position] = counts.get(position, 0) + 1
    return [{"position": p, "bits": sums[p] / counts[p], "count": counts[p]} for p in sorted(sums)]


def prediction_examples(
    model: RecurrentLM,
    sequences: Sequence[Sequence[int]],
    vocab: Sequence[str],
    count: int = 5,
    device: str | torch.device = "cpu",
) -> list[dict]:
    """general_second_order Fig. 2: the first ``count`` documents' true characters and argmax
    predictions."""
    examples = {}
    chosen = list(range(min(count, len(sequences))))
    for index, targets, _, predicted in scored_targets(
        model, [sequences[i] for i in chosen], "none", device=device
    ):

        def text(ids: torch.Tensor) -> str:
            return "".join(vocab[i] for i in ids.tolist()).replace(WORD_BOUNDARY, " ")

        examples[index] = {"target": text(targets), "predicted": text(predicted)}
    return [examples[i] for i in sorted(examples)]
