"""Generate the train/val/test splits of an m-bounded Dyck-k language (Hewitt's distribution)."""

from __future__ import annotations

import argparse
import time

from rnnrepro.data import dyck


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--k", type=int, required=True, help="number of bracket types")
    parser.add_argument("--m", type=int, required=True, help="maximum stack depth")
    parser.add_argument("--sizes", type=int, nargs="+", required=True, help="sequences per split")
    parser.add_argument(
        "--seeds", type=int, nargs="+", required=True, help="sampler seed per split"
    )
    parser.add_argument("--min-length", type=int, required=True)
    parser.add_argument("--max-length", type=int, required=True)
    parser.add_argument("--out", nargs="+", required=True, help="one output file per split")
    args = parser.parse_args(argv)
    if not len(args.sizes) == len(args.seeds) == len(args.out):
        parser.error("--sizes, --seeds and --out need one value per split")
    for n, seed, path in zip(args.sizes, args.seeds, args.out, strict=True):
        started = time.perf_counter()
        seqs = dyck.generate(n, args.k, args.m, args.min_length, args.max_length, seed)
        dyck.write_sequences(path, seqs)
        lengths = [len(s) for s in seqs]
        print(
            f"{path}: {n} sequences, seed {seed}, lengths {min(lengths)}-{max(lengths)} "
            f"(mean {sum(lengths) / n:.1f}), {time.perf_counter() - started:.1f} s"
        )


if __name__ == "__main__":
    main()
