"""Model analyses of second_order_lstm: principal angles between cells (PABS) and attention
heatmaps."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd
import torch
from scipy.linalg import subspace_angles


def principal_angles(matrices: Sequence[torch.Tensor | np.ndarray]) -> pd.DataFrame:
    """Principal angles (degrees, ascending) between the column spaces of every pair of matrices.

    For the attention LSTM the matrices are the cells' ``weight_hh`` blocks [4h, h], so the
    subspaces live in R^{4h} (docs/methods.md §4.4). Cells are numbered from 1; ``pair`` is
    ``"1-2"``.
    """
    arrays = [
        np.asarray(m.detach().cpu() if isinstance(m, torch.Tensor) else m, float) for m in matrices
    ]
    rows = []
    for (i, a), (j, b) in combinations(enumerate(arrays, start=1), 2):
        angles = np.sort(np.degrees(subspace_angles(a, b)))
        rows += [
            {"pair": f"{i}-{j}", "index": k, "angle_deg": float(angle)}
            for k, angle in enumerate(angles, start=1)
        ]
    return pd.DataFrame(rows, columns=["pair", "index", "angle_deg"])


def stream_passage(lines: Sequence[list[str]], length: int, min_line: int = 20) -> list[str]:
    """``length`` tokens of a token stream (lines joined with ``<eos>``), from the first line of
    at least ``min_line`` tokens that is not a WikiText heading (``= ... =``)."""
    start = next((i for i, line in enumerate(lines) if len(line) >= min_line and line[0] != "="), 0)
    tokens: list[str] = []
    for line in lines[start:]:
        tokens += [*line, "<eos>"]
        if len(tokens) >= length:
            break
    return tokens[:length]


def heatmap_sequence(sequences: Sequence[list[str]], max_length: int) -> list[str]:
    """The first sequence with at most ``max_length`` tokens; if none is that short (paper-scale
    Dyck data are 181-360 tokens long), the first ``max_length`` tokens of the first sequence.
    The model reads left to right, so its attention over a prefix is what it is in the whole
    sequence."""
    if not sequences:
        raise ValueError("no test sequences")
    short = next((sequence for sequence in sequences if len(sequence) <= max_length), None)
    return short if short is not None else sequences[0][:max_length]


def final_training_epoch(record: dict) -> int:
    """0-based index of the epoch that produced the saved (best-validation) weights.

    ``best_epoch`` in the record is 1-based and the trainer calls ``set_epoch(epoch)`` with the
    0-based index, so the saved weights were last trained at τ = decay ** (best_epoch − 1).
    """
    return int(record["best_epoch"]) - 1


@torch.no_grad()
def attention_heatmap(
    model, vocab: Sequence[str], sequence: Sequence[str], start: str | None = "<start>"
) -> pd.DataFrame:
    """Soft attention weights of every cell for ``start`` + sequence (long format; a stream
    passage has no ``start``).

    The model is used at its current temperature with ``hard`` off, so the caller sets the
    temperature (docs/methods.md §4.4: the final training temperature). Returns columns position
    (0 = ``start``), token, cell (from 1) and weight.
    """
    tokens = [start, *sequence] if start else list(sequence)
    index = {token: i for i, token in enumerate(vocab)}
    ids = torch.tensor([index[token] for token in tokens]).unsqueeze(1)  # [T, 1]
    model.set_hard(False)
    weights = model.attention_weights(ids)[:, 0, :].cpu().numpy()  # [T, S]
    rows = [
        {"position": t, "token": token, "cell": s + 1, "weight": float(weights[t, s])}
        for t, token in enumerate(tokens)
        for s in range(weights.shape[1])
    ]
    return pd.DataFrame(rows, columns=["position", "token", "cell", "weight"])


@torch.no_grad()
def stack_actions(
    model, ids: Sequence[int] | torch.Tensor, batch_size: int, bptt: int, bins: int = 20
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """memory Fig. 3: the multipop stack's 2(K + 1) action probabilities at every step of a
    token stream (``batch_size`` columns, BPTT windows, state carried, evaluation mode).

    Returns (per state STAY_k / PUSH_k: how often it is the most probable, and its mean
    probability; histogram of the maximum action probability over ``bins`` equal bins of
    [0, 1])."""
    from rnnrepro.data.batching import stream_batches
    from rnnrepro.models.memory import MultipopStack

    body = model.body
    if not isinstance(body.memory, MultipopStack):
        raise ValueError("the model has no multipop stack")
    stack_module, K = body.memory, body.memory.slots
    wins = torch.zeros(2 * (K + 1), dtype=torch.long)
    total = torch.zeros(2 * (K + 1), dtype=torch.float64)
    maxima = []
    lstm_state, stack = None, None
    model.eval()
    for inputs, _ in stream_batches(ids, batch_size, bptt):
        x = model.embed(inputs)
        hs, lstm_state = body.lstm(x, lstm_state)
        if stack is None:
            stack = stack_module.initial(hs)
        px = stack_module.policy_x(x)
        for t in range(hs.shape[0]):
            stack, stay, push = stack_module.step(px[t], stack, hs[t])
            probs = torch.stack((stay, push), -1).flatten(1)  # [B, 2(K+1)]: STAY_0, PUSH_0, ...
            best, which = probs.max(-1)
            wins += torch.bincount(which, minlength=2 * (K + 1))
            total += probs.double().sum(0)
            maxima.append(best)
    maxima = torch.cat(maxima).numpy()
    steps = len(maxima)
    states = pd.DataFrame(
        {
            "state": [f"{a}_{k}" for k in range(K + 1) for a in ("STAY", "PUSH")],
            "pops": [k for k in range(K + 1) for _ in range(2)],
            "action": ["STAY", "PUSH"] * (K + 1),
            "argmax_count": wins.numpy(),
            "mean_probability": (total / steps).numpy(),
        }
    )
    counts, edges = np.histogram(maxima, bins=bins, range=(0.0, 1.0))
    histogram = pd.DataFrame({"low": edges[:-1], "high": edges[1:], "steps": counts})
    return states, histogram
