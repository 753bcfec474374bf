"""Which recipe lets memory's LSTM-650 learn as the paper's? Its arms train the pipeline's own
run under one reading each and validate on the full validation stream
(studies/memory_recipe/README.md).

Each arm is ``OPTIMIZER/READING/LR[/CLIP]``:

- ``OPTIMIZER``: ``rmsprop`` (PyTorch's: α = 0.99, ε outside the root, accumulator from 0),
  ``rmsprop_corrected`` (Adam with β1 = 0: deepmind/lamb's "rmsprop") or ``rmsprop_tf``
  (TensorFlow 1's ``RMSPropOptimizer``), the pipeline's ``training.optimizer`` settings;
- ``READING``: what the paper's λ sits beside, so RMSprop's ``weight_decay`` (beside our mean loss
  per token) is λ (``mean``), λ / 35 (``sequence``: the loss summed over a sequence's 35 tokens),
  λ / 1,120 (``batch``: summed over the batch's 32 × 35 tokens) or 0 (``none``);
- ``LR``: a number, or ``trial`` for the trial's sample;
- ``CLIP``: the gradient norm clipped at, on our per-token mean loss (default: the run's; lamb's
  10 on the summed loss is 10 / 35).

An arm trains the run of ``--trial`` (``rnnrepro.config.run_config`` at ``paper`` scale: the
pipeline's model, task, procedure and loop, seed 1) for ``--epochs`` epochs of at most
``--batches`` batches, validating every ``--every`` batches and at each epoch's end, one CSV row a
validation, written as it comes, with the median gradient norm (before clipping) of the steps
since the last and their share above lamb's clip. It starts from zero, from the epoch after a
run's checkpoint (``--resume``: its weights, accumulator, data position, carried state and random
numbers, so that an arm at the run's own settings gives the run's next epoch to the bit; another
optimiser of the RMSprop family takes over PyTorch's accumulator as its second moment), or from a
finished run's ``model.pt`` with a fresh optimiser and no lr schedule (``--start``). λ is the
trial's sample read back from config.yaml's search (which holds ``weight_decay`` under the
``sequence`` reading) unless ``--paper-l2`` gives it.

    python studies/memory_recipe/memory_recipe.py --data <dir>/results/data/ptb_stream \
        --resume <checkpoint after epoch 23> --arms rmsprop_corrected/sequence/trial \
        --out ep23_corrected.csv
    python studies/memory_recipe/memory_recipe.py --data <dir>/results/data/ptb_stream --epochs 3 \
        --start <run>/model.pt --every 415 --arms rmsprop_corrected/sequence/0.0008 --out x05.csv
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from rnnrepro import config as cfg  # noqa: E402
from rnnrepro.fileio import load_torch, save_torch, write_rows  # noqa: E402
from rnnrepro.models import build_model, read_model_file  # noqa: E402
from rnnrepro.procedures import OPTIMIZERS, Procedure  # noqa: E402
from rnnrepro.tasks import make_task  # noqa: E402
from rnnrepro.training import seed_everything, train, validating  # noqa: E402

READINGS = {"mean": 1, "sequence": 35, "batch": 32 * 35, "none": None}
SEED = 1
DIGEST = "recipe"  # the arms' checkpoints: a resumed one is rewritten with it
# deepmind/lamb clips the gradient of the loss summed over a window's 35 steps at a global norm
# of 10 (lamb/lib/config/ptb_word_rmsprop.sh): 10 / 35 on our per-token mean loss
LAMB_CLIP = 10 / 35


def weight_decay(reading: str, paper_l2: float) -> float:
    """RMSprop's ``weight_decay`` for the paper's λ under ``reading`` (batch 32, BPTT 35)."""
    divisor = READINGS[reading]
    return 0.0 if divisor is None else paper_l2 / divisor


def parse_arm(text: str) -> tuple[str, str, str, str]:
    """``OPTIMIZER/READING/LR[/CLIP]`` checked, or argparse's error naming the part that is
    wrong; CLIP (a gradient norm on our per-token mean loss) defaults to ``run`` (the run's)."""
    parts = text.split("/")
    if len(parts) not in (3, 4):
        raise argparse.ArgumentTypeError(f"{text!r}: not OPTIMIZER/READING/LR[/CLIP]")
    optimizer, reading, lr, clip = (*parts, "run")[:4]
    if optimizer not in OPTIMIZERS:
        raise argparse.ArgumentTypeError(
            f"{text!r}: optimizer {optimizer!r} not in {list(OPTIMIZERS)}"
        )
    if reading not in READINGS:
        raise argparse.ArgumentTypeError(f"{text!r}: reading {reading!r} not in {list(READINGS)}")
    if lr != "trial":
        try:
            float(lr)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r}: LR {lr!r} is not a number or 'trial'"
            ) from None
    if clip != "run":
        try:
            float(clip)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r}: CLIP {clip!r} is not a number or 'run'"
            ) from None
    return optimizer, reading, lr, clip


class ValidatedEvery:
    """The run's task, validating the model on the full validation set after every ``every``
    optimiser steps and handing each row to ``emit`` at once (a killed arm keeps its rows); the
    training state is untouched (the stream's carried state is the task's own, validation keeps
    its own, dropout is off and draws no random numbers). ``norms``: the gradient norms before
    clipping of the steps since the last row (filled by ``recording_norms``)."""

    def __init__(self, task, model, every: int, started: float, emit):
        self.task, self.model, self.every, self.started = task, model, every, started
        self.emit, self.steps, self.window, self.norms = emit, 0, [], []
        self.validated = 0  # the step count at the last validation

    def __getattr__(self, name):
        return getattr(self.task, name)

    def row(self, val_loss: float) -> dict:
        """A CSV row after ``steps`` steps; ``train_loss``: the mean over the steps since the
        last row (with dropout on); the gradient norms' median and the share above lamb's clip
        on our scale (``LAMB_CLIP``)."""
        norms = torch.tensor(self.norms or [math.nan])
        row = {
            "batches": self.steps,
            "train_loss": sum(self.window) / len(self.window),
            "val_loss": val_loss,
            "val_ppl": math.exp(val_loss),
            "grad_norm_median": norms.median().item(),
            "share_over_lamb_clip": (norms > LAMB_CLIP).float().mean().item(),
            "seconds": round(time.monotonic() - self.started, 1),
        }
        self.window, self.norms = [], []
        print(row, flush=True)
        self.emit(row)
        return row

    def evaluate(self, model) -> dict:
        """The task's validation, its row emitted (the loop's at each epoch's end)."""
        metrics = self.task.evaluate(model)
        self.row(metrics["loss"])
        self.validated = self.steps
        return metrics

    def batch_loss(self, model, batch):
        if self.steps % self.every == 0 and self.steps != self.validated:
            with validating(model, "training"):
                self.evaluate(model)
            model.train()
        loss = self.task.batch_loss(model, batch)
        self.window.append(loss.nll.item() / loss.count)
        self.steps += 1
        return loss


@contextmanager
def recording_norms(norms: ValidatedEvery):
    """Inside the block the training loop's ``clip_grad_norm_`` also appends each step's total
    gradient norm (before clipping) to ``norms.norms``; a run without a clip is given an infinite
    one, so that the norm is computed and nothing is clipped."""
    clip = torch.nn.utils.clip_grad_norm_

    def recorded(parameters, max_norm, *args, **kwargs):
        total = clip(parameters, max_norm, *args, **kwargs)
        norms.norms.append(total.item())
        return total

    torch.nn.utils.clip_grad_norm_ = recorded
    try:
        yield
    finally:
        torch.nn.utils.clip_grad_norm_ = clip


def converted_optimizer(state: dict, name: str, lr: float, weight_decay: float) -> dict:
    """A checkpoint's RMSprop state as optimiser ``name``'s at ``lr`` and ``weight_decay``:
    the same optimiser's with its lr and ``weight_decay`` replaced, or, for
    ``rmsprop_corrected``, PyTorch RMSprop's accumulator (α = 0.99) and step count carried over
    as its second moment (β2 = 0.999; after thousands of steps its bias correction is ~1), so
    that the arm starts warm, not with a fresh optimiser's transient."""
    defaults = OPTIMIZERS[name]([torch.zeros(1)], lr=1.0).defaults
    groups = []
    for group in state["param_groups"]:
        if name not in ("rmsprop", "rmsprop_corrected"):
            sys.exit(f"--resume: cannot carry RMSprop's state over to {name}")
        settings = group if name == "rmsprop" else defaults
        groups.append(
            settings | {"params": group["params"], "lr": lr, "weight_decay": weight_decay}
        )
    return {"state": state["state"], "param_groups": groups}


def resumed_epochs(run: dict, resume: Path, checkpoint: Path) -> int:
    """Write ``resume`` to ``checkpoint`` as this arm's (its digest, the arm's optimiser, lr
    and ``weight_decay``); the epochs it had trained. It must end an epoch of a run trained
    with PyTorch's RMSprop."""
    state = load_torch(resume)
    if state["partial"] is not None or state["finished"]:
        sys.exit(f"--resume {resume}: not an unfinished run's checkpoint at an epoch's end")
    if not all("alpha" in group for group in state["optimizer"]["param_groups"]):
        sys.exit(f"--resume {resume}: its optimiser is not PyTorch's RMSprop")
    training = run["training"]
    state["optimizer"] = converted_optimizer(
        state["optimizer"], training["optimizer"], training["lr"], training["weight_decay"]
    )
    state["digest"] = DIGEST
    save_torch(state, checkpoint)
    return state["epoch"]


def run_arm(
    run: dict,
    data: Path,
    batches: int,
    every: int,
    work: Path,
    emit,
    resume: Path | None = None,
    start: Path | None = None,
    epochs: int = 1,
) -> None:
    """Train ``run`` for ``epochs`` epochs of at most ``batches`` batches: from the start, from
    the epoch after ``resume`` (a checkpoint), or from ``start``'s weights (a finished run's
    ``model.pt``) with a fresh optimiser and no lr schedule; validate every ``every`` batches
    and at each epoch's end (the loop's own validation), each row to ``emit``."""
    files = [str(data / name) for name in ("train.txt", "val.txt", "vocab.txt")]
    task = make_task(run, SEED, torch.device("cpu"), *files)
    seed_everything(SEED)
    model = build_model(run["architecture"], task.vocab, **run["hparams"])
    done = resumed_epochs(run, resume, work / "checkpoint.pt") if resume else 0
    settings = run["training"] | {"max_batches": batches, "max_epochs": done + epochs}
    if start is not None:
        model.load_state_dict(read_model_file(start)["state_dict"])
        settings |= {"lr_decay": None, "early_stopping_patience": epochs + 1}
    procedure = Procedure.from_dict(settings)
    watched = ValidatedEvery(task, model, every, time.monotonic(), emit)
    with recording_norms(watched):
        train(
            model,
            procedure,
            watched,
            work / "checkpoint.pt",
            DIGEST,
            lambda _: None,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="prepared ptb_stream folder")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--arms", nargs="+", type=parse_arm, required=True)
    parser.add_argument("--trial", type=int, default=1)
    parser.add_argument("--model", default="lstm_650")
    parser.add_argument("--batches", type=int, default=830, help="830: one PTB epoch")
    parser.add_argument("--every", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--paper-l2", type=float, help="the paper's λ (default: the trial's)")
    parser.add_argument("--append", action="store_true", help="add rows to an existing --out")
    start = parser.add_mutually_exclusive_group()
    start.add_argument("--resume", type=Path, help="train the epoch after this checkpoint's")
    start.add_argument("--start", type=Path, help="a finished run's model.pt to start from")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    config = yaml.safe_load((ROOT / "config.yaml").read_text()) | {"scale": "paper"}
    run = cfg.run_config(config, "memory", "ptb_stream", args.model, trial=args.trial)
    paper_l2 = args.paper_l2 or run["training"]["weight_decay"] * READINGS["sequence"]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for optimizer, reading, lr, clip in args.arms:
        arm = run | {"training": run["training"] | {
            "optimizer": optimizer, "weight_decay": weight_decay(reading, paper_l2),
            "lr": run["training"]["lr"] if lr == "trial" else float(lr),
            "grad_clip": run["training"].get("grad_clip") if clip == "run" else float(clip),
        }}  # fmt: skip
        settings = {
            "arm": f"{optimizer}/{reading}/{lr}/{clip}", "model": args.model,
            "trial": args.trial, "seed": SEED, "optimizer": optimizer, "reading": reading,
            "paper_l2": paper_l2, "weight_decay": arm["training"]["weight_decay"],
            "lr": arm["training"]["lr"], "grad_clip": arm["training"]["grad_clip"],
            "commit": commit, "resume": str(args.resume or ""), "start": str(args.start or ""),
        }  # fmt: skip

        def emit(row: dict, settings=settings) -> None:
            write_rows(args.out, [settings | row], append=args.append)
            args.append = True

        with tempfile.TemporaryDirectory() as work:
            run_arm(arm, args.data, args.batches, args.every, Path(work), emit,
                    args.resume, args.start, args.epochs)  # fmt: skip
        print(json.dumps(settings), flush=True)


if __name__ == "__main__":
    main()
