"""memory's Linzen agreement outputs: Table 2 (accuracy by attractors, overall accuracy and
perplexity beside the paper), Figure 2 (Venn diagram of the three models' mistakes) and Table 3
(one example per pattern of mistakes)."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from rnnrepro.fileio import write_text_atomic
from rnnrepro.reporting.markdown import format_spread, markdown_lines
from rnnrepro.reporting.tables import compare, scaled_verdict

SCORING = {
    "subj_agr_filtered.text": "the verb's two forms",
    "agreement.tsv": "the verb and its re-inflection",
    "numpred": "singular vs plural verb-form mass",
}


def read_summaries(paths: Iterable[str | Path]) -> list[dict]:
    return [json.loads(Path(p).read_text()) for p in paths]


def _source(summaries: Sequence[dict], metric: str) -> str:
    if metric == "ppl":
        return "; ".join(sorted({f"{s['perplexity']['source']} sentences" for s in summaries}))
    sources = {s["cells"][metric]["source"] for s in summaries if metric in s["cells"]}
    parts = []
    for source in sorted(sources):
        kind = SCORING.get(source, SCORING["numpred"])
        parts.append(f"{source} ({kind})")
    return "; ".join(parts)


def table2(
    summaries: Sequence[dict],
    reference: pd.DataFrame,
    tolerances: Mapping[str, float],
    scale: str,
) -> pd.DataFrame:
    """One row per reference number of Table 2: paper, reproduced (mean ± std over seeds), the
    items behind it, where it comes from, the LMs' training corpus, and a verdict."""
    rows = []
    for _, ref in reference.iterrows():
        mine = [s for s in summaries if s["model"] == ref["model"]]
        metric = ref["metric"]
        if metric == "ppl":
            values = [s["perplexity"]["ppl"] for s in mine]
            items = [s["perplexity"]["tokens"] for s in mine]
        else:
            cells = [s["cells"].get(metric) for s in mine]
            values = [c["accuracy"] for c in cells if c and c["accuracy"] is not None]
            items = [c["items"] for c in cells if c]
        values = np.array(values, dtype=float)
        n = len(values)
        mean = values.mean() if n else math.nan
        std = values.std(ddof=1) if n > 1 else math.nan
        verdict = compare(ref, values, tolerances)
        scales = {s["scale"] for s in mine}
        verdict = scaled_verdict(verdict, scales or {scale})
        corpora = sorted({s["lm_corpus"] for s in mine})
        if corpora and corpora != ["linzen"]:
            verdict += f"; LM trained on {'/'.join(corpora)}, not Linzen's training split"
        rows.append(
            {
                "model": ref["model"],
                "metric": metric,
                "paper": ref["value"],
                "reproduced": format_spread(mean, std, n, 2 if metric == "ppl" else 4),
                "mean": mean,
                "n_seeds": n,
                "delta": mean - ref["value"],
                "items": int(np.mean(items)) if items else 0,
                "lm_corpus": "/".join(corpora),
                "source": _source(mine, metric),
                "verdict": verdict,
            }
        )
    return pd.DataFrame(rows)


def mistakes(items: pd.DataFrame, models: Sequence[str]) -> pd.DataFrame:
    """Items scored by every model (first seed of each): one boolean column per model, True
    where it is wrong; plus the item's text, source, line and attractors."""
    keys = ["source", "line"]
    merged = None
    for model in models:
        mine = items[(items["model"] == model) & ~items["skipped"].astype(bool)]
        mine = mine[mine["seed"] == mine["seed"].min()]
        wrong = mine[[*keys, "attractors", "text"]].assign(**{model: ~mine["correct"].astype(bool)})
        merged = wrong if merged is None else merged.merge(wrong[[*keys, model]], on=keys)
    return merged.sort_values(keys).reset_index(drop=True)


def region(wrong_models: Sequence[str], models: Sequence[str]) -> str:
    """A Venn region's name: ``all``, ``only <m>`` or ``<a> & <b> only``."""
    if len(wrong_models) == len(models):
        return "all"
    if len(wrong_models) == 1:
        return f"only {wrong_models[0]}"
    return " & ".join(wrong_models) + " only"


def venn_counts(wrong: pd.DataFrame, models: Sequence[str]) -> dict[str, int]:
    """Mistakes in each region of the Venn diagram: ``all``, ``only <m>``, ``<a> & <b> only``."""
    counts = {}
    for size in range(len(models), 0, -1):
        for subset in itertools.combinations(models, size):
            inside = np.logical_and.reduce([wrong[m] for m in subset])
            outside = [m for m in models if m not in subset]
            if outside:
                inside &= ~np.logical_or.reduce([wrong[m] for m in outside])
            counts[region(subset, models)] = int(inside.sum())
    return counts


def examples(
    wrong: pd.DataFrame, models: Sequence[str], paper: Mapping[str, float]
) -> pd.DataFrame:
    """Table 3: one row per pattern of mistakes (all-right left out), in the paper's order: the
    models (True: wrong), its Venn region, its items (ours and the paper's count, Figure 2) and
    its first item by file and line (empty where no item has the pattern)."""
    rows = []
    for pattern in itertools.product([True, False], repeat=len(models)):
        if not any(pattern):
            continue
        match = np.logical_and.reduce([wrong[m] == p for m, p in zip(models, pattern, strict=True)])
        hits = wrong[match]
        name = region([m for m, p in zip(models, pattern, strict=True) if p], models)
        first = hits.iloc[0] if len(hits) else None
        rows.append(
            {
                **dict(zip(models, pattern, strict=True)),
                "region": name,
                "mistakes": len(hits),
                "paper": paper.get(f"venn:{name}", math.nan),
                "attractors": None if first is None else int(first["attractors"]),
                "text": None if first is None else first["text"],
                "source": None if first is None else first["source"],
                "line": None if first is None else int(first["line"]),
            }
        )
    return pd.DataFrame(rows).astype({"attractors": "Int64", "line": "Int64"})


def example_lines(table: pd.DataFrame, models: Sequence[str]) -> list[str]:
    """Table 3 in Markdown (``examples``): each pattern's marks (✗ wrong, ✓ right), then its
    first item."""
    header = ["| " + " | ".join([*models, "attractors", "example", "source"]) + " |"]
    header.append("|" + "---|" * (len(models) + 3))
    lines = []
    for _, row in table.iterrows():
        marks = ["✗" if row[m] else "✓" for m in models]
        if row["mistakes"] == 0:
            lines.append("| " + " | ".join([*marks, "", "(no such item)", ""]) + " |")
            continue
        source = f"{row['source']}:{row['line']}"
        lines.append(
            "| " + " | ".join([*marks, str(row["attractors"]), f"*{row['text']}*", source]) + " |"
        )
    return header + lines


def trained_line(summaries: Sequence[dict]) -> str:
    """What the scored LMs were trained on: the first note of every agreement output."""
    corpora = sorted({s["lm_corpus"] for s in summaries})
    if corpora == ["linzen"]:
        return "LMs trained on Linzen's training split"
    return (
        f"LMs trained on {'/'.join(corpora)}: Linzen's training split is not available "
        "(docs/data.md), so this is not the paper's setting"
    )


def write_markdown(path, title: str, notes: Iterable[str], body: list[str]) -> None:
    lines = [f"# {title}", "", *[f"> {n}  " for n in notes], "", *body]
    write_text_atomic(path, "\n".join(lines) + "\n")


def table_lines(df: pd.DataFrame) -> list[str]:
    return markdown_lines(df.drop(columns=["mean"]))
