"""second_order_lstm's Fig. 3 claim, checked on the per-epoch histories of every seed: the attention
LSTM learns (validation) WCPA faster and more steadily than the baseline LSTM, and trains in
fewer epochs.

Per run, from ``history.csv`` [A] (the paper gives no measure):

- ``epochs_to_wcpa``: the first epoch whose validation WCPA reaches ``LEARNT`` (0.9; NaN when
  never: the run never learnt the distances it is scored on);
- ``mean_abs_change``: the mean absolute change of validation WCPA between consecutive epochs
  (oscillation, the paper's "oscillates drastically");
- ``drops``: epochs whose WCPA fell by more than ``DROP`` (0.25) from the epoch before;
- ``epochs``: epochs trained (until early stopping).

Each measure is computed on both the papers' WCPA (``val_wcpa``) and the robust one
(``val_robust_wcpa``, distances with enough events). Per m, the claim's three parts hold when
the attention LSTM's mean over seeds is lower than the LSTM's (a model that never reaches
``LEARNT`` counts as slower than one that does).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

LEARNT = 0.9
DROP = 0.25
METRICS = {"val_wcpa": "WCPA", "val_robust_wcpa": "robust WCPA"}


def run_measures(history: pd.DataFrame, metric: str) -> dict:
    """The measures of one run's history (rows ordered by epoch) on ``metric``."""
    values = history.sort_values("epoch")[metric].to_numpy(float)
    reached = np.flatnonzero(values >= LEARNT)
    changes = np.diff(values)
    return {
        "epochs_to_wcpa": float(history["epoch"].iloc[reached[0]]) if len(reached) else math.nan,
        "mean_abs_change": float(np.abs(changes).mean()) if len(changes) else math.nan,
        "drops": int((changes < -DROP).sum()),
        "epochs": int(history["epoch"].max()),
    }


def claim_table(paths: Sequence[str | Path], baseline: str, model: str):
    """Per run measures (DataFrame) and, per dataset and metric, the verdict of each part of the
    claim (DataFrame)."""
    runs = []
    for path in paths:
        history = pd.read_csv(path)
        identity = history.iloc[0]
        if identity["model"] not in (baseline, model):
            continue
        for metric in METRICS:
            if metric not in history or history[metric].isna().all():
                continue
            runs.append(
                {
                    "dataset": identity["dataset"],
                    "model": identity["model"],
                    "seed": int(identity["seed"]),
                    "metric": metric,
                    **run_measures(history, metric),
                }
            )
    per_run = pd.DataFrame(runs)
    verdicts = []
    if per_run.empty:
        return per_run, pd.DataFrame(verdicts)
    for (dataset, metric), group in per_run.groupby(["dataset", "metric"], sort=True):
        ours, theirs = (group[group["model"] == name] for name in (model, baseline))
        if ours.empty or theirs.empty:
            continue
        faster = _mean_epochs(ours) < _mean_epochs(theirs)
        steadier = ours["mean_abs_change"].mean() < theirs["mean_abs_change"].mean()
        fewer = ours["epochs"].mean() < theirs["epochs"].mean()
        verdicts.append(
            {
                "dataset": dataset,
                "metric": METRICS[metric],
                "seeds": f"{len(ours)} / {len(theirs)}",
                f"epochs to {LEARNT:g} ({model} / {baseline})": (
                    f"{_describe_epochs(ours)} / {_describe_epochs(theirs)}"
                ),
                "faster": _holds(faster),
                f"mean abs. change per epoch ({model} / {baseline})": (
                    f"{ours['mean_abs_change'].mean():.3f} / {theirs['mean_abs_change'].mean():.3f}"
                ),
                f"drops > {DROP:g}": f"{ours['drops'].sum()} / {theirs['drops'].sum()}",
                "steadier": _holds(steadier),
                "epochs trained": f"{ours['epochs'].mean():.1f} / {theirs['epochs'].mean():.1f}",
                "fewer epochs": _holds(fewer),
            }
        )
    return per_run, pd.DataFrame(verdicts)


def _mean_epochs(group: pd.DataFrame) -> float:
    """Mean epochs to ``LEARNT``; infinite when a seed never got there."""
    values = group["epochs_to_wcpa"].to_numpy(float)
    return math.inf if np.isnan(values).any() else float(values.mean())


def _describe_epochs(group: pd.DataFrame) -> str:
    values = group["epochs_to_wcpa"].to_numpy(float)
    never = int(np.isnan(values).sum())
    reached = values[~np.isnan(values)]
    text = f"{reached.mean():.1f}" if len(reached) else "–"
    return text + (f" ({never} never)" if never else "")


def _holds(value: bool) -> str:
    return "holds" if value else "does not hold"
