"""Does the translation model learn the generated stand-in? (major_minor §V-D4, issue 35)

Trains a small ``LuongNMT`` (LSTM or Major-Minor layers) on the stand-in parallel corpus
(``rnnrepro.data.parallel.stand_in_pairs``: a word mapping plus reversal of blocks of three, over
a joint BPE vocabulary), then beam-decodes held-out sentences and scores them with sacrebleu,
before and after training. A model whose attention works goes from BLEU near 0 to near 100.
Not the pipeline's procedure (Adam, teacher forcing, fixed steps): a check of the model,
decoding, BPE and BLEU together, one thread.

    python studies/nmt_stand_in/nmt_stand_in.py --out studies/nmt_stand_in/nmt_stand_in.csv
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

import sentencepiece as spm
import torch
import torch.nn.functional as F

from rnnrepro.data.parallel import bleu, stand_in_pairs, train_bpe
from rnnrepro.evaluation.translation import beam_search
from rnnrepro.fileio import write_rows
from rnnrepro.models.seq2seq import PAD, LuongNMT

# two layers of 128: plain LSTMs, or Major-Minor layers with Minors of 32 and 16 units
MODELS = {"lstm": None, "mmlstm": [0.75, 0.875]}


def batch(pairs: list[tuple[list[int], list[int]]], bos: int, eos: int):
    """Padded source [S, B], its lengths, target input (bos y) and output (y eos) [T, B]."""
    src_len = max(len(s) for s, _ in pairs)
    tgt_len = max(len(t) for _, t in pairs) + 1
    src = torch.full((src_len, len(pairs)), PAD)
    tgt_in, tgt_out = torch.full((tgt_len, len(pairs)), PAD), torch.full((tgt_len, len(pairs)), PAD)
    for b, (s, t) in enumerate(pairs):
        src[: len(s), b] = torch.tensor(s)
        tgt_in[: len(t) + 1, b] = torch.tensor([bos, *t])
        tgt_out[: len(t) + 1, b] = torch.tensor([*t, eos])
    return src, torch.tensor([len(s) for s, _ in pairs]), tgt_in, tgt_out


def score(model, sp, test, width: int) -> float:
    hypotheses = [
        sp.decode(
            beam_search(model, torch.tensor(sp.encode(src)), 1, 2, 3 * len(src.split()), width)
        )
        for src, _ in test
    ]
    return bleu(hypotheses, [tgt for _, tgt in test])["bleu"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=3000, help="training pairs")
    parser.add_argument("--test", type=int, default=100, help="held-out pairs")
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--bpe", type=int, default=200, help="joint subword vocabulary")
    parser.add_argument("--words", type=int, default=200, help="source (and target) words")
    parser.add_argument("--lr", type=float, default=2e-3, help="Adam's")
    parser.add_argument("--width", type=int, default=5, help="beam width")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--out", type=Path, help="CSV")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    train_pairs = stand_in_pairs(args.train, seed=1, words=args.words)
    test = stand_in_pairs(args.test, seed=2, words=args.words)
    sp = spm.SentencePieceProcessor(
        model_proto=train_bpe([x for p in train_pairs for x in p], args.bpe)
    )
    data = [(sp.encode(s), sp.encode(t)) for s, t in train_pairs]
    vocab = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    rows = []
    for name in args.models:
        proportions = MODELS[name]
        torch.manual_seed(1)
        model = LuongNMT(vocab, 64, [128, 128], proportions)
        before = score(model, sp, test, args.width)
        optimiser = torch.optim.Adam(model.parameters(), lr=args.lr)
        rng, start = random.Random(1), time.perf_counter()
        for step in range(args.steps):
            model.train()
            src, lengths, tgt_in, tgt_out = batch(rng.sample(data, args.batch), 1, 2)
            log_probs = model(src, lengths, tgt_in)
            loss = F.nll_loss(log_probs.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD)
            optimiser.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimiser.step()
            if (step + 1) % 250 == 0:
                print(f"{name} step {step + 1}: loss {loss.item():.4f}", flush=True)
        seconds = time.perf_counter() - start
        after = score(model, sp, test, args.width)
        row = {"model": name, "params": model.num_parameters(), "steps": args.steps,
               "train_seconds": round(seconds, 1), "final_loss": round(loss.item(), 4),
               "bleu_before": round(before, 2), "bleu_after": round(after, 2),
               "beam_width": args.width, "test_pairs": args.test}  # fmt: skip
        print(row, flush=True)
        rows.append(row)
    if args.out:
        write_rows(args.out, rows)


if __name__ == "__main__":
    main()
