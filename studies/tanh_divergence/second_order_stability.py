"""How far general_second_order's general second-order RNN is from exploding, from its training
checkpoints.

The tanh model without D and E (``so_tanh``) diverges on fold 1 at the paper's size
(studies/tanh_divergence/README.md). This script reads a series of training checkpoints of one
run (``results/checkpoints/...`` files copied as the run wrote them) and measures, per checkpoint:

- ``rms_A``, ``rms_B``, ``rms_C`` (and ``rms_E`` when present): the weights' root mean square;
- ``gain_median``, ``gain_max``: over the vocabulary's characters v, the spectral norm of the
  input-dependent transition A diag(B v) C (+ E), the linear part of one step;
- ``lyapunov``: the largest Lyapunov exponent of the hidden dynamics on validation lines, the
  mean log growth per step of a perturbation under the step Jacobians
  J_t = diag(φ'(pre_t)) (A diag(B x_t) C + E). A positive value means perturbations, and the
  backward gradients of BPTT, grow exponentially with distance;
- ``saturated``: the fraction of hidden units with |h| > 0.99 (tanh only);
- ``grad_norm_median``, ``grad_norm_max``: the gradient norm before clipping on the first
  training batches of the checkpoint's next epoch (the procedure clips at ``grad_clip``).

    python studies/tanh_divergence/second_order_stability.py --run-spec <the run's --run JSON> \\
        --vocab $R/data/ptb_lines_unigram_fold1/vocab.txt \\
        --train $R/data/ptb_lines_unigram_fold1/train.txt \\
        --val $R/data/ptb_lines_unigram_fold1/val.txt --checkpoints ckpts/*.pt \\
        --label so_tanh --out studies/tanh_divergence/general_second_order_stability.csv
"""

from __future__ import annotations

import argparse
import json
import math
from itertools import islice
from pathlib import Path

import pandas as pd
import torch
from torch import nn

from rnnrepro.data import text
from rnnrepro.data.text import encode
from rnnrepro.models import build_model
from rnnrepro.models.second_order import SecondOrderRNN
from rnnrepro.procedures import BatchLoss
from rnnrepro.tasks import TextTask


def _rms(weight: torch.Tensor) -> float:
    return round(float(weight.detach().pow(2).mean().sqrt()), 4)


def grad_norms(model, task: TextTask, epoch: int, batches: int) -> torch.Tensor:
    """Gradient norms (before any clipping) of the training loss on epoch ``epoch``'s first
    ``batches`` batches, at the model's current weights."""
    model.train()
    norms = []
    for batch in islice(task.batches(epoch), batches):
        model.zero_grad(set_to_none=True)
        loss = BatchLoss(*task.batch_loss(model, batch))
        (loss.nll / loss.count).backward()  # the training objective: mean NLL per target
        norms.append(nn.utils.clip_grad_norm_(model.parameters(), math.inf))  # norm only
    model.eval()
    return torch.stack(norms)


def transition(body: SecondOrderRNN, token: torch.Tensor) -> torch.Tensor:
    """The step's linear map h_{t-1} -> pre_t for input ``token``: A diag(B x) C (+ E), [h, h]."""
    matrix = body.A @ (body.B.weight[token].unsqueeze(1) * body.C)
    return matrix if body.E is None else matrix + body.E


@torch.no_grad()
def lyapunov(body: SecondOrderRNN, lines: list[list[int]], seed: int = 0) -> tuple[float, float]:
    """(largest Lyapunov exponent per step, saturated fraction) over ``lines``."""
    generator = torch.Generator().manual_seed(seed)
    tanh = body.activation == "tanh"
    total_log, steps, saturated, units = 0.0, 0, 0, 0
    for ids in lines:
        tokens = torch.as_tensor(ids, dtype=torch.long).unsqueeze(1)  # [T, 1]
        hs, _ = body(tokens)  # [T, 1, h]
        x_b = body.B(tokens)  # [T, 1, m]
        v = torch.randn(1, body.hidden_size, generator=generator)
        v /= v.norm()
        for t in range(1, tokens.shape[0]):  # J_t maps a change of h_{t-1} to one of h_t
            step = ((v @ body.C.t()) * x_b[t]) @ body.A.t()
            if body.E is not None:
                step = step + v @ body.E.t()
            if tanh:
                step = step * (1 - hs[t] * hs[t])
            norm = float(step.norm())
            if norm == 0.0:
                break
            total_log += math.log(norm)
            steps += 1
            v = step / norm
        if tanh:
            saturated += int((hs.abs() > 0.99).sum())
            units += hs.numel()
    return total_log / steps, (saturated / units if units else float("nan"))


def measure(
    model, checkpoint: Path | None, lines: list[list[int]], task: TextTask, batches: int
) -> dict:
    """One row: where the run was and how close to exploding its weights are (``checkpoint``
    None: the model as built, an initialisation from the run's distribution)."""
    state = {"epoch": 0, "partial": None, "result": {}}
    if checkpoint is not None:
        state = torch.load(checkpoint, map_location="cpu", weights_only=True)
        model.load_state_dict(state["model"])
    model.eval()
    body = model.body
    partial = state["partial"] or {}
    history = state["result"].get("history") or [{}]
    row = {
        "checkpoint": "initialisation" if checkpoint is None else checkpoint.name,
        "epochs_done": state["epoch"],
        "batches_into_next": partial.get("batches", 0),
        "last_val_bpc": history[-1].get("val_bpc"),
        "finite": all(bool(p.isfinite().all()) for p in model.parameters()),
    }
    if not row["finite"]:  # a diverged run's last weights: nothing more to measure
        return row
    with torch.no_grad():
        gains = torch.stack(
            [
                torch.linalg.matrix_norm(transition(body, torch.tensor(v)), ord=2)
                for v in range(body.vocab_size)
            ]
        )
    exponent, saturated = lyapunov(body, lines)
    norms = grad_norms(model, task, state["epoch"], batches)
    row |= {
        "rms_A": _rms(body.A),
        "rms_B": _rms(body.B.weight),
        "rms_C": _rms(body.C),
        "gain_median": round(float(gains.median()), 3),
        "gain_max": round(float(gains.max()), 3),
        "lyapunov": round(exponent, 4),
        "saturated": round(saturated, 4),
        "grad_norm_median": round(float(norms.median()), 3),
        "grad_norm_max": round(float(norms.max()), 3),
    }
    if body.E is not None:
        row["rms_E"] = _rms(body.E)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-spec", required=True, help="the run's --run JSON (from its job)")
    parser.add_argument("--vocab", type=Path, required=True)
    parser.add_argument("--train", type=Path, required=True)
    parser.add_argument("--val", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=1, help="the run's seed (batch order)")
    parser.add_argument("--grad-batches", type=int, default=10)
    parser.add_argument("--lines", type=int, default=100, help="validation lines to measure on")
    parser.add_argument("--checkpoints", type=Path, nargs="*", default=[])
    parser.add_argument(
        "--init-seed", type=int, help="also measure a fresh initialisation built with this seed"
    )
    parser.add_argument("--label", required=True, help="the run's model name, for the table")
    parser.add_argument("--out", type=Path, required=True, help="CSV; rows are appended")
    args = parser.parse_args()
    torch.set_num_threads(1)
    spec = json.loads(args.run_spec)
    vocab = text.read_vocab(args.vocab)
    index = {token: i for i, token in enumerate(vocab)}
    lines = encode(text.read_token_file(args.val)[: args.lines], index, str(args.val))
    task = TextTask(spec, args.seed, torch.device("cpu"), args.train, args.val, args.vocab)
    if args.init_seed is not None:
        torch.manual_seed(args.init_seed)
    model = build_model(spec["architecture"], vocab, **spec["hparams"])
    checkpoints = [None] if args.init_seed is not None else []
    rows = []
    for checkpoint in checkpoints + sorted(args.checkpoints):
        row = measure(model, checkpoint, lines, task, args.grad_batches)
        rows.append({"model": args.label, **row})
        print(rows[-1], flush=True)
    frame = pd.DataFrame(rows)
    if args.out.exists():
        frame = pd.concat([pd.read_csv(args.out), frame])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out, index=False)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
