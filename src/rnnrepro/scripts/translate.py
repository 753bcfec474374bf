"""Translate a test set with a trained translation model: beam search over BPE pieces, one
sentence at a time, the output decoded to plain text (sentencepiece), one line per source."""

from __future__ import annotations

import argparse
import time

import torch

from rnnrepro.data.parallel import SPECIAL_IDS, load_bpe, read_pairs
from rnnrepro.devices import select_device
from rnnrepro.evaluation.translation import beam_search
from rnnrepro.fileio import write_text_atomic
from rnnrepro.models import load_model

PROGRESS_EVERY = 100  # sentences between log lines


def max_length(source_length: int, ratio: float) -> int:
    """The longest translation of a source of ``source_length`` pieces: ratio × it + 10."""
    return int(ratio * source_length) + 10


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--pairs", required=True, help="the test set (TSV of BPE pieces)")
    parser.add_argument("--bpe-model", required=True, help="sentencepiece model (decoding)")
    parser.add_argument("--beam-width", type=int, required=True)
    parser.add_argument("--max-decode-ratio", type=float, required=True)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", required=True, help="translations, one line per source")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = select_device(args.device)
    model, record = load_model(args.model)
    model.to(device)
    pieces = record["vocab"]
    index = {piece: i for i, piece in enumerate(pieces)}
    sp = load_bpe(args.bpe_model)
    if [sp.id_to_piece(i) for i in range(sp.get_piece_size())] != pieces:
        raise SystemExit(f"{args.bpe_model}: its pieces are not the model's vocabulary")
    bos, eos = SPECIAL_IDS["bos_id"], SPECIAL_IDS["eos_id"]
    lines, started = [], time.perf_counter()
    sources = [src for src, _ in read_pairs(args.pairs, index)]
    for k, src in enumerate(sources, 1):
        source = torch.tensor(src, dtype=torch.long, device=device)
        best = beam_search(
            model, source, bos, eos, max_length(len(src), args.max_decode_ratio), args.beam_width
        )
        lines.append(sp.decode(best))
        if k % PROGRESS_EVERY == 0 or k == len(sources):
            seconds = time.perf_counter() - started
            print(f"{k}/{len(sources)} sentences, {seconds:.1f} s", flush=True)
    write_text_atomic(args.out, "".join(f"{line}\n" for line in lines))


if __name__ == "__main__":
    main()
