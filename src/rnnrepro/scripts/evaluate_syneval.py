"""Score Marvin & Linzen's sentence pairs with a trained word-level LM (second_order_lstm Table 3).

Example:
    python -m rnnrepro.scripts.evaluate_syneval --model model.pt \\
        --pairs results/downloads/syneval/emnlp2018_pairs.tsv --scale paper --out syneval.csv
"""

from __future__ import annotations

import argparse

from rnnrepro.devices import select_device
from rnnrepro.evaluation import run_identity
from rnnrepro.evaluation.syneval import read_pairs, score_pairs
from rnnrepro.fileio import atomic_open
from rnnrepro.models import load_model
from rnnrepro.progress import progress


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="model.pt of a word-level stream LM")
    parser.add_argument("--pairs", required=True, help="emnlp2018_pairs.tsv (data registry)")
    parser.add_argument("--max-pairs", type=int, help="first N rows of each template only")
    parser.add_argument("--batch-size", type=int, default=256, help="sentences per batch")
    parser.add_argument("--scale", required=True, help="the config scale, for the record")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--out", required=True, help="CSV: one row per sub-category")
    args = parser.parse_args(argv)

    device = select_device(args.device)
    model, record = load_model(args.model)
    model.to(device)
    model.set_hard(True)  # the attention LSTM is tested at "arbitrarily low" temperature
    pairs = read_pairs(args.pairs, args.max_pairs)
    with progress("sentences", units="sentences", interval=10) as bar:
        table = score_pairs(
            model, pairs, record["vocab"], args.batch_size, device, progress=bar.update
        )
    identity = run_identity(args.model, record)
    table = table.assign(**identity, scale=args.scale)
    with atomic_open(args.out, "w", newline="") as f:
        table.to_csv(f, index=False)
    for row in table.itertuples():
        print(
            f"{row.category:32} {row.correct:>6}/{row.pairs:<6} {row.accuracy:.3f}"
            f"  ({row.unk_pairs} pairs with <unk>)"
        )


if __name__ == "__main__":
    main()
