"""Evaluate a trained text model on validation and test: mean NLL, BPC or average CE.

With ``--out-positions`` / ``--out-examples`` (general_second_order, character documents) also
write the test loss by character position in a word (Fig. 3) and prediction examples (Fig. 2).
"""

from __future__ import annotations

import argparse
import csv
import json

from rnnrepro.data import text
from rnnrepro.data.batching import read_stream
from rnnrepro.data.text import encode
from rnnrepro.devices import select_device
from rnnrepro.evaluation import run_summary
from rnnrepro.evaluation.text import (
    evaluate_stream,
    evaluate_text,
    position_loss,
    prediction_examples,
)
from rnnrepro.fileio import atomic_open, write_text_atomic
from rnnrepro.models import load_model


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--val", help="validation split (needed for --out-metrics)")
    parser.add_argument("--test", required=True)
    parser.add_argument("--scale", required=True, help="the config scale, for the record")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--out-metrics", help="JSON: the run's record and val/test metrics")
    parser.add_argument("--out-positions", help="CSV: position,bits,count (test split)")
    parser.add_argument("--out-examples", help="JSON: test prediction examples")
    parser.add_argument("--examples", type=int, default=5)
    args = parser.parse_args(argv)
    if args.out_metrics and not args.val:
        parser.error("--out-metrics needs --val")

    device = select_device(args.device)
    model, record = load_model(args.model)
    model.to(device)
    run, vocab = record["run"], record["vocab"]
    framing, metric = run["text"]["framing"], run["text"]["metric"]
    index = {token: i for i, token in enumerate(vocab)}
    eos_id = index.get("<eos>")
    lengths = text.token_char_lengths(vocab)
    metrics = {
        **run_summary(args.model, record),
        "run": run,
        "scale": args.scale,
        "eval_device": device.type,
    }
    if framing == "stream":  # the whole split as one stream, state carried (docs/methods.md §3.1)
        training = run["training"]
        columns = {"val": training.get("eval_batch_size", 10)}
        columns["test"] = training.get("test_batch_size") or columns["val"]  # MoS: test batch 1
        for split, path in (("val", args.val), ("test", args.test)):
            ids = read_stream(path, index)[: training.get("max_eval_tokens")]
            result = evaluate_stream(model, ids, columns[split], training["bptt"], device)
            metrics[split] = result.as_dict(metric)
            print(f"{split}: {metrics[split]}", flush=True)
        write_text_atomic(args.out_metrics, json.dumps(metrics, indent=2) + "\n")
        return
    test = encode(text.read_token_file(args.test), index, args.test)
    if args.out_metrics:
        val = encode(text.read_token_file(args.val), index, args.val)
        for split, sequences in (("val", val), ("test", test)):
            result = evaluate_text(model, sequences, framing, lengths, eos_id, device=device)
            metrics[split] = result.as_dict(metric)
            print(f"{split}: {metrics[split]}", flush=True)
        write_text_atomic(args.out_metrics, json.dumps(metrics, indent=2) + "\n")
    if args.out_positions:
        rows = position_loss(model, test, vocab, device=device)
        with atomic_open(args.out_positions, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=["position", "bits", "count"])
            writer.writeheader()
            writer.writerows(rows)
    if args.out_examples:
        examples = prediction_examples(model, test, vocab, args.examples, device)
        write_text_atomic(args.out_examples, json.dumps(examples, indent=2) + "\n")


if __name__ == "__main__":
    main()
