"""Training procedures: a named, configured object (config key ``training.<name>``) that owns
the optimiser (Adam, RMSprop in PyTorch's, TensorFlow 1's or bias-corrected form, or SGD with
weight decay), its
schedules (plateau decay, per-batch
LR scaling), NT-ASGD weight averaging with validation on the averaged weights, the extra loss
terms (AR/TAR and model-defined terms), the stopping rule and what a non-finite loss means.

The loop that applies a procedure is ``rnnrepro.training.train``.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import NamedTuple

import torch
from torch import nn

# What counts as a bad epoch for the LR decay and for early stopping (second_order_lstm's "early
# stopping after 6 epochs of increasing validation perplexity" and "learning rate decay of 0.5, with
# patience 3" can be read either way): "no_improvement", an epoch that sets no new best
# validation loss (``ReduceLROnPlateau``; early stopping after that many such epochs in a row);
# "increase", an epoch whose validation loss is above the previous epoch's (counted in a row).
BAD_EPOCH_READINGS = ("no_improvement", "increase")


class _PerWeight(torch.optim.Optimizer):
    """An optimiser that updates each weight from its gradient ``g`` (including
    ``weight_decay · w``: an ℓ2 term added to the loss) and its own state: ``update``."""

    def update(self, weight: torch.Tensor, grad: torch.Tensor, state: dict, group: dict) -> None:
        raise NotImplementedError

    @torch.no_grad()
    def step(self, closure=None):
        loss = None if closure is None else closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    grad = p.grad.add(p, alpha=group["weight_decay"])
                    self.update(p, grad, self.state[p], group)
        return loss


class RMSpropTF(_PerWeight):
    """RMSprop as TensorFlow 1's ``tf.train.RMSPropOptimizer`` with its defaults (decay 0.9,
    ε = 1e-10 inside the square root, no momentum), whose accumulator starts at 1:
    ``v ← 0.9 v + 0.1 g²; w ← w − lr · g / √(v + ε)``. PyTorch's ``RMSprop`` (α = 0.99, ε
    outside the root, v from 0) makes its first steps ~10 · lr per weight; this one starts at
    ~lr · g (docs/methods.md §11.2)."""

    def __init__(
        self, params, lr: float, weight_decay: float = 0.0, decay: float = 0.9, eps: float = 1e-10
    ):
        defaults = {"lr": lr, "weight_decay": weight_decay, "decay": decay, "eps": eps}
        super().__init__(params, defaults)

    def update(self, weight: torch.Tensor, grad: torch.Tensor, state: dict, group: dict) -> None:
        if "square_avg" not in state:
            state["square_avg"] = torch.ones_like(weight)
        square_avg = state["square_avg"]
        square_avg.mul_(group["decay"]).addcmul_(grad, grad, value=1 - group["decay"])
        weight.addcdiv_(grad, square_avg.add(group["eps"]).sqrt_(), value=-group["lr"])


class RMSpropCorrected(_PerWeight):
    """RMSprop with Adam's bias correction, i.e. Adam with β1 = 0 (the "rmsprop" of DeepMind's
    language-modelling code, deepmind/lamb ``lamb/utils.py``; docs/methods.md §11.2):
    ``v ← β2 v + (1 − β2) g²; w ← w − lr · g / (√(v / (1 − β2^t)) + ε)``. Unlike
    ``torch.optim.Adam`` it keeps no first moment (one tensor per weight, not two). PyTorch's
    ``RMSprop`` (α = 0.99, no correction) makes its first steps ~10 · lr per weight; this one's
    are ~lr."""

    def __init__(
        self, params, lr: float, weight_decay: float = 0.0, beta2: float = 0.999, eps: float = 1e-8
    ):
        defaults = {"lr": lr, "weight_decay": weight_decay, "beta2": beta2, "eps": eps}
        super().__init__(params, defaults)

    def update(self, weight: torch.Tensor, grad: torch.Tensor, state: dict, group: dict) -> None:
        beta2 = group["beta2"]
        if not state:
            state["step"] = torch.tensor(0.0)
            state["square_avg"] = torch.zeros_like(weight)
        state["step"] += 1
        square_avg = state["square_avg"]
        square_avg.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        correction = 1 - beta2 ** state["step"].item()
        denom = square_avg.div(correction).sqrt_().add_(group["eps"])
        weight.addcdiv_(grad, denom, value=-group["lr"])


OPTIMIZERS = {
    "adam": torch.optim.Adam,
    "rmsprop": torch.optim.RMSprop,
    "rmsprop_corrected": RMSpropCorrected,
    "rmsprop_tf": RMSpropTF,
    "sgd": torch.optim.SGD,
}
ON_NONFINITE = ("error", "diverged")
# The temperature of a soft choice (the attention LSTM's α, second_order_lstm) during per-epoch
# validation, which the paper does not state: "training", the epoch's τ; "test", the test setting
# (hard argmax).
VALIDATION_TEMPERATURES = ("training", "test")


class BatchLoss(NamedTuple):
    """What a task's ``batch_loss`` returns: the summed NLL over ``count`` targets, the model's
    auxiliary outputs (``RecurrentLM.forward_aux``) and the LR scale of this batch (variable-length
    BPTT: window length / BPTT). A plain ``(nll, count)`` tuple means no aux and scale 1."""

    nll: torch.Tensor
    count: int
    aux: dict | None = None
    lr_scale: float = 1.0


@dataclass(frozen=True)
class Procedure:
    """A training procedure; every field is a config key of ``training.<name>``."""

    lr: float
    batch_size: int
    max_epochs: int
    early_stopping_patience: int
    lr_decay: float | None = None  # multiply the LR by this on a validation plateau
    lr_patience: int = 0  # decay after more than this many bad epochs in a row
    lr_decay_on: str = "no_improvement"  # what a bad epoch is for the decay (BAD_EPOCH_READINGS)
    # "no_improvement": a new best must beat the old by this fraction (ReduceLROnPlateau's
    # relative threshold; PyTorch's default 1e-4)
    lr_decay_threshold: float = 1e-4
    stop_on: str = "no_improvement"  # what a bad epoch is for early stopping
    validation_temperature: str = "training"  # VALIDATION_TEMPERATURES
    grad_clip: float | None = None  # max gradient norm
    stop_loss: float | None = None  # stop once the validation loss is below this
    bptt: int | None = None  # stream datasets: steps per window
    variable_bptt: bool = False  # stream datasets: AWD-LSTM's random window lengths, LR rescaled
    max_seq_len_delta: int | None = None  # variable windows are at most bptt + this long
    # stream datasets: each column's carried state is zeroed with this probability before a
    # window (deepmind/lamb's non-episodic training)
    drop_state_probability: float = 0.0
    max_batches: int | None = None  # train on at most this many batches per epoch
    # validate every this many optimiser steps (counted across epochs) instead of at each
    # epoch's end: the LR decay, early stopping and best state then count evaluations, not
    # epochs, and max_epochs stays the budget (deepmind/lamb's turns; docs/methods.md §11.2)
    eval_every: int | None = None
    eval_batch_size: int = 10  # stream datasets: columns of the validation stream
    test_batch_size: int | None = None  # columns of the test stream (default eval_batch_size)
    max_eval_tokens: int | None = None  # validate and test on the first N tokens of a stream
    optimizer: str = "adam"  # a key of OPTIMIZERS
    weight_decay: float = 0.0  # L2 penalty of the optimiser
    # NT-ASGD (AWD-LSTM): with SGD, average the weights from the epoch whose validation loss is
    # worse than the best one more than ``asgd_nonmono`` epochs back; validate on the average
    asgd_nonmono: int | None = None
    # fine-tuning (AWD-LSTM/MoS finetune.py): average from the first step, validate the starting
    # model first (the result is never worse than it) and stop at the non-monotone condition
    average_from_start: bool = False
    ar: float = 0.0  # activation regularisation: ar · mean(dropped output²)
    tar: float = 0.0  # temporal AR: tar · mean((h_t - h_{t-1})²) on the undropped output
    # a NaN/inf loss: "error" stops the run with an error; "diverged" ends it, keeps the best
    # epoch so far and marks the run diverged (its table rows say so)
    on_nonfinite: str = "error"

    def __post_init__(self) -> None:
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(
                f"unknown optimizer {self.optimizer!r}; known: {', '.join(OPTIMIZERS)}"
            )
        if self.asgd_nonmono is not None and self.optimizer != "sgd":
            raise ValueError("asgd_nonmono (NT-ASGD) needs optimizer: sgd")
        for key in ("lr_decay_on", "stop_on"):
            if getattr(self, key) not in BAD_EPOCH_READINGS:
                raise ValueError(
                    f"{key} must be one of {', '.join(BAD_EPOCH_READINGS)}, "
                    f"not {getattr(self, key)!r}"
                )
        if self.validation_temperature not in VALIDATION_TEMPERATURES:
            raise ValueError(
                f"validation_temperature must be one of {', '.join(VALIDATION_TEMPERATURES)}, "
                f"not {self.validation_temperature!r}"
            )
        if self.on_nonfinite not in ON_NONFINITE:
            raise ValueError(
                f"on_nonfinite must be one of {', '.join(ON_NONFINITE)}, not {self.on_nonfinite!r}"
            )
        if self.variable_bptt and not self.bptt:
            raise ValueError("variable_bptt needs bptt")
        if self.average_from_start and self.asgd_nonmono is None:
            raise ValueError("average_from_start (fine-tuning) needs asgd_nonmono")
        if not 0 <= self.drop_state_probability < 1:
            raise ValueError(
                f"drop_state_probability must be in [0, 1), not {self.drop_state_probability}"
            )
        if self.eval_every is not None and self.eval_every < 1:
            raise ValueError(f"eval_every must be a positive step count, not {self.eval_every}")
        if self.eval_every is not None and self.asgd_nonmono is not None:
            raise ValueError("eval_every and asgd_nonmono (NT-ASGD, per epoch) exclude each other")

    @classmethod
    def from_dict(cls, settings: dict) -> Procedure:
        known = {f.name for f in fields(cls)}
        unknown = set(settings) - known
        if unknown:
            raise ValueError(f"unknown training settings: {', '.join(sorted(unknown))}")
        return cls(**settings)

    # -- optimiser and schedules -------------------------------------------------------------

    def make_optimizer(self, model: nn.Module) -> torch.optim.Optimizer:
        """The optimiser over the model's trainable parameters."""
        params = [p for p in model.parameters() if p.requires_grad]
        return OPTIMIZERS[self.optimizer](params, lr=self.lr, weight_decay=self.weight_decay)

    def make_scheduler(self, optimizer: torch.optim.Optimizer):
        """Decay of the LR on the validation loss (``lr_decay_on``), or None."""
        if not self.lr_decay:
            return None
        if self.lr_decay_on == "increase":
            return DecayOnIncrease(optimizer, self.lr_decay, self.lr_patience)
        return torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer,
            mode="min",
            factor=self.lr_decay,
            patience=self.lr_patience,
            threshold=self.lr_decay_threshold,
        )

    @contextmanager
    def batch_lr(self, optimizer: torch.optim.Optimizer, scale: float):
        """Inside the block every parameter group's LR is multiplied by ``scale`` (AWD-LSTM's
        ``lr · seq_len / bptt``); it is restored afterwards, so schedules see the base LR."""
        if scale == 1.0:
            yield
            return
        base = [group["lr"] for group in optimizer.param_groups]
        for group, lr in zip(optimizer.param_groups, base, strict=True):
            group["lr"] = lr * scale
        try:
            yield
        finally:
            for group, lr in zip(optimizer.param_groups, base, strict=True):
                group["lr"] = lr

    # -- objective -------------------------------------------------------------------------

    def objective(self, batch: BatchLoss) -> torch.Tensor:
        """Mean NLL plus AR/TAR and the model's own loss terms (``aux["losses"]``)."""
        loss = batch.nll / batch.count
        aux = batch.aux or {}
        if self.ar and "output" in aux:
            loss = loss + self.ar * aux["output"].pow(2).mean()
        if self.tar and "raw_output" in aux:
            raw = aux["raw_output"]
            loss = loss + self.tar * (raw[1:] - raw[:-1]).pow(2).mean()
        for term in aux.get("losses", {}).values():
            loss = loss + term
        return loss

    # -- averaging and stopping --------------------------------------------------------------

    def non_monotone(self, val_losses: list[float], loss: float) -> bool:
        """AWD-LSTM's non-monotone condition: more than ``asgd_nonmono`` earlier epochs and
        ``loss`` worse than the best of them excluding the last ``asgd_nonmono``. It starts the
        averaging (NT-ASGD) or, when averaging from the start (fine-tuning), ends the run."""
        n = self.asgd_nonmono
        if n is None:
            return False
        return len(val_losses) > n and loss > min(val_losses[:-n])

    @property
    def unit(self) -> str:
        """What the patience counts: epochs, or validations every ``eval_every`` steps."""
        return "epochs" if self.eval_every is None else "validations"

    def stop_reason(
        self,
        epoch: int,
        val_loss: float,
        bad_epochs: int,
        earlier: list[float] = (),
        epoch_end: bool = True,
    ) -> str:
        """Why training stops after the validation in ``epoch`` (1-based; ``earlier``: the
        validation losses before; ``bad_epochs``: validations since the best; ``epoch_end``:
        whether it ends the epoch, as every validation does unless ``eval_every`` is set), or ""
        to go on."""
        if self.average_from_start and self.non_monotone(list(earlier), val_loss):
            return f"non-monotone: no better than {self.asgd_nonmono} epochs before"
        if self.stop_loss is not None and val_loss < self.stop_loss:
            return f"validation loss below {self.stop_loss:g}"
        if self.stop_on == "increase":
            rises = increases_in_a_row([*earlier, val_loss])
            if rises >= self.early_stopping_patience:
                return f"validation loss rose {rises} {self.unit} in a row"
        elif bad_epochs >= self.early_stopping_patience:
            return f"no improvement for {bad_epochs} {self.unit}"
        if epoch_end and epoch == self.max_epochs:
            return f"reached max_epochs={self.max_epochs}"
        return ""


def increases_in_a_row(losses: list[float]) -> int:
    """How many of the last epochs each had a higher validation loss than the epoch before."""
    count = 0
    for before, after in zip(losses[-2::-1], losses[::-1], strict=False):
        if not after > before:
            break
        count += 1
    return count


class DecayOnIncrease:
    """Multiply the LR by ``factor`` once the validation loss has risen in more than
    ``patience`` epochs in a row (then count afresh): ``lr_decay_on: increase``. Same interface
    as ``ReduceLROnPlateau`` (``step(loss)``, ``state_dict``, ``load_state_dict``)."""

    def __init__(self, optimizer: torch.optim.Optimizer, factor: float, patience: int):
        self.optimizer, self.factor, self.patience = optimizer, factor, patience
        self.last: float | None = None
        self.rises = 0

    def step(self, loss: float) -> None:
        self.rises = self.rises + 1 if self.last is not None and loss > self.last else 0
        self.last = loss
        if self.rises > self.patience:
            for group in self.optimizer.param_groups:
                group["lr"] *= self.factor
            self.rises = 0

    def state_dict(self) -> dict:
        return {"last": self.last, "rises": self.rises}

    def load_state_dict(self, state: dict) -> None:
        self.last, self.rises = state["last"], state["rises"]


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
        """Restore ``state_dict()``'s output, the mean on its parameters' device (a checkpoint
        read on the CPU may resume a run on a GPU)."""
        params = self._params()
        self.active, self.steps = state["active"], state["steps"]
        self.mean = {n: m.to(params[n].device) for n, m in state["mean"].items()}
