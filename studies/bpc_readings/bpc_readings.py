"""general_second_order's test score under the readings its words allow, from finished runs' model
files.

general_second_order reports "average cross-entropy over the test documents, in bits per character
(BPC)". The pipeline computes the micro average in bits: all bits of the split over all its
characters (docs/methods.md §6.6). This script scores each run's ``model.pt`` on a test split and
writes, per run, the four readings of those words:

- ``micro_bits`` (the pipeline's BPC) and ``micro_nats`` (the same in nats per character);
- ``macro_bits`` and ``macro_nats``: each document's mean cross-entropy per character, averaged
  over documents (short lines, whose first characters are the hardest, weigh more).

    R=runs/fold1/results
    python studies/bpc_readings/bpc_readings.py --test $R/data/ptb_lines_unigram_fold1/test.txt \\
        --runs $R/runs/general_second_order/ptb_lines_unigram_fold1/*/seed1 \\
        --out studies/bpc_readings/general_second_order_bpc_readings_fold1.csv
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pandas as pd
import torch

from rnnrepro.data import text
from rnnrepro.data.text import encode
from rnnrepro.evaluation.text import scored_targets
from rnnrepro.models import load_model


def readings(model_file: Path, test: Path) -> dict:
    """The run's identity and its test cross-entropy under the four readings."""
    model, record = load_model(model_file)
    vocab = record["vocab"]
    index = {token: i for i, token in enumerate(vocab)}
    lengths = torch.as_tensor(text.token_char_lengths(vocab), dtype=torch.long)
    sequences = encode(text.read_token_file(test), index, str(test))
    framing = record["run"]["text"]["framing"]
    total_nats, total_chars, per_document = 0.0, 0, []
    for _, targets, nll, _ in scored_targets(model, sequences, framing, index.get("<eos>")):
        chars = int(lengths[targets].sum())
        if chars == 0:
            continue
        nats = float(nll.sum())
        total_nats += nats
        total_chars += chars
        per_document.append(nats / chars)
    macro = sum(per_document) / len(per_document)
    identity = record["identity"]
    return {
        "model": identity["model"],
        "dataset": identity["dataset"],
        "seed": identity["seed"],
        "documents": len(per_document),
        "chars": total_chars,
        "micro_bits": round(total_nats / total_chars / math.log(2), 4),
        "micro_nats": round(total_nats / total_chars, 4),
        "macro_bits": round(macro / math.log(2), 4),
        "macro_nats": round(macro, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test", type=Path, required=True, help="the runs' test split")
    parser.add_argument("--runs", type=Path, nargs="+", required=True, help="run directories")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    for run in args.runs:
        rows.append(readings(run / "model.pt", args.test))
        print(rows[-1], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(args.out, index=False)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
