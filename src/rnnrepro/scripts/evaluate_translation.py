"""Evaluate a trained translation model: perplexity per target token (eos included) on the
validation set and on each test set, under teacher forcing, beside an add-one unigram model's
of the training targets (``unigram_ppl``); the run's record beside them."""

from __future__ import annotations

import argparse
import json

from rnnrepro.data.parallel import SPECIAL_IDS, read_pairs
from rnnrepro.devices import select_device
from rnnrepro.evaluation import run_summary
from rnnrepro.evaluation.translation import corpus_loss, unigram_log_probs, unigram_perplexity
from rnnrepro.fileio import write_text_atomic
from rnnrepro.models import load_model


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--train", required=True, help="training pairs (the unigram reference)")
    parser.add_argument("--val", required=True, help="validation pairs (TSV of BPE pieces)")
    parser.add_argument(
        "--test", nargs=2, action="append", required=True, metavar=("NAME", "PAIRS")
    )
    parser.add_argument("--scale", required=True, help="the config scale, for the record")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--out-metrics", required=True)
    args = parser.parse_args(argv)
    device = select_device(args.device)
    model, record = load_model(args.model)
    model.to(device)
    index = {piece: i for i, piece in enumerate(record["vocab"])}
    bos, eos = SPECIAL_IDS["bos_id"], SPECIAL_IDS["eos_id"]

    unigram = unigram_log_probs(read_pairs(args.train, index), len(index), eos)

    def score(path: str) -> dict:
        pairs = read_pairs(path, index)
        result = corpus_loss(model, pairs, bos, eos, device)
        return {**result, "unigram_ppl": unigram_perplexity(unigram, pairs, eos)}

    metrics = {
        **run_summary(args.model, record),
        "run": record["run"],
        "scale": args.scale,
        "eval_device": device.type,
        "val": score(args.val),
        "test": {},  # the test sets are several: ``tests``
        "tests": {name: score(path) for name, path in args.test},
    }
    print(json.dumps({"val": metrics["val"], "tests": metrics["tests"]}), flush=True)
    write_text_atomic(args.out_metrics, json.dumps(metrics, indent=2) + "\n")


if __name__ == "__main__":
    main()
