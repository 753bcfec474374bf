"""Gather the validation curves of probe or variant runs beside their data's n-gram baselines.

    python studies/cpu_probes/collect.py runs/probe_* --out studies/cpu_probes/cpu_probe.csv
    python studies/cpu_probes/collect.py runs/variant_lr runs/variant_binit \
        benchmarks/results/fold1 --ngram benchmarks/results/ngram_paper --out ...

One row per directory, run and epoch: the validation perplexity (words) or BPC (characters),
the epoch's seconds, and the unigram and Kneser-Ney validation values of the same dataset (whole
split) from ``<ngram>/<dataset>.csv`` (default: the directory's ``results/ngram``).
A run's last row also carries its test value and why it stopped (its ``metrics.json``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd


def curves(probe: Path, ngram_dir: Path | None = None) -> pd.DataFrame:
    """Every history.csv under a directory, with its ngram' validation values."""
    frames = []
    ngram_dir = ngram_dir or probe / "results/ngram"
    for path in sorted(probe.glob("**/history.csv")):
        history = pd.read_csv(path)
        dataset = history["dataset"].iloc[0]
        metric = "val_bpc" if history["val_bpc"].notna().any() else "val_ppl"
        ngram = pd.read_csv(ngram_dir / f"{dataset}.csv")
        ngram = ngram[(ngram["split"] == "val") & (ngram["eval_tokens"] == 0)]
        column = metric.removeprefix("val_")
        values = dict(zip(ngram["model"], ngram[column], strict=True))
        ngram = next(v for k, v in values.items() if k != "unigram")
        test, stopped = float("nan"), ""
        if (path.parent / "metrics.json").is_file():
            metrics = json.loads((path.parent / "metrics.json").read_text())
            test, stopped = metrics["test"][column], metrics["stopped_because"]
        frame = history[["experiment", "dataset", "model", "epoch", "seconds"]].assign(
            probe=probe.name.removeprefix("probe_"),
            metric=metric,
            value=history[metric],
            unigram=values["unigram"],
            ngram=ngram,
            beats_ngram=history[metric] < ngram,
            test=float("nan"),
            stopped_because="",
        )
        frame.loc[frame.index[-1], ["test", "stopped_because"]] = [test, stopped]
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("probes", nargs="+", type=Path, help="run directories")
    parser.add_argument("--ngram", type=Path, help="a directory of <dataset>.csv ngram")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    table = pd.concat([curves(p, args.ngram) for p in args.probes], ignore_index=True)
    columns = ["probe", "experiment", "dataset", "model", "epoch", "metric", "value"]
    extra = ["test", "stopped_because"]
    table = table[[*columns, "unigram", "ngram", "beats_ngram", "seconds", *extra]]
    table.to_csv(args.out, index=False, float_format="%.4f")
    last = table.groupby(["probe", "dataset", "model"]).tail(1)
    print(last.to_string(index=False))


if __name__ == "__main__":
    main()
