"""Dynamic evaluation of a trained stream language model on its validation and test splits.

Called by the ``dynamic_eval`` rule with the run's last stage's model (after fine-tuning) and
``--settings``, the JSON of ``dynamic_eval.<name>``. Each split starts from the trained weights.
In MoS's mode (``mode: mos``) the weight-drop masks are seeded from the run's seed (recorded in the
model file), window by window; the metrics record the mode (``dynamic_eval_mode``).
The job checkpoints (``--checkpoint``, outside the declared outputs) after the gradient
statistics, every ``--save-every`` seconds and on SIGTERM/SIGUSR1, and a rerun resumes to the
same numbers; the metrics file is written last, atomically.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import sys
import time
from pathlib import Path

import torch

from rnnrepro.data.batching import read_stream
from rnnrepro.devices import select_device
from rnnrepro.evaluation import run_identity, run_summary
from rnnrepro.evaluation.dynamic import (
    DynamicEvalSettings,
    Progress,
    adapt,
    decay_rates,
    every,
    gradient_statistics,
    summary,
)
from rnnrepro.fileio import atomic_open, save_torch
from rnnrepro.models import load_model
from rnnrepro.models.base import map_state
from rnnrepro.training import catch_signals, read_checkpoint

SPLITS = ("val", "test")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="model file of the run's last stage")
    parser.add_argument("--settings", required=True, help="dynamic_eval settings as JSON")
    parser.add_argument("--train", required=True, help="training split (gradient statistics)")
    parser.add_argument("--val", required=True)
    parser.add_argument("--test", required=True)
    parser.add_argument("--scale", required=True, help="the config scale, for the record")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads for torch")
    parser.add_argument("--checkpoint", required=True, help="resumable progress file")
    parser.add_argument("--code", default="", help="digest of the code (rnnrepro.provenance)")
    parser.add_argument("--save-every", type=float, default=600.0, help="seconds")
    parser.add_argument("--out", required=True, help="metrics JSON")
    return parser.parse_args(argv)


def digest(args: argparse.Namespace) -> str:
    """Hash of what defines the result: settings, model, data and code."""
    h = hashlib.sha256(json.dumps(json.loads(args.settings), sort_keys=True).encode())
    for path in (args.model, args.train, args.val, args.test):
        h.update(Path(path).read_bytes())
    h.update(args.code.encode())
    return h.hexdigest()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = DynamicEvalSettings.from_dict(json.loads(args.settings))
    device = select_device(args.device)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)  # Krause's mode samples nothing; MoS's seeds its masks per window
    model, record = load_model(args.model, map_location=str(device))
    seed = run_identity(args.model, record)["seed"]
    vocab = record["vocab"]
    index = {token: i for i, token in enumerate(vocab)}
    streams = {
        split: read_stream(path, index)
        for split, path in (("train", args.train), ("val", args.val), ("test", args.test))
    }
    for split in SPLITS:  # reduced scales
        streams[split] = streams[split][: settings.max_eval_tokens]
    theta0 = {n: p.detach().clone() for n, p in model.named_parameters()}
    key, checkpoint = digest(args), Path(args.checkpoint)
    saved = read_checkpoint(checkpoint, print)  # an unreadable one is set aside
    if saved is not None and saved["digest"] != key:
        print(f"ignoring {checkpoint}: it belongs to other settings, model, data or code")
        saved = None
    # cuDNN's LSTM has no backward in eval mode; the native kernel does (dropout stays off but
    # for MoS's mode's weight drop)
    no_cudnn = (
        torch.backends.cudnn.flags(enabled=False)
        if device.type == "cuda"
        else contextlib.nullcontext()
    )
    started = time.perf_counter()
    with no_cudnn, catch_signals() as received:
        if saved is None:
            print(f"gradient statistics on {len(streams['train'])} training tokens", flush=True)
            ms = gradient_statistics(model, streams["train"], settings, device, seed)
            saved = {"digest": key, "ms": ms, "results": {}, "split": None, "seconds": 0.0}
            save_torch(saved, checkpoint)
        else:
            print(f"resuming from {checkpoint}: done {sorted(saved['results'])}", flush=True)
        ms = {n: m.to(device) for n, m in saved["ms"].items()}
        decay = decay_rates(ms, settings.lamb)
        due = every(args.save_every)
        for split in SPLITS:
            if split in saved["results"]:
                continue
            progress = Progress()
            if saved["split"] is not None and saved["split"]["name"] == split:
                model.load_state_dict(saved["split"]["model"])
                progress = Progress(
                    **{k: v for k, v in saved["split"].items() if k not in ("name", "model")}
                )
                progress.state = map_state(lambda t: t.to(device), progress.state)
            else:
                with torch.no_grad():
                    for name, p in model.named_parameters():
                        p.copy_(theta0[name])
            while not adapt(
                model,
                streams[split],
                ms,
                decay,
                theta0,
                settings,
                progress,
                device,
                should_stop=lambda: bool(received) or due(),
                seed=seed,
                stream=split,
            ):
                saved["split"] = {
                    "name": split,
                    "model": model.state_dict(),
                    **{k: getattr(progress, k) for k in ("windows", "nll", "tokens", "state")},
                }
                saved["seconds"] += time.perf_counter() - started
                started = time.perf_counter()
                save_torch(saved, checkpoint)
                print(f"{split}: checkpoint after {progress.windows} windows", flush=True)
                if received:
                    print(f"interrupted; rerun to resume from {checkpoint}", flush=True)
                    return 128 + received[0]
            saved["results"][split] = summary(progress)
            saved["split"] = None
            save_torch(saved, checkpoint)
            print(f"{split}: {saved['results'][split]}", flush=True)
    saved["seconds"] += time.perf_counter() - started
    metrics = {
        **run_summary(args.model, record),
        "stage": "dynamic_eval",
        "evaluated_stage": record["identity"]["stage"],
        "run": record["run"],
        "scale": args.scale,
        "dynamic_eval": json.loads(args.settings),
        "dynamic_eval_mode": settings.mode,
        "dynamic_eval_seconds": saved["seconds"],
        **saved["results"],
    }
    with atomic_open(args.out, "w") as f:
        f.write(json.dumps(metrics, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
