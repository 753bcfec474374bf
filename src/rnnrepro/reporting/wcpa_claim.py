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
the attention LSTM's mean over seeds is lower than the LSTM's, by more than the seeds' noise
when both have several (else ``within noise``); a model with fewer runs that never reach
``LEARNT`` is the faster. A part is not testable when it cannot tell the models apart by
construction: as many runs of each never reach ``LEARNT``, or every run of both trained the same
number of epochs (all stopped by the budget, not by early stopping). ``claim_verdict`` joins the
parts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

LEARNT = 0.9
DROP = 0.25
METRICS = {"val_wcpa": "WCPA", "val_robust_wcpa": "robust WCPA"}
PARTS = ("faster", "steadier", "fewer epochs")
UNTESTABLE = "not testable"


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
        trained = set(group["epochs"])
        fewer = (
            _part(ours["epochs"], theirs["epochs"])
            if len(trained) > 1
            else f"{UNTESTABLE} (every run trained {trained.pop():,} epochs)"
        )
        verdicts.append(
            {
                "dataset": dataset,
                "metric": METRICS[metric],
                "seeds": f"{len(ours)} / {len(theirs)}",
                f"epochs to {LEARNT:g} ({model} / {baseline})": (
                    f"{_describe_epochs(ours)} / {_describe_epochs(theirs)}"
                ),
                "faster": _faster(ours, theirs),
                f"mean abs. change per epoch ({model} / {baseline})": (
                    f"{ours['mean_abs_change'].mean():.3f} / {theirs['mean_abs_change'].mean():.3f}"
                ),
                f"drops > {DROP:g}": f"{ours['drops'].sum()} / {theirs['drops'].sum()}",
                "steadier": _part(ours["mean_abs_change"], theirs["mean_abs_change"]),
                "epochs trained": f"{ours['epochs'].mean():.1f} / {theirs['epochs'].mean():.1f}",
                "fewer epochs": fewer,
            }
        )
        verdicts[-1]["claim"] = claim_verdict(verdicts[-1])
    return per_run, pd.DataFrame(verdicts)


def claim_verdict(parts: Mapping[str, str]) -> str:
    """The claim's verdict for one m and metric from its parts (a ``claim_table`` verdict row):
    ``fails`` when a part does not hold, ``within noise`` when one is, ``holds`` when all three
    hold, else ``holds where testable`` (a part not testable)."""
    said = [parts[part] for part in PARTS]
    if "does not hold" in said:
        return "fails"
    if "within noise" in said:
        return "within noise"
    return "holds" if all(p == "holds" for p in said) else "holds where testable"


def _part(ours: pd.Series, theirs: pd.Series) -> str:
    """Whether ``ours`` is lower than ``theirs`` on their means: ``within noise`` when the
    margin is inside the seeds' noise (the root of the two sides' summed variances; only with
    two or more runs a side: one run has no measured noise)."""
    margin = theirs.mean() - ours.mean()
    noise = math.hypot(ours.std(), theirs.std()) if min(len(ours), len(theirs)) > 1 else 0.0
    if abs(margin) <= noise:
        return "within noise"
    return _holds(margin > 0)


def _faster(ours: pd.DataFrame, theirs: pd.DataFrame) -> str:
    """Whether ``ours`` reaches ``LEARNT`` in fewer epochs: on the means where every run of both
    reaches it (``_part``), else on how many runs never do (fewer is faster); not testable when
    as many never do on both sides."""
    never = [int(g["epochs_to_wcpa"].isna().sum()) for g in (ours, theirs)]
    if never == [0, 0]:
        return _part(ours["epochs_to_wcpa"], theirs["epochs_to_wcpa"])
    if never[0] == never[1]:
        return f"{UNTESTABLE} ({never[0]} run(s) of each never reach {LEARNT:g})"
    return _holds(never[0] < never[1])


def _describe_epochs(group: pd.DataFrame) -> str:
    values = group["epochs_to_wcpa"].to_numpy(float)
    never = int(np.isnan(values).sum())
    reached = values[~np.isnan(values)]
    text = f"{reached.mean():.1f}" if len(reached) else "–"
    return text + (f" ({never} never)" if never else "")


def _holds(value: bool) -> str:
    return "holds" if value else "does not hold"
