"""What a comparison table knows of each metric (its kind, tolerance, decimals) and how it
reads the runs' metrics files into one frame."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from rnnrepro.config import TEXT_FAMILIES, TRANSLATION_FAMILIES
from rnnrepro.data import names

# metric name -> tolerance kind; kinds missing from the tolerances get the verdict "info"
METRIC_KIND = {
    "val_ppl": "ppl",
    "test_ppl": "ppl",
    "val_wcpa": "wcpa",
    "test_wcpa": "wcpa",
    "val_bpc": "bpc",
    "test_bpc": "bpc",
    # a paper's "BPC" read as nats per character (``with_nats_readings``)
    "val_npc": "bpc",
    "test_npc": "bpc",
    "val_ce": "ce",
    "test_ce": "ce",
    "params": "params",
    "params_total": "params",
    "epochs": "epochs",
    "train_minutes": "train_minutes",
    # memory Table 2 (Linzen agreement; reporting.agreement): accuracies and sentence perplexity
    **{f"acc_attr{k}": "accuracy" for k in range(6)},
    "acc_overall": "accuracy",
    "ppl": "ppl",
}


# a translation run's metrics of each test set (its metrics file's ``tests``), as
# ``<test set>_<metric>`` columns: BLEU detokenized (sacrebleu's default) and tokenized
TEST_SET_METRICS = {"ppl": "ppl", "bleu": "bleu", "bleu_tokenized": "bleu"}
METRIC_KIND.update(
    {
        f"{test_set}_{metric}": kind
        for family in TRANSLATION_FAMILIES.values()
        for test_set in family["tests"]
        for metric, kind in TEST_SET_METRICS.items()
    }
)


# a BLEU metric of a test set -> the key of the signature it was scored with (same test set)
SIGNATURES = {"bleu_tokenized": "signature_tokenized", "bleu": "signature"}


# a text family's reported metric (its reference section shows it)
TEXT_METRICS = {family: spec["metric"] for family, spec in TEXT_FAMILIES.items()}


RELATIVE_KINDS = {"ppl", "params", "bpc", "ce"}
# kinds of number the pipeline sets rather than measures (the models are sized to the papers'
# parameter counts): checked, never counted as results
SETTING_KINDS = {"params"}


def add_tolerances_option(parser: argparse.ArgumentParser) -> None:
    """A table script's ``--tolerances`` (``read_tolerances``)."""
    parser.add_argument(
        "--tolerances",
        type=read_tolerances,
        required=True,
        help="JSON: metric kind -> tolerance (config.yaml reporting.tolerances)",
    )


def read_tolerances(text: str) -> dict[str, float]:
    """The ``--tolerances`` option of a table script: JSON of config.yaml's
    ``reporting.tolerances`` (metric kind -> tolerance, relative for ``RELATIVE_KINDS``)."""
    tolerances = json.loads(text)
    if not isinstance(tolerances, dict) or not all(
        isinstance(value, int | float) and value > 0 for value in tolerances.values()
    ):
        raise ValueError(f"--tolerances: not an object of positive numbers: {text!r}")
    return {kind: float(value) for kind, value in tolerances.items()}


DECIMALS = {
    "ppl": 3,
    "accuracy": 4,
    "wcpa": 3,
    "bpc": 3,
    "ce": 3,
    "bleu": 2,
    "params": 0,
    "epochs": 1,
    "train_minutes": 1,
}


# per-split metrics read from metrics.json (a missing or null entry becomes NaN)
SPLIT_METRICS = (
    "loss",
    "ppl",
    "wcpa",
    "bpc",
    "ce",
    "robust_wcpa",
    "wcpa_events",
    "wcpa_min_events",
    "rare_distances",
    "distances",
)


def collect_metrics(paths: Iterable[str | Path]) -> pd.DataFrame:
    """One row per run from its ``metrics.json``; columns named like the reference metrics.

    Reads loss, ppl, wcpa, bpc and ce of both splits (missing or null -> NaN), so Dyck, character
    and word runs mix freely; each test set of ``tests`` (a translation run's) gives a column
    ``<test set>_<key>`` per scalar it holds (``newstest2015_bleu``; a signature stays a
    string); ``family``/``fold`` come from the dataset name, ``scale`` and ``devices`` (joined by
    "+") from the file (empty when absent).
    """
    rows = []
    for path in paths:
        m = json.loads(Path(path).read_text())
        row = {key: m[key] for key in ("experiment", "dataset", "model", "seed")}
        row["stage"] = m.get("stage", "train")
        row["diverged"] = bool(m.get("diverged", False))
        dataset = names.parse(m["dataset"])
        row["family"] = dataset.unfolded
        row["fold"] = dataset.fold
        row["scale"] = m.get("scale") or ""
        row["devices"] = "+".join(m.get("devices") or [])  # where it trained, e.g. "cpu+cuda"
        run = m.get("run") or {}
        stream = run.get("task") == "stream"
        row["eval_tokens"] = (run.get("training") or {}).get("max_eval_tokens", 0) if stream else 0
        for split in ("val", "test"):
            for name in SPLIT_METRICS:
                value = m[split].get(name)
                row[f"{split}_{name}"] = math.nan if value is None else float(value)
        for split in ("val", "test"):
            row[f"{split}_npc"] = row[f"{split}_bpc"] * math.log(2)
            for kind, values in (m[split].get("excess") or {}).items():  # Dyck: dyck_excess
                row[f"{split}_excess_{kind}"] = values["excess"]
                row[f"{split}_excess_{kind}_share"] = values["share"]
        for test_set, values in (m.get("tests") or {}).items():
            for key, value in values.items():
                if isinstance(value, str):  # a signature
                    row[f"{test_set}_{key}"] = value
                elif value is None or isinstance(value, (int, float)):
                    row[f"{test_set}_{key}"] = math.nan if value is None else float(value)
        row["params"] = m["params"]["recurrent"]
        row["params_total"] = m["params"]["total"]
        row["epochs"] = m["epochs"]
        row["best_epoch"] = m.get("best_epoch", math.nan)
        row["stopped_because"] = m.get("stopped_because", "")
        row["train_minutes"] = m["train_seconds"] / 60.0
        row["path"] = str(path)
        rows.append(row)
    return pd.DataFrame(rows)
