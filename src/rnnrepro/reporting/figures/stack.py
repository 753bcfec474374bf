"""The multipop stack's actions (memory Fig. 3)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from rnnrepro.reporting.figures.base import PLAIN, Paths, Style, save


def plot_stack_actions(paths: Paths, out: str | Path, style: Style = PLAIN) -> None:
    """memory Fig. 3: how often each stack state is the most probable (log scale; STAY red,
    PUSH blue, by number of pops) and the distribution of the maximum action probability.
    Inputs: one run's ``stack_states.csv`` and ``stack_max_prob.csv`` (told apart by columns)."""
    frames = [pd.read_csv(p) for p in paths]
    states = next(f for f in frames if "state" in f)
    histogram = next(f for f in frames if "steps" in f)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    width = 0.4
    for offset, (action, colour) in enumerate((("STAY", "tab:red"), ("PUSH", "tab:blue"))):
        rows = states[(states["action"] == action) & (states["argmax_count"] > 0)]
        left.bar(
            rows["pops"] + (offset - 0.5) * width,
            rows["argmax_count"],
            width,
            color=colour,
            label=action,
        )
    left.set_yscale("log")
    left.set_xticks(range(int(states["pops"].max()) + 1))
    left.set_xlabel("number of pops")
    left.set_ylabel("steps where the state is the most probable")
    left.legend()
    centres = (histogram["low"] + histogram["high"]) / 2
    right.bar(centres, histogram["steps"], width=histogram["high"] - histogram["low"], color="grey")
    right.set_xlabel("maximum action probability")
    right.set_ylabel("steps")
    run = states.iloc[0]
    fig.suptitle(f"Stack actions of {run['model']} on the {run['dataset']} test stream")
    save(fig, out, style.notes)
