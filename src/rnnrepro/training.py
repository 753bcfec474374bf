"""The one training loop: the procedure's optimiser (Adam, RMSprop or SGD, with weight decay),
plateau LR decay, NT-ASGD weight averaging with validation on the averaged weights, early
stopping, best-model selection and per-epoch checkpoints that let a killed job resume with the
same final numbers."""

from __future__ import annotations

import math
import os
import signal
import time
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Protocol

import torch
from torch import nn
from tqdm import tqdm

from rnnrepro.fileio import atomic_open

HISTORY_COLUMNS = (
    "epoch",
    "train_loss",
    "val_loss",
    "val_ppl",
    "val_wcpa",
    "val_bpc",
    "temperature",
    "lr",
    "seconds",
)


@dataclass(frozen=True)
class TrainingSettings:
    """A training procedure (config key ``training.<name>``)."""

    lr: float
    batch_size: int
    max_epochs: int
    early_stopping_patience: int
    lr_decay: float | None = None  # multiply the LR by this on a validation plateau
    lr_patience: int = 0  # epochs without improvement before decaying
    grad_clip: float | None = None  # max gradient norm
    stop_loss: float | None = None  # stop once the validation loss is below this
    bptt: int | None = None  # stream datasets: steps per window
    eval_batch_size: int = 10  # stream datasets: columns of the validation stream
    optimizer: str = "adam"  # "adam", "rmsprop" or "sgd"
    weight_decay: float = 0.0  # L2 penalty of the optimiser
    # NT-ASGD (AWD-LSTM): with SGD, average the weights from the epoch whose validation loss is
    # worse than the best one more than ``asgd_nonmono`` epochs back; validate on the average
    asgd_nonmono: int | None = None

    def __post_init__(self) -> None:
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(
                f"unknown optimizer {self.optimizer!r}; known: {', '.join(OPTIMIZERS)}"
            )
        if self.asgd_nonmono is not None and self.optimizer != "sgd":
            raise ValueError("asgd_nonmono (NT-ASGD) needs optimizer: sgd")

    @classmethod
    def from_dict(cls, settings: dict) -> TrainingSettings:
        known = {f.name for f in fields(cls)}
        unknown = set(settings) - known
        if unknown:
            raise ValueError(f"unknown training settings: {', '.join(sorted(unknown))}")
        return cls(**settings)


OPTIMIZERS = {
    "adam": torch.optim.Adam,
    "rmsprop": torch.optim.RMSprop,
    "sgd": torch.optim.SGD,
}


def make_optimizer(settings: TrainingSettings, model: nn.Module) -> torch.optim.Optimizer:
    """The procedure's optimiser over the model's trainable parameters."""
    params = [p for p in model.parameters() if p.requires_grad]
    return OPTIMIZERS[settings.optimizer](
        params, lr=settings.lr, weight_decay=settings.weight_decay
    )


class WeightAverage:
    """Running mean of the trainable parameters over the optimiser steps since ``start`` (the
    averaging of AWD-LSTM's ASGD with t0 = 0 and λ = 0: SGD steps, averaged iterates)."""

    def __init__(self, model: nn.Module):
        self.model = model
        self.active, self.steps, self.mean = False, 0, {}

    def _params(self) -> dict[str, torch.Tensor]:
        return {n: p for n, p in self.model.named_parameters() if p.requires_grad}

    def start(self) -> None:
        self.active, self.steps, self.mean = True, 0, {}

    @torch.no_grad()
    def update(self) -> None:
        """After an optimiser step: fold the new iterate into the mean."""
        if not self.active:
            return
        self.steps += 1
        for name, p in self._params().items():
            if name not in self.mean:
                self.mean[name] = p.detach().clone()
            else:
                self.mean[name] += (p.detach() - self.mean[name]) / self.steps

    @contextmanager
    def applied(self):
        """The model holds the averaged weights inside the block (no-op when not averaging)."""
        if not self.active or not self.mean:
            yield
            return
        params = self._params()
        current = {n: p.detach().clone() for n, p in params.items()}
        with torch.no_grad():
            for n, p in params.items():
                p.copy_(self.mean[n])
        try:
            yield
        finally:
            with torch.no_grad():
                for n, p in params.items():
                    p.copy_(current[n])

    def state_dict(self) -> dict:
        return {"active": self.active, "steps": self.steps, "mean": self.mean}

    def load_state_dict(self, state: dict) -> None:
        self.active, self.steps, self.mean = state["active"], state["steps"], state["mean"]


def should_start_averaging(val_losses: list[float], loss: float, nonmono: int) -> bool:
    """NT-ASGD's switch (AWD-LSTM): more than ``nonmono`` earlier epochs and ``loss`` worse than
    the best of them excluding the last ``nonmono``."""
    return len(val_losses) > nonmono and loss > min(val_losses[:-nonmono])


@dataclass
class TrainingResult:
    history: list[dict] = field(default_factory=list)
    best_epoch: int = 0
    best_loss: float = math.inf
    seconds: float = 0.0
    stopped_because: str = ""


def seed_everything(seed: int) -> None:
    """Seed torch and make CPU kernels deterministic."""
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)


def save_atomic(obj, path: str | os.PathLike) -> None:
    """``torch.save`` to a temporary file then rename: a partial file never looks complete."""
    with atomic_open(path, "wb") as f:
        torch.save(obj, f)


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


def _rng_state() -> dict:
    state = {"cpu": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["cpu"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


class TrainingTask(Protocol):
    """What the loop trains on (``rnnrepro.tasks``): the data order and any carried state."""

    def start_epoch(self, epoch: int) -> None:
        """Reset what an epoch starts from (e.g. a stream's recurrent state)."""

    def batches(self, epoch: int) -> Iterable:
        """The epoch's training batches (deterministic given the epoch)."""

    def batch_loss(self, model: nn.Module, batch) -> tuple[torch.Tensor, int]:
        """(summed loss, number of targets); may update the carried state."""

    def evaluate(self, model: nn.Module) -> dict:
        """Validation metrics with at least ``loss`` (``ppl``, ``wcpa``, ``bpc`` when defined)."""

    def state_dict(self) -> dict:
        """State carried across batches (tensors, numbers, lists, dicts: ``weights_only``)."""

    def load_state_dict(self, state: dict) -> None: ...


def train(
    model: nn.Module,
    settings: TrainingSettings,
    task: TrainingTask,
    checkpoint: str | os.PathLike,
    digest: str,
    log: Callable[[str], None] = print,
) -> tuple[TrainingResult, dict]:
    """Train ``model`` in place on ``task``; return the result and the best state dict.

    The checkpoint file is rewritten after every epoch, and mid-epoch when SIGTERM or SIGUSR1
    arrives (then ``TrainingInterrupted`` is raised); it holds the model, optimiser, scheduler,
    RNG and the task's carried state. It is resumed from when its ``digest`` (a hash of
    everything that defines the run) matches, otherwise training starts afresh; a resumed run
    ends with the same numbers as an uninterrupted one.
    """
    optimizer = make_optimizer(settings, model)
    average = WeightAverage(model)
    scheduler = (
        torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer, mode="min", factor=settings.lr_decay, patience=settings.lr_patience
        )
        if settings.lr_decay
        else None
    )
    result = TrainingResult()
    best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    bad_epochs, start_epoch = 0, 0
    partial = None  # progress inside an interrupted epoch: batches done, loss sums, seconds

    checkpoint = Path(checkpoint)
    if checkpoint.exists():
        state = torch.load(checkpoint, map_location="cpu", weights_only=True)
        if state.get("digest") == digest:
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            if "average" in state:  # absent from checkpoints of older versions
                average.load_state_dict(state["average"])
            if scheduler is not None:
                scheduler.load_state_dict(state["scheduler"])
            _set_rng_state(state["rng"])
            task.load_state_dict(state.get("task", {}))
            result = TrainingResult(**state["result"])
            best_state, bad_epochs = state["best_state"], state["bad_epochs"]
            start_epoch, partial = state["epoch"], state["partial"]
            where = f" and {partial['batches']} batches" if partial else ""
            log(f"resuming from {checkpoint} after epoch {start_epoch}{where}")
            if state["finished"]:
                return result, best_state
        else:
            log(f"ignoring {checkpoint}: it belongs to other settings, data or code")

    def save(epochs_done: int, partial: dict | None = None) -> None:
        save_atomic(
            {
                "digest": digest,
                "epoch": epochs_done,
                "partial": partial,
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "average": average.state_dict(),
                "scheduler": scheduler.state_dict() if scheduler is not None else None,
                "rng": _rng_state(),
                "task": task.state_dict(),
                "result": asdict(result),
                "best_state": best_state,
                "bad_epochs": bad_epochs,
                "finished": bool(result.stopped_because),
            },
            checkpoint,
        )

    with catch_signals() as received:
        for epoch in range(start_epoch, settings.max_epochs):
            started = time.perf_counter()
            skip, total, count, earlier = 0, 0.0, 0, 0.0
            if partial is not None:
                skip, total, count, earlier = (
                    partial["batches"],
                    partial["total"],
                    partial["count"],
                    partial["seconds"],
                )
                partial = None
            else:
                task.start_epoch(epoch)
            model.set_epoch(epoch)
            model.train()
            progress = tqdm(
                task.batches(epoch), desc=f"epoch {epoch + 1}", mininterval=30, leave=False
            )
            for index, batch in enumerate(progress):
                if index < skip:
                    continue
                optimizer.zero_grad(set_to_none=True)
                loss_sum, n = task.batch_loss(model, batch)
                if n > 0:
                    value = loss_sum.item()
                    if not math.isfinite(value):
                        raise NonFiniteLoss(
                            f"training loss {value} in epoch {epoch + 1}, batch {index + 1}"
                        )
                    (loss_sum / n).backward()
                    if settings.grad_clip:
                        nn.utils.clip_grad_norm_(model.parameters(), settings.grad_clip)
                    optimizer.step()
                    average.update()
                    total += value
                    count += n
                if received:
                    seconds = earlier + time.perf_counter() - started
                    save(
                        epoch,
                        {"batches": index + 1, "total": total, "count": count, "seconds": seconds},
                    )
                    log(f"checkpoint written in epoch {epoch + 1} after batch {index + 1}")
                    raise TrainingInterrupted(received[0])
            model.eval()
            with torch.no_grad(), average.applied():
                val = task.evaluate(model)
                if math.isfinite(val["loss"]) and val["loss"] < result.best_loss:
                    best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            if not math.isfinite(val["loss"]):
                raise NonFiniteLoss(f"validation loss {val['loss']} after epoch {epoch + 1}")
            seconds = earlier + time.perf_counter() - started
            row = {
                "epoch": epoch + 1,
                "train_loss": total / max(count, 1),
                "val_loss": val["loss"],
                "val_ppl": val.get("ppl"),
                "val_wcpa": val.get("wcpa"),
                "val_bpc": val.get("bpc"),
                "temperature": getattr(model, "temperature", None),
                "lr": optimizer.param_groups[0]["lr"],
                "seconds": seconds,
            }
            if settings.asgd_nonmono is not None:
                row["averaged"] = average.active  # validated on the averaged weights
            result.history.append(row)
            result.seconds += seconds
            log(
                " ".join(
                    f"{k}={v:.5g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()
                )
            )

            earlier_losses = [r["val_loss"] for r in result.history[:-1]]
            if val["loss"] < result.best_loss:  # best_state was taken above (averaged if so)
                result.best_loss, result.best_epoch, bad_epochs = val["loss"], epoch + 1, 0
            else:
                bad_epochs += 1
            if (
                settings.asgd_nonmono is not None
                and not average.active
                and should_start_averaging(earlier_losses, val["loss"], settings.asgd_nonmono)
            ):
                average.start()
                log(f"NT-ASGD: averaging the weights from epoch {epoch + 2} on")
            if scheduler is not None:
                scheduler.step(val["loss"])

            if settings.stop_loss is not None and val["loss"] < settings.stop_loss:
                result.stopped_because = f"validation loss below {settings.stop_loss:g}"
            elif bad_epochs >= settings.early_stopping_patience:
                result.stopped_because = f"no improvement for {bad_epochs} epochs"
            elif epoch + 1 == settings.max_epochs:
                result.stopped_because = f"reached max_epochs={settings.max_epochs}"
            save(epoch + 1)
            if result.stopped_because:
                break
            if received:
                log(f"checkpoint written after epoch {epoch + 1}")
                raise TrainingInterrupted(received[0])
    log(f"stopped: {result.stopped_because}; best epoch {result.best_epoch}")
    return result, best_state
