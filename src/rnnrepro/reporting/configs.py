"""Configuration tables (major_minor Tables IV, V and XI): the settings the pipeline resolves
from config.yaml for a model, next to the hyper-parameters the paper prints, row by row."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import pandas as pd

CONFIG_COLUMNS = ["dataset", "model", "row", "metric", "paper", "config", "config_key", "verdict"]
_INDEXED = re.compile(r"^(layer_size|major_proportion)_(\d+)$")
_LISTS = {"layer_size": "layer_sizes", "major_proportion": "major_proportions"}
# Settings a paper prints in another form than config.yaml's, derived from the hyper-parameters:
# name -> (its value, the derivation a table shows as its config key)
DERIVED = {
    "layers": (lambda h: len(h["layer_sizes"]), "len(hparams.layer_sizes)"),
    "keep_probability": (lambda h: 1.0 - h["dropout"], "1 − hparams.dropout"),
}


def setting(settings: Mapping, metric: str) -> tuple[object, str]:
    """The value of a reference ``metric`` in a run's resolved settings (``training``,
    ``hparams``, a translation run's ``translation``, ``dynamic_eval``; ``stage`` says which) or
    derived from its hyper-parameters (``DERIVED``), and the config key it comes from. Unset
    Major proportions of a model with layers are 1 (plain LSTM layers, every unit Major)."""
    hparams = settings.get("hparams", {})
    indexed = _INDEXED.match(metric)
    if indexed:
        name, index = _LISTS[indexed[1]], int(indexed[2])
        values, where = hparams.get(name) or [], f"hparams.{name}[{index - 1}]"
        if name == "major_proportions" and not values and "layer_sizes" in hparams:
            values, where = [1.0] * len(hparams["layer_sizes"]), f"hparams.{name} unset: 1"
        return (values[index - 1] if index <= len(values) else None), where
    trained = settings["stage"] != "dynamic_eval"
    sections = ("training", "hparams", "translation") if trained else ("dynamic_eval",)
    for section in sections:
        if metric in settings.get(section, {}):
            return settings[section][metric], f"{section}.{metric}"
    if metric in DERIVED and trained:
        derive, where = DERIVED[metric]
        try:
            return derive(hparams), where
        except KeyError:  # the hyper-parameter it derives from is not set
            return None, "(not set)"
    return None, "(not set)"


def config_table(
    reference: pd.DataFrame, settings: Mapping[str, Mapping], scale: str, scaled: Mapping | None
) -> pd.DataFrame:
    """One row per reference row: the paper's value, the configured one at paper scale and a
    verdict (exact match), plus the value at the selected reduced ``scale`` (``scaled``) where it
    differs. ``settings``/``scaled`` map "dataset/model/stage" to a run's resolved ``training``,
    ``hparams``, ``translation`` and ``dynamic_eval``."""
    rows = []
    for _, ref in reference.iterrows():
        stage = ref.get("stage") or "train"
        key = f"{ref['dataset']}/{ref['model']}/{stage}"
        if key not in settings:  # the model is not run on this dataset
            value, where = None, "(not configured)"
        else:
            value, where = setting({**settings[key], "stage": stage}, ref["metric"])
        if key not in settings:
            verdict = "not configured"
        elif value is None:
            verdict = "missing"
        elif math.isclose(float(value), ref["value"], rel_tol=1e-9):
            verdict = "match"
        else:
            verdict = "differs"
        row = {
            "dataset": ref["dataset"],
            "model": ref["model"],
            "row": ref["row"],
            "metric": ref["metric"],
            "paper": ref["value"],
            "config": value,
            "config_key": where,
            "verdict": verdict,
        }
        if scaled is not None and key in scaled:
            reduced, _ = setting({**scaled[key], "stage": stage}, ref["metric"])
            row[f"at {scale} scale"] = "" if reduced == value else reduced
        rows.append(row)
    columns = CONFIG_COLUMNS + ([f"at {scale} scale"] if scaled is not None else [])
    return pd.DataFrame(rows, columns=columns)
