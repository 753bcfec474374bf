"""Score Linzen's number-agreement items with a trained word-level LM (memory Table 2).

Example:
    python -m rnnrepro.scripts.evaluate_agreement --model model.pt \\
        --numpred numpred.test.1 ... numpred.test.5 \\
        --filtered-text subj_agr_filtered.text --filtered-gold subj_agr_filtered.gold \\
        --scale paper --out-items items.csv --out-summary agreement.json

A searched run passes its trials instead of ``--model``: ``--search search.json --trials 1 2
--trial-models t1/model.pt t2/model.pt`` (trial numbers from the config, in the same order);
the chosen trial's model is scored.

Table 2's cells (rnnrepro.evaluation.agreement):

- from the test files of the mirror: 0 attractors and the overall accuracy from
  ``subj_agr_filtered`` (the verb is known), 1-5 attractors from ``numpred.test.N`` (homogeneous
  intervention; verb-class scoring), perplexity on the ``subj_agr_filtered`` sentences;
- from Linzen's own split (``--dependencies agreement.tsv --sentences test.txt``, the paper's
  setting): k attractors over the homogeneous-intervention dependencies with k, the overall
  accuracy over all, perplexity on the test sentences.
"""

from __future__ import annotations

import argparse
import json
import re
from itertools import islice
from pathlib import Path

import pandas as pd

from rnnrepro.devices import select_device
from rnnrepro.evaluation import run_identity
from rnnrepro.evaluation.agreement import (
    dependency_items,
    read_filtered,
    read_numpred,
    score_items,
    sentence_perplexity,
    verb_pairs,
)
from rnnrepro.evaluation.scored_model import add_scored_model_arguments, scored_model_path
from rnnrepro.fileio import atomic_open
from rnnrepro.models import load_model
from rnnrepro.progress import progress

CHUNK = 100_000  # items scored and written at a time
SUMMARY_COLUMNS = ["source", "attractors", "homogeneous", "skipped", "correct"]


def batched(items, n: int):
    """Lists of ``n`` items (the last shorter) from any iterable (itertools.batched, 3.12+)."""
    iterator = iter(items)
    while chunk := list(islice(iterator, n)):
        yield chunk


def accuracy(df: pd.DataFrame) -> dict:
    """Accuracy, items scored and items skipped (a verb form outside the vocabulary)."""
    scored = df[~df["skipped"]]
    return {
        "accuracy": float(scored["correct"].astype(bool).mean()) if len(scored) else None,
        "items": int(len(scored)),
        "skipped": int(df["skipped"].sum()),
    }


def summarise_dependencies(items: pd.DataFrame) -> dict:
    """Table 2's cells from Linzen's test dependencies."""
    source = items["source"].iloc[0]
    homogeneous = items[items["homogeneous"]]
    cells = {
        f"acc_attr{k}": {**accuracy(homogeneous[homogeneous["attractors"] == k]), "source": source}
        for k in range(6)
    }
    cells["acc_overall"] = {**accuracy(items), "source": source}
    return {"cells": cells}


def summarise(items: pd.DataFrame, filtered_name: str) -> dict:
    """Table 2's cells (``acc_attr0`` ... ``acc_attr5``, ``acc_overall``) with their sources."""
    filtered = items[items["source"] == filtered_name]
    numpred = items[items["source"] != filtered_name]
    cells = {
        "acc_attr0": {**accuracy(filtered[filtered["attractors"] == 0]), "source": filtered_name}
    }
    for k, group in numpred.groupby("attractors"):
        cells[f"acc_attr{k}"] = {**accuracy(group), "source": group["source"].iloc[0]}
    cells["acc_overall"] = {**accuracy(filtered), "source": filtered_name}
    by_attractors = {int(k): accuracy(group) for k, group in filtered.groupby("attractors")}
    return {"cells": cells, "filtered_by_attractors": by_attractors}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_scored_model_arguments(parser)
    parser.add_argument("--numpred", nargs="+", help="numpred.test.N files")
    parser.add_argument("--filtered-text", help="subj_agr_filtered.text")
    parser.add_argument("--filtered-gold", help="subj_agr_filtered.gold")
    parser.add_argument("--dependencies", help="agreement.tsv of Linzen's split (instead)")
    parser.add_argument("--sentences", help="with --dependencies: perplexity sentences")
    parser.add_argument("--max-items", type=int, help="first N items of each file only")
    parser.add_argument("--batch-size", type=int, default=256, help="prefixes per batch")
    parser.add_argument("--scale", required=True, help="the config scale, for the record")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--out-items", required=True, help="CSV: one row per item")
    parser.add_argument("--out-summary", required=True, help="JSON: Table 2's cells")
    args = parser.parse_args(argv)

    model_path = scored_model_path(args)
    device = select_device(args.device)
    model, record = load_model(model_path)
    model.to(device)
    vocab = record["vocab"]
    if args.dependencies:
        if not args.sentences:
            parser.error("--dependencies needs --sentences")
        items = dependency_items(args.dependencies, args.max_items)  # a stream: ~1.4M items
        sentences = Path(args.sentences).read_text(encoding="utf-8").splitlines()
        pairs = []
    else:
        if not (args.numpred and args.filtered_text and args.filtered_gold):
            parser.error("give --numpred, --filtered-text and --filtered-gold, or --dependencies")
        filtered, sentences = read_filtered(args.filtered_text, args.filtered_gold)
        if args.max_items is not None:
            filtered, sentences = filtered[: args.max_items], sentences[: args.max_items]
        items = list(filtered)
        for path in args.numpred:
            match = re.search(r"\.(\d+)$", Path(path).name)
            if not match:
                raise SystemExit(f"{path}: expected a numpred.test.N file (N attractors)")
            items += read_numpred(path, int(match[1]), args.max_items)
        pairs = verb_pairs(filtered, vocab)
    print(f"{len(pairs)} verb pairs in the vocabulary", flush=True)
    identity = run_identity(model_path, record)
    # score CHUNK items at a time, appending to the items file (renamed into place at the end)
    with (
        atomic_open(args.out_items, "w", newline="") as f,
        progress("items", units="items", interval=10) as bar,
    ):
        for n, chunk in enumerate(batched(items, CHUNK)):
            records = score_items(model, chunk, vocab, pairs, args.batch_size, device, bar.update)
            part = pd.DataFrame(records).assign(**identity, scale=args.scale)
            part.to_csv(f, index=False, header=n == 0)
        if bar.n == 0:
            raise SystemExit("no agreement items to score")
    table = pd.read_csv(args.out_items, usecols=SUMMARY_COLUMNS)
    cells = (
        summarise_dependencies(table)
        if args.dependencies
        else summarise(table, Path(args.filtered_text).name)
    )
    summary = {
        **identity,
        "scale": args.scale,
        "lm_corpus": identity["dataset"],
        "verb_pairs": len(pairs),
        "items": len(table),
        **cells,
        "perplexity": {
            **sentence_perplexity(model, sentences, vocab, device=device),
            "source": Path(args.sentences or args.filtered_text).name,
        },
    }
    with atomic_open(args.out_summary, "w") as f:
        f.write(json.dumps(summary, indent=2) + "\n")
    for name, cell in summary["cells"].items():
        acc = "n/a" if cell["accuracy"] is None else f"{cell['accuracy']:.4f}"
        print(
            f"{name:12} {acc} ({cell['items']} items, {cell['skipped']} skipped; {cell['source']})"
        )
    print(f"perplexity {summary['perplexity']['ppl']:.2f}")


if __name__ == "__main__":
    main()
