"""Under- or over-fitting? memory's PTB LSTMs scored without dropout on training text and on
validation, at their best epoch so far.

A run's history gives its training loss *with* dropout (0.6 on the embedding and the output,
0.1 on the candidate), which says little about fit. This scores the best epoch's weights, in
evaluation mode, by the run's own task (``Task.evaluate``: the stream in ``eval_batch_size``
columns, state carried) on the first ``--tokens`` tokens of the training stream and on the full
validation stream. The validation row must equal the history's ``val_loss`` of that epoch: the
script says so or stops. Weights come from a finished run's model file or from an unfinished
run's checkpoint (its ``best_state``), so a curve can be read while the track trains.

    python studies/memory_fit/memory_fit.py --data <dir>/results/data/ptb_stream \\
        --run lstm_650:1:<checkpoint or model.pt> --run lstm_920:5:<...> \\
        --out studies/memory_fit/fit.csv --append

(``--append``: one row per run and reading, so that a track read once a session gives a curve.)
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from rnnrepro import config as cfg  # noqa: E402
from rnnrepro.fileio import load_torch, write_rows  # noqa: E402
from rnnrepro.models import build_model  # noqa: E402
from rnnrepro.tasks import make_task  # noqa: E402
from rnnrepro.training import validating  # noqa: E402

SEED = 1


def parse_run(text: str) -> tuple[str, int, Path]:
    """``MODEL:TRIAL:PATH`` checked."""
    parts = text.split(":", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: not MODEL:TRIAL:PATH")
    if not Path(parts[2]).is_file():
        raise argparse.ArgumentTypeError(f"{text!r}: no file {parts[2]}")
    return parts[0], int(parts[1]), Path(parts[2])


def best_weights(path: Path, run: dict, vocab: list[str]) -> tuple[torch.nn.Module, int, list]:
    """The model at its best epoch so far, that epoch, and the history (empty for a model
    file, whose history is its run's history.csv): from a finished run's model file
    (``save_model``'s record, its best epoch's weights) or a training checkpoint
    (``rnnrepro.training``: ``best_state``)."""
    state = load_torch(path)
    model = build_model(run["architecture"], vocab, **run["hparams"])
    if "state_dict" in state:
        if state["run"] != run:
            sys.exit(f"{path}: trained with other settings than config.yaml's for this run")
        model.load_state_dict(state["state_dict"])
        return model, state["best_epoch"], []
    model.load_state_dict(state["best_state"])
    return model, state["result"]["best_epoch"], state["result"]["history"]


def prefix(train: Path, tokens: int, out: Path) -> int:
    """The first lines of ``train`` holding at least ``tokens`` tokens (each line's words and
    its ``<eos>``), written to ``out``; their token count."""
    count, lines = 0, []
    with train.open() as f:
        for line in f:
            if count >= tokens:
                break
            lines.append(line)
            count += len(line.split()) + 1
    out.write_text("".join(lines))
    return count


def task_of(run: dict, data: Path, split: Path):
    """The run's task, scoring ``split`` (its ``evaluate``: the stream in ``eval_batch_size``
    columns, state carried)."""
    files = [str(data / "train.txt"), str(split), str(data / "vocab.txt")]
    return make_task(run, SEED, torch.device("cpu"), *files)


def score(task, model) -> float:
    """Mean NLL per token of the task's evaluation split, in evaluation mode."""
    with validating(model, "fit"):
        return task.evaluate(model)["loss"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="prepared ptb_stream folder")
    parser.add_argument("--run", type=parse_run, action="append", required=True)
    parser.add_argument("--tokens", type=int, default=73_760, help="default: the val stream's")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--append", action="store_true", help="add rows to an existing --out")
    args = parser.parse_args()
    torch.set_num_threads(1)
    config = yaml.safe_load((ROOT / "config.yaml").read_text()) | {"scale": "paper"}
    rows = []
    with tempfile.TemporaryDirectory() as work:
        train = Path(work) / "train_prefix.txt"
        tokens = prefix(args.data / "train.txt", args.tokens, train)
        for name, trial, path in args.run:
            run = cfg.run_config(config, "memory", "ptb_stream", name, trial=trial)
            validation = task_of(run, args.data, args.data / "val.txt")
            model, epoch, history = best_weights(path, run, validation.vocab)
            started = time.monotonic()
            val = score(validation, model)
            fit = score(task_of(run, args.data, train), model)
            logged = {row["epoch"]: row for row in history}.get(epoch, {})
            if logged and logged["val_loss"] != val:
                said = f"epoch {epoch}'s val_loss {val} is not its history's {logged['val_loss']}"
                sys.exit(f"{path}: {said}: not the weights or the task it was trained with")
            rows.append({
                "model": name, "trial": trial, "weights": path.name, "best_epoch": epoch,
                "epochs": len(history) or "", "train_tokens": tokens,
                "train_loss_dropout": logged.get("train_loss", ""),
                "train_loss": fit, "val_loss": val, "train_ppl": math.exp(fit),
                "val_ppl": math.exp(val), "gap": val - fit,
                "seconds": round(time.monotonic() - started, 1),
            })  # fmt: skip
            print(rows[-1], flush=True)
    write_rows(args.out, rows, append=args.append)


if __name__ == "__main__":
    main()
