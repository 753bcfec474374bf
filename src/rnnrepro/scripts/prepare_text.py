"""Prepare the Penn Treebank datasets: multi_matrix word/char PTB, general_second_order lines and
folds.

Every dataset directory gets {train,val,test}.txt (one sequence per line, tokens separated by
single spaces) and vocab.txt (one token per line, in id order).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from rnnrepro.data import text


def _summary(splits: dict[str, list[list[str]]], vocab: list[str]) -> str:
    parts = []
    for name in text.SPLITS:
        seqs = splits[name]
        n_tokens = sum(len(s) for s in seqs)
        median = statistics.median(len(s) for s in seqs) if seqs else 0
        parts.append(f"{name} {len(seqs)} lines / {n_tokens} tokens (median length {median:g})")
    return "; ".join(parts) + f"; vocabulary {len(vocab)}"


def _ptb(args: argparse.Namespace) -> None:
    splits, vocab = text.prepare_ptb(
        args.train,
        args.valid,
        args.test,
        args.level,
        train_lines=args.train_lines,
        eval_lines=args.eval_lines,
        cutoff=args.cutoff,
    )
    text.write_dataset(args.out_dir, splits, vocab)
    cutoff = f", train cut at {args.cutoff} tokens" if args.cutoff else ""
    print(f"{args.out_dir}: PTB {args.level}{cutoff}: {_summary(splits, vocab)}")


def _stream(args: argparse.Namespace) -> None:
    splits, vocab = text.prepare_stream(
        args.train, args.valid, args.test, train_lines=args.train_lines, eval_lines=args.eval_lines
    )
    text.write_dataset(args.out_dir, splits, vocab)
    print(f"{args.out_dir}: token stream: {_summary(splits, vocab)}")


def _lines(args: argparse.Namespace) -> None:
    lines, dropped = text.ptb_lines(args.train, args.valid, args.test)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    text.write_lines(lines, args.out)
    n_chars = sum(len(line) for line in lines)
    print(
        f"{args.out}: {len(lines)} normalised lines kept, {dropped} dropped "
        f"(< {text.MIN_LINE_CHARS} characters), {n_chars} characters"
    )


def _folds(args: argparse.Namespace) -> None:
    if not 1 <= args.fold <= args.folds:
        raise SystemExit(f"--fold must be in 1..{args.folds}, got {args.fold}")
    lines = text.read_lines(args.lines)
    splits, vocab = text.prepare_fold(
        lines,
        args.tokenization,
        args.fold - 1,
        args.folds,
        args.seed,
        train_lines=args.train_lines,
        eval_lines=args.eval_lines,
    )
    text.write_dataset(args.out_dir, splits, vocab)
    print(
        f"{args.out_dir}: fold {args.fold}/{args.folds} (seed {args.seed}) of {len(lines)} "
        f"lines, {args.tokenization}: {_summary(splits, vocab)}"
    )


def _slicing(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--train-lines", type=int, help="keep the first N training sequences")
    parser.add_argument("--eval-lines", type=int, help="keep the first N val/test sequences")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    ptb = sub.add_parser("ptb", help="multi_matrix: word or char PTB, one sentence per line")
    ptb.add_argument("--level", choices=["word", "char"], required=True)
    for split in ("train", "valid", "test"):
        ptb.add_argument(f"--{split}", required=True, help=f"raw PTB {split} file")
    ptb.add_argument("--out-dir", required=True)
    _slicing(ptb)
    ptb.add_argument("--cutoff", type=int, help="truncate training sequences to C tokens")
    ptb.set_defaults(run=_ptb)

    stream = sub.add_parser("stream", help="WikiText: every line (empty ones too), then <eos>")
    for split in ("train", "valid", "test"):
        stream.add_argument(f"--{split}", required=True, help=f"raw {split} file")
    stream.add_argument("--out-dir", required=True)
    _slicing(stream)
    stream.set_defaults(run=_stream)

    lines = sub.add_parser(
        "lines", help="general_second_order: normalised word-PTB lines (all splits)"
    )
    for split in ("train", "valid", "test"):
        lines.add_argument(f"--{split}", required=True, help=f"raw word-PTB {split} file")
    lines.add_argument("--out", required=True)
    lines.set_defaults(run=_lines)

    fold = sub.add_parser(
        "folds", help="general_second_order: one cross-validation fold, tokenised"
    )
    fold.add_argument("--lines", required=True, help="output of the 'lines' command")
    fold.add_argument("--tokenization", choices=sorted(text.TOKENIZERS), required=True)
    fold.add_argument(
        "--fold", type=int, required=True, help="fold number, 1..folds (dataset ..._fold<k>)"
    )
    fold.add_argument("--folds", type=int, default=5)
    fold.add_argument("--seed", type=int, required=True, help="seed of the line permutation")
    fold.add_argument("--out-dir", required=True)
    _slicing(fold)
    fold.set_defaults(run=_folds)

    args = parser.parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main()
