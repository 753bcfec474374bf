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

from rnnrepro.config import TEXT_FAMILIES, TRANSLATION_FAMILIES
from rnnrepro.data import names
from rnnrepro.fileio import write_csv_atomic, write_text_atomic
from rnnrepro.provenance import KEPT_FROM_ARCHIVE

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
DEFAULT_TOLERANCES = {
    "ppl": 0.01,
    "wcpa": 0.05,
    "params": 0.05,
    "bpc": 0.01,
    "ce": 0.01,
    "bleu": 0.5,
}
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
    "rare_distances",
    "distances",
)
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
    "unigram",
    "n-gram",
    "copy",
    "params",
    "verdict",
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
    "unigram": "the add-one unigram model fit on the runs' training split, on the same tokens "
    "(text rows; the section under the table has the references)",
    "n-gram": "the interpolated modified Kneser-Ney model fit on the runs' training split, on the "
    "same tokens; a verdict ending `no better than the n-gram` marks a reproduced mean that does "
    "not beat it",
    "copy": "the BLEU of each test source copied as its translation (translation rows: what a "
    "translator that does nothing scores; the unigram of their perplexity rows is an add-one "
    "unigram model of the training targets); a verdict ending `no better than copying the "
    "source` marks a reproduced mean that does not beat it",
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
OPTIONAL_COLUMNS = ("floor", "unigram", "n-gram", "copy")
PAPER_SCALE = "paper"
BOUND_CHECKS = {
    "<": np.less,
    "<=": np.less_equal,
    ">=": np.greater_equal,
}


def collect_metrics(paths: Iterable[str | Path]) -> pd.DataFrame:
    """One row per run from its ``metrics.json``; columns named like the reference metrics.

    Reads loss, ppl, wcpa, bpc and ce of both splits (missing or null -> NaN), so Dyck, character
    and word runs mix freely; each test set of ``tests`` (a translation run's) gives a column
    ``<test set>_<key>`` per scalar it holds (``newstest2015_bleu``; a signature stays a
    string); ``family``/``fold`` come from the dataset name, ``scale`` from the file (empty when
    absent).
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
        run = m.get("run") or {}
        stream = run.get("task") == "stream"
        row["eval_tokens"] = (run.get("training") or {}).get("max_eval_tokens", 0) if stream else 0
        for split in ("val", "test"):
            for name in SPLIT_METRICS:
                value = m[split].get(name)
                row[f"{split}_{name}"] = math.nan if value is None else float(value)
        for split in ("val", "test"):
            row[f"{split}_npc"] = row[f"{split}_bpc"] * math.log(2)
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


def section(title: str, text: str, df: pd.DataFrame) -> list[str]:
    """Markdown lines of a section after a table: its title, a paragraph and a table of ``df``
    (none when ``df`` is empty)."""
    return [] if df.empty else ["", f"## {title}", "", text, "", *markdown_lines(df)]


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
                train_ppl.append(math.exp(by_epoch.loc[(*key, run["best_epoch"]), "train_loss"]))
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


def read_references(paths: Iterable[str | Path]) -> pd.DataFrame:
    """The n-gram references of ``results/references/{dataset}.csv`` files, in one frame
    (``eval_tokens`` 0 where a whole split was scored)."""
    frames = [pd.read_csv(path) for path in paths]
    if not frames:
        return pd.DataFrame(columns=["dataset", "reference", "split", "eval_tokens"])
    out = pd.concat(frames, ignore_index=True)
    return out.assign(
        eval_tokens=out["eval_tokens"].fillna(0).astype(int),
        npc=out["bpc"] * math.log(2) if "bpc" in out else math.nan,
    )


# a table metric's unit (``test_ppl`` -> ``ppl``) -> the references' column holding it
REFERENCE_COLUMNS = {"ppl": "ppl", "bpc": "bpc", "ce": "loss", "npc": "npc"}


def reference_values(
    references: pd.DataFrame, runs: pd.DataFrame, dataset: str, metric: str
) -> tuple[float, float]:
    """The unigram and n-gram values of ``metric`` on the tokens the ``runs`` were scored on
    (their datasets and evaluated-token caps; the mean where they differ, e.g. over folds), or
    on the whole splits of ``dataset`` or its folds when no run matched; NaN when there is no
    such reference."""
    split, _, unit = metric.partition("_")
    column = REFERENCE_COLUMNS.get(unit)
    if references.empty or column is None or split not in ("val", "test"):
        return math.nan, math.nan
    if len(runs):
        tokens = runs["eval_tokens"] if "eval_tokens" in runs else [0] * len(runs)
        keys = set(zip(runs["dataset"], tokens, strict=True))
    else:
        keys = {
            (d, 0)
            for d in references["dataset"].unique()
            if names.parse(d).unfolded == dataset or d == dataset
        }
    rows = references[references["split"] == split]
    rows = rows[[key in keys for key in zip(rows["dataset"], rows["eval_tokens"], strict=True)]]
    unigram = rows["reference"] == "unigram"
    return rows.loc[unigram, column].mean(), rows.loc[~unigram, column].mean()


def with_nats_readings(reference: pd.DataFrame) -> pd.DataFrame:
    """``reference`` with each bits-per-character row followed by the same paper number read as
    nats per character (metric ``<split>_npc``), for a paper whose "BPC" may be either."""
    bpc = reference["metric"].str.endswith("_bpc")
    nats = reference[bpc].assign(metric=reference.loc[bpc, "metric"].str.replace("_bpc", "_npc"))
    out = pd.concat([reference, nats.set_axis(nats.index + 0.5)]).sort_index(kind="stable")
    return out.reset_index(drop=True)


NATS_NOTE = (
    "Each BPC row is read twice: `*_bpc` takes the paper's number as bits per character (the "
    "usual meaning), `*_npc` as nats per character (the paper's text does not say which; "
    "docs/methods.md §6.6); each reading has its own verdict."
)


# The trivial references a translation run scores itself (its metrics' ``<test set>_<key>``): a
# metric's suffix -> the table column and the runs' column suffix; the longest suffix first.
OWN_REFERENCES = {
    "_bleu_tokenized": ("copy", "_copy_bleu_tokenized"),
    "_bleu": ("copy", "_copy_bleu"),
    "_ppl": ("unigram", "_unigram_ppl"),
}


def own_reference(runs: pd.DataFrame, metric: str) -> tuple[str | None, float]:
    """The table column and the mean value of the trivial reference the ``runs`` scored beside
    ``metric`` (``newstest2015_ppl`` -> the unigram's ``newstest2015_unigram_ppl``; a BLEU ->
    the copied source's); (None, NaN) when they scored none."""
    for suffix, (column, own) in OWN_REFERENCES.items():
        if metric.endswith(suffix):
            name = metric.removesuffix(suffix) + own
            if name in runs and runs[name].notna().any():
                return column, float(runs[name].mean())
            break
    return None, math.nan


def reference_verdict(mean: float, unigram: float, ngram: float) -> str:
    """The suffix of a verdict whose reproduced mean does not beat a reference ("" if it does,
    or if there is none)."""
    if mean >= unigram:
        return "; no better than the unigram"
    if mean >= ngram:
        return "; no better than the n-gram"
    return ""


def reference_lines(references: pd.DataFrame) -> list[str]:
    """Markdown section under a text table: the n-gram references of its datasets."""
    if references.empty:
        return []
    rows = []
    keys = ["dataset", "reference", "eval_tokens"]
    for (dataset, reference, eval_tokens), group in references.groupby(keys, sort=False):
        kind = TEXT_METRICS[names.family(dataset)]
        by_split = group.set_index("split")
        row = {
            "dataset": dataset,
            "model": reference,
            "training tokens": int(group["train_tokens"].iloc[0]),
            "evaluated tokens": "all" if not eval_tokens else f"first {eval_tokens}",
            "metric": kind,
        }
        for split in ("val", "test"):
            value = by_split[REFERENCE_COLUMNS[kind]].get(split, math.nan)
            row[split] = round(float(value), DECIMALS[kind])
        note = group["note"].iloc[0]
        row["note"] = note if isinstance(note, str) else ""
        rows.append(row)
    return section("N-gram references on the same data", REFERENCE_TEXT, pd.DataFrame(rows))


REFERENCE_TEXT = (
    "What a model that learnt only local statistics scores: an add-one unigram model and an "
    "interpolated modified Kneser-Ney model (order `references.order` in config.yaml; "
    "rnnrepro.evaluation.ngram), both fit on the same training split as the runs and scored "
    "on the same validation and test tokens with the same conventions (an unknown word is the "
    "`<unk>` token; end of sentence and first token as the runs score them; a stream is read "
    "whole, where the runs start each of their columns without context). A row whose "
    "reproduced mean does not beat them says so in its verdict. On the full Penn Treebank "
    "our 5-gram scores 141.19 test perplexity, as KenLM's does, against the 141.2 Mikolov et "
    "al. (2011) publish (docs/methods.md §13)."
)


def read_floors(paths: Iterable[str | Path]) -> dict[str, dict[str, float]]:
    """Generator floors keyed by dataset, from ``results/data/{dataset}/floor.json`` files."""
    return {Path(p).parent.name: json.loads(Path(p).read_text()) for p in paths}


def compare(ref: pd.Series, values: np.ndarray, tolerances: Mapping[str, float]) -> str:
    """match / differs / missing / info of the runs' ``values`` against reference row ``ref``
    (``tolerances`` by metric kind, relative for RELATIVE_KINDS)."""
    if len(values) == 0:
        return "missing"
    if math.isnan(ref["value"]):  # drawn, not printed: nothing to compare with
        return "info"
    if ref["comparison"] != "=":
        holds = BOUND_CHECKS[ref["comparison"]](values, ref["value"]).all()
        return "match" if holds else "differs"
    kind = METRIC_KIND[ref["metric"]]
    if kind not in tolerances:
        return "info"
    delta = abs(values.mean() - ref["value"])
    allowed = tolerances[kind] * abs(ref["value"]) if kind in RELATIVE_KINDS else tolerances[kind]
    return "match" if delta <= allowed + 1e-12 else "differs"


def format_spread(mean: float, std: float, n: int, decimals: int) -> str:
    """``mean ± std`` (``± n/a`` for one run; empty for none)."""
    if n == 0:
        return ""
    spread = "n/a" if n == 1 else f"{std:.{decimals}f}"
    return f"{mean:.{decimals}f} ± {spread}"


def scaled_verdict(verdict: str, scales: set[str]) -> str:
    """Mark a verdict obtained at reduced scale(s), e.g. ``smoke-scale match``."""
    reduced = sorted(scales - {PAPER_SCALE})
    if not reduced or verdict in ("below floor", "info"):  # a bug sign at any scale; no claim
        return verdict
    if verdict == "missing":
        return f"not run at {'/'.join(reduced)} scale"
    return f"{'/'.join(reduced)}-scale {verdict}"


def build_table(
    reference_rows: pd.DataFrame,
    runs: pd.DataFrame,
    floors: Mapping[str, Mapping[str, float]],
    tolerances: Mapping[str, float] = DEFAULT_TOLERANCES,
    scale: str = PAPER_SCALE,
    references: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per reference row: paper value, reproduced mean ± std over runs and a verdict.

    A reference dataset matches runs on that dataset and on its folds (``{dataset}_fold{k}``), so
    a family row aggregates folds × seeds. ``tolerances`` maps a metric kind (``ppl``, ``bpc``,
    ``ce``, ``wcpa``, ``params``, ...) to its tolerance: relative for ppl, bpc, ce and params,
    absolute otherwise; kinds without one are not compared. A perplexity below the generator
    floor (any run) gets the verdict ``below floor``. A verdict from runs of a reduced scale
    (their ``scale`` column, else ``scale``) names that scale; a row without runs at a reduced
    ``scale`` is ``not run at <scale> scale``. With ``references`` (``read_references``) a text
    row gives the unigram and n-gram values on its runs' tokens, and its verdict says when the
    reproduced mean does not beat one of them.
    """
    references = read_references([]) if references is None else references
    if runs.empty:
        runs = pd.DataFrame(columns=["experiment", "dataset", "family", "model", *METRIC_KIND])
    if "family" not in runs:
        runs = runs.assign(family=[names.parse(d).unfolded for d in runs["dataset"]])
    out = []
    for _, ref in reference_rows.iterrows():
        metric = ref["metric"]
        matched = runs[
            (runs["experiment"] == ref["experiment"])
            & ((runs["dataset"] == ref["dataset"]) | (runs["family"] == ref["dataset"]))
            & (runs["model"] == ref["model"])
        ]
        stage = ref.get("stage") or "train"  # a reference row without one: the trained model
        if "stage" in matched:
            matched = matched[matched["stage"] == stage]
        values = matched[metric].dropna().to_numpy(float)
        n = len(values)
        mean = values.mean() if n else math.nan
        std = values.std(ddof=1) if n > 1 else math.nan
        floor = math.nan
        if METRIC_KIND[metric] == "ppl" and ref["dataset"] in floors:
            floor = floors[ref["dataset"]][metric.split("_")[0]]
        verdict = compare(ref, values, tolerances)
        if n and values.min() < floor:
            verdict = "below floor"
        run_scales = set(matched["scale"]) - {""} if "scale" in matched else set()
        verdict = scaled_verdict(verdict, run_scales or {scale})
        diverged = int(matched["diverged"].sum()) if "diverged" in matched else 0
        if diverged:  # the procedure ended these runs at a NaN/inf loss (their best epoch kept)
            verdict = f"{verdict}; {diverged} of {len(matched)} run(s) diverged"
        unigram, ngram = reference_values(
            references, matched[matched[metric].notna()], ref["dataset"], metric
        )
        column, trivial = own_reference(matched, metric)
        copy = trivial if column == "copy" else math.nan
        unigram = trivial if column == "unigram" else unigram
        verdict += reference_verdict(mean, unigram, ngram)
        if mean <= copy:
            verdict += "; no better than copying the source"
        recurrent = matched["params"].dropna().to_numpy(float)
        out.append(
            {
                "experiment": ref["experiment"],
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
                "unigram": unigram,
                "n-gram": ngram,
                "copy": copy,
                "params": recurrent.mean() if len(recurrent) else math.nan,
                "verdict": verdict,
            }
        )
    return pd.DataFrame(out, columns=TABLE_COLUMNS)


def describe_tolerances(tolerances: Mapping[str, float]) -> str:
    """One sentence stating each tolerance and whether it is relative or absolute."""
    if not tolerances:
        return "No tolerance applies: every row of this table is information only."
    parts = [
        f"{kind} {value:g} ({'relative' if kind in RELATIVE_KINDS else 'absolute'})"
        for kind, value in tolerances.items()
    ]
    return "Tolerances for a match: " + ", ".join(parts) + "."


def tolerances_in_use(
    reference_rows: pd.DataFrame, tolerances: Mapping[str, float]
) -> dict[str, float]:
    """The tolerances of the metric kinds that occur in ``reference_rows`` (in their order)."""
    kinds = {METRIC_KIND[metric] for metric in reference_rows["metric"]}
    return {kind: value for kind, value in tolerances.items() if kind in kinds}


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
        "benchmarks/track_archive.py restore --keep-runs-of-other-code): their training is that "
        "code's, their evaluation this checkout's."
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


def _cell(value: object) -> str:
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return f"{value:.0f}" if value.is_integer() else f"{value:.4g}"
    return str(value)


def markdown_lines(df: pd.DataFrame) -> list[str]:
    """A Markdown table of ``df`` (a ``below floor`` verdict in bold capitals)."""
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    for _, row in df.iterrows():
        cells = [_cell(v) for v in row]
        if row.get("verdict") == "below floor":
            cells[df.columns.get_loc("verdict")] = "**BELOW FLOOR**"
        lines.append("| " + " | ".join(cells) + " |")
    return lines


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
    counts = df["verdict"].value_counts()
    lines += ["", "Verdicts: " + ", ".join(f"{k} {v}" for k, v in counts.items()), ""]
    lines += markdown_lines(df.drop(columns=["mean", "std"]))
    lines += list(sections)
    write_text_atomic(md_path, "\n".join(lines) + "\n")
