"""Dynamic evaluation (Krause et al. 2018), as zihangdai/mos ``dynamiceval.py`` runs it on
AWD-LSTM-MoS (docs/methods.md §12.2).

1. Gradient statistics: one pass over the training stream in ``batch_size`` columns and windows
   of ``bptt`` tokens, the state carried: MS = sqrt(Σ_windows g²) per weight (the *sum* over
   windows, MoS's default; Krause's current code takes the mean, sqrt(Σ g² / n), and its default
   η and ε are ~100x smaller to match). The decay rate of a weight is MS / Σ_tensors mean(MS),
   clipped at 1/λ.
2. The evaluated stream in one column, window by window: score the window with the current
   weights θ, backpropagate its mean loss, then θ ← θ − η g / (MS + ε) + λ · decay ⊙ (θ_0 − θ).
   The result is the mean NLL per token (MoS weights the last, shorter window by its length).

major_minor's Table V values (η 0.0024, ε 0.0025, λ 0.07 on PTB) are on the scale of MoS's defaults
(η 0.002, ε 0.001, λ 0.075), not of Krause's current ones (η 5e-5, ε 2e-5), so MoS's sum
normalisation is the one followed.

Two modes (``DynamicEvalSettings.mode``, config key ``dynamic_eval.<name>.mode``) say how both
passes run the model:

- ``mos`` (zihangdai/mos ``dynamiceval.py``): the modules stay in training mode with
  ``use_dropout = False``, which turns off the embedding, input, hidden, output and latent
  dropouts but not the weight drop: its ``WeightDrop`` is built with the training rate, so a
  fresh DropConnect mask on every recurrent hidden-to-hidden matrix is drawn for every window,
  in both passes. Here: the model in eval mode except its ``WeightDropLSTM`` layers. The masks
  of window k of a pass are drawn after seeding torch with a hash of (the run's seed, the pass:
  ``train`` or the evaluated split, k), so a run's numbers do not depend on where a job was
  interrupted and resumed. MoS's loops stop while two tokens are left, so a last window holding
  a single target (one step) is skipped, in both passes.
- ``krause`` (Krause et al.'s code, eval mode): no dropout at all, nothing sampled, and every
  window is scored.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields

import torch
import torch.nn.functional as F
from torch import Tensor

from ..data.batching import stream_batches
from ..models.awd import WeightDropLSTM
from ..models.base import RecurrentLM, map_state

MODES = ("mos", "krause")


@dataclass(frozen=True)
class DynamicEvalSettings:
    """Config key ``dynamic_eval.<name>`` (major_minor Table V; MoS's dynamiceval.py names)."""

    batch_size: int  # columns of the training stream for the gradient statistics
    lr: float  # η
    epsilon: float  # ε
    lamb: float  # λ: decay towards the trained weights
    bptt: int  # tokens per window (gradient statistics and adaptation)
    max_batches: int | None = None  # gradient statistics on at most this many windows
    max_eval_tokens: int | None = None  # adapt to the first N tokens of each evaluated stream
    mode: str = "krause"  # "mos": weight drop on, a single-target last window skipped (above)

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(
                f"config key 'dynamic_eval.<name>.mode': {self.mode!r} is not a dynamic "
                f"evaluation mode; use one of {', '.join(MODES)}"
            )

    @classmethod
    def from_dict(cls, settings: dict) -> DynamicEvalSettings:
        known = {f.name for f in fields(cls)}
        unknown = set(settings) - known
        if unknown:
            raise ValueError(f"unknown dynamic_eval settings: {', '.join(sorted(unknown))}")
        return cls(**settings)


def _loss(model: RecurrentLM, inputs: Tensor, targets: Tensor, state):
    logits, state = model(inputs, state)
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
    return loss, state


def set_mode(model: RecurrentLM, mode: str) -> None:
    """Eval mode (no dropout); in MoS's mode the weight-dropped LSTMs back in training mode, so
    that their DropConnect masks are drawn at the trained rate (the other dropouts stay off)."""
    model.eval()
    if mode == "mos":
        for module in model.modules():
            if isinstance(module, WeightDropLSTM):
                module.train()


def window_seed(seed: int, stream: str, index: int) -> int:
    """The torch seed of window ``index`` of a pass over ``stream`` in MoS's mode (63 bits)."""
    digest = hashlib.sha256(f"{seed}/{stream}/{index}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def stream_windows(
    ids: Tensor, batch_size: int, bptt: int, mode: str
) -> Iterator[tuple[Tensor, Tensor]]:
    """``stream_batches``'s windows; in MoS's mode without a last window of a single step."""
    batches = stream_batches(ids, batch_size, bptt)
    if mode != "mos":
        yield from batches
        return
    held = next(batches, None)
    for window in batches:
        yield held
        held = window
    if held is not None and held[1].size(0) > 1:
        yield held


def _rng_fork(mode: str, device: torch.device | str):
    """MoS's mode reseeds torch every window: the caller's random state is restored after."""
    device = torch.device(device)
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return torch.random.fork_rng([index], enabled=mode == "mos", device_type="cuda")
    return torch.random.fork_rng([], enabled=mode == "mos")


def gradient_statistics(
    model: RecurrentLM,
    ids: Tensor,
    settings: DynamicEvalSettings,
    device: torch.device | str = "cpu",
    seed: int = 0,
) -> dict[str, Tensor]:
    """MS = sqrt(Σ_windows g²) per parameter, over the training stream (step 1 above); ``seed``
    (the run's) seeds MoS's mode's weight-drop masks."""
    set_mode(model, settings.mode)
    params = dict(model.named_parameters())
    squares = {name: torch.zeros_like(p) for name, p in params.items()}
    state = None
    batches = stream_windows(ids, settings.batch_size, settings.bptt, settings.mode)
    with _rng_fork(settings.mode, device):
        for index, (inputs, targets) in enumerate(batches):
            if settings.max_batches is not None and index >= settings.max_batches:
                break
            if settings.mode == "mos":
                torch.manual_seed(window_seed(seed, "train", index))
            model.zero_grad(set_to_none=True)
            loss, state = _loss(model, inputs.to(device), targets.to(device), state)
            loss.backward()
            state = map_state(Tensor.detach, state)
            for name, p in params.items():
                if p.grad is not None:
                    squares[name] += p.grad * p.grad
    return {name: s.sqrt() for name, s in squares.items()}


def decay_rates(ms: dict[str, Tensor], lamb: float) -> dict[str, Tensor]:
    """MS / Σ_tensors mean(MS), clipped at 1/λ (a rate above it would overshoot θ_0)."""
    total = sum(float(m.mean()) for m in ms.values())
    return {name: (m / total).clamp(max=1.0 / lamb) for name, m in ms.items()}


@dataclass
class Progress:
    """Where an adaptation pass over one stream stands (checkpointed to resume exactly)."""

    windows: int = 0  # windows scored so far
    nll: float = 0.0  # summed NLL (nats) of their tokens
    tokens: int = 0
    state: object = None  # the recurrent state after the last window


def adapt(
    model: RecurrentLM,
    ids: Tensor,
    ms: dict[str, Tensor],
    decay: dict[str, Tensor],
    theta0: dict[str, Tensor],
    settings: DynamicEvalSettings,
    progress: Progress,
    device: torch.device | str = "cpu",
    should_stop: Callable[[], bool] = lambda: False,
    seed: int = 0,
    stream: str = "eval",
) -> bool:
    """Dynamic evaluation of one stream (step 2 above), continuing from ``progress`` (updated in
    place; the model must hold the weights that progress reached). ``should_stop`` is asked
    after every window; when it says yes the pass returns early, to be checkpointed and
    resumed. True when the stream is done. ``seed`` (the run's) and ``stream`` (the split's
    name) seed MoS's mode's weight-drop masks."""
    params = dict(model.named_parameters())
    set_mode(model, settings.mode)
    batches = stream_windows(ids, 1, settings.bptt, settings.mode)
    with _rng_fork(settings.mode, device):
        for index, (inputs, targets) in enumerate(batches):
            if index < progress.windows:
                continue
            if settings.mode == "mos":
                torch.manual_seed(window_seed(seed, stream, index))
            model.zero_grad(set_to_none=True)
            loss, state = _loss(model, inputs.to(device), targets.to(device), progress.state)
            loss.backward()
            with torch.no_grad():
                for name, p in params.items():
                    if p.grad is None:
                        continue
                    step = decay[name] * (theta0[name] - p) * settings.lamb
                    step -= settings.lr * p.grad / (ms[name] + settings.epsilon)
                    p += step
            progress.windows = index + 1
            progress.nll += loss.item() * targets.numel()
            progress.tokens += targets.numel()
            progress.state = map_state(Tensor.detach, state)
            if should_stop():
                return False
    return True


def every(seconds: float) -> Callable[[], bool]:
    """A ``should_stop`` that says yes once ``seconds`` have passed since the last yes."""
    last = [time.monotonic()]

    def due() -> bool:
        if time.monotonic() - last[0] >= seconds:
            last[0] = time.monotonic()
            return True
        return False

    return due


def summary(progress: Progress) -> dict:
    """The pass's metrics in ``metrics.json``'s per-split form."""
    if not progress.tokens:
        raise ValueError("dynamic evaluation scored no window: the stream is too short")
    loss = progress.nll / progress.tokens
    return {
        "loss": loss,
        "ppl": math.exp(loss),
        "tokens": progress.tokens,
        "windows": progress.windows,
    }
