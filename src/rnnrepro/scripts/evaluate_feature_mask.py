"""Test perplexity of a trained stream model with a share of a layer's output features masked
(major_minor Fig. 5): every masked layer × probability × mask seed of ``--settings``.

The test stream is read as in evaluate_text (the run's test batch and BPTT, its evaluated-token
cap); P = 0 is evaluated once (no mask) and written for every layer and seed. One CSV row per
(layer, probability, mask seed), after the run's identity and parameter count.

Example:
    python -m rnnrepro.scripts.evaluate_feature_mask --model model.pt --test test.txt \\
        --settings '{"layers": ["all", "1"], "probabilities": [0, 0.1], "mask_seeds": [1, 2]}' \\
        --scale paper --out feature_mask.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import math

from rnnrepro.data.batching import read_stream
from rnnrepro.devices import select_device
from rnnrepro.evaluation import run_identity
from rnnrepro.evaluation.feature_mask import evaluate_masked
from rnnrepro.fileio import atomic_open
from rnnrepro.models import load_model

COLUMNS = ("layer", "probability", "mask_seed", "test_ppl", "tokens")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--test", required=True)
    parser.add_argument("--settings", required=True, help="JSON: layers, probabilities, mask_seeds")
    parser.add_argument("--scale", required=True, help="the config scale, for the record")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--out", required=True, help="CSV")
    args = parser.parse_args(argv)
    settings = json.loads(args.settings)

    device = select_device(args.device)
    model, record = load_model(args.model)
    model.to(device)
    run = record["run"]
    if run["text"]["framing"] != "stream":
        parser.error(f"{args.model}: feature masking reads a stream model, not {run['task']!r}")
    training = run["training"]
    columns = training.get("test_batch_size") or training.get("eval_batch_size", 10)
    index = {token: i for i, token in enumerate(record["vocab"])}
    ids = read_stream(args.test, index)[: training.get("max_eval_tokens")]
    identity = run_identity(args.model, record)
    fixed = {**identity, "params_total": record["params"]["total"], "scale": args.scale}

    def evaluate(layer: str, probability: float, seed: int) -> dict:
        result = evaluate_masked(
            model, ids, layer, probability, seed, columns, training["bptt"], device
        )
        return {"test_ppl": math.exp(result.loss), "tokens": result.tokens}

    unmasked = evaluate(settings["layers"][0], 0.0, 0)
    print(f"P = 0: {unmasked}", flush=True)
    rows = []
    for layer in settings["layers"]:
        for probability in settings["probabilities"]:
            for seed in settings["mask_seeds"]:
                scored = unmasked if probability == 0 else evaluate(layer, probability, seed)
                rows.append(
                    {
                        **fixed,
                        "layer": layer,
                        "probability": probability,
                        "mask_seed": seed,
                        **scored,
                    }
                )
            print(f"layer {layer}, P = {probability}: {rows[-1]['test_ppl']:.2f}", flush=True)
    with atomic_open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=[*fixed, *COLUMNS])
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()
