"""Score a run's translations: BLEU of each test set against its raw references (sacrebleu on
detokenized text, with its signature, and the tokenized BLEU of the papers' era), beside the
BLEU of the source copied as its translation (``copy_bleu``, ``copy_bleu_tokenized``: what a
translator that does nothing scores), added to the run's metrics (perplexities) as
``translation.json``."""

from __future__ import annotations

import argparse
import json

from rnnrepro.data.parallel import bleu
from rnnrepro.fileio import write_text_atomic


def read_lines(path: str) -> list[str]:
    """A file's lines, ended by ``\n`` alone (a reference may hold a ``\r``)."""
    with open(path, encoding="utf-8", newline="\n") as f:
        return [line.rstrip("\n") for line in f]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--metrics", required=True, help="the run's metrics.json")
    parser.add_argument(
        "--test", nargs=4, action="append", required=True, metavar=("NAME", "HYP", "REF", "SRC")
    )
    parser.add_argument("--beam-width", type=int, required=True, help="for the record")
    parser.add_argument("--lang", default="en", help="the target language (Moses tokenizer)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    with open(args.metrics, encoding="utf-8") as f:
        metrics = json.load(f)
    for name, hyp, ref, src in args.test:
        if name not in metrics["tests"]:
            raise SystemExit(f"{args.metrics}: no test set {name!r} (has {list(metrics['tests'])})")
        hypotheses, references = read_lines(hyp), read_lines(ref)
        if len(hypotheses) != len(references):
            raise SystemExit(
                f"{hyp}: {len(hypotheses)} translations for the {len(references)} lines of {ref}"
            )
        scores = bleu(hypotheses, references, args.lang)
        # a weak model's beam may end at once (no length normalisation): say how often
        empty = sum(not line.strip() for line in hypotheses)
        copied = bleu(read_lines(src), references, args.lang)
        metrics["tests"][name].update(
            scores,
            beam_width=args.beam_width,
            empty_translations=empty,
            copy_bleu=copied["bleu"],
            copy_bleu_tokenized=copied["bleu_tokenized"],
        )
        print(f"{name}: BLEU {scores['bleu']:.2f} ({scores['signature']})", flush=True)
    write_text_atomic(args.out, json.dumps(metrics, indent=2) + "\n")


if __name__ == "__main__":
    main()
