"""Which model file an analysis of a run reads: the run's own, or its search's chosen trial."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_scored_model_arguments(parser: argparse.ArgumentParser) -> None:
    """``--model``, or a searched run's ``--search``, ``--trials`` and ``--trial-models``."""
    parser.add_argument("--model", help="model.pt of the run")
    parser.add_argument("--search", help="search.json of a searched run (instead of --model)")
    parser.add_argument("--trials", nargs="*", type=int, help="the search's trial numbers")
    parser.add_argument("--trial-models", nargs="*", help="model.pt of each trial, same order")


def scored_model_path(args: argparse.Namespace) -> str:
    """The model file an analysis reads: ``--model``, or the trial ``--search`` chose (the
    trial numbers come from the config, paired with ``--trial-models`` in order)."""
    if args.model:
        return args.model
    if not (args.search and args.trials and args.trial_models):
        raise SystemExit("give --model, or --search with --trials and --trial-models")
    if len(args.trials) != len(args.trial_models):
        raise SystemExit("--trials and --trial-models must have the same length")
    chosen = json.loads(Path(args.search).read_text())["search"]["chosen"]
    if chosen not in args.trials:
        raise SystemExit(f"{args.search} chose trial {chosen}, which is not among --trials")
    return args.trial_models[args.trials.index(chosen)]
