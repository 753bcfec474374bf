"""How much of multi_matrix's word-level gap the sentence framing could explain: a finished
sentence model trained on for a few epochs on the PTB stream (its state carried from sentence to
sentence) against the same model trained on for as many epochs on sentences, from the same
weights and with the same settings.

The pipeline trains and scores multi_matrix's word models sentence by sentence, each from a zero
state (docs/methods.md §1.3: the [A] reading of "each line is one sequence"); the paper does not
say, and a loop in the style of pytorch/examples' word_language_model reads PTB as one stream.
Retraining a model on the stream to its end costs what the track's run did (4-5 hours on one
core), so this script measures the effect at a fraction of that: both arms start from the run's
``model.pt`` (its best epoch), with a fresh Adam at the run's own rate, clipping, dropout and batch
size, for ``--epochs`` epochs each, through the pipeline's ``train`` script (``--init``):

- ``stream``: the training split as one stream in ``--batch-size`` columns and BPTT windows of
  ``--bptt`` steps, the state carried across windows (``StreamTask``), validated as a stream;
- ``sentences``: the run's own settings (``TextTask``), validated sentence by sentence.

Each arm's best model, and the run's own (``start``), is then scored on the test split both ways
(``ce_readings.readings``: ``tokens``, each sentence from a zero state, and ``stream``, the state
carried). The difference between the stream arm's ``stream`` and the sentence arm's ``tokens`` is
what reading the corpus as a stream buys this model in that many epochs, with the extra epochs'
own effect taken out.

    R=runs/mm-word/results
    python studies/word_context/word_context.py \\
        --run-dir $R/runs/multi_matrix/ptb_word/lstm/seed1 \\
        --data $R/data/ptb_word --epochs 3 --work /tmp/word_context \\
        --out studies/word_context/word_context_lstm.csv
"""

from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ce_readings"))
from ce_readings import STREAM_BPTT, STREAM_COLUMNS, readings  # noqa: E402

from rnnrepro.models import read_model_file  # noqa: E402


def stream_run(run: dict, bptt: int, batch_size: int) -> dict:
    """A sentence run's settings with the corpus read as one stream (``StreamTask``): BPTT
    windows of ``bptt`` steps over ``batch_size`` columns, validated as a stream."""
    out = copy.deepcopy(run)
    out["task"] = "stream"
    out["text"] = {"framing": "stream", "metric": run["text"]["metric"]}
    out["training"].update(bptt=bptt, batch_size=batch_size, eval_batch_size=STREAM_COLUMNS)
    return out


def arm_run(run: dict, arm: str, epochs: int, bptt: int, batch_size: int) -> dict:
    """The run's settings for one arm (its own, or read as a stream) for ``epochs`` epochs."""
    out = stream_run(run, bptt, batch_size) if arm == "stream" else copy.deepcopy(run)
    out["training"].update(max_epochs=epochs, early_stopping_patience=epochs)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, required=True, help="a finished sentence run")
    parser.add_argument("--data", type=Path, required=True, help="its prepared ptb_word folder")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument(
        "--bptt", type=int, default=STREAM_BPTT, help="stream arm: steps per window"
    )
    parser.add_argument(
        "--batch-size", type=int, help="stream arm: columns (default: the run's batch size)"
    )
    parser.add_argument("--arms", nargs="+", default=["stream", "sentences"])
    parser.add_argument("--work", type=Path, required=True, help="checkpoints and models")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    record = read_model_file(args.run_dir / "model.pt")
    run, identity = record["run"], record["identity"]
    start = readings(args.run_dir / "model.pt", args.data / "test.txt", 128)
    rows = [
        {
            "model": identity["model"],
            "arm": "start",
            "epochs": 0,
            "test_sentences": start["tokens"],
            "test_stream": start["stream"],
        }
    ]
    for arm in args.arms:
        settings = arm_run(
            run, arm, args.epochs, args.bptt, args.batch_size or run["training"]["batch_size"]
        )
        work = args.work / arm
        work.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable, "-m", "rnnrepro.scripts.train", "--run", json.dumps(settings),
            "--identity", json.dumps({**identity, "stage": f"context_{arm}"}),
            "--init", str(args.run_dir / "model.pt"), "--seed", str(identity["seed"]),
            "--train", str(args.data / "train.txt"), "--val", str(args.data / "val.txt"),
            "--vocab", str(args.data / "vocab.txt"), "--device", "cpu",
            "--checkpoint", str(work / "checkpoint.pt"), "--code", "word_context",
            "--out-model", str(work / "model.pt"), "--out-history", str(work / "history.csv"),
        ]  # fmt: skip
        subprocess.run(command, check=True)  # a killed arm resumes from its checkpoint
        history = pd.read_csv(work / "history.csv")
        scored = readings(work / "model.pt", args.data / "test.txt", 128)
        rows.append(
            {
                "model": identity["model"],
                "arm": arm,
                "epochs": args.epochs,
                "bptt": args.bptt if arm == "stream" else None,
                "columns": settings["training"]["batch_size"],
                **{f"val_epoch{int(r.epoch)}": r.val_loss for r in history.itertuples()},
                "best_epoch": int(history.loc[history["val_loss"].idxmin(), "epoch"]),
                "test_sentences": scored["tokens"],
                "test_stream": scored["stream"],
                "train_seconds": float(history["seconds"].sum()),
            }
        )
        print(rows[-1], flush=True)
    frame = pd.DataFrame(rows)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    frame.round(4).to_csv(args.out, index=False)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
