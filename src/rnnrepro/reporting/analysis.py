"""Model analyses of seed 000: principal angles between cells (PABS) and attention heatmaps."""

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
    subspaces live in R^{4h} (MODELS §7.6). Cells are numbered from 1; ``pair`` is ``"1-2"``.
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


def first_short_sequence(sequences: Sequence[list[str]], max_length: int) -> list[str]:
    """The first sequence with at most ``max_length`` tokens."""
    for sequence in sequences:
        if len(sequence) <= max_length:
            return sequence
    raise ValueError(f"no test sequence has length <= {max_length}")


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
    temperature (MODELS §7.7: the final training temperature). Returns columns position
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
