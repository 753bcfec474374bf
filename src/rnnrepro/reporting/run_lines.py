"""What a comparison table says of the runs it read, in sections and lines after it: BLEU
signatures, the random search, the Dyck runs' evidence and training, the readings of the
procedure, runs kept from an archive and the scales read."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from rnnrepro.provenance import KEPT_FROM_ARCHIVE
from rnnrepro.reporting.markdown import format_spread, markdown_lines, section
from rnnrepro.reporting.metrics import METRIC_KIND, SIGNATURES


def signature_lines(table: pd.DataFrame, runs: pd.DataFrame) -> list[str]:
    """Markdown section under a table of BLEU rows: the signature each row's BLEU was scored
    with, per metric, dataset and model (and the decoding's beam width where the runs record
    it), so that every score traces to its scorer's settings; none without such rows."""
    rows = []
    for metric in dict.fromkeys(table["metric"]):
        suffix = next((s for s in SIGNATURES if metric.endswith(f"_{s}")), None)
        if METRIC_KIND.get(metric) != "bleu" or suffix is None:
            continue
        test_set = metric[: -len(suffix)]
        signature, beam = test_set + SIGNATURES[suffix], f"{test_set}beam_width"
        if signature not in runs or metric not in runs:
            continue
        scored = runs[runs[signature].notna() & runs[metric].notna()]
        scored = scored.assign(beam=scored.get(beam, math.nan))
        keys = ["dataset", "model", signature, "beam"]
        for (dataset, model, text, width), group in scored.groupby(keys, sort=False, dropna=False):
            escaped = text.replace("|", "\\|")  # a Markdown table cell holds no bare "|"
            rows.append(
                {
                    "metric": metric,
                    "dataset": dataset,
                    "model": model,
                    "signature": f"`{escaped}`",
                    "beam width": width,
                    "runs": len(group),
                }
            )
    return section("BLEU signatures", SIGNATURE_TEXT, pd.DataFrame(rows))


SIGNATURE_TEXT = (
    "The sacrebleu signature of every BLEU row above, by metric and model: `*_bleu` is "
    "sacrebleu's default on the detokenized output (13a tokenization), `*_bleu_tokenized` the "
    "tokenized BLEU of the papers' era (both sides Moses-tokenized, then scored as they are, as "
    "multi-bleu.perl did; `tok:none` after the Moses step). The beam width is the decoding's."
)


def search_summary(paths: Iterable[str | Path]) -> pd.DataFrame:
    """One row per searched run (its ``search.json``): trials run, the chosen trial, its sampled
    settings and validation perplexity; empty when no run was searched."""
    rows = []
    for path in paths:
        m = json.loads(Path(path).read_text())
        if "search" not in m:
            continue
        search = m["search"]
        chosen = next(t for t in search["every_trial"] if t["trial"] == search["chosen"])
        rows.append(
            {
                "dataset": m["dataset"],
                "model": m["model"],
                "seed": m["seed"],
                "trials": search["trials"],
                "diverged": sum(t["diverged"] for t in search["every_trial"]),
                "chosen": search["chosen"],
                **chosen["settings"],
                "val_ppl": chosen["val_ppl"],
            }
        )
    return pd.DataFrame(rows)


def search_lines(summary: pd.DataFrame) -> list[str]:
    """Markdown section on the random search behind the table (none without a search)."""
    return section("Random search", SEARCH_TEXT, summary)


SEARCH_TEXT = (
    "Each searched run is its chosen trial: the lowest validation loss of `trials` trials "
    "(`diverged` of them ended at a NaN/inf loss); the sampled settings of the chosen one:"
)


def robust_wcpa_lines(runs: pd.DataFrame, min_events: int) -> list[str]:
    """Markdown section beside a Dyck table: how many events decide each WCPA, and the WCPA
    over distances with at least ``min_events`` events (mean ± std over runs)."""
    if runs.empty or "test_robust_wcpa" not in runs or runs["test_robust_wcpa"].isna().all():
        return []
    rows = []
    for (dataset, model), group in runs.groupby(["dataset", "model"], sort=False):
        row = {"dataset": dataset, "model": model, "runs": len(group)}
        for split in ("val", "test"):
            values = {
                name: group[f"{split}_{name}"].dropna().to_numpy(float)
                for name in ("wcpa", "wcpa_events", "robust_wcpa", "rare_distances", "distances")
            }
            row[f"{split} WCPA"] = _spread(values["wcpa"], 3)
            row[f"{split} events at the worst distance"] = _spread(values["wcpa_events"], 1)
            row[f"{split} WCPA, ≥{min_events} events"] = _spread(values["robust_wcpa"], 3)
            row[f"{split} distances with <{min_events} events"] = (
                f"{values['rare_distances'].mean():.0f} of {values['distances'].mean():.0f}"
                if len(values["distances"])
                else ""
            )
        rows.append(row)
    return [
        "",
        f"## WCPA and the evidence behind it (distances with at least {min_events} events)",
        "",
        "The papers' WCPA is the minimum LDPA over every closing distance seen, so one event at "
        "a rare long distance can decide it. `events at the worst distance`: how many events "
        "the distance giving the minimum holds (mean over runs). `WCPA, ≥N events`: the "
        f"minimum over distances with at least N = {min_events} events (config "
        "`dyck.wcpa_min_events`); mean ± std over runs.",
        "",
        *markdown_lines(pd.DataFrame(rows)),
    ]


def excess_lines(runs: pd.DataFrame) -> list[str]:
    """Markdown section beside a Dyck table: where the runs' test loss sits above the
    generator's floor, by kind of target (``evaluation.dyck_excess``): the excess in millinats
    per target of each kind and its share of the total excess (mean over runs)."""
    kinds = [k for k in ("empty", "inside", "end") if f"test_excess_{k}" in runs]
    if runs.empty or not kinds:
        return []
    rows = []
    for (dataset, model), group in runs.groupby(["dataset", "model"], sort=False):
        group = group.dropna(subset=[f"test_excess_{k}" for k in kinds])
        if group.empty:
            continue
        row = {"dataset": dataset, "model": model, "runs": len(group)}
        for kind in kinds:
            excess = 1000 * group[f"test_excess_{kind}"].to_numpy(float)
            share = 100 * group[f"test_excess_{kind}_share"].to_numpy(float)
            row[f"{kind}: mnats per target"] = _spread(excess, 1)
            row[f"{kind}: share %"] = f"{share.mean():.0f}"
        rows.append(row)
    if not rows:
        return []
    return [
        "",
        "## Where the test loss sits above the generator's floor",
        "",
        "Each test target by the generator's state before it: `empty` (empty stack: the choice "
        "among the open brackets and the end), `inside` (open another bracket or close the top), "
        "`end` (the end itself, allowed only from the split's minimum length on: a model must "
        "count to place it). Per kind: the model's cross-entropy minus the generator's, in "
        "millinats per target of that kind (mean ± std over runs), and its share of the run's "
        "total excess (a negative share: below the generator there; docs/methods.md §3.1).",
        "",
        *markdown_lines(pd.DataFrame(rows)),
    ]


def training_lines(
    runs: pd.DataFrame, histories: Iterable[str | Path], floors: Mapping[str, Mapping[str, float]]
) -> list[str]:
    """Markdown section beside a Dyck table: how the runs trained, the evidence for reading a
    perplexity gap. Per dataset and model: epochs, why training stopped, the last learning
    rate, and the training perplexity at the best epoch beside the validation perplexity and the
    generator's validation floor (training ≈ validation, both above the floor: under-fitting;
    training well under validation: over-fitting)."""
    frames = [pd.read_csv(path) for path in histories]
    runs = runs[runs["stage"] == "train"] if "stage" in runs else runs
    if runs.empty or not frames:
        return []
    history = pd.concat(frames, ignore_index=True)
    if "stage" in history:
        history = history[history["stage"].fillna("train") == "train"]
    keys = ["experiment", "dataset", "model", "seed"]
    last = history.groupby(keys).tail(1).set_index(keys)
    by_epoch = history.set_index([*keys, "epoch"])
    rows = []
    for (dataset, model), group in runs.groupby(["dataset", "model"], sort=False):
        train_ppl, final_lr = [], []
        for _, run in group.iterrows():
            key = (run["experiment"], dataset, model, run["seed"])
            if key in last.index:
                final_lr.append(last.loc[key, "lr"])
            if (*key, run["best_epoch"]) in by_epoch.index:
                # the best validation of that epoch (a procedure with eval_every validates more
                # than once an epoch)
                at = by_epoch.loc[[(*key, run["best_epoch"])]].sort_values("val_loss")
                train_ppl.append(math.exp(at["train_loss"].iloc[0]))
        reasons = group["stopped_because"].replace("", "unknown").value_counts()
        floor = floors.get(dataset, {}).get("val")
        rows.append(
            {
                "dataset": dataset,
                "model": model,
                "runs": len(group),
                "epochs": f"{group['epochs'].mean():.0f} ({group['epochs'].min()}-"
                f"{group['epochs'].max()})",
                "stopped because": "; ".join(f"{text} ({n})" for text, n in reasons.items()),
                "last lr": f"{np.median(final_lr):.2g}" if final_lr else "",
                "train ppl at best epoch": _spread(np.array(train_ppl), 4),
                "val ppl": _spread(group["val_ppl"].dropna().to_numpy(float), 4),
                "val floor": f"{floor:.4f}" if floor is not None else "",
            }
        )
    return [
        "",
        "## How the runs trained",
        "",
        "Per dataset and model (mean ± std over runs): epochs run (range), why training "
        "stopped (number of runs), the median learning rate of the last epoch, and the training "
        "perplexity of the best epoch (the epoch's running mean, with dropout where the model "
        "has it) beside the validation perplexity and the generator's floor on validation. "
        "Training ≈ validation and both above the floor means the runs under-fit (optimisation "
        "or epoch budget); training well under validation means they over-fit.",
        "",
        *markdown_lines(pd.DataFrame(rows)),
    ]


def _spread(values: np.ndarray, decimals: int) -> str:
    """``format_spread`` of an array of run values."""
    n = len(values)
    mean = values.mean() if n else math.nan
    return format_spread(mean, values.std(ddof=1) if n > 1 else 0.0, n, decimals)


# Architectures with a soft choice whose validation temperature is a reading of the procedure
# (``training.validation_temperature``).
SOFT_CHOICE_ARCHITECTURES = ("attention_lstm",)


def describe_readings(paths: Iterable[str | Path]) -> str | None:
    """Which readings of the plateau LR decay and of early stopping the runs used
    (second_order_lstm's "LR decay of 0.5 with patience 3" and "early stopping after 6 epochs of
    increasing validation perplexity" can be read two ways; ``rnnrepro.procedures``), and for the
    attention LSTM at which temperature it validated (not stated), or None when no run decays its
    LR."""
    readings: dict[str, int] = {}
    for path in paths:
        metrics = json.loads(Path(path).read_text())
        training = metrics.get("training") or {}
        if not training.get("lr_decay"):
            continue
        decay_on = training.get("lr_decay_on", "no_improvement")
        threshold = (
            training.get("lr_decay_threshold", 1e-4) if decay_on == "no_improvement" else None
        )
        text = f"`lr_decay_on: {decay_on}`"
        if threshold is not None:
            text += f" (threshold {threshold:g})"
        text += f", `stop_on: {training.get('stop_on', 'no_improvement')}`"
        if metrics.get("architecture") in SOFT_CHOICE_ARCHITECTURES:
            temperature = training.get("validation_temperature", "training")
            text += f", `validation_temperature: {temperature}`"
        readings[text] = readings.get(text, 0) + 1
    if not readings:
        return None
    return (
        "Readings of the procedure used (LR decay, early stopping and the attention LSTM's "
        "validation temperature): "
        + "; ".join(f"{text} ({n} run{'s' * (n != 1)})" for text, n in readings.items())
        + " (docs/methods.md)."
    )


def describe_kept(paths: Iterable[str | Path]) -> str | None:
    """Which runs were trained by older code and kept from an archive (the file
    ``provenance.KEPT_FROM_ARCHIVE`` beside their metrics), and by which commits; None if none."""
    commits: dict[str, int] = {}
    for path in paths:
        kept = Path(path).parent / KEPT_FROM_ARCHIVE
        if kept.exists():
            commit = json.loads(kept.read_text()).get("commit") or "unknown"
            commits[commit] = commits.get(commit, 0) + 1
    if not commits:
        return None
    trained = "; ".join(f"{n} trained at commit {commit}" for commit, n in commits.items())
    return (
        f"Runs trained by older code, kept from an archive ({trained}; "
        "python -m rnnrepro.scripts.archive restore --keep-runs-of-other-code): their training "
        "is that code's, their evaluation this checkout's."
    )


def describe_scales(runs: pd.DataFrame) -> str:
    """How many runs of each scale were read, e.g. "Scale of the runs read: cpu (30 runs)."."""
    if runs.empty:
        return "Scale of the runs read: no runs."
    scales = runs["scale"].replace("", "unstated") if "scale" in runs else pd.Series(["unstated"])
    counts = scales.value_counts()
    text = "Scale of the runs read: " + ", ".join(
        f"{scale} ({n} run{'s' * (n != 1)})" for scale, n in counts.items()
    )
    text += "."
    if set(counts.index) - {"paper", "unstated"}:
        text += " Runs of another scale depart from the paper's settings as the notes above say."
    return text
