"""Exact perplexity of the Dyck generator on each split: the floor no model can beat."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rnnrepro.data import dyck
from rnnrepro.fileio import write_text_atomic


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--k", type=int, required=True)
    parser.add_argument("--m", type=int, required=True)
    parser.add_argument("--min-length", type=int, required=True)
    parser.add_argument("--max-length", type=int, required=True)
    parser.add_argument("--splits", nargs="+", required=True, help="files named <split>.txt")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    floors = {}
    for path in args.splits:
        seqs = dyck.read_sequences(
            path, k=args.k, m=args.m, lengths=(args.min_length, args.max_length)
        )
        floors[Path(path).stem] = dyck.floor_perplexity(seqs, args.k, args.m, args.min_length)
        print(f"{path}: generator perplexity {floors[Path(path).stem]:.4f}")
    write_text_atomic(args.out, json.dumps(floors, indent=2) + "\n")


if __name__ == "__main__":
    main()
