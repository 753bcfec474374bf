"""The GPU check: CUDA correctness, cell speed against cuDNN, paper-scale epoch samples and one
paper-scale training, in one call that fits a budget (default 300 s), writing CSVs to one folder.

    python benchmarks/gpu_check.py --out DIR [--device cuda] [--budget 300] \\
        [--data results/data] [--config config.yaml] [--work SCRATCH]

``--out`` defaults to ``$RNNREPRO_GPU_CHECK_OUT`` and holds only the CSVs (``OUTPUTS``, at
most the 8 files a device call returns); the tests' XML and the training's checkpoint and log
go to ``--work`` (default: a new temporary folder). Steps, each written as soon as it is done:

1. ``environment.csv``: device, torch, CUDA and cuDNN versions, and the CPU loops in use
   (``RNNREPRO_KERNELS``, here ``python`` unless set: the compiled CPU loops time nothing on
   a GPU, and building them costs tens of seconds);
2. ``tests.csv``: the CUDA tests (``tests/test_cuda*.py``), one row per test, within
   ``TESTS_SHARE`` of the budget (past it, the finished tests' rows and one ``timeout`` row;
   ``--skip-tests`` leaves them out; on a CPU they would only be skipped);
3. ``cells.csv``: every registered model at the Dyck and WikiText-2 benchmark sizes and the
   paper-size text models (``bench_cells.py``), each against an ``nn.LSTM`` (cuDNN on a GPU)
   of equal size: seconds per batch, tokens/s, ratio, ratio per recurrent parameter;
4. ``epoch_times.csv``: a few timed steps of each paper-scale text model on the prepared
   corpora under ``--data`` (``epoch_times.py``), extrapolated to an epoch, within
   ``EPOCHS_SHARE`` of what is left, in ``sample_order`` (every group that the cost scales
   from first); models not timed, and datasets that are not there, are listed in
   ``skipped.csv``; and of each translation model (major_minor Table
   XII) on random pairs of the lengths ``rnnrepro.translation_cost`` assumes for WMT'14, an
   epoch being max_steps / max_epochs steps (the measured rate then prices their runs);
5. ``cells_graphed.csv`` (CUDA only): the paper-size text models of ``cells.csv`` again, each
   batch also replayed from one CUDA graph (``bench_cells.time_training_graphed``), within
   ``GRAPHS_SHARE``: how much of a custom cell's gap to cuDNN is per-step launch overhead, or
   the error that stopped its capture;
6. ``training.csv``, ``training_summary.csv``: memory's LSTM-650 on PTB (paper 67.2 test
   perplexity), trial 1 of its search at paper settings, trained in what is left of the budget
   and stopped with SIGTERM (it checkpoints) if the budget runs out: its finished epochs, and
   its test perplexity if it finished (``evaluate_text``).

``--sample small`` shrinks every step (one repeat, the Dyck size only, one batch per model) so
that the test suite runs the whole check on a CPU in under a minute (``tests/test_gpu_check.py``).
The CSVs of a GPU run go to ``benchmarks/results/gpu/`` (benchmarks/README.md, "GPU check");
``cells.csv`` and ``epoch_times.csv`` there are the GPU tables ``rnnrepro.resources`` and
``rnnrepro.scripts.estimate_cost`` read.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import torch
import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import bench_cells  # noqa: E402
import epoch_times  # noqa: E402

from rnnrepro import config as cfg  # noqa: E402
from rnnrepro import cost, translation_cost  # noqa: E402
from rnnrepro.fileio import atomic_open  # noqa: E402

TRAINING = ("memory", "ptb_stream", "lstm_650")  # paper: 67.2 test perplexity (Table 1)
TESTS_SHARE = 0.3  # of the budget, at most, for the CUDA tests
EPOCHS_SHARE = 0.5  # of what the tests and cells leave, for the epoch samples (they price runs)
GRAPHS_SHARE = 0.15  # of the same, for the text models replayed from CUDA graphs (after them)
# pytest that SIGINT interrupts even where it was started with SIGINT ignored (a background
# job of a non-interactive shell), whose children Python leaves ignoring it
PYTEST_INTERRUPTIBLE = (
    "import signal, sys, pytest; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.exit(pytest.main(sys.argv[1:]))"
)
# what --out holds: a device call returns at most 8 files (scratch goes to --work)
OUTPUTS = (
    "environment.csv",
    "tests.csv",
    "cells.csv",
    "epoch_times.csv",
    "skipped.csv",
    "cells_graphed.csv",
    "training.csv",
    "training_summary.csv",
)
EPOCH_LINE = re.compile(r"^epoch=(\d+) (.*)$")


def write_csv(path: Path, rows: list[dict]) -> None:
    """Write ``rows`` (the union of their keys as columns) atomically; ``path`` is named in
    ``OUTPUTS``."""
    if path.name not in OUTPUTS:
        raise ValueError(f"{path.name}: not one of gpu_check.OUTPUTS")
    columns = list(dict.fromkeys(key for row in rows for key in row))
    with atomic_open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {path} ({len(rows)} rows)", flush=True)


def environment(device: torch.device) -> list[dict]:
    cuda = device.type == "cuda"
    return [
        {
            "device": bench_cells.device_label(device),
            "torch": torch.__version__,
            "cuda": torch.version.cuda if cuda else "",
            "cudnn": torch.backends.cudnn.version() if cuda else "",
            "python": platform.python_version(),
            "cpu_loops": os.environ.get("RNNREPRO_KERNELS", "auto"),
            "host": platform.node(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
    ]


def cuda_tests(work: Path, timeout: float, paths: list[Path] | None = None) -> list[dict]:
    """Run the CUDA test modules (or ``paths``); one row per test case from pytest's JUnit XML.
    Past ``timeout`` pytest is interrupted (SIGINT, so that it writes the XML of the tests it
    finished), and a last row says the rest timed out."""
    report = work / "tests.xml"
    report.unlink(missing_ok=True)
    paths = paths or sorted((ROOT / "tests").glob("test_cuda*.py"))
    command = [sys.executable, "-c", PYTEST_INTERRUPTIBLE, "-q", "-p", "no:cacheprovider"]
    command += [str(p) for p in paths] + [f"--junitxml={report}"]
    proc = subprocess.Popen(command, cwd=ROOT)
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    rows = []
    cases = ET.parse(report).iter("testcase") if report.is_file() else ()
    for case in cases:
        if case.get("name") is None:  # the test that was interrupted
            continue
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome, message = child.tag, (child.get("message") or "")[:300]
        rows.append(
            {
                "test": f"{case.get('classname')}::{case.get('name')}",
                "outcome": outcome,
                "seconds": case.get("time"),
                "message": message,
            }
        )
    if timed_out:
        rows.append({"test": "(the rest)", "outcome": "timeout", "seconds": timeout, "message": ""})
    return rows


def cell_rows(device: torch.device, small: bool) -> list[dict]:
    if small:
        return bench_cells.run(["dyck"], 1, 100, device, names=("lstm", "attention_lstm"))
    rows = bench_cells.run(["dyck", "wt2"], 3, 1000, device)
    return rows + bench_cells.run_text(list(bench_cells.TEXT_SIZES), 3, None, device)


def graph_rows(device: torch.device, deadline: float) -> list[dict]:
    """The paper-size text models' batches eager and replayed from a CUDA graph
    (``bench_cells.run_text(graphs=True)``); models not reached by ``deadline`` are left out.
    It runs after every other in-process step: a failed capture cannot spoil them."""
    return bench_cells.run_text(list(bench_cells.TEXT_SIZES), 1, None, device, True, deadline)


def epoch_rows(
    config: dict,
    data: Path,
    device: torch.device,
    small: bool,
    deadline: float,
    models: list[str] | None = None,
):
    """Timed samples of every paper-scale text model (of ``models``, if given) whose data is
    prepared under ``data``."""
    args = SimpleNamespace(
        data=data,
        batches=1 if small else 3,
        val_lines=20 if small else 300,
        val_tokens=2000 if small else 20000,
    )
    measured, skipped = [], []
    for experiment, dataset, model_name in sample_order(config, text_runs(config, models)):
        key = {"experiment": experiment, "dataset": dataset, "model": model_name}
        if not (data / dataset / "vocab.txt").is_file():
            skipped.append({**key, "why": f"no prepared data in {data / dataset}"})
        elif time.monotonic() > deadline:
            skipped.append({**key, "why": "out of the step's time"})
        else:
            row = epoch_times.measure(config, experiment, dataset, model_name, args, device)
            measured.append({**row, "device": bench_cells.device_label(device)})
            print(", ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    return measured, skipped


def text_runs(config: dict, models: list[str] | None = None) -> list[tuple[str, str, str]]:
    """(experiment, dataset timed, model) of every text model (of ``models``, if given)."""
    return [
        (experiment, dataset, name)
        for experiment, entry in config["experiments"].items()
        for name, model in entry["models"].items()
        if not models or name in models
        for family in cfg.model_families(entry, model)
        if (dataset := epoch_times.FAMILY_DATASET.get(family)) is not None
    ]


def sample_order(config: dict, keys: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """``keys`` (experiment, dataset, model) in the order to time them, so that a step cut short
    still prices as many runs as it can: ``cost.scaled_epoch`` scales an unmeasured run from a
    measured one of its group (experiment, family, architecture, batch size). Groups take turns,
    the experiments' first groups first, then their second ones, and so on; each group gives
    its largest model at its first turn, its smallest at its second, then the others largest
    first."""
    groups: dict[tuple, list[tuple[int, tuple[str, str, str]]]] = {}
    for experiment, dataset, model in keys:
        try:
            architecture, batch, count = cost.run_size(config, experiment, dataset, model)
        except ValueError:  # no parameter formula: nothing scales from it; its own group
            architecture, batch, count = model, 0, 0
        group = (experiment, cfg.family(dataset), architecture, batch)
        groups.setdefault(group, []).append((count, (experiment, dataset, model)))
    by_experiment: dict[str, list[list[tuple[str, str, str]]]] = {}
    for group, members in groups.items():
        members.sort(key=lambda member: -member[0])  # stable: config order among equals
        by_size = [key for _, key in members]
        by_size.insert(1, by_size.pop())  # the smallest second
        by_experiment.setdefault(group[0], []).append(by_size)
    return take_turns(take_turns(list(by_experiment.values())))


def take_turns(lists: list[list]) -> list:
    """The first item of each list, then the second of each, and so on."""
    longest = max(map(len, lists), default=0)
    return [items[k] for k in range(longest) for items in lists if k < len(items)]


def translation_rows(
    config: dict, device: torch.device, small: bool, models: list[str] | None = None
) -> list[dict]:
    """Timed training steps of each paper-scale translation model (``--sample small``: at
    0.05 of the width, a vocabulary of 500) on random pairs of WMT'14's assumed lengths, the
    batch's target padded as assumed; extrapolated to an epoch (max_steps / max_epochs)."""
    from rnnrepro.evaluation.translation import batch_nll, pair_batch
    from rnnrepro.models import build_model

    lengths, rows = translation_cost.WMT14, []
    for experiment, entry in config["experiments"].items():
        for name, model in entry["models"].items():
            translates = cfg.architecture(config, experiment, name) in cfg.TRANSLATION_ARCHITECTURES
            if not translates or (models and name not in models):
                continue
            for dataset in cfg.datasets(config, experiment):
                if dataset not in cfg.model_families(entry, model):
                    continue
                run = cfg.run_config(config, experiment, dataset, name)
                hparams, vocab = dict(run["hparams"]), run["translation"]["vocab_size"]
                if small:
                    hparams["embedding_dim"] = 50
                    hparams["layer_sizes"] = [round(0.05 * s) for s in hparams["layer_sizes"]]
                    vocab = 500
                torch.manual_seed(0)
                net = build_model(run["architecture"], ["<pad>"] * vocab, **hparams).to(device)
                optimizer = torch.optim.SGD(net.parameters(), lr=run["training"]["lr"])
                batch_size = run["training"]["batch_size"]
                source, target = int(lengths.source), int(lengths.target)
                longest = round(lengths.target_padding * (target + 1)) - 1
                pairs = [
                    (
                        torch.randint(4, vocab, (source,)).tolist(),
                        torch.randint(4, vocab, (longest if b == 0 else target,)).tolist(),
                    )
                    for b in range(batch_size)
                ]
                batch = pair_batch(pairs, 1, 2, device)
                times = []
                for _ in range(2 if small else 4):  # the first warms up
                    start = time.perf_counter()
                    optimizer.zero_grad(set_to_none=True)
                    (batch_nll(net, batch) / batch_size).backward()
                    torch.nn.utils.clip_grad_norm_(net.parameters(), 5.0)
                    optimizer.step()
                    if device.type == "cuda":
                        torch.cuda.synchronize()
                    times.append(time.perf_counter() - start)
                per_batch = sum(times[1:]) / len(times[1:])
                steps = run["translation"]["max_steps"] // run["training"]["max_epochs"]
                row = {
                    "experiment": experiment,
                    "dataset": cfg.family(dataset),
                    "model": name,
                    "params": net.num_parameters(),
                    "batches_per_epoch": steps,
                    "seconds_per_batch": round(per_batch, 4),
                    "train_seconds": round(per_batch * steps, 1),
                    "val_seconds": "",
                    "epoch_seconds": round(per_batch * steps, 1),
                    "load_average": round(os.getloadavg()[0], 2),
                    "device": bench_cells.device_label(device),
                }
                if small:
                    row["model"] += " (small sample)"
                rows.append(row)
                print(", ".join(f"{k}={v}" for k, v in row.items()), flush=True)
                del net, optimizer
    return rows


def train_until(config: dict, data: Path, device: str, work: Path, seconds: float):
    """Train TRAINING at paper settings (trial 1) for at most ``seconds``: its epochs, and a
    summary with its test perplexity if it finished."""
    experiment, dataset, model = TRAINING
    run = cfg.run_config(config, experiment, dataset, model, trial=1)
    folder = data / dataset
    command = [
        sys.executable, "-m", "rnnrepro.scripts.train", "--run", json.dumps(run), "--seed", "1",
        "--device", device, "--train", str(folder / "train.txt"), "--val", str(folder / "val.txt"),
        "--vocab", str(folder / "vocab.txt"), "--checkpoint", str(work / "checkpoint.pt"),
        "--out-model", str(work / "model.pt"), "--out-history", str(work / "history.csv"),
        "--identity", json.dumps({"experiment": experiment, "dataset": dataset, "model": model,
                                  "seed": 1, "stage": "train", "trial": 1}),
    ]  # fmt: skip
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CUBLAS_WORKSPACE_CONFIG": ":4096:8"}
    started = time.monotonic()
    with (work / "train.log").open("w") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        try:
            proc.wait(timeout=max(seconds, 1))
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)  # checkpoints and exits
            proc.wait()
    rows = []
    for line in (work / "train.log").read_text().splitlines():
        if m := EPOCH_LINE.match(line):
            fields = dict(item.split("=", 1) for item in m.group(2).split())
            rows.append({"epoch": int(m.group(1)), **fields})
    finished = proc.returncode == 0
    test_ppl = ""
    if finished:
        metrics = work / "metrics.json"
        subprocess.run(
            [sys.executable, "-m", "rnnrepro.scripts.evaluate_text", "--model",
             str(work / "model.pt"), "--val", str(folder / "val.txt"), "--test",
             str(folder / "test.txt"), "--scale", config["scale"], "--device", device,
             "--out-metrics", str(metrics)],
            check=True, cwd=ROOT,
        )  # fmt: skip
        test_ppl = json.loads(metrics.read_text())["test"]["ppl"]
    summary = {
        "model": "/".join(TRAINING),
        "exit_code": proc.returncode,
        "finished": finished,
        "wall_seconds": round(time.monotonic() - started, 1),
        "max_epochs": run["training"]["max_epochs"],
        "test_ppl": test_ppl,
        "paper_test_ppl": 67.2,
    }
    return rows, [summary]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=os.environ.get("RNNREPRO_GPU_CHECK_OUT"))
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--budget", type=float, default=300.0, help="seconds for the whole check")
    parser.add_argument("--data", type=Path, default=ROOT / "results" / "data")
    parser.add_argument("--config", type=Path, default=ROOT / "config.yaml")
    parser.add_argument("--sample", choices=("full", "small"), default="full")
    parser.add_argument("--skip-tests", action="store_true")
    parser.add_argument("--models", nargs="*", help="sample the epochs of these models only")
    parser.add_argument(
        "--work",
        type=Path,
        help="scratch: the tests' XML, the training's checkpoint and log (default: a new "
        "temporary folder; --out holds only the CSVs, which a device call returns)",
    )
    args = parser.parse_args(argv)
    if args.out is None:
        parser.error("give --out or set RNNREPRO_GPU_CHECK_OUT")
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device here (use --device cpu --sample small)")
    deadline = time.monotonic() + args.budget
    # the CPU side of the CUDA tests runs the Python loops (the oracle); building the compiled
    # CPU loops would take tens of seconds of the budget and time nothing on the GPU
    os.environ.setdefault("RNNREPRO_KERNELS", "python")
    small = args.sample == "small"
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.work or Path(tempfile.mkdtemp(prefix="gpu_check_"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"scratch in {work}", flush=True)
    config = yaml.safe_load(args.config.read_text())
    config["scale"] = "paper"
    cfg.check(config)
    write_csv(args.out / "environment.csv", environment(device))
    if not args.skip_tests:
        write_csv(args.out / "tests.csv", cuda_tests(work, TESTS_SHARE * args.budget))
    write_csv(args.out / "cells.csv", cell_rows(device, small))
    graphs_seconds = GRAPHS_SHARE * (deadline - time.monotonic())
    step_end = time.monotonic() + EPOCHS_SHARE * (deadline - time.monotonic())
    measured, skipped = epoch_rows(config, args.data, device, small, step_end, args.models)
    write_csv(args.out / "epoch_times.csv", measured)
    measured += translation_rows(config, device, small, args.models)
    write_csv(args.out / "epoch_times.csv", measured)
    write_csv(args.out / "skipped.csv", skipped or [{"experiment": "", "why": "none skipped"}])
    if device.type == "cuda" and not small:
        graphed = graph_rows(device, time.monotonic() + graphs_seconds)
        write_csv(args.out / "cells_graphed.csv", graphed)
    if (args.data / TRAINING[1] / "vocab.txt").is_file():
        left = deadline - time.monotonic() - 15  # room for the test evaluation
        epochs, summary = train_until(config, args.data, args.device, work / "training", left)
        write_csv(args.out / "training.csv", epochs)
        write_csv(args.out / "training_summary.csv", summary)
    print(f"done in {args.budget - (deadline - time.monotonic()):.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
