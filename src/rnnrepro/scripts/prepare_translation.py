"""Prepare a translation dataset (major_minor §V-D4): read WMT's files (or generate the
stand-in), train the joint BPE vocabulary on the training pairs and write every split as BPE
pieces, the test sets' raw sentences beside them.

Outputs in ``--out-dir``: ``train.tsv`` and ``val.tsv`` (training pairs with a side longer than
``--max-length`` pieces left out; the validation set whole), ``<test>.tsv``, ``<test>.ref`` and
``<test>.src`` (the raw references and sources) for each test set, ``bpe.model``
(sentencepiece), ``vocab.txt`` (its pieces, one a line, in id order) and ``data.json`` (the
counts and where the pairs came from).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rnnrepro.data import parallel
from rnnrepro.fileio import atomic_open, write_text_atomic

# The stand-in's splits are drawn from generators of these seeds (the word map is shared).
STAND_IN_SEEDS = {"train": 1, "val": 2}
BPE_MAX_SENTENCES = 2_000_000  # [A] BPE learns from at most this many lines (every k-th pair)


def read_lines(path: str | Path) -> list[str]:
    """A raw text file's lines, ended by ``\n`` alone (an SGML test file's segments)."""
    if str(path).endswith(".sgm"):
        return parallel.read_sgm(path)
    with open(path, encoding="utf-8", newline="\n") as f:
        return [line.rstrip("\n").strip() for line in f]


def corpus_pairs(sources: list[str], targets: list[str]) -> list[tuple[str, str]]:
    """The (source, target) lines of aligned files, in order; ValueError naming a pair of files
    of different lengths."""
    pairs = []
    for src, tgt in zip(sources, targets, strict=True):
        src_lines, tgt_lines = read_lines(src), read_lines(tgt)
        if len(src_lines) != len(tgt_lines):
            raise ValueError(
                f"{src} has {len(src_lines)} lines but {tgt} has {len(tgt_lines)}: not aligned"
            )
        pairs += zip(src_lines, tgt_lines, strict=True)
    return pairs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stand-in", help="JSON {train, val, test, words}: generate the pairs")
    parser.add_argument("--train-src", nargs="*", default=[], help="training source files")
    parser.add_argument("--train-tgt", nargs="*", default=[], help="their target files")
    parser.add_argument("--val", nargs=2, metavar=("SRC", "TGT"), help="validation files")
    parser.add_argument(
        "--test", nargs=3, action="append", default=[], metavar=("NAME", "SRC", "TGT")
    )
    parser.add_argument("--test-names", nargs="*", default=[], help="the stand-in's test sets")
    parser.add_argument("--vocab-size", type=int, required=True)
    parser.add_argument("--max-length", type=int, required=True)
    parser.add_argument("--out-dir", required=True)
    args = parser.parse_args(argv)

    if args.stand_in:
        spec = json.loads(args.stand_in)
        make = lambda n, seed: parallel.stand_in_pairs(n, seed, words=spec["words"])  # noqa: E731
        splits = {s: make(spec[s], seed) for s, seed in STAND_IN_SEEDS.items()}
        tests = {name: make(spec["test"], 3 + k) for k, name in enumerate(args.test_names)}
        origin = {"corpus": "stand_in", **spec}
    else:
        if not (args.train_src and args.val and args.test):
            parser.error("a corpus needs --train-src/--train-tgt, --val and --test")
        splits = {
            "train": corpus_pairs(args.train_src, args.train_tgt),
            "val": corpus_pairs(*([p] for p in args.val)),
        }
        tests = {name: corpus_pairs([src], [tgt]) for name, src, tgt in args.test}
        origin = {"corpus": "wmt", "train": args.train_src + args.train_tgt}
    train = [(s, t) for s, t in splits["train"] if s and t]
    step = max(1, -(-2 * len(train) // BPE_MAX_SENTENCES))
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lines = [side for pair in train[::step] for side in pair]
    # sentencepiece needs a piece for each special and each character (a space is "▁")
    needed = len(parallel.SPECIAL_IDS) + len(set("".join(lines).replace(" ", "▁")))
    if args.vocab_size < needed:
        raise SystemExit(
            f"config key 'translation.vocab_size' (or the scale's): {args.vocab_size}, but "
            f"the BPE needs at least {needed} pieces here ({len(parallel.SPECIAL_IDS)} special "
            "ones and each character of the training text)"
        )
    model = parallel.train_bpe(lines, args.vocab_size)
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_proto=model)
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]

    def pieces_of(text: str) -> list[str]:
        # by id: a character BPE never saw is <unk> (sentencepiece's str output keeps it)
        return [sp.id_to_piece(i) for i in sp.encode(text)]

    def encoded(pairs, limit=None):
        for src, tgt in pairs:
            a, b = pieces_of(src), pieces_of(tgt)
            if limit is None or (0 < len(a) <= limit and 0 < len(b) <= limit):
                yield a, b

    counts = {
        "train": parallel.write_pairs(out / "train.tsv", encoded(train, args.max_length)),
        "val": parallel.write_pairs(out / "val.tsv", encoded(splits["val"])),
    }
    if not counts["train"]:
        raise SystemExit(
            f"config key 'translation.max_length' (or the scale's): {args.max_length}, but "
            f"none of the {len(train)} training pairs has both sides within that many pieces"
        )
    for name, pairs in tests.items():
        counts[name] = parallel.write_pairs(out / f"{name}.tsv", encoded(pairs))
        write_text_atomic(out / f"{name}.ref", "".join(f"{t}\n" for _, t in pairs))
        write_text_atomic(out / f"{name}.src", "".join(f"{s}\n" for s, _ in pairs))
    write_text_atomic(out / "vocab.txt", "".join(f"{p}\n" for p in pieces))
    with atomic_open(out / "bpe.model", "wb") as f:
        f.write(model)
    record = {
        **origin,
        "pairs": {"train_read": len(splits["train"]), **counts},
        "bpe_lines": len(lines),
        "vocab_size": len(pieces),
    }
    write_text_atomic(out / "data.json", json.dumps(record, indent=2) + "\n")
    print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
