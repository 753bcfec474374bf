"""Train one run (experiment, dataset, model, seed) and write its best model and history.

Called by the ``train`` rule; ``--run`` is the JSON of ``rnnrepro.config.run_config``.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import sys
from pathlib import Path

import torch

from rnnrepro.data import dyck
from rnnrepro.data.batching import Vocabulary, padded_batches
from rnnrepro.devices import select_device
from rnnrepro.evaluation.dyck import evaluate_dyck
from rnnrepro.models import build_model, save_model
from rnnrepro.objectives import sequence_loss
from rnnrepro.training import (
    HISTORY_COLUMNS,
    TrainingInterrupted,
    TrainingSettings,
    seed_everything,
    train,
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--run", required=True, help="run settings as JSON")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--train", required=True, help="training sequences")
    parser.add_argument("--val", required=True, help="validation sequences")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads for torch")
    parser.add_argument("--checkpoint", required=True, help="resumable per-epoch checkpoint")
    parser.add_argument("--out-model", required=True)
    parser.add_argument("--out-history", required=True)
    return parser.parse_args(argv)


def write_history(rows: list[dict], path: str) -> None:
    tmp = Path(path).with_name(f".{Path(path).name}.tmp")
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=HISTORY_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    run = json.loads(args.run)
    settings = TrainingSettings.from_dict(run["training"])
    device = select_device(args.device)
    torch.set_num_threads(args.threads)
    k, m = run["dyck"]["k"], run["dyck"]["m"]
    tokens = dyck.vocabulary(k)
    vocab = Vocabulary(tokens)
    train_seqs = [vocab.encode(s) for s in dyck.read_sequences(args.train, k=k, m=m)]
    val_seqs = dyck.read_sequences(args.val, k=k, m=m)
    digest = hashlib.sha256(
        json.dumps({"run": run, "seed": args.seed}, sort_keys=True).encode()
        + Path(args.train).read_bytes()
        + Path(args.val).read_bytes()
    ).hexdigest()

    seed_everything(args.seed)
    model = build_model(run["architecture"], tokens, **run["hparams"]).to(device)
    close_type = torch.tensor(dyck.close_type_ids(tokens), device=device)
    print(
        f"{run['architecture']} on Dyck-{k} m={m}, seed {args.seed}, device {device}: "
        f"{model.num_parameters()} trainable parameters, "
        f"{model.recurrent_parameters()} recurrent; {len(train_seqs)} training sequences",
        flush=True,
    )

    def batches(epoch: int):
        for batch in padded_batches(
            train_seqs,
            settings.batch_size,
            vocab.bos_id,
            vocab.eos_id,
            vocab.pad_id,
            shuffle=True,
            seed=args.seed * 1000 + epoch,
        ):
            yield batch.inputs.to(device), batch.targets.to(device)

    def batch_loss(model, batch):
        inputs, targets = batch
        logits, _ = model(inputs)
        return sequence_loss(logits, targets, model.output, vocab.pad_id, close_type)

    def evaluate(model):
        result = evaluate_dyck(model, val_seqs, tokens, reading=run["reading"], device=device)
        return {"loss": result.loss, "ppl": result.ppl, "wcpa": result.wcpa}

    try:
        result, best_state = train(
            model,
            settings,
            batches,
            batch_loss,
            evaluate,
            args.checkpoint,
            digest,
            log=lambda line: print(line, flush=True),
        )
    except TrainingInterrupted as interrupt:
        print(f"{interrupt}; rerun to resume from {args.checkpoint}", flush=True)
        return 128 + interrupt.signum
    model.load_state_dict(best_state)
    Path(args.out_model).parent.mkdir(parents=True, exist_ok=True)
    write_history(result.history, args.out_history)
    save_model(
        model.cpu(),
        args.out_model,
        run["architecture"],
        tokens,
        run["hparams"],
        run=run,
        seed=args.seed,
        epochs=len(result.history),
        best_epoch=result.best_epoch,
        train_seconds=result.seconds,
        stopped_because=result.stopped_because,
        params={"total": model.num_parameters(), "recurrent": model.recurrent_parameters()},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
