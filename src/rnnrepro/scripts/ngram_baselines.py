"""Fit the n-gram baseline models on a text dataset's training split and score its validation
and test splits as the runs score them (``rnnrepro.evaluation.ngram``).

The scored tokens follow the dataset's framing (``rnnrepro.config.TEXT_FAMILIES``): ``eos``
scores x_1..x_n <eos> of each line after the start marker; ``none`` scores characters 2..n of
each line; ``stream`` reads the split as one stream (every line then <eos>) cut to the runs'
``max_eval_tokens`` (each value in ``--eval-tokens``; 0 = the whole split) and scores every token
after the first. A stream's runs score their columns separately (no context across a column's
start, one token fewer per column); the n-gram model reads the stream whole.

    python -m rnnrepro.scripts.ngram_baselines --data results/data/ptb_word --framing eos \\
        --order 5 --out results/ngram/ptb_word.csv
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import pandas as pd

from rnnrepro.data import text
from rnnrepro.evaluation.ngram import START, KneserNey, Unigram, score
from rnnrepro.fileio import write_csv_atomic

COLUMNS = [
    "dataset",
    "model",
    "order",
    "split",
    "eval_tokens",
    "tokens",
    "chars",
    "loss",
    "ppl",
    "bpc",
    "train_tokens",
    "fit_seconds",
    "note",
]


def sequences(path: Path, framing: str, index: dict[str, int]) -> tuple[list, int]:
    """The split's token-id sequences, each led by the start marker, and the first position of
    each that is scored (a stream is one sequence)."""
    if framing == "stream":
        tokens = text.iter_token_file(path, empty_lines=True)
        return [[START, *text.stream_ids(tokens, index, str(path))]], 2
    lines = text.encode(text.read_token_file(path), index, str(path))
    if framing == "eos":
        eos = index[text.EOS]
        return [[START, *line, eos] for line in lines], 1
    if framing == "none":
        return [[START, *line] for line in lines], 2
    raise ValueError(f"unknown framing {framing!r} (expected eos, none or stream)")


def cut(seqs: list, eval_tokens: int) -> list:
    """A stream's first ``eval_tokens`` tokens after the start marker (0: all of them)."""
    return [seqs[0][: eval_tokens + 1]] if eval_tokens else seqs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="a prepared text dataset's directory")
    parser.add_argument("--framing", required=True, choices=("eos", "none", "stream"))
    parser.add_argument("--order", type=int, required=True, help="the Kneser-Ney model's order")
    parser.add_argument(
        "--max-train-tokens",
        type=int,
        default=0,
        help="fit only the unigram model above this many training tokens (0: no limit)",
    )
    parser.add_argument(
        "--eval-tokens",
        type=int,
        nargs="*",
        default=[0],
        help="streams: score the first N tokens of each split, for each N (0: all)",
    )
    parser.add_argument("--out", required=True, help="CSV: one row per model, split, N")
    args = parser.parse_args(argv)

    data = Path(args.data)
    vocab = text.read_vocab(data / "vocab.txt")
    index = {token: i for i, token in enumerate(vocab)}
    lengths = text.token_char_lengths(vocab)
    train, _ = sequences(data / "train.txt", args.framing, index)
    train_tokens = sum(len(seq) - 1 for seq in train)
    models = []
    for name in ("unigram", f"kn{args.order}"):
        note = ""
        if name != "unigram" and args.max_train_tokens and train_tokens > args.max_train_tokens:
            note = (
                f"not fit: {train_tokens} training tokens exceed ngram.max_train_tokens "
                f"= {args.max_train_tokens} (its counts would not fit in memory)"
            )
            print(f"{name}: {note}", flush=True)
            models.append((name, None, note, math.nan))
            continue
        start = time.perf_counter()
        if name == "unigram":
            model = Unigram(train, len(vocab))
        else:
            model = KneserNey(train, args.order, len(vocab))
        models.append((name, model, note, time.perf_counter() - start))
    del train
    rows = []
    stream = args.framing == "stream"
    for split in ("val", "test"):
        whole, first = sequences(data / f"{split}.txt", args.framing, index)
        for eval_tokens in sorted(set(args.eval_tokens)) if stream else [0]:
            seqs = cut(whole, eval_tokens)
            for name, model, note, seconds in models:
                row = {
                    "dataset": data.name,
                    "model": name,
                    "order": 1 if name == "unigram" else args.order,
                    "split": split,
                    "eval_tokens": eval_tokens,
                    "train_tokens": train_tokens,
                    "fit_seconds": round(seconds, 2),
                    "note": note,
                }
                if model is not None:
                    nll, scored = score(model, seqs, first)
                    chars = sum(lengths[tok] for tok in scored)
                    loss = nll / len(scored)
                    row |= {
                        "tokens": len(scored),
                        "chars": chars,
                        "loss": loss,
                        "ppl": math.exp(loss),
                        "bpc": nll / math.log(2) / chars,
                    }
                print(row, flush=True)
                rows.append(row)
    write_csv_atomic(pd.DataFrame(rows, columns=COLUMNS), args.out, index=False)


if __name__ == "__main__":
    main()
