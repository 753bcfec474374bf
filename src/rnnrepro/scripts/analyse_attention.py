"""PABS and attention-heatmap data for a trained attention LSTM (second_order_lstm §5,
docs/methods.md §4.4).

Example:
    python -m rnnrepro.scripts.analyse_attention --model model.pt --test test.txt \\
        --out-angles pabs.csv --out-heatmap heat.csv
"""

from __future__ import annotations

import argparse

from rnnrepro.data.dyck import read_sequences
from rnnrepro.data.text import read_token_file
from rnnrepro.evaluation import run_identity
from rnnrepro.fileio import write_csv_atomic
from rnnrepro.models import load_model
from rnnrepro.reporting.analysis import (
    attention_heatmap,
    final_training_epoch,
    heatmap_sequence,
    principal_angles,
    stream_passage,
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="model.pt of an attention_lstm run")
    parser.add_argument("--test", required=True, help="test sequences, one per line")
    parser.add_argument(
        "--max-length", type=int, default=60, help="heatmap length cap (stream: passage length)"
    )
    parser.add_argument("--out-angles", required=True)
    parser.add_argument("--out-heatmap", required=True)
    args = parser.parse_args(argv)

    model, record = load_model(args.model)
    identity = run_identity(args.model, record)
    angles = principal_angles(model.body.recurrent_weight_matrices())
    write_csv_atomic(angles.assign(**identity), args.out_angles, index=False)

    model.set_epoch(final_training_epoch(record))  # τ the saved weights were trained at
    if record.get("run", {}).get("text", {}).get("framing") == "stream":  # a passage of the stream
        sequence = stream_passage(read_token_file(args.test, empty_lines=True), args.max_length)
        heat = attention_heatmap(model, record["vocab"], sequence, start=None)
    else:  # a Dyck sequence after <start>
        sequence = heatmap_sequence(read_sequences(args.test), args.max_length)
        heat = attention_heatmap(model, record["vocab"], sequence)
    write_csv_atomic(heat.assign(**identity), args.out_heatmap, index=False)
    print(f"temperature {model.temperature:.4g}; heatmap over {len(sequence)} tokens")


if __name__ == "__main__":
    main()
