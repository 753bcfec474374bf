"""Evaluate a trained Dyck model on validation and test: perplexity, LDPA per distance, WCPA,
and (a model of the whole vocabulary, the splits' lengths given) where its loss sits above the
generator's floor."""

from __future__ import annotations

import argparse
import csv
import json

from rnnrepro.data import dyck
from rnnrepro.devices import select_device
from rnnrepro.evaluation import IDENTITY, run_summary
from rnnrepro.evaluation.dyck import evaluate_dyck, ldpa_rows, wcpa_support
from rnnrepro.evaluation.dyck_excess import excess_by_kind
from rnnrepro.fileio import atomic_open, write_text_atomic
from rnnrepro.models import load_model


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True)
    parser.add_argument("--history", required=True, help="training history (for the record)")
    parser.add_argument("--val", required=True)
    parser.add_argument("--test", required=True)
    parser.add_argument("--reading", choices=["close", "stack"], default="close")
    parser.add_argument(
        "--wcpa-min-events",
        type=int,
        default=1,
        help="robust WCPA: the minimum over distances with at least this many events",
    )
    dyck.add_lengths_argument(parser)
    parser.add_argument("--scale", required=True, help="the config scale, for the record")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--out-metrics", required=True)
    parser.add_argument("--out-ldpa", required=True)
    args = parser.parse_args(argv)

    device = select_device(args.device)
    model, record = load_model(args.model)
    model.to(device)
    # second_order_lstm tests the attention model with an "arbitrarily low" temperature: hard
    # argmax.
    model.set_hard(True)
    run = record["run"]
    k, m = run["dyck"]["k"], run["dyck"]["m"]
    metrics = {
        **run_summary(args.model, record),
        "reading": args.reading,
        "scale": args.scale,
        "eval_device": device.type,
    }
    rows = []
    for split, path in (("val", args.val), ("test", args.test)):
        seqs = dyck.read_sequences(path, k=k, m=m, lengths=args.dyck_lengths)
        result = evaluate_dyck(
            model,
            seqs,
            record["vocab"],
            reading=args.reading,
            device=device,
            min_events=args.wcpa_min_events,
        )
        metrics[split] = {
            "loss": result.loss,
            "ppl": result.ppl,
            "wcpa": result.wcpa,
            **wcpa_support(result.ldpa, args.wcpa_min_events),
            "robust_wcpa": result.robust_wcpa,
        }
        if model.output == "vocab" and args.dyck_lengths:
            metrics[split]["excess"] = excess_by_kind(
                model, seqs, record["vocab"], k, m, args.dyck_lengths[0], device=device
            )
        identity = {key: metrics[key] for key in IDENTITY}
        rows += [{**identity, "split": split, **row} for row in ldpa_rows(result.ldpa)]
        print(f"{split}: {metrics[split]}")
    write_text_atomic(args.out_metrics, json.dumps(metrics, indent=2) + "\n")
    with atomic_open(args.out_ldpa, "w", newline="") as f:
        columns = [*IDENTITY, "split", "distance", "correct", "total", "accuracy"]
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()
