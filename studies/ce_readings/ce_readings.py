"""multi_matrix's word-level "average cross entropy loss on the test set" under the readings its
words allow, from finished runs' model files.

The pipeline scores every sentence as x_1..x_n <eos> after <eos> x_1..x_n and averages the nats
over all scored tokens (docs/methods.md §3.1). The paper says only that it computes "the average
cross entropy loss on the test set". This script scores each run's ``model.pt`` on the test split
once and writes, per run, that number under each reading of which tokens count and how the
average is taken:

- ``tokens`` (the pipeline's): every target, first word and ``<eos>`` included;
- ``no_eos``: the ``<eos>`` targets left out (a loop that appends no end symbol);
- ``no_first``: the first word left out (a loop that feeds x_1 and predicts from x_2 on);
- ``no_first_no_eos``: both left out (x_2..x_n after x_1..x_{n-1});
- ``sentence_mean``: each sentence's mean, averaged over sentences;
- ``batch_mean``: each batch's mean over its tokens, averaged over batches of ``--batch-size``
  sentences in file order (a test loop that sums ``loss.item()`` and divides by the batches);
- ``stream``: the test set as one stream (<eos> x_1..x_n <eos> y_1..), the state carried from
  sentence to sentence (pytorch/examples' word_language_model's ``evaluate``: 10 columns, BPTT
  35); the model was trained on sentences from a zero state, so this reads what an evaluation
  loop of that kind gives, not what a stream-trained model scores;

and the mean nats of the three kinds of target: ``first_nats``, ``eos_nats``, ``inner_nats``
(x_2..x_n). Also per run: our best and last epochs with the validation CE at the best, and the
validation CE at the paper's "epochs to converge" (Table 1, ``--paper-epochs model=N``) read as
the best epoch (``val_if_paper_best``) and as the epochs trained, the best being N − patience
(``val_if_paper_trained``); empty where our run stopped before.

    R=runs/mm-word/results
    python studies/ce_readings/ce_readings.py --test $R/data/ptb_word/test.txt \\
        --runs $R/runs/multi_matrix/ptb_word/{rnn,lstm,mmrnn,mmlstm}/seed1 \\
        --paper-epochs rnn=29 lstm=33 lstm_2l=47 mmrnn=24 mmlstm=33 mmlstm_2l=50 \\
        --out studies/ce_readings/ce_readings.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
import torch

from rnnrepro.data.text import encode, read_token_file
from rnnrepro.evaluation.text import evaluate_stream, scored_targets
from rnnrepro.models import load_model, read_model_file

STREAM_COLUMNS, STREAM_BPTT = 10, 35  # pytorch/examples word_language_model's evaluation


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def readings(model_file: Path, test: Path, batch_size: int, device: str = "cpu") -> dict:
    """The run's identity and its test cross-entropy (nats) under each reading."""
    model, record = load_model(model_file)
    model.to(device)
    index = {token: i for i, token in enumerate(record["vocab"])}
    if record["run"]["text"]["framing"] not in ("eos", "stream"):
        raise ValueError(f"{model_file}: the readings need a run whose sentences end in <eos>")
    sequences = encode(read_token_file(test), index, str(test))
    per_sentence: dict[int, torch.Tensor] = {}
    for i, _, nll, _ in scored_targets(model, sequences, "eos", index["<eos>"], device=device):
        per_sentence[i] = nll.double()
    nlls = [per_sentence[i] for i in sorted(per_sentence)]  # file order
    first = torch.stack([n[0] for n in nlls])
    eos = torch.stack([n[-1] for n in nlls])
    inner = torch.cat([n[1:-1] for n in nlls])
    total, tokens = float(first.sum() + eos.sum() + inner.sum()), len(first) + len(eos) + len(inner)
    batch_means = [
        float(torch.cat(nlls[start : start + batch_size]).mean())
        for start in range(0, len(nlls), batch_size)
    ]
    stream = [index["<eos>"]] + [t for seq in sequences for t in [*seq, index["<eos>"]]]
    identity = record["identity"]
    return {
        "model": identity["model"],
        "seed": identity["seed"],
        "sentences": len(nlls),
        "tokens_scored": tokens,
        "tokens": total / tokens,
        "no_eos": float(first.sum() + inner.sum()) / (tokens - len(eos)),
        "no_first": float(eos.sum() + inner.sum()) / (tokens - len(first)),
        "no_first_no_eos": float(inner.mean()),
        "sentence_mean": mean([float(n.mean()) for n in nlls]),
        "batch_mean": mean(batch_means),
        "stream": evaluate_stream(model, stream, STREAM_COLUMNS, STREAM_BPTT, device).loss,
        "first_nats": float(first.mean()),
        "eos_nats": float(eos.mean()),
        "inner_nats": float(inner.mean()),
    }


def curve(history: Path, paper_epochs: int | None, patience: int) -> dict:
    """Best and last epoch of the run, its validation CE there, and at the paper's "epochs to
    converge" under both readings: the best epoch, or the epochs trained (best + patience)."""
    frame = pd.read_csv(history)
    val = frame.set_index("epoch")["val_loss"]
    best = int(val.idxmin())
    at = {}
    if paper_epochs is not None:
        for key, epoch in (("best", paper_epochs), ("trained", paper_epochs - patience)):
            at[f"val_if_paper_{key}"] = float(val[epoch]) if epoch in val.index else None
    return {
        "paper_epochs": paper_epochs,
        "best_epoch": best,
        "last_epoch": int(val.index.max()),
        "val_best": float(val[best]),
        **at,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test", type=Path, required=True, help="the runs' test split")
    parser.add_argument("--runs", type=Path, nargs="+", required=True, help="run directories")
    parser.add_argument("--batch-size", type=int, default=128, help="for the batch_mean reading")
    parser.add_argument(
        "--paper-epochs", nargs="*", default=[], metavar="MODEL=N", help="Table 1's epochs"
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    paper_epochs = {}
    for item in args.paper_epochs:
        model, _, epochs = item.partition("=")
        if not epochs.isdigit():
            parser.error(f"--paper-epochs: expected MODEL=N, got {item!r}")
        paper_epochs[model] = int(epochs)
    torch.set_num_threads(1)
    rows = []
    for run in args.runs:
        row = readings(run / "model.pt", args.test, args.batch_size)
        patience = read_model_file(run / "model.pt")["run"]["training"]["early_stopping_patience"]
        row |= curve(run / "history.csv", paper_epochs.get(row["model"]), patience)
        rows.append(row)
        print(row, flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).round(4).to_csv(args.out, index=False)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
