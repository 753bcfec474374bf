"""Train one run (experiment, dataset, model, seed) at one stage and write its best model and
history.

Called by the ``train`` rule; ``--run`` is the JSON of ``rnnrepro.config.run_config``. A later
stage (fine-tuning) starts from ``--init``, the previous stage's model file.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

from rnnrepro.data import dyck
from rnnrepro.devices import select_device
from rnnrepro.fileio import atomic_open
from rnnrepro.models import build_model, read_model_file, save_model
from rnnrepro.procedures import Procedure
from rnnrepro.tasks import make_task
from rnnrepro.training import NonFiniteLoss, TrainingInterrupted, seed_everything, train


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--run", required=True, help="run settings as JSON")
    parser.add_argument(
        "--identity",
        default="{}",
        help="the run's identity as JSON: experiment, dataset, model, seed, stage (kept in "
        "model.pt)",
    )
    parser.add_argument("--init", help="start from this model file (the previous stage's)")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--train", required=True, help="training sequences")
    parser.add_argument("--val", required=True, help="validation sequences")
    parser.add_argument("--vocab", help="vocabulary file (text datasets)")
    dyck.add_lengths_argument(parser)
    parser.add_argument(
        "--device",
        default="auto",
        help="not part of the run's identity: a run resumes on another device, and each epoch's "
        "history row and the model file record where it ran",
    )
    parser.add_argument("--threads", type=int, default=1, help="CPU threads for torch")
    parser.add_argument("--checkpoint", required=True, help="resumable per-epoch checkpoint")
    parser.add_argument(
        "--code",
        default="",
        help="digest of the code the run executes (rnnrepro.provenance): a checkpoint written by "
        "other code is not resumed",
    )
    parser.add_argument("--out-model", required=True)
    parser.add_argument("--out-history", required=True)
    return parser.parse_args(argv)


def write_history(
    rows: list[dict], path: str, identity: dict, history_columns: Sequence[str]
) -> None:
    """history.csv: one row per epoch, the run's identity in its first columns, then the task's
    ``history_columns``, then the tags and any other keys of the rows in order of appearance."""
    with atomic_open(path, "w", newline="") as f:
        extra = [k for row in rows for k in row if k not in history_columns]
        columns = [*identity, *history_columns, *dict.fromkeys(extra)]
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows({**identity, **row} for row in rows)


def start_from(model: torch.nn.Module, path: str, run: dict, vocab: list[str]) -> None:
    """Load the weights of a previous stage's model file into ``model`` (same architecture,
    hyper-parameters and vocabulary, else ValueError naming the difference)."""
    record = read_model_file(path)
    for key, ours in (("name", run["architecture"]), ("hparams", run["hparams"]), ("vocab", vocab)):
        if record[key] != ours:
            raise ValueError(
                f"{path}: its {key} differs from this stage's: {record[key]} != {ours}"
            )
    model.load_state_dict(record["state_dict"])


def ran_on(history: list[dict], now: dict) -> dict:
    """Where the epochs ran, for the model file: ``devices`` (e.g. ["cpu", "cuda"] for a run
    resumed on a GPU) and ``kernels`` ("native", "python" or both joined by "+"), in order."""
    rows = history or [now]
    return {
        "devices": list(dict.fromkeys(row.get("device", now["device"]) for row in rows)),
        "kernels": "+".join(dict.fromkeys(row.get("kernels", now["kernels"]) for row in rows)),
    }


def loop_backend() -> str:
    """``native`` when the model's module runs compiled time loops (it imported
    ``rnnrepro.models.native`` and the build succeeded), else ``python``. Looked up, not
    imported: the compiled code belongs to the code digest of those models' runs only."""
    module = sys.modules.get("rnnrepro.models.native")
    return module.backend() if module is not None else "python"


def epochs_trained(history: list[dict]) -> int:
    """The epochs a run trained: its last row's (a procedure with ``eval_every`` writes a row
    per validation, several an epoch)."""
    return history[-1]["epoch"] if history else 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    run, identity = json.loads(args.run), json.loads(args.identity)
    settings = Procedure.from_dict(run["training"])
    device = select_device(args.device)
    torch.set_num_threads(args.threads)
    task = make_task(run, args.seed, device, args.train, args.val, args.vocab, args.dyck_lengths)

    seed_everything(args.seed)
    model = build_model(run["architecture"], task.vocab, **run["hparams"]).to(device)
    if args.init:
        start_from(model, args.init, run, task.vocab)
        print(f"starting from {args.init}", flush=True)
        task.files.append(Path(args.init))  # a retrained previous stage restarts this one
    # which time loops the custom cells run (compiled or Python): like the device, recorded in
    # each epoch's history row, not part of the resume digest (the two round differently, so a
    # run resumed elsewhere is marked, not refused)
    kernels = loop_backend() if device.type == "cpu" else "python"
    print(
        f"{run['architecture']} {run['hparams']}, seed {args.seed}, device {device}, "
        f"{kernels} loops: {model.num_parameters()} trainable parameters, "
        f"{model.recurrent_parameters()} recurrent; {task.describe()}",
        flush=True,
    )

    try:
        result, best_state = train(
            model,
            settings,
            task,
            args.checkpoint,
            task.digest(args.code),
            log=lambda line: print(line, flush=True),
            tags={"device": device.type, "kernels": kernels},
        )
    except TrainingInterrupted as interrupt:
        print(f"{interrupt}; rerun to resume from {args.checkpoint}", flush=True)
        return 128 + interrupt.signum
    except NonFiniteLoss as error:
        name = "/".join(str(v) for v in identity.values()) or "run"
        print(f"train: error: {name}: non-finite {error}; the run is stopped", flush=True)
        return 1
    model.load_state_dict(best_state)
    Path(args.out_model).parent.mkdir(parents=True, exist_ok=True)
    write_history(result.history, args.out_history, identity, task.history_columns)
    save_model(
        model.cpu(),
        args.out_model,
        run["architecture"],
        task.vocab,
        run["hparams"],
        run=run,
        identity=identity,
        seed=args.seed,
        epochs=epochs_trained(result.history),
        best_epoch=result.best_epoch,
        train_seconds=result.seconds,
        stopped_because=result.stopped_because,
        diverged=result.diverged,
        **ran_on(result.history, {"device": device.type, "kernels": kernels}),
        init=args.init,
        params={"total": model.num_parameters(), "recurrent": model.recurrent_parameters()},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
