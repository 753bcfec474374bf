"""Decoding a ``models.seq2seq.LuongNMT``: greedy and beam search, one source sentence at a time.

A hypothesis ends at ``eos`` or after ``max_length`` target tokens; its score is the sum of its
tokens' log-probabilities, without length normalisation (Luong et al. give none) [A]. Beam search
keeps the ``width`` best unfinished hypotheses per step and stops when ``width`` hypotheses have
finished or the best finished one beats every unfinished one (scores only fall); with width 1 it
is greedy decoding.
"""

from __future__ import annotations

import torch
from torch import Tensor

from rnnrepro.models.seq2seq import LuongNMT


def _select(state: list, index: Tensor) -> list:
    """The decoder states of the hypotheses ``index`` (batch dimension 1 of every h and c)."""
    return [
        tuple(None if branch is None else tuple(t[:, index] for t in branch) for branch in layer)
        for layer in state
    ]


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
