"""The one training loop. It applies a ``Procedure`` (``rnnrepro.procedures``: optimiser,
schedules, averaging, loss terms, stopping) to a ``Task`` (defined here, its kinds in
``rnnrepro.tasks``: data order, carried state, validation metrics, history columns), keeps the
best epoch, and writes checkpoints (per epoch, and mid-epoch on SIGTERM/SIGUSR1) that let a
killed job resume to the same numbers."""

from __future__ import annotations

import hashlib
import json
import math
import os
import signal
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from torch import nn

from rnnrepro.fileio import UnreadableFile, load_torch, save_torch, set_aside
from rnnrepro.procedures import BatchLoss, Procedure, WeightAverage
from rnnrepro.progress import iterate

# The columns of a history row the loop fills itself; a task's validation metrics are the
# "val_<metric>" columns of its ``Task.history_columns``.
LOOP_COLUMNS = ("epoch", "train_loss", "val_loss", "temperature", "lr", "seconds")


def history_columns_for(metrics: Sequence[str]) -> tuple[str, ...]:
    """The columns of history.csv (before the identity and the tags) for a task whose
    ``evaluate`` reports ``metrics`` besides ``loss``: epoch, train_loss, val_loss, then
    ``val_<metric>`` for each metric in order, then temperature, lr and seconds."""
    return (*LOOP_COLUMNS[:3], *(f"val_{metric}" for metric in metrics), *LOOP_COLUMNS[3:])


@dataclass
class TrainingResult:
    history: list[dict] = field(default_factory=list)
    best_epoch: int = 0
    best_loss: float = math.inf
    seconds: float = 0.0
    stopped_because: str = ""
    diverged: bool = False  # a non-finite loss ended the run (procedure on_nonfinite: diverged)


def seed_everything(seed: int) -> None:
    """Seed torch and make CPU kernels deterministic."""
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)


def read_checkpoint(path: Path, log: Callable[[str], None]) -> dict | None:
    """A checkpoint's contents; None when there is none, or when it cannot be read (truncated,
    corrupt, not weights only): then it is set aside (``fileio.set_aside``), with a log line
    naming both paths, and the run starts afresh instead of failing on every retry."""
    if not path.exists():
        return None
    try:
        state = load_torch(path)
        if not isinstance(state, dict) or "digest" not in state:
            raise UnreadableFile(f"{path}: unreadable (not a checkpoint of this program)")
    except UnreadableFile as error:
        aside = set_aside(path)
        log(f"{error}; moved it to {aside} and starting afresh")
        return None
    return state


class NonFiniteLoss(FloatingPointError):
    """A training or validation loss is NaN or infinite: the run stops at once."""


class TrainingInterrupted(Exception):
    """Raised after a SIGTERM/SIGUSR1 once the mid-epoch checkpoint is safely written."""

    def __init__(self, signum: int):
        super().__init__(f"interrupted by signal {signal.Signals(signum).name}")
        self.signum = signum


@contextmanager
def catch_signals(signals=(signal.SIGTERM, signal.SIGUSR1)):
    """Record (instead of dying on) the signals SLURM sends before a time limit or preemption."""
    received: list[int] = []
    previous = {
        sig: signal.signal(sig, lambda signum, _: received.append(signum)) for sig in signals
    }
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def validating(model: nn.Module, temperature: str):
    """``model`` in eval mode, without gradients, at the procedure's ``validation_temperature``:
    "test" makes a soft choice hard (``set_hard``) for the duration, "training" leaves it."""
    hard = temperature == "test"
    model.eval()
    if hard:
        model.set_hard(True)
    try:
        with torch.no_grad():
            yield
    finally:
        if hard:
            model.set_hard(False)


def _rng_state() -> dict:
    state = {"cpu": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["cpu"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


class Task:
    """What the loop trains on, one subclass per dataset kind (``rnnrepro.tasks``): the data
    order, any state carried across batches, the batch loss, the validation metrics and the
    columns of the history they fill. Subclasses set ``vocab``, ``files`` (the data that
    defines the run, for the resume digest) and ``history_columns``, and implement the hooks;
    ``scripts/train.py`` and ``train`` are the same for every kind."""

    vocab: list[str]
    files: list[Path]
    # history.csv's columns in order (``history_columns_for``): the loop's, and "val_<metric>"
    # for the metrics of ``evaluate`` (empty in a row where it does not report the metric)
    history_columns: tuple[str, ...]

    def __init__(self, run: dict, seed: int, device: torch.device):
        self.run, self.seed, self.device = run, seed, device
        self.batch_size = run["training"]["batch_size"]

    def digest(self, code: str = "") -> str:
        """Hash of everything that defines the run: settings, seed, data files and the digest
        of the code that runs it (``rnnrepro.provenance``; empty when not given)."""
        data = b"".join(Path(f).read_bytes() for f in self.files)
        settings = json.dumps({"run": self.run, "seed": self.seed}, sort_keys=True).encode()
        return hashlib.sha256(settings + data + code.encode()).hexdigest()

    def describe(self) -> str:
        """One line on the data, for the job's log."""
        raise NotImplementedError

    def start_epoch(self, epoch: int) -> None:
        """Reset what an epoch starts from (e.g. a stream's recurrent state; none by default)."""

    def state_dict(self) -> dict:
        """State carried across batches, saved in mid-epoch checkpoints (tensors, numbers,
        lists, dicts: ``weights_only``; none by default)."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Restore ``state_dict()``'s output."""

    def batches(self, epoch: int) -> Iterable:
        """The epoch's training batches (deterministic given the epoch)."""
        raise NotImplementedError

    def batch_loss(self, model: nn.Module, batch) -> BatchLoss | tuple[torch.Tensor, int]:
        """(summed loss, number of targets[, aux outputs, LR scale]); may update the carried
        state."""
        raise NotImplementedError

    def evaluate(self, model: nn.Module) -> dict:
        """Validation metrics: ``loss``, and those of ``history_columns`` it defines."""
        raise NotImplementedError


def history_row(columns: Sequence[str], loop: dict, metrics: dict) -> dict:
    """A history row in the order of ``columns``: the loop's values (``LOOP_COLUMNS``) and each
    "val_<metric>" from the task's validation ``metrics`` (None when it has no such metric)."""
    row = {}
    for column in columns:
        if column in loop:
            row[column] = loop[column]
        elif column.startswith("val_"):
            row[column] = metrics.get(column.removeprefix("val_"))
        else:
            raise ValueError(f"history column {column!r}: not the loop's nor a val_<metric>")
    return row


class _Trainer:
    """The state of one training run and the steps of the loop (``train`` drives it)."""

    def __init__(
        self, model, procedure: Procedure, task, checkpoint: Path, digest: str, log, tags: dict
    ):
        self.model, self.procedure, self.task = model, procedure, task
        self.checkpoint, self.digest, self.log, self.tags = checkpoint, digest, log, tags
        self.optimizer = procedure.make_optimizer(model)
        self.scheduler = procedure.make_scheduler(self.optimizer)
        self.average = WeightAverage(model)
        if procedure.average_from_start:
            self.average.start()
        self.result = TrainingResult()
        self.best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        self.bad_epochs, self.start_epoch = 0, 0
        self.steps = 0  # optimiser steps so far (``eval_every`` counts them across epochs)
        self.partial = None  # progress inside an interrupted epoch: batches, loss sums, seconds

    def resume(self) -> bool:
        """Load the checkpoint if it belongs to this run; True when that run had finished."""
        state = read_checkpoint(self.checkpoint, self.log)
        if state is None:
            return False
        if state["digest"] != self.digest:
            self.log(f"ignoring {self.checkpoint}: it belongs to other settings, data or code")
            return False
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        if "average" in state:  # absent from checkpoints of older versions
            self.average.load_state_dict(state["average"])
        if self.scheduler is not None:
            self.scheduler.load_state_dict(state["scheduler"])
        _set_rng_state(state["rng"])
        self.task.load_state_dict(state.get("task", {}))
        self.result = TrainingResult(**state["result"])
        self.best_state, self.bad_epochs = state["best_state"], state["bad_epochs"]
        self.start_epoch, self.partial = state["epoch"], state["partial"]
        self.steps = state.get("steps", 0)  # absent from checkpoints of older versions
        where = f" and {self.partial['batches']} batches" if self.partial else ""
        self.log(f"resuming from {self.checkpoint} after epoch {self.start_epoch}{where}")
        return bool(state["finished"])

    def save(self, epochs_done: int, partial: dict | None = None) -> None:
        save_torch(
            {
                "digest": self.digest,
                "epoch": epochs_done,
                "partial": partial,
                "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "average": self.average.state_dict(),
                "scheduler": self.scheduler.state_dict() if self.scheduler is not None else None,
                "rng": _rng_state(),
                "task": self.task.state_dict(),
                "result": asdict(self.result),
                "best_state": self.best_state,
                "bad_epochs": self.bad_epochs,
                "steps": self.steps,
                "finished": bool(self.result.stopped_because),
            },
            self.checkpoint,
        )

    def diverge(self, message: str) -> None:
        """A non-finite loss: raise, or end the run as diverged (procedure ``on_nonfinite``)."""
        if self.procedure.on_nonfinite == "error":
            raise NonFiniteLoss(message)
        self.result.diverged = True
        self.result.stopped_because = f"diverged: {message}"

    def train_epoch(self, epoch: int, received: list[int]) -> dict | None:
        """One epoch of optimiser steps; the loss sums, or None when the run diverged."""
        procedure, model, optimizer = self.procedure, self.model, self.optimizer
        started = time.perf_counter()
        # ``validated``: the sums at this epoch's last validation (``eval_every``), so that a
        # validation's row holds the training loss and seconds since the one before
        sums = {"batches": 0, "total": 0.0, "count": 0, "seconds": 0.0, "validated": None}
        if self.partial is not None:
            sums, self.partial = dict(self.partial), None
        else:
            self.task.start_epoch(epoch)
        skip, earlier = sums["batches"], sums["seconds"]
        model.set_epoch(epoch)
        model.train()
        batches = iterate(self.task.batches(epoch), f"epoch {epoch + 1}", units="batches")
        for index, batch in enumerate(batches):
            if procedure.max_batches is not None and index >= procedure.max_batches:
                break
            if index < skip:
                continue
            optimizer.zero_grad(set_to_none=True)
            loss = BatchLoss(*self.task.batch_loss(model, batch))
            if loss.count > 0:
                value = loss.nll.item()
                if not math.isfinite(value):
                    self.diverge(f"training loss {value} in epoch {epoch + 1}, batch {index + 1}")
                    return None
                procedure.objective(loss).backward()
                if procedure.grad_clip:
                    nn.utils.clip_grad_norm_(model.parameters(), procedure.grad_clip)
                with procedure.batch_lr(optimizer, loss.lr_scale):
                    optimizer.step()
                self.average.update()
                self.steps += 1
                sums["total"] += value
                sums["count"] += loss.count
            sums["batches"] = index + 1
            sums["seconds"] = earlier + time.perf_counter() - started
            every = procedure.eval_every
            if every is not None and loss.count > 0 and self.steps % every == 0:
                if not self.validate_at_step(epoch, sums, epoch_end=False):
                    return None
                if self.result.stopped_because:
                    return sums
                model.train()
            if received:
                self.save(epoch, sums)
                self.log(f"checkpoint written in epoch {epoch + 1} after batch {index + 1}")
                raise TrainingInterrupted(received[0])
        sums["seconds"] = earlier + time.perf_counter() - started
        return sums

    def validate_at_step(self, epoch: int, sums: dict, epoch_end: bool) -> bool:
        """A validation inside or at the end of an epoch under ``eval_every``: the row over the
        steps since the last one, the schedule and the stopping rule; False when the run
        diverged."""
        last = sums.get("validated") or {"total": 0.0, "count": 0, "seconds": 0.0}
        since = {key: sums[key] - last[key] for key in ("total", "count", "seconds")}
        row = self.validate(epoch, since)
        if row is None:
            return False
        row["step"] = self.steps
        self.end_epoch(epoch, row, epoch_end)
        sums["validated"] = {key: sums[key] for key in ("total", "count", "seconds")}
        sums["validated"]["seconds"] += row["seconds"] - since["seconds"]
        return True

    def end_of_epoch_validation(self, epoch: int, sums: dict) -> bool:
        """Under ``eval_every``, only the budget's last epoch ends with a validation (unless
        one just happened); False when the run diverged."""
        if epoch + 1 < self.procedure.max_epochs:
            return True
        if sums.get("validated") is not None and sums["validated"]["count"] == sums["count"]:
            self.result.stopped_because = f"reached max_epochs={self.procedure.max_epochs}"
            return True
        return self.validate_at_step(epoch, sums, epoch_end=True)

    def validate(self, epoch: int, sums: dict) -> dict | None:
        """Validation (on the averaged weights when averaging), the history row and the best
        epoch; None when the validation loss is not finite and the run diverged."""
        started = time.perf_counter()
        with validating(self.model, self.procedure.validation_temperature), self.average.applied():
            val = self.task.evaluate(self.model)
            improved = math.isfinite(val["loss"]) and val["loss"] < self.result.best_loss
            if improved:
                self.best_state = {
                    k: v.detach().clone() for k, v in self.model.state_dict().items()
                }
        if not math.isfinite(val["loss"]):
            self.diverge(f"validation loss {val['loss']} after epoch {epoch + 1}")
            return None
        loop = {
            "epoch": epoch + 1,
            "train_loss": sums["total"] / max(sums["count"], 1),
            "val_loss": val["loss"],
            "temperature": getattr(self.model, "temperature", None),
            "lr": self.optimizer.param_groups[0]["lr"],
            "seconds": sums["seconds"] + time.perf_counter() - started,
        }
        row = {**history_row(self.task.history_columns, loop, val), **self.tags}
        if self.procedure.asgd_nonmono is not None:
            row["averaged"] = self.average.active  # validated on the averaged weights
        if improved:
            self.result.best_loss, self.result.best_epoch, self.bad_epochs = (
                val["loss"],
                epoch + 1,
                0,
            )
        else:
            self.bad_epochs += 1
        return row

    def end_epoch(self, epoch: int, row: dict, epoch_end: bool = True) -> None:
        """Record the row, switch to averaging, step the schedule and decide whether to stop
        (``epoch_end``: the validation ends the epoch)."""
        procedure, result = self.procedure, self.result
        earlier_losses = [r["val_loss"] for r in result.history]
        result.history.append(row)
        result.seconds += row["seconds"]
        self.log(
            " ".join(f"{k}={v:.5g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items())
        )
        if not self.average.active and procedure.non_monotone(earlier_losses, row["val_loss"]):
            self.average.start()
            self.log(f"NT-ASGD: averaging the weights from epoch {epoch + 2} on")
        if self.scheduler is not None:
            self.scheduler.step(row["val_loss"])
        result.stopped_because = procedure.stop_reason(
            epoch + 1, row["val_loss"], self.bad_epochs, earlier_losses, epoch_end
        )

    def validate_start(self) -> None:
        """Fine-tuning: the starting model's validation loss is the one to beat (it is kept
        when no epoch improves on it, as in AWD-LSTM/MoS's finetune.py)."""
        with validating(self.model, self.procedure.validation_temperature):
            loss = self.task.evaluate(self.model)["loss"]
        self.result.best_loss = loss
        self.log(f"starting model: val_loss={loss:.5g}")


def train(
    model: nn.Module,
    procedure: Procedure,
    task: Task,
    checkpoint: str | os.PathLike,
    digest: str,
    log: Callable[[str], None] = print,
    tags: dict | None = None,
) -> tuple[TrainingResult, dict]:
    """Train ``model`` in place on ``task``; return the result and the best state dict.

    The checkpoint file is rewritten after every epoch, and mid-epoch when SIGTERM or SIGUSR1
    arrives (then ``TrainingInterrupted`` is raised); it holds the model, optimiser, scheduler,
    weight average, RNG and the task's carried state. It is resumed from when its ``digest`` (a
    hash of everything that defines the run) matches, otherwise training starts afresh; a
    resumed run ends with the same numbers as an uninterrupted one. ``tags`` (e.g. the device)
    are written into every history row of the epochs this call trains; a run resumed
    elsewhere keeps its earlier rows' tags. An unreadable checkpoint is set aside
    (``read_checkpoint``).
    """
    run = _Trainer(model, procedure, task, Path(checkpoint), digest, log, tags or {})
    if run.resume():
        return run.result, run.best_state
    if procedure.average_from_start and run.start_epoch == 0 and run.partial is None:
        run.validate_start()
    with catch_signals() as received:
        for epoch in range(run.start_epoch, procedure.max_epochs):
            sums = run.train_epoch(epoch, received)
            if procedure.eval_every is not None:
                if sums is not None and not run.result.stopped_because:
                    run.end_of_epoch_validation(epoch, sums)
            elif sums is not None and (row := run.validate(epoch, sums)) is not None:
                run.end_epoch(epoch, row)
            run.save(epoch + 1)
            if run.result.stopped_because:
                break
            if received:
                log(f"checkpoint written after epoch {epoch + 1}")
                raise TrainingInterrupted(received[0])
    log(f"stopped: {run.result.stopped_because}; best epoch {run.result.best_epoch}")
    return run.result, run.best_state
