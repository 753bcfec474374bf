"""multi_matrix's word models (Tables 1-2, word block; issue 46) trained on a GPU in one device
call, within a budget, with the pipeline's own run settings and scripts (no Snakemake there).

    python tools/gpu_word_track.py --data DIR/ptb_word --out DIR [--budget 500] \\
        [--models rnn lstm lstm_2l mmrnn mmlstm mmlstm_2l lstm_stream] [--device cuda]

Every model named trains at once, one ``rnnrepro.scripts.train`` process each, seed 1, at paper
scale (``rnnrepro.config.run_config``; the code digest is the pipeline's, ``provenance``).
``lstm_stream`` is not a paper model: the LSTM with the training split read as one stream
(``word_context.stream_run``: BPTT 35 over the run's 128 columns, the state carried), the test
of whether the paper's lower cross-entropies come from reading PTB as a stream. A training still
running when the budget's evaluation reserve begins is stopped with SIGTERM (it checkpoints).
Each finished one is evaluated by ``rnnrepro.scripts.evaluate_text`` (its ``metrics.json``, as
the pipeline's rule makes it) and scored under ``ce_readings``' readings (each sentence from a
zero state, and the test set as a stream).

``--out`` gets at most the 8 files a device call brings back:

- ``word_track.csv``: a row per model: finished or why not, epochs, best epoch, test CE (the
  pipeline's), the two readings, parameters, seconds, device, torch, the code digest;
- ``word_epochs.csv``: every epoch each model logged (model, epoch, losses, seconds);
- ``run_<model>.tar``: a finished paper model's ``model.pt``, ``history.csv`` and
  ``metrics.json`` (about 8 MB), to be archived beside the CPU runs
  (``benchmarks/results/multi_matrix_word_gpu``); ``lstm_stream``'s numbers are in the CSVs
  only.

``--max-epochs`` overrides the runs' 200 (a dry run on the CPU; the summary then says so).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pandas as pd
import torch
import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for room in (HERE, ROOT / "studies" / "ce_readings", ROOT / "studies" / "word_context"):
    sys.path.insert(0, str(room))

from ce_readings import STREAM_BPTT, readings  # noqa: E402
from gpu_check import CALL_OUTPUTS, ended_by_itself, epoch_rows, process_start, stop  # noqa: E402
from word_context import stream_run  # noqa: E402

from rnnrepro import config as cfg  # noqa: E402
from rnnrepro.config_check import check_config  # noqa: E402
from rnnrepro.models import read_model_file  # noqa: E402
from rnnrepro.provenance import code_digest, model_module  # noqa: E402

PAPER_MODELS = ("rnn", "lstm", "lstm_2l", "mmrnn", "mmlstm", "mmlstm_2l")
VARIANTS = {"lstm_stream": "lstm"}  # variant -> the paper model whose settings it changes


def settings(config: dict, model: str, max_epochs: int | None) -> tuple[dict, str]:
    """A model's run settings (as the pipeline resolves them at paper scale) and the digest of
    the code its training runs."""
    base = VARIANTS.get(model, model)
    run = cfg.run_config(config, "multi_matrix", "ptb_word", base)
    if model in VARIANTS:
        run = stream_run(run, STREAM_BPTT, run["training"]["batch_size"])
    if max_epochs is not None:
        run["training"]["max_epochs"] = max_epochs
    return run, code_digest("scripts/train.py", model_module(run["architecture"]))


def start(model: str, run: dict, code: str, args: argparse.Namespace, env: dict) -> tuple:
    """Start one training; return (process, its folder)."""
    work = args.work / model
    work.mkdir(parents=True, exist_ok=True)
    identity = {"experiment": "multi_matrix", "dataset": "ptb_word", "model": model, "seed": 1}
    command = [
        sys.executable, "-m", "rnnrepro.scripts.train", "--run", json.dumps(run),
        "--identity", json.dumps({**identity, "stage": "train"}), "--seed", "1",
        "--train", str(args.data / "train.txt"), "--val", str(args.data / "val.txt"),
        "--vocab", str(args.data / "vocab.txt"), "--device", args.device, "--code", code,
        "--checkpoint", str(work / "checkpoint.pt"), "--out-model", str(work / "model.pt"),
        "--out-history", str(work / "history.csv"),
    ]  # fmt: skip
    log = (work / "train.log").open("w")
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT), work


def evaluate(work: Path, args: argparse.Namespace, timeout: float) -> dict:
    """The pipeline's evaluation of a finished run (``metrics.json``) and its readings."""
    command = [
        sys.executable, "-m", "rnnrepro.scripts.evaluate_text", "--model", str(work / "model.pt"),
        "--val", str(args.data / "val.txt"), "--test", str(args.data / "test.txt"),
        "--scale", "paper", "--device", args.device, "--out-metrics", str(work / "metrics.json"),
    ]  # fmt: skip
    subprocess.run(command, check=True, cwd=ROOT, timeout=timeout)
    metrics = json.loads((work / "metrics.json").read_text())
    scored = readings(work / "model.pt", args.data / "test.txt", 128, args.device)
    return {
        "test_ce": metrics["test"]["loss"],
        "val_ce": metrics["val"]["loss"],
        "test_sentences": scored["tokens"],
        "test_stream": scored["stream"],
    }


def summary(
    model: str,
    proc: subprocess.Popen,
    work: Path,
    code: str,
    args: argparse.Namespace,
    end: float,
    device_name: str,
) -> dict:
    """An ended training's row of ``word_track.csv``; a finished paper model's files packed."""
    row = {
        "model": model,
        "finished": proc.returncode == 0,
        "exit_code": proc.returncode,
        "epochs": len(epoch_rows(work / "train.log")),
        "max_epochs": args.max_epochs or 200,
        "device": device_name,
        "torch": torch.__version__,
        "code_train": code,
    }
    if proc.returncode != 0:
        return row
    record = read_model_file(work / "model.pt")
    row |= {"best_epoch": record["best_epoch"], "params": record["params"]["total"]}
    row["train_seconds"] = round(record["train_seconds"], 1)
    try:
        row |= evaluate(work, args, max(end - time.monotonic() - 5.0, 1.0))
    except (subprocess.SubprocessError, OSError) as error:
        return row | {"note": f"evaluation: {type(error).__name__}: {error}"[:300]}
    if model in PAPER_MODELS:
        with tarfile.open(args.out / f"run_{model}.tar", "w") as tar:
            for name in ("model.pt", "history.csv", "metrics.json"):
                tar.add(work / name, arcname=name)
    return row


def main(argv: list[str] | None = None) -> int:
    started = process_start()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="prepared ptb_word folder")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--models", nargs="+", default=list(PAPER_MODELS) + list(VARIANTS))
    parser.add_argument("--budget", type=float, default=500.0, help="seconds, from the start")
    parser.add_argument(
        "--reserve", type=float, default=45.0, help="seconds kept for evaluation at the end"
    )
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--max-epochs", type=int, help="dry runs only (not the paper's 200)")
    parser.add_argument("--config", type=Path, default=ROOT / "config.yaml")
    parser.add_argument("--work", type=Path, default=Path("/tmp/gpu_word_track"))
    args = parser.parse_args(argv)
    unknown = set(args.models) - set(PAPER_MODELS) - set(VARIANTS)
    if unknown:
        parser.error(f"--models: unknown {sorted(unknown)}; known: {PAPER_MODELS + (*VARIANTS,)}")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device here (a dry run: --device cpu)")
    if not (args.data / "vocab.txt").is_file():
        parser.error(f"--data {args.data}: no prepared ptb_word data (vocab.txt)")
    config = yaml.safe_load(args.config.read_text())
    config["scale"] = "paper"
    check_config(config)
    args.out.mkdir(parents=True, exist_ok=True)
    # the compiled CPU loops time nothing on a GPU and take tens of seconds to build
    os.environ.setdefault("RNNREPRO_KERNELS", "python")
    env = {**os.environ, "CUBLAS_WORKSPACE_CONFIG": ":4096:8", "PYTHONUNBUFFERED": "1"}
    end = started + args.budget
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    jobs = {}
    for model in args.models:
        run, code = settings(config, model, args.max_epochs)
        jobs[model] = (*start(model, run, code, args, env), code)
    rows: dict[str, dict] = {}
    # each finished run is evaluated at once, beside the trainings still running
    while len(rows) < len(jobs) and time.monotonic() < end - args.reserve:
        for model, (proc, work, code) in jobs.items():
            if model not in rows and proc.poll() is not None:
                rows[model] = summary(model, proc, work, code, args, end, device_name)
        time.sleep(1.0)
    for model, (proc, work, _) in jobs.items():
        if model not in rows and proc.poll() is None and not ended_by_itself(work / "train.log"):
            proc.terminate()  # SIGTERM: the run checkpoints and exits
    for model, (proc, work, code) in jobs.items():
        if model not in rows:
            stop(proc, max(end - args.reserve / 2 - time.monotonic(), 1.0))
            rows[model] = summary(model, proc, work, code, args, end, device_name)
    epochs = [
        {"model": model, **row}
        for model, (_, work, _) in jobs.items()
        for row in epoch_rows(work / "train.log")
    ]
    rows = [rows[model] for model in jobs]
    pd.DataFrame(rows).to_csv(args.out / "word_track.csv", index=False)
    pd.DataFrame(epochs).to_csv(args.out / "word_epochs.csv", index=False)
    written = sorted(path.name for path in args.out.iterdir())
    assert len(written) <= CALL_OUTPUTS, f"{written}: more files than a device call returns"
    print(pd.DataFrame(rows).to_string(index=False), flush=True)
    print(f"done in {time.monotonic() - started:.0f} s of {args.budget:.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
