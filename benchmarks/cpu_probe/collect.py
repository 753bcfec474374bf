"""Gather the cpu-scale probes' validation curves beside their data's n-gram references.

    python benchmarks/cpu_probe/collect.py runs/probe_* --out benchmarks/results/cpu_probe.csv

One row per probe, run and epoch: the validation perplexity (words) or BPC (characters), the
epoch's seconds, and the unigram and Kneser-Ney validation values of the same dataset (whole
split) from the probe directory's ``results/references/<dataset>.csv``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd


def curves(probe: Path) -> pd.DataFrame:
    """Every history.csv of a probe directory, with its references' validation values."""
    frames = []
    for path in sorted(probe.glob("results/runs/**/history.csv")):
        history = pd.read_csv(path)
        dataset = history["dataset"].iloc[0]
        metric = "val_bpc" if history["val_bpc"].notna().any() else "val_ppl"
        references = pd.read_csv(probe / "results/references" / f"{dataset}.csv")
        references = references[(references["split"] == "val") & (references["eval_tokens"] == 0)]
        column = metric.removeprefix("val_")
        values = dict(zip(references["reference"], references[column], strict=True))
        ngram = next(v for k, v in values.items() if k != "unigram")
        frames.append(
            history[["experiment", "dataset", "model", "epoch", "seconds"]].assign(
                probe=probe.name.removeprefix("probe_"),
                metric=metric,
                value=history[metric],
                unigram=values["unigram"],
                ngram=ngram,
                beats_ngram=history[metric] < ngram,
            )
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("probes", nargs="+", type=Path, help="probe run directories")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    table = pd.concat([curves(p) for p in args.probes], ignore_index=True)
    columns = ["probe", "experiment", "dataset", "model", "epoch", "metric", "value"]
    table = table[[*columns, "unigram", "ngram", "beats_ngram", "seconds"]]
    table.to_csv(args.out, index=False, float_format="%.4f")
    last = table.groupby(["probe", "dataset", "model"]).tail(1)
    print(last.to_string(index=False))


if __name__ == "__main__":
    main()
