"""Training throughput of every registered model against a plain nn.LSTM language model.

One "batch" = forward on random tokens [T, B], cross-entropy against random targets, backward
(no optimiser step). Reported: median over ``--repeats`` timed repeats (after a warm-up) of the
seconds per batch, tokens/s = T·B / seconds, and the time ratio to the reference
``nn.LSTM`` LM (Embedding -> nn.LSTM -> Linear, built here) at the same size.

    python benchmarks/bench_cells.py [--sizes dyck wt2] [--repeats 3] [--out FILE] [--device cuda]

``--text`` instead times the paper-size text models of multi_matrix and general_second_order
(``TEXT_SIZES``: one list of (model, hyper-parameters) per shape), relative to the registry
``lstm`` (nn.LSTM) with h = 991, e = 128 at the same B, T, V; default output
benchmarks/results/cells_text.csv:

    python benchmarks/bench_cells.py --text [--text-sizes char001 char003] [--time-steps T]

``--graphs`` (with ``--text`` on CUDA) also replays each batch from one CUDA graph: the time a
fixed-shape window would take without the Python loops' per-step launch overhead.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from rnnrepro.fileio import write_rows
from rnnrepro.models import MODEL_NAMES, build_model, native

DYCK_VOCAB = ["<pad>", "<start>", "<end>", "(a", "a)", "(b", "b)"]

# size -> batch, time steps, vocabulary, hyper-parameters of the models
SIZES = {
    "dyck": dict(B=10, T=200, vocab=DYCK_VOCAB, e=30, h=12, stack_depth=4),
    # Dyck-8: the largest Dyck size (h = 3m = 24); the multi_matrix LMs' batch is 128 sequences
    "dyck_m8": dict(B=10, T=200, vocab=DYCK_VOCAB, e=30, h=24, stack_depth=8),
    "dyck_m8_b128": dict(B=128, T=200, vocab=DYCK_VOCAB, e=30, h=24, stack_depth=8),
    # WikiText-2 model size; the decoder uses a smaller vocabulary (see --wt2-vocab)
    "wt2": dict(B=64, T=70, vocab=None, e=300, h=600, stack_depth=None),
}
# multi_matrix character level (PTB char, V = 50, e = 128; docs/methods.md §5.5 sizes, ≈4.5M
# parameters) and general_second_order (PTB lines, V = 27 one-hot characters; docs/methods.md
# §6.4 sizes, ≈500k parameters).
# size -> batch, time steps, vocabulary size, [(label, registry name, hyper-parameters)]
TEXT_REFERENCE = ("lstm h=991 (reference)", "lstm", {"embedding_dim": 128, "hidden_size": 991})


def _char001(name: str, h: int, layers: int = 1) -> tuple[str, str, dict]:
    hp = {"embedding_dim": 128, "hidden_size": h}
    if layers > 1:
        hp["num_layers"] = layers
    return (f"{name} {layers}x{h}" if layers > 1 else f"{name} h={h}", name, hp)


TEXT_SIZES = {
    "char001": dict(
        B=128,
        T=120,
        V=50,
        models=[
            TEXT_REFERENCE,
            _char001("rnn", 2032),
            _char001("rnn", 1194, 2),
            _char001("lstm", 589, 2),
            _char001("mrnn", 1972),
            _char001("mlstm", 977),
            _char001("mmrnn", 1038),
            _char001("mmrnn", 696, 2),
            _char001("mmlstm", 512),
            _char001("mmlstm", 345, 2),
        ],
    ),
    "char003": dict(
        B=64,
        T=120,
        V=27,
        models=[
            TEXT_REFERENCE,
            (
                "second_order_rnn D+E h=m=395 tanh",
                "second_order_rnn",
                {"hidden_size": 395, "inner_size": 395},
            ),
            (
                "second_order_rnn no D/E h=m=486 tanh",
                "second_order_rnn",
                {"hidden_size": 486, "inner_size": 486, "use_d": False, "use_e": False},
            ),
            ("first_order_rnn h=680", "first_order_rnn", {"hidden_size": 680}),
            ("mi_rnn h=679", "mi_rnn", {"hidden_size": 679}),
            # an nn.LSTM LM of the same budget (budget.solve("lstm", 27, 500_000, e=128)): context
            ("lstm h=290 (≈500k)", "lstm", {"embedding_dim": 128, "hidden_size": 290}),
        ],
    ),
    # second_order_lstm on WikiText-2: e = 300, h = 600, batch 64, BPTT 70; the decoder over
    # 1,000 words (the full 33,278 would add the same ~9 s per batch to every model and hide the
    # recurrence)
    "wt2_000": dict(
        B=64,
        T=70,
        V=1000,
        models=[
            ("lstm e=300 h=600 (reference)", "lstm", {"embedding_dim": 300, "hidden_size": 600}),
            *(
                (
                    f"attention_lstm S={cells}",
                    "attention_lstm",
                    {"embedding_dim": 300, "hidden_size": 600, "cells": cells},
                )
                for cells in (1, 2, 5)
            ),
        ],
    ),
}
CPU = torch.device("cpu")
MIN_REPEAT_SECONDS = 0.3  # fast batches are timed in groups lasting at least this long


class ReferenceLSTM(nn.Module):
    """Embedding -> nn.LSTM -> Linear: the yardstick every model is compared with."""

    def __init__(self, vocab_size: int, embedding_dim: int, hidden_size: int):
        super().__init__()
        self.encoder = nn.Embedding(vocab_size, embedding_dim)
        self.rnn = nn.LSTM(embedding_dim, hidden_size)
        self.decoder = nn.Linear(hidden_size, vocab_size)

    def forward(self, tokens):
        output, state = self.rnn(self.encoder(tokens))
        return self.decoder(output), state


def hparams(name: str, size: dict) -> dict:
    """Hyper-parameters of ``name`` at a benchmark size (registry defaults otherwise)."""
    if name == "dyck_rnn":
        return {"stack_depth": size["stack_depth"]}
    if name == "second_order_rnn":  # general_second_order models: one-hot inputs, no embedding
        return {"hidden_size": size["h"], "inner_size": size["h"]}
    if name in ("first_order_rnn", "mi_rnn"):
        return {"hidden_size": size["h"]}
    if name == "memory_lstm":  # memory's LSTM: candidate dropout (the paper's 0.1) runs its
        # own loop in training, not cuDNN; tied, so e = h
        return {"hidden_size": size["h"], "memory": "none", "candidate_dropout": 0.1}
    if name == "awd_lstm":  # one weight-dropped layer (cuDNN), untied
        return {"embedding_dim": size["e"], "layer_sizes": [size["h"]], "tie_weights": False}
    return {"embedding_dim": size["e"], "hidden_size": size["h"]}


def time_training(model: nn.Module, size: dict, repeats: int, device: torch.device = CPU) -> float:
    """Median seconds per training batch (forward + loss + backward) on random tokens."""
    batch = training_batch(model, size, device)
    batch()  # warm-up: lazy initialisation (threads, CUDA context, cuDNN plans)
    return median_seconds(batch, repeats, device)


def time_training_graphed(
    model: nn.Module, size: dict, repeats: int, device: torch.device
) -> float:
    """Median seconds per training batch replayed from one CUDA graph of the whole batch
    (``capture``): what removing the per-step launch overhead of the Python time loops could
    win. Raises where a model cannot be captured (a host synchronisation in its step, say)."""
    return median_seconds(
        capture(training_batch(model, size, device), device).replay, repeats, device
    )


@dataclass
class Captured:
    """A CUDA graph of ``step()`` and the step itself. The graph reads the step's input tensors
    (its tokens) at the addresses they had at capture, so the step is kept with it: dropped,
    its tokens' memory would go back to the allocator and be handed to the next allocation,
    and a replay would read whatever that wrote (out-of-range token ids)."""

    graph: torch.cuda.CUDAGraph
    step: Callable[[], None]

    def replay(self) -> None:
        self.graph.replay()


def capture(step: Callable[[], None], device: torch.device, warmup: int = 3) -> Captured:
    """A CUDA graph of ``step()`` (forward, loss and backward at a fixed shape), captured after
    ``warmup`` eager runs on a side stream; ``.replay()`` then runs it again."""
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(warmup):
            step()
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return Captured(graph, step)


def training_batch(model: nn.Module, size: dict, device: torch.device):
    """One training batch of ``model`` on fixed random tokens, as a function."""
    V = len(size["vocab"])
    model.to(device)
    tokens = torch.randint(0, V, (size["T"], size["B"])).to(device)

    def batch() -> None:
        model.zero_grad(set_to_none=True)
        logits, _ = model(tokens)
        targets = tokens % logits.shape[-1]  # a closing-bracket classifier has fewer outputs
        F.cross_entropy(logits.flatten(0, 1), targets.flatten()).backward()

    return batch


def median_seconds(step, repeats: int, device: torch.device) -> float:
    """Median over ``repeats`` of the seconds per ``step()`` (warmed up already), each repeat
    running enough steps to last ``MIN_REPEAT_SECONDS``."""
    sync = torch.cuda.synchronize if device.type == "cuda" else lambda: None
    sync()
    start = time.perf_counter()
    step()
    sync()
    steps = max(1, round(MIN_REPEAT_SECONDS / (time.perf_counter() - start)))
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            step()
        sync()
        timings.append((time.perf_counter() - start) / steps)
    return statistics.median(timings)


def run(
    sizes: list[str],
    repeats: int,
    wt2_vocab: int,
    device: torch.device = CPU,
    names: tuple[str, ...] = MODEL_NAMES,
) -> list[dict]:
    """Time every registered model (``names``) at each size against the nn.LSTM reference.
    ``ratio_per_parameter`` divides the time ratio by the ratio of recurrent parameters: the
    time per unit of recurrent work (a 2-cell attention LSTM does about twice an LSTM's)."""
    rows = []
    for size_name in sizes:
        size = dict(SIZES[size_name])
        if size["vocab"] is None:
            size["vocab"] = [f"w{i}" for i in range(wt2_vocab)]
        torch.manual_seed(0)
        reference = ReferenceLSTM(len(size["vocab"]), size["e"], size["h"])
        ref = time_training(reference, size, repeats, device)
        ref_params = sum(p.numel() for p in reference.rnn.parameters())
        candidates = [("nn.LSTM (reference)", None, {})]
        candidates += [(name, name, hparams(name, size)) for name in names]
        # same fused recurrence as attention_lstm with one cell: the kernel's own overhead
        single = {**hparams("attention_lstm", size), "cells": 1}
        candidates.append(("attention_lstm[cells=1]", "attention_lstm", single))
        for label, name, kwargs in candidates:
            if name is None:
                seconds, params = ref, ref_params
            elif name == "dyck_rnn" and size["stack_depth"] is None:
                print(f"[{size_name}] skip {label}: Dyck-only model")
                continue
            elif name == "luong_nmt":
                print(f"[{size_name}] skip {label}: an encoder-decoder (gpu_check's translation)")
                continue
            else:
                try:
                    model = build_model(name, size["vocab"], **kwargs)
                except Exception as err:  # a module not written yet, or a failing build
                    print(f"[{size_name}] skip {label}: {type(err).__name__}: {err}")
                    continue
                seconds = time_training(model, size, repeats, device)
                params = model.recurrent_parameters()
            tokens = size["B"] * size["T"]
            rows.append(
                {
                    "size": size_name,
                    "model": label,
                    "tokens_per_s": round(tokens / seconds),
                    "seconds_per_batch": round(seconds, 5),
                    "ratio_to_nn_lstm": round(seconds / ref, 2),
                    "ratio_per_parameter": round(seconds / ref / max(params / ref_params, 1e-9), 2),
                    "custom_loops": native.backend() if device.type == "cpu" else "python",
                    "device": device_label(device),
                }
            )
            print(f"[{size_name}] {label}: {seconds * 1e3:.1f} ms/batch", flush=True)
    return rows


def device_label(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"CPU, {torch.get_num_threads()} thread(s)"


def run_text(
    sizes: list[str],
    repeats: int,
    time_steps: int | None,
    device: torch.device = CPU,
    graphs: bool = False,
    deadline: float | None = None,
) -> list[dict]:
    """Time the paper-size text models of ``TEXT_SIZES``; the first model is the reference.
    ``graphs`` (CUDA) also times each batch replayed from a CUDA graph
    (``time_training_graphed``), or says why it could not be captured. Models not begun by
    ``deadline`` (``time.monotonic()``) are left out."""
    rows = []
    for size_name in sizes:
        spec = TEXT_SIZES[size_name]
        size = {"B": spec["B"], "T": time_steps or spec["T"]}
        size["vocab"] = [f"c{i}" for i in range(spec["V"])]
        ref = None
        for label, name, kwargs in spec["models"]:
            if deadline is not None and time.monotonic() > deadline:
                print(f"[{size_name}] {label}: out of time", flush=True)
                continue
            torch.manual_seed(0)
            model = build_model(name, size["vocab"], **kwargs)
            seconds = time_training(model, size, repeats, device)
            ref = ref or seconds
            row = {
                "size": size_name,
                "model": label,
                "tokens_per_s": round(size["B"] * size["T"] / seconds),
                "seconds_per_batch": round(seconds, 5),
                "ratio_to_nn_lstm": round(seconds / ref, 2),
                "device": device_label(device),
            }
            if graphs:
                row.update(graphed_columns(model, size, repeats, device, seconds))
            rows.append(row)
            print(
                f"[{size_name} B={size['B']} T={size['T']}] {label} "
                f"({model.num_parameters():,} parameters): {seconds:.3f} s/batch, "
                f"load average {os.getloadavg()[0]:.2f}",
                flush=True,
            )
    return rows


def graphed_columns(
    model: nn.Module, size: dict, repeats: int, device: torch.device, eager: float
) -> dict:
    """The CUDA-graph columns of a row: seconds per replayed batch and the speed-up over the
    eager ``eager`` seconds, or the error that stopped the capture."""
    try:
        seconds = time_training_graphed(model, size, repeats, device)
    except Exception as err:  # the model's step cannot be captured: say why
        return {"graphed_seconds_per_batch": "", "graph_speedup": "", "graph_error": repr(err)}
    return {
        "graphed_seconds_per_batch": round(seconds, 5),
        "graph_speedup": round(eager / seconds, 2),
        "graph_error": "",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", choices=list(SIZES), default=list(SIZES))
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats (median)")
    parser.add_argument("--out", type=Path, help="default benchmarks/results/cells[_text].csv")
    parser.add_argument(
        "--text", action="store_true", help="time the paper-size text models (TEXT_SIZES)"
    )
    parser.add_argument(
        "--text-sizes", nargs="+", choices=list(TEXT_SIZES), default=list(TEXT_SIZES)
    )
    parser.add_argument("--time-steps", type=int, help="override T of the text sizes")
    parser.add_argument(
        "--wt2-vocab", type=int, default=1000, help="decoder vocabulary at the wt2 size"
    )
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    parser.add_argument(
        "--graphs", action="store_true", help="--text on CUDA: also time batches from CUDA graphs"
    )
    args = parser.parse_args()
    device = torch.device(args.device)
    if args.graphs and (not args.text or device.type != "cuda"):
        parser.error("--graphs times the --text models on a CUDA --device")
    torch.set_num_threads(1)
    if args.out is None:
        name = "cells_text.csv" if args.text else "cells.csv"
        args.out = Path("benchmarks/results") / name
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    if args.text:
        rows = run_text(args.text_sizes, args.repeats, args.time_steps, device, args.graphs)
    else:
        rows = run(args.sizes, args.repeats, args.wt2_vocab, device)
    print(f"time loops of the custom cells: {native.backend()} (RNNREPRO_KERNELS)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_rows(args.out, rows)

    width = max(26, *(len(r["model"]) for r in rows))
    print(f"\n{'size':7} {'model':{width}} {'tokens/s':>10} {'s/batch':>9} {'× nn.LSTM':>9}")
    for r in rows:
        print(
            f"{r['size']:7} {r['model']:{width}} {r['tokens_per_s']:>10} "
            f"{r['seconds_per_batch']:>9.4f} {r['ratio_to_nn_lstm']:>9.2f}"
        )
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
