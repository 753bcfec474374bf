"""Result tables: reproduced run metrics next to the paper's numbers, with a verdict per row.

A reference row names one dataset (``ptb_char``) or a cross-validation family
(``ptb_lines_unigram``) whose runs live on its folds (``ptb_lines_unigram_fold1`` ... ``_fold5``);
a family row is compared with the mean ± std over every run of every fold (folds × seeds).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from rnnrepro.data import names
from rnnrepro.fileio import write_csv_atomic, write_text_atomic
from rnnrepro.reporting.baselines import (
    baseline_verdict,
    ngram_values,
    own_baseline,
    read_ngram,
)
from rnnrepro.reporting.markdown import format_spread, markdown_lines
from rnnrepro.reporting.metrics import DECIMALS, METRIC_KIND, RELATIVE_KINDS, SETTING_KINDS

TABLE_COLUMNS = [
    "experiment",
    "dataset",
    "model",
    "stage",
    "metric",
    "comparison",
    "paper",
    "reproduced",
    "mean",
    "std",
    "n_seeds",
    "delta",
    "floor",
    "excess",
    "unigram",
    "n-gram",
    "copy",
    "strict_wcpa",
    "params",
    "verdict",
    "allowed",
]
COLUMN_LEGEND = {
    "stage": "train (the trained model), finetune (after fine-tuning) or dynamic_eval (the "
    "fine-tuned model, dynamically evaluated); shown when a table has later stages",
    "comparison": "`=` a reported value; `<`, `<=`, `>=` a claimed bound, checked on every run",
    "paper": "the published number (see `paper_numbers.csv` for the exact source)",
    "reproduced": "mean ± sample std over runs: seeds, or folds × seeds when the paper's "
    "dataset is a cross-validation family (`n/a` with a single run)",
    "n_seeds": "runs with a value for this metric (seeds, or folds × seeds for a family)",
    "delta": "reproduced mean − paper",
    "floor": "perplexity of the generating distribution on the same split (ppl rows only)",
    "excess": "Dyck perplexities: the cross-entropy above the floor, ours against the paper's, "
    "in nats per target (ln ppl − ln floor); the verdict compares these, within the tolerance "
    "`dyck_excess` × the paper's excess",
    "unigram": "the add-one unigram model fit on the runs' training split, on the same tokens "
    "(text rows; the section under the table has the n-gram baselines)",
    "n-gram": "the interpolated modified Kneser-Ney model fit on the runs' training split, on the "
    "same tokens; a verdict ending `no better than the n-gram` marks a reproduced mean that does "
    "not beat it",
    "copy": "the BLEU of each test source copied as its translation (translation rows: what a "
    "translator that does nothing scores; the unigram of their perplexity rows is an add-one "
    "unigram model of the training targets); a verdict ending `no better than copying the "
    "source` marks a reproduced mean that does not beat it",
    "strict_wcpa": "WCPA rows: the papers' WCPA (the minimum over every distance seen) and how "
    "many runs have it decided by a distance with fewer events than the WCPA with enough "
    "evidence needs (config `dyck.wcpa_min_events`; the fewest events in brackets); the "
    "`reproduced` column and the verdict are that WCPA with enough evidence, the minimum over "
    "distances with at least that many events (docs/results.md)",
    "params": "reproduced recurrent parameter count (mean over runs)",
    "verdict": "match / differs (tolerance below), missing (no run), info (not compared), "
    "below floor (ppl under the generator's: a bug sign). At a scale other than paper a verdict "
    "names the scale (`smoke-scale match`). At the reduced scales (cpu, smoke) it compares "
    "reduced, under-trained runs with the paper and is no evidence for or against it (a bound "
    "such as WCPA <= 0.5 holds trivially for a model that learnt nothing); at fold1 it compares "
    "one fold's runs at the paper's settings with the paper's mean over its folds; "
    "`not run at <scale>` marks rows that scale leaves out; "
    "`k of n run(s) diverged` says that the procedure ended k runs at a NaN/inf loss and that "
    "their numbers are those of their best epoch before it",
}
# columns a Markdown table leaves out when no row has a value
OPTIONAL_COLUMNS = ("floor", "excess", "unigram", "n-gram", "copy", "strict_wcpa")
PAPER_SCALE = "paper"
BOUND_CHECKS = {
    "<": np.less,
    "<=": np.less_equal,
    ">=": np.greater_equal,
}


def read_floors(paths: Iterable[str | Path]) -> dict[str, dict[str, float]]:
    """Generator floors keyed by dataset, from ``results/data/{dataset}/floor.json`` files."""
    return {Path(p).parent.name: json.loads(Path(p).read_text()) for p in paths}


def excess(ppl: float, floor: float) -> float:
    """Cross-entropy above the generator's floor, nats per target: ln(ppl) − ln(floor)."""
    return math.log(ppl) - math.log(floor)


def allowed_delta(ref: pd.Series, tolerances: Mapping[str, float], floor: float = math.nan):
    """How far a mean may lie from the paper's number ``ref`` and match (in the metric's
    units; for a Dyck perplexity above its floor, the perplexity that ``dyck_excess`` allows
    above the paper's), or NaN where no tolerance applies."""
    kind = METRIC_KIND[ref["metric"]]
    if kind == "ppl" and "dyck_excess" in tolerances and ref["value"] > floor:
        allowed = tolerances["dyck_excess"] * excess(ref["value"], floor)
        return ref["value"] * math.expm1(allowed)
    if kind not in tolerances:
        return math.nan
    return tolerances[kind] * abs(ref["value"]) if kind in RELATIVE_KINDS else tolerances[kind]


def compare(
    ref: pd.Series,
    values: np.ndarray,
    tolerances: Mapping[str, float],
    floor: float = math.nan,
) -> str:
    """match / differs / missing / info of the runs' ``values`` against reference row ``ref``
    (``tolerances`` by metric kind, relative for RELATIVE_KINDS). A perplexity with the
    generator's ``floor`` on its split (Dyck) is compared by its excess over the floor, within
    ``dyck_excess`` × the paper's excess (when that tolerance is given and the paper's number
    is above the floor): the raw perplexity's tolerance is wider than the whole distance the
    papers' models leave above the floor."""
    if len(values) == 0:
        return "missing"
    if math.isnan(ref["value"]):  # drawn, not printed: nothing to compare with
        return "info"
    if ref["comparison"] != "=":
        holds = BOUND_CHECKS[ref["comparison"]](values, ref["value"]).all()
        return "match" if holds else "differs"
    kind = METRIC_KIND[ref["metric"]]
    if kind == "ppl" and "dyck_excess" in tolerances and ref["value"] > floor:
        paper = excess(ref["value"], floor)
        ours = excess(values.mean(), floor)
        return "match" if abs(ours - paper) <= tolerances["dyck_excess"] * paper else "differs"
    if kind not in tolerances:
        return "info"
    delta = abs(values.mean() - ref["value"])
    allowed = tolerances[kind] * abs(ref["value"]) if kind in RELATIVE_KINDS else tolerances[kind]
    return "match" if delta <= allowed + 1e-12 else "differs"


def scaled_verdict(verdict: str, scales: set[str]) -> str:
    """Mark a verdict obtained at reduced scale(s), e.g. ``smoke-scale match``."""
    reduced = sorted(scales - {PAPER_SCALE})
    if not reduced or verdict in ("below floor", "info"):  # a bug sign at any scale; no claim
        return verdict
    if verdict == "missing":
        return f"not run at {'/'.join(reduced)} scale"
    return f"{'/'.join(reduced)}-scale {verdict}"


def matched_runs(runs: pd.DataFrame, ref: pd.Series) -> pd.DataFrame:
    """The runs reference row ``ref`` is compared with: its paper's experiment, its dataset or
    the folds of its family, its model, its stage (``train`` when it names none)."""
    if "family" not in runs:
        runs = runs.assign(family=[names.parse(d).unfolded for d in runs["dataset"]])
    matched = runs[
        (runs["experiment"] == ref["paper"])
        & ((runs["dataset"] == ref["dataset"]) | (runs["family"] == ref["dataset"]))
        & (runs["model"] == ref["model"])
    ]
    if "stage" in matched:
        matched = matched[matched["stage"] == (ref.get("stage") or "train")]
    return matched


def build_table(
    paper_rows: pd.DataFrame,
    runs: pd.DataFrame,
    floors: Mapping[str, Mapping[str, float]],
    tolerances: Mapping[str, float],
    scale: str = PAPER_SCALE,
    ngram_scores: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per reference row: paper value, reproduced mean ± std over runs and a verdict.

    A reference dataset matches runs on that dataset and on its folds (``{dataset}_fold{k}``), so
    a family row aggregates folds × seeds. ``tolerances`` (config.yaml's ``reporting.tolerances``)
    maps a metric kind (``ppl``, ``bpc``, ``ce``, ``wcpa``, ``params``, ...) to its tolerance:
    relative for ppl, bpc, ce and params, absolute otherwise; kinds without one are not
    compared. A perplexity below the generator floor (any run) gets the verdict ``below floor``.
    A verdict from runs of a reduced scale (their ``scale`` column, else ``scale``) names it; a
    row without runs at a reduced ``scale`` is ``not run at <scale> scale``. With ``ngram_scores``
    (``read_ngram``) a text row gives the unigram and n-gram values on its runs' tokens, and
    its verdict says when the reproduced mean does not beat one of them.
    """
    ngram_scores = read_ngram([]) if ngram_scores is None else ngram_scores
    if runs.empty:
        runs = pd.DataFrame(columns=["experiment", "dataset", "family", "model", *METRIC_KIND])
    if "family" not in runs:
        runs = runs.assign(family=[names.parse(d).unfolded for d in runs["dataset"]])
    out = []
    for _, ref in paper_rows.iterrows():
        metric = ref["metric"]
        stage = ref.get("stage") or "train"  # a reference row without one: the trained model
        matched = matched_runs(runs, ref)
        values = matched[metric].dropna().to_numpy(float)
        strict = strict_wcpa(matched, metric)
        if strict:  # the WCPA with enough evidence is the one compared
            values = matched[robust_column(metric)].dropna().to_numpy(float)
        n = len(values)
        mean = values.mean() if n else math.nan
        std = values.std(ddof=1) if n > 1 else math.nan
        floor = math.nan
        if METRIC_KIND[metric] == "ppl" and ref["dataset"] in floors:
            floor = floors[ref["dataset"]][metric.split("_")[0]]
        verdict = compare(ref, values, tolerances, floor)
        if n and values.min() < floor:
            verdict = "below floor"
        run_scales = set(matched["scale"]) - {""} if "scale" in matched else set()
        verdict = scaled_verdict(verdict, run_scales or {scale})
        diverged = int(matched["diverged"].sum()) if "diverged" in matched else 0
        if diverged:  # the procedure ended these runs at a NaN/inf loss (their best epoch kept)
            verdict = f"{verdict}; {diverged} of {len(matched)} run(s) diverged"
        unigram, ngram = ngram_values(
            ngram_scores, matched[matched[metric].notna()], ref["dataset"], metric
        )
        column, trivial = own_baseline(matched, metric)
        copy = trivial if column == "copy" else math.nan
        unigram = trivial if column == "unigram" else unigram
        verdict += baseline_verdict(mean, unigram, ngram)
        if mean <= copy:
            verdict += "; no better than copying the source"
        recurrent = matched["params"].dropna().to_numpy(float)
        out.append(
            {
                "experiment": ref["paper"],
                "dataset": ref["dataset"],
                "model": ref["model"],
                "stage": stage,
                "metric": metric,
                "comparison": ref["comparison"],
                "paper": ref["value"],
                "reproduced": format_spread(mean, std, n, DECIMALS[METRIC_KIND[metric]]),
                "mean": mean,
                "std": std,
                "n_seeds": n,
                "delta": mean - ref["value"],
                "floor": floor,
                "excess": excess_text(mean, ref["value"], floor),
                "unigram": unigram,
                "n-gram": ngram,
                "copy": copy,
                "strict_wcpa": strict or math.nan,
                "params": recurrent.mean() if len(recurrent) else math.nan,
                "verdict": verdict,
                "allowed": allowed_delta(ref, tolerances, floor),
            }
        )
    return pd.DataFrame(out, columns=TABLE_COLUMNS)


def excess_text(mean: float, paper: float, floor: float) -> str | float:
    """ "0.0151 vs 0.0034 (×4.5)": our and the paper's excess over the floor, or NaN."""
    if not (mean > 0 and paper > 0 and floor > 0):  # NaN fails every comparison
        return math.nan
    ours, theirs = excess(mean, floor), excess(paper, floor)
    ratio = f" (×{ours / theirs:.1f})" if theirs > 0 else ""
    return f"{ours:.4f} vs {theirs:.4f}{ratio}"


def robust_column(metric: str) -> str:
    """The column of a WCPA metric's value over distances with enough events."""
    return metric.replace("_wcpa", "_robust_wcpa")


def strict_wcpa(matched: pd.DataFrame, metric: str) -> str:
    """For a WCPA metric whose runs record the WCPA over distances with enough events: the
    papers' (strict) WCPA and the evidence behind it, e.g. "0.323 ± 0.560; decided by < 20 events
    in 3 of 3 runs (fewest 1)"; "" for any other metric (then the metric itself is compared)."""
    robust = robust_column(metric)
    if METRIC_KIND[metric] != "wcpa" or robust not in matched or matched[robust].isna().all():
        return ""
    split = metric.split("_")[0]
    values = matched[metric].dropna().to_numpy(float)
    n = len(values)
    text = format_spread(values.mean(), values.std(ddof=1) if n > 1 else math.nan, n, 3)
    events = matched[f"{split}_wcpa_events"]
    minimum = matched.get(f"{split}_wcpa_min_events")
    if minimum is None or minimum.isna().all():
        return text
    few = events < minimum
    if few.any():
        text += (
            f"; decided by < {int(minimum.max())} events in {int(few.sum())} of {len(matched)} "
            f"run(s) (fewest {int(events.min())})"
        )
    else:
        text += f"; every run's rests on ≥ {int(minimum.max())} events"
    return text


def describe_tolerances(tolerances: Mapping[str, float]) -> str:
    """One sentence stating each tolerance and whether it is relative or absolute."""
    if not tolerances:
        return "No tolerance applies: every row of this table is information only."
    parts = [
        f"{kind} {value:g} ({'relative' if kind in RELATIVE_KINDS else 'absolute'})"
        for kind, value in tolerances.items()
        if kind != "dyck_excess"
    ]
    if "dyck_excess" in tolerances:
        parts.append(
            f"dyck_excess {tolerances['dyck_excess']:g} (a Dyck perplexity: its excess over the "
            "generator's floor, relative to the paper's excess)"
        )
    return "Tolerances for a match: " + ", ".join(parts) + "."


def tolerances_in_use(
    paper_rows: pd.DataFrame, tolerances: Mapping[str, float]
) -> dict[str, float]:
    """The tolerances of the metric kinds that occur in ``paper_rows`` (in their order)."""
    kinds = {METRIC_KIND[metric] for metric in paper_rows["metric"]}
    dyck = any(family_of(d) == "dyck" for d in paper_rows["dataset"])
    if dyck and "ppl" in kinds:
        kinds.add("dyck_excess")
    return {kind: value for kind, value in tolerances.items() if kind in kinds}


def family_of(dataset: str) -> str:
    """The family of a reference row's dataset: a dataset's family, or the cross-validation
    family the row names itself (``ptb_lines_unigram``)."""
    try:
        return names.family(dataset)
    except ValueError:
        return dataset


def verdict_tally(df: pd.DataFrame) -> str:
    """The table's "Verdicts:" line: the results' verdicts, then the settings' apart (parameter
    counts, sized to the papers' by construction: checked, never counted as results)."""

    def tally(verdicts: pd.Series) -> str:
        return ", ".join(f"{k} {v}" for k, v in verdicts.value_counts().items())

    kinds = df["metric"].map(METRIC_KIND) if "metric" in df else pd.Series("", index=df.index)
    setting = kinds.isin(SETTING_KINDS)
    line = "Verdicts: " + (tally(df.loc[~setting, "verdict"]) or "none")
    if setting.any():
        line += "; settings checked (sized to the paper's, not results): "
        line += tally(df.loc[setting, "verdict"])
    return line


def write_table(
    df: pd.DataFrame,
    csv_path: str | Path,
    md_path: str | Path,
    title: str,
    notes: Iterable[str],
    title_notes: Iterable[str] = (),
    sections: Iterable[str] = (),
) -> None:
    """Write the table as CSV and as Markdown with a header explaining columns and tolerances.

    ``title_notes`` are shown right under the title as a quote block (e.g. the scale's
    reductions: "cpu scale: 1 fold, 3 epochs, hidden sizes ×0.25"); ``notes`` follow the legend;
    ``sections`` (Markdown lines) follow the table.
    """
    write_csv_atomic(df, csv_path, index=False)
    if "stage" in df and set(df["stage"]) <= {"train"}:  # one stage: no column for it
        df = df.drop(columns=["stage"])
    empty = [c for c in OPTIONAL_COLUMNS if c in df and df[c].isna().all()]
    df = df.drop(columns=empty)  # no floor in a text table, no reference in a Dyck one
    lines = [f"# {title}", ""]
    title_notes = list(title_notes)
    if title_notes:
        lines += [f"> {note}  " for note in title_notes] + [""]
    lines += ["Columns:", ""]
    lines += [f"- **{name}**: {text}" for name, text in COLUMN_LEGEND.items() if name in df]
    lines += ["", *[f"{note}  " for note in notes]]
    below = df[df["verdict"] == "below floor"]
    for _, row in below.iterrows():
        lines.append(
            f"**WARNING: {row['dataset']} / {row['model']} {row['metric']} is below the "
            f"generator floor ({row['mean']:.4f} < {row['floor']:.4f}); this indicates a bug.**  "
        )
    lines += ["", verdict_tally(df), ""]
    lines += markdown_lines(df.drop(columns=["mean", "std", "allowed"], errors="ignore"))
    lines += list(sections)
    write_text_atomic(md_path, "\n".join(lines) + "\n")
