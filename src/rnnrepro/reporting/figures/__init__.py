"""Figures drawn from run outputs, by kind: what each draws is generic; which runs, labels
and notes go into one is its paper's catalogue (``rnnrepro.papers``). Every input carries its
run identity in its own columns or fields; none is parsed from paths."""

from __future__ import annotations

from collections.abc import Callable

from rnnrepro.reporting.figures.agreement import plot_venn
from rnnrepro.reporting.figures.attention import plot_heatmap, plot_pabs
from rnnrepro.reporting.figures.base import PLAIN, Style, read_runs
from rnnrepro.reporting.figures.characters import (
    pick_best_run,
    plot_examples,
    plot_position_loss,
    plot_ratio,
    read_metrics,
)
from rnnrepro.reporting.figures.dyck import plot_ldpa, plot_val_wcpa
from rnnrepro.reporting.figures.masking import plot_feature_masking
from rnnrepro.reporting.figures.sizes import plot_layer_sizes, plot_major_ratio, plot_size_band
from rnnrepro.reporting.figures.stack import plot_stack_actions

__all__ = ["FIGURES", "PLAIN", "Style", "pick_best_run", "read_metrics", "read_runs"]

FIGURES: dict[str, Callable[..., None]] = {
    "ldpa": plot_ldpa,
    "val_wcpa": plot_val_wcpa,
    "pabs": plot_pabs,
    "heatmap": plot_heatmap,
    "ratio": plot_ratio,
    "position_loss": plot_position_loss,
    "examples": plot_examples,
    "stack_actions": plot_stack_actions,
    "venn": plot_venn,
    "layer_sizes": plot_layer_sizes,
    "size_band": plot_size_band,
    "major_ratio": plot_major_ratio,
    "feature_masking": plot_feature_masking,
}
