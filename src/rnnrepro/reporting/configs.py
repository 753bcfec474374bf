"""Configuration tables (major_minor Tables IV and V): the settings the pipeline resolves from
config.yaml for a model, next to the hyper-parameters the paper prints, row by row."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import pandas as pd

CONFIG_COLUMNS = ["dataset", "model", "row", "metric", "paper", "config", "config_key", "verdict"]
_INDEXED = re.compile(r"^(layer_size|major_proportion)_(\d+)$")
_LISTS = {"layer_size": "layer_sizes", "major_proportion": "major_proportions"}


def setting(settings: Mapping, metric: str) -> tuple[object, str]:
    """The value of a reference ``metric`` in a run's resolved settings (``training``,
    ``hparams``, ``dynamic_eval``; ``stage`` says which) and the config key it comes from."""
    indexed = _INDEXED.match(metric)
    if indexed:
        name, index = _LISTS[indexed[1]], int(indexed[2])
        values = settings["hparams"].get(name) or []
        value = values[index - 1] if index <= len(values) else None
        return value, f"hparams.{name}[{index - 1}]"
    sections = ("dynamic_eval",) if settings["stage"] == "dynamic_eval" else ("training", "hparams")
    for section in sections:
        if metric in settings[section]:
            return settings[section][metric], f"{section}.{metric}"
    return None, "(not set)"


def config_table(
    reference: pd.DataFrame, settings: Mapping[str, Mapping], scale: str, scaled: Mapping | None
) -> pd.DataFrame:
    """One row per reference row: the paper's value, the configured one at paper scale and a
    verdict (exact match), plus the value at the selected reduced ``scale`` (``scaled``) where it
    differs. ``settings``/``scaled`` map "dataset/model/stage" to a run's resolved ``training``,
    ``hparams`` and ``dynamic_eval``."""
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
