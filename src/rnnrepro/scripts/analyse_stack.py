"""Stack-action statistics of a multipop stack LM on a test stream (memory Figure 3).

Example:
    python -m rnnrepro.scripts.analyse_stack --model model.pt --test test.txt \\
        --out-states stack_states.csv --out-max-prob stack_max_prob.csv

A searched run passes ``--search search.json --trials ... --trial-models ...`` instead of
``--model`` (the chosen trial is analysed; rnnrepro.scripts.evaluate_agreement).
"""

from __future__ import annotations

import argparse

from rnnrepro.data.batching import read_stream
from rnnrepro.evaluation import run_identity
from rnnrepro.evaluation.scored_model import add_scored_model_arguments, scored_model_path
from rnnrepro.fileio import atomic_open
from rnnrepro.models import load_model
from rnnrepro.reporting.analysis import stack_actions


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_scored_model_arguments(parser)
    parser.add_argument("--test", required=True, help="the test split, a token stream")
    parser.add_argument("--scale", required=True, help="the config scale, for the record")
    parser.add_argument("--out-states", required=True)
    parser.add_argument("--out-max-prob", required=True)
    args = parser.parse_args(argv)

    path = scored_model_path(args)
    model, record = load_model(path)
    index = {token: i for i, token in enumerate(record["vocab"])}
    ids = read_stream(args.test, index)
    training = record["run"]["training"]
    states, histogram = stack_actions(
        model, ids, training.get("eval_batch_size", 10), training["bptt"]
    )
    identity = {**run_identity(path, record), "scale": args.scale}
    for table, out in ((states, args.out_states), (histogram, args.out_max_prob)):
        with atomic_open(out, "w", newline="") as f:
            table.assign(**identity).to_csv(f, index=False)
    print(states.to_string(index=False))


if __name__ == "__main__":
    main()
