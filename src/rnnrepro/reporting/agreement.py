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


def venn_counts(wrong: pd.DataFrame, models: Sequence[str]) -> dict[str, int]:
    """Mistakes in each region of the Venn diagram: ``all``, ``only <m>``, ``<a> & <b> only``."""
    counts = {}
    for size in range(len(models), 0, -1):
        for subset in itertools.combinations(models, size):
            inside = np.logical_and.reduce([wrong[m] for m in subset])
            outside = [m for m in models if m not in subset]
            if outside:
                inside &= ~np.logical_or.reduce([wrong[m] for m in outside])
            if size == len(models):
                name = "all"
            elif size == 1:
                name = f"only {subset[0]}"
            else:
                name = " & ".join(subset) + " only"
            counts[name] = int(inside.sum())
    return counts


def venn_figure(counts: Mapping[str, int], models: Sequence[str], items: int, path, notes=()):
    """Three circles, a count in each region (drawn with matplotlib alone)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Circle

    from rnnrepro.reporting.figures.base import save as save_figure  # footer with the notes

    a, b, c = models
    centres = {a: (-0.6, 0.35), b: (0.6, 0.35), c: (0.0, -0.65)}
    fig, ax = plt.subplots(figsize=(6.5, 6.5))
    labels = {a: (-1.1, 1.65), b: (1.1, 1.65), c: (0.0, -1.95)}  # outside the circles
    for model, colour in zip(models, ("tab:red", "tab:blue", "tab:green"), strict=True):
        ax.add_patch(Circle(centres[model], 1.1, alpha=0.25, color=colour))
        ax.text(*labels[model], model, ha="center", va="center", fontsize=11)
    spots = {
        f"only {a}": (-1.1, 0.65),
        f"only {b}": (1.1, 0.65),
        f"only {c}": (0.0, -1.25),
        f"{a} & {b} only": (0.0, 0.85),
        f"{a} & {c} only": (-0.75, -0.35),
        f"{b} & {c} only": (0.75, -0.35),
        "all": (0.0, 0.05),
    }
    for name, (x, y) in spots.items():
        ax.text(x, y, f"{counts[name]:,}", ha="center", va="center", fontsize=12)
    ax.set_xlim(-2.4, 2.4)
    ax.set_ylim(-2.2, 2.0)
    ax.set_aspect("equal")
    ax.axis("off")
    fig.suptitle(f"Mistakes on {items:,} Linzen agreement items")
    save_figure(fig, path, notes)


def example_lines(wrong: pd.DataFrame, models: Sequence[str]) -> list[str]:
    """Table 3: the first item (by file and line) of each pattern of mistakes, as the paper's
    rows (✗ wrong, ✓ right), without the all-right pattern."""
    header = ["| " + " | ".join([*models, "attractors", "example", "source"]) + " |"]
    header.append("|" + "---|" * (len(models) + 3))
    lines = []
    for pattern in itertools.product([True, False], repeat=len(models)):
        if not any(pattern):
            continue
        match = np.logical_and.reduce([wrong[m] == p for m, p in zip(models, pattern, strict=True)])
        hits = wrong[match]
        marks = ["✗" if p else "✓" for p in pattern]
        if hits.empty:
            lines.append("| " + " | ".join([*marks, "", "(no such item)", ""]) + " |")
            continue
        row = hits.iloc[0]
        source = f"{row['source']}:{row['line']}"
        lines.append(
            "| " + " | ".join([*marks, str(row["attractors"]), f"*{row['text']}*", source]) + " |"
        )
    return header + lines


def write_markdown(path, title: str, notes: Iterable[str], body: list[str]) -> None:
    lines = [f"# {title}", "", *[f"> {n}  " for n in notes], "", *body]
    write_text_atomic(path, "\n".join(lines) + "\n")


def table_lines(df: pd.DataFrame) -> list[str]:
    return markdown_lines(df.drop(columns=["mean"]))
