"""Arithmetic of major_minor's paper-scale runs: FLOPs per training token, counted, and the total
of the paper scale, for a GPU-hour estimate that this CPU-only machine cannot measure.

For each major_minor model and corpus, the model is built at paper size on PyTorch's ``meta``
device (shapes only, no memory) and one training batch (forward, cross-entropy, backward;
activation checkpointing's recomputation included) runs under ``FlopCounterMode``, which
counts the matrix products (2 FLOPs per multiply-add; element-wise work is not counted).
Totals: training tokens per epoch (major_minor Table I) × epochs (the procedure's ``max_epochs``:
AWD-LSTM and MoS never stop early; fine-tuning counted at the same cap, an upper bound) plus
validation every epoch at a third of a training token.

    python benchmarks/flops.py [--out benchmarks/results/major_minor_flops.csv]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
import torch.nn.functional as F
import yaml
from torch.utils.flop_counter import FlopCounterMode

from rnnrepro import config as cfg
from rnnrepro.cost import VAL_COST
from rnnrepro.fileio import write_rows
from rnnrepro.models import build_model

# major_minor Table I: training and validation tokens
TOKENS = {
    "ptb_stream": (887_521 + 42_068, 70_390 + 3_370),  # + one <eos> per line, as streamed
    "wikitext2": (2_088_628, 217_646),
    "wikitext103": (103_227_021, 217_646),
}
T = 70


def flops_per_token(run: dict, vocab_size: int) -> float:
    """Counted FLOPs of one training batch of the run, per token."""
    batch = run["training"]["batch_size"]
    with torch.device("meta"):
        model = build_model(run["architecture"], [str(i) for i in range(vocab_size)],
                            **run["hparams"])  # fmt: skip
        tokens = torch.randint(0, vocab_size, (T + 1, batch))
    model.train()
    with FlopCounterMode(display=False) as counter:
        logits, _ = model(tokens[:-1])
        F.cross_entropy(logits.reshape(-1, vocab_size), tokens[1:].reshape(-1)).backward()
    return counter.get_total_flops() / (T * batch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config.yaml")
    parser.add_argument("--out", default="benchmarks/results/major_minor_flops.csv")
    args = parser.parse_args()
    config = yaml.safe_load(Path(args.config).read_text())
    config["scale"] = "paper"
    rows = []
    for run in cfg.runs(config, "major_minor"):
        fam = cfg.family(run.dataset)
        train_tokens, val_tokens = TOKENS[fam]
        settings = cfg.run_config(config, run.experiment, run.dataset, run.model)
        per_token = flops_per_token(settings, cfg.TEXT_FAMILIES[fam]["vocab_size"])
        epoch = per_token * (train_tokens + VAL_COST * val_tokens)
        epochs = {
            stage: cfg.run_config(config, run.experiment, run.dataset, run.model, stage)[
                "training"
            ]["max_epochs"]
            for stage in cfg.stages(config, run.experiment, run.model, run.dataset)
        }
        rows.append(
            {
                "dataset": run.dataset,
                "model": run.model,
                "mflop_per_token": round(per_token / 1e6, 1),
                "pflop_per_epoch": round(epoch / 1e15, 3),
                "epochs": "+".join(str(e) for e in epochs.values()),
                "pflop_total": round(epoch * sum(epochs.values()) / 1e15, 1),
            }
        )
        print(rows[-1], flush=True)
    total = sum(r["pflop_total"] for r in rows)
    print(f"total: {total:,.0f} PFLOP (10^15) for the {len(rows)} major_minor runs")
    write_rows(args.out, rows)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
