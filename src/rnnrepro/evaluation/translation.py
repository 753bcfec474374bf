"""Scoring and decoding a ``models.seq2seq.LuongNMT``: padded batches of sentence pairs, the
per-token loss of a set of pairs (perplexity), and greedy and beam search, one source sentence
at a time.

A hypothesis ends at ``eos`` or after ``max_length`` target tokens; its score is the sum of its
tokens' log-probabilities, without length normalisation (Luong et al. give none) [A]. Beam search
keeps the ``width`` best unfinished hypotheses per step and stops when ``width`` hypotheses have
finished or the best finished one beats every unfinished one (scores only fall); with width 1 it
is greedy decoding.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor

from rnnrepro.data.parallel import Pairs
from rnnrepro.models.seq2seq import PAD, LuongNMT

Pair = tuple[Sequence[int], Sequence[int]]
EVAL_BATCH_SIZE = 64  # sentences per batch of a perplexity (no number depends on it but rounding)


class PairBatch(NamedTuple):
    """Padded (PAD = 0) time-major tensors: the source [S, B] and its lengths [B], the target's
    inputs (bos y_1..y_n) and outputs (y_1..y_n eos) [T, B]."""

    src: Tensor
    src_lengths: Tensor
    tgt_in: Tensor
    tgt_out: Tensor

    @property
    def tokens(self) -> int:
        return int(self.tgt_out.ne(PAD).sum())


def pair_batch(pairs: Sequence[Pair], bos: int, eos: int, device: torch.device) -> PairBatch:
    """The padded batch of ``pairs`` (source ids, target ids)."""
    S = max(len(src) for src, _ in pairs)
    T = max(len(tgt) for _, tgt in pairs) + 1
    src = torch.full((S, len(pairs)), PAD, dtype=torch.long)
    tgt_in = torch.full((T, len(pairs)), PAD, dtype=torch.long)
    tgt_out = torch.full((T, len(pairs)), PAD, dtype=torch.long)
    for b, (source, target) in enumerate(pairs):
        src[: len(source), b] = torch.tensor(source, dtype=torch.long)
        tgt_in[: len(target) + 1, b] = torch.tensor([bos, *target], dtype=torch.long)
        tgt_out[: len(target) + 1, b] = torch.tensor([*target, eos], dtype=torch.long)
    lengths = torch.tensor([len(source) for source, _ in pairs])
    return PairBatch(src.to(device), lengths, tgt_in.to(device), tgt_out.to(device))


def batch_nll(model: LuongNMT, batch: PairBatch) -> Tensor:
    """The summed negative log-likelihood of the batch's targets (eos included) under
    teacher forcing."""
    log_probs = model(batch.src, batch.src_lengths, batch.tgt_in)
    return F.nll_loss(
        log_probs.view(-1, log_probs.size(-1)),
        batch.tgt_out.view(-1),
        ignore_index=PAD,
        reduction="sum",
    )


@torch.no_grad()
def corpus_loss(
    model: LuongNMT,
    pairs: Sequence[Pair],
    bos: int,
    eos: int,
    device,
    batch_size: int = EVAL_BATCH_SIZE,
) -> dict:
    """Mean NLL per target token (eos included) of ``pairs`` and its perplexity, in batches
    of sentences of similar source length (the order changes no number beyond rounding)."""
    model.eval()
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]))
    total, tokens = 0.0, 0
    for start in range(0, len(order), batch_size):
        batch = pair_batch([pairs[i] for i in order[start : start + batch_size]], bos, eos, device)
        total += float(batch_nll(model, batch))
        tokens += batch.tokens
    loss = total / max(tokens, 1)
    return {"loss": loss, "ppl": math.exp(loss), "tokens": tokens, "sentences": len(pairs)}


def _select(state: list, index: Tensor) -> list:
    """The decoder states of the hypotheses ``index`` (batch dimension 1 of every h and c)."""
    return [
        tuple(None if branch is None else tuple(t[:, index] for t in branch) for branch in layer)
        for layer in state
    ]


def unigram_log_probs(train: Pairs, vocab_size: int, eos: int) -> Tensor:
    """Log-probabilities of an add-one unigram model of the target pieces of ``train``, eos
    included: the translator that ignores its source (the reference under a translation
    table's perplexities)."""
    counts = torch.bincount(torch.tensor(train.tokens("target")), minlength=vocab_size)
    counts = counts.double()
    counts[eos] += len(train)
    return (counts + 1).log() - (counts.sum() + vocab_size).log()


def unigram_perplexity(log_probs: Tensor, pairs: Pairs, eos: int) -> float:
    """The perplexity per target token (eos included) of ``pairs`` under ``log_probs``
    (``unigram_log_probs``)."""
    tokens = pairs.tokens("target")
    total = float(log_probs[torch.tensor(tokens, dtype=torch.long)].sum())
    total += len(pairs) * float(log_probs[eos])
    return math.exp(-total / max(len(tokens) + len(pairs), 1))


@torch.no_grad()
def greedy_decode(model: LuongNMT, src: Tensor, bos: int, eos: int, max_length: int) -> list[int]:
    """The argmax continuation of ``bos`` for the source ``src`` [S] (without bos and eos)."""
    model.eval()
    states, mask, state = model.encode(src[:, None], torch.tensor([src.numel()]))
    feed = model.initial_feed(1, src.device)
    y, out = torch.tensor([bos], device=src.device), []
    for _ in range(max_length):
        log_probs, feed, state = model.decode_step(y, feed, state, states, mask)
        y = log_probs.argmax(-1)
        if int(y) == eos:
            break
        out.append(int(y))
    return out


@torch.no_grad()
def beam_search(
    model: LuongNMT, src: Tensor, bos: int, eos: int, max_length: int, width: int
) -> list[int]:
    """The best hypothesis of a beam of ``width`` for the source ``src`` [S]."""
    if width < 1:
        raise ValueError(f"beam width must be at least 1, not {width}")
    model.eval()
    states, mask, state = model.encode(src[:, None], torch.tensor([src.numel()]))
    feed = model.initial_feed(1, src.device)
    tokens: list[list[int]] = [[]]
    scores = torch.zeros(1, device=src.device)
    last = torch.tensor([bos], device=src.device)
    finished: list[tuple[float, list[int]]] = []
    for _ in range(max_length):
        n = len(tokens)
        log_probs, feed, state = model.decode_step(
            last, feed, state, states.expand(-1, n, -1), mask.expand(n, -1)
        )
        total = (scores[:, None] + log_probs).view(-1)
        top = total.topk(min(width, total.numel()))
        keep, new_tokens, new_scores, new_last = [], [], [], []
        for score, flat in zip(top.values.tolist(), top.indices.tolist(), strict=True):
            beam, token = divmod(flat, log_probs.size(-1))
            if token == eos:
                finished.append((score, tokens[beam]))
            else:
                keep.append(beam)
                new_tokens.append([*tokens[beam], token])
                new_scores.append(score)
                new_last.append(token)
        best_done = max((s for s, _ in finished), default=float("-inf"))
        if len(finished) >= width or not keep or best_done >= max(new_scores):
            break
        index = torch.tensor(keep, device=src.device)
        tokens, feed, state = new_tokens, feed[index], _select(state, index)
        scores = torch.tensor(new_scores, device=src.device)
        last = torch.tensor(new_last, device=src.device)
    else:
        finished += list(zip(scores.tolist(), tokens, strict=True))
    return max(finished, key=lambda item: item[0])[1]
