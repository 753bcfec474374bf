"""The GPU check: CUDA correctness, cell speed against cuDNN and paper-scale epoch samples in
one call, and memory's LSTM-650 trained at paper settings in another; each call within a
budget, writing CSVs to one folder.

    python tools/gpu_check.py --out DIR [--device cuda] [--budget 210] \\
        [--data results/data] [--config config.yaml] [--work SCRATCH] [--only STEP ...]
    python tools/gpu_check.py --out DIR --only training --budget 330 [--data ...]

``--out`` defaults to ``$RNNREPRO_GPU_CHECK_OUT`` and holds only the CSVs (``OUTPUTS``, at
most the 8 files a device call returns); the tests' XML and the training's checkpoint and log
go to ``--work`` (default: a new temporary folder).

The budget counts from the process's start, and the call ends within it on any device. Each
step (``STEPS``, in the order a lost call would cost most) has a deadline: its weight's share
of what the steps before it left, against the weights of the steps after it. A step stops
itself at its deadline, keeping what it finished, and an alarm stops it a grace period later
if it does not. A failure or an overrun is one ``error`` or ``timeout`` row of ``steps.csv``,
and the next step starts. Every file is rewritten as each row arrives.

1. ``environment``: ``environment.csv``: device, torch, CUDA and cuDNN versions, the float32
   settings (TF32) of the cells' comparison and of the epoch samples, and the CPU loops in use
   (``RNNREPRO_KERNELS``, here ``python`` unless set: the compiled CPU loops time nothing on a
   GPU, and building them costs tens of seconds);
2. ``correctness``: ``tests.csv``: ``tests/test_cuda.py`` (every architecture, CUDA against the
   CPU), one row per test case, and a ``timeout`` row for the rest if it is stopped;
3. ``cells``: ``cells.csv``: every registered model at the Dyck and WikiText-2 benchmark sizes,
   then the paper-size text models (``bench_cells.py``), each against an ``nn.LSTM`` (cuDNN on
   a GPU) of equal size, TF32 off: seconds per batch, tokens/s, ratio, ratio per recurrent
   parameter;
4. ``epochs``: ``epoch_times.csv``: a few timed steps of each paper-scale text model on the
   prepared corpora under ``--data`` (``epoch_times.py``), extrapolated to an epoch, in
   ``sample_order`` (one model of every group that the cost scales from first), with
   PyTorch's float32 defaults, as the pipeline's runs have them; models not timed, and
   datasets that are not there, are listed in ``skipped.csv``;
5. ``translation``: ``epoch_times.csv``: a few training steps of each translation model
   (major_minor Table XII) on random pairs of the lengths ``rnnrepro.cost.translation``
   assumes for WMT'14, an epoch being max_steps / max_epochs steps;
6. ``training_tests``: ``tests.csv``: ``tests/test_cuda_training.py`` and
   ``tests/test_cuda_resume.py`` (each task kind trained on CUDA, resumed after a kill, moved
   between devices);
7. ``graphs``: ``tests.csv`` (``tests/test_cuda_graphs.py``) and ``cells_graphed.csv`` (CUDA
   only): the paper-size text models of ``cells.csv`` again, each batch also replayed from one
   CUDA graph (``bench_cells.time_training_graphed``): how much of a custom cell's gap to
   cuDNN is per-step launch overhead, or the error that stopped its capture.

``--only training`` (its own call, not in the default steps): ``training.csv`` and
``training_summary.csv``: memory's LSTM-650 on PTB (paper 67.2 test perplexity), trial 1 of its
search at paper settings (``--trial K``: another of config.yaml's ten draws of lr and ℓ2),
trained in the budget and stopped with SIGTERM (it checkpoints) if it runs out: its finished
epochs, and its test perplexity if it finished (``evaluate_text``).

``--sample small`` shrinks every step (one repeat, the Dyck size only, one batch per model) so
that the test suite runs the check on a CPU in under a minute (``tests/test_gpu_check.py``).
The CSVs of a GPU run go to ``benchmarks/results/gpu/`` (benchmarks/notes/gpu_check.md);
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
import traceback
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import torch
import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "benchmarks"))  # bench_cells, epoch_times

import bench_cells  # noqa: E402
import epoch_times  # noqa: E402

from rnnrepro import config as cfg  # noqa: E402
from rnnrepro import cost, precision  # noqa: E402
from rnnrepro.config_check import check_config  # noqa: E402
from rnnrepro.cost.translation import WMT14  # noqa: E402
from rnnrepro.fileio import atomic_open  # noqa: E402

TRAINING = ("memory", "ptb_stream", "lstm_650")  # paper: 67.2 test perplexity (Table 1)
PAPER_TEST_PPL = 67.2
# pytest that SIGINT interrupts even where it was started with SIGINT ignored (a background
# job of a non-interactive shell), whose children Python leaves ignoring it
PYTEST_INTERRUPTIBLE = (
    "import signal, sys, pytest; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.exit(pytest.main(sys.argv[1:]))"
)
STOP_WAIT = 10.0  # seconds a child has to end after SIGINT or SIGTERM before it is killed
# what --out holds: a device call returns at most 8 files (scratch goes to --work)
OUTPUTS = (
    "environment.csv",
    "steps.csv",
    "tests.csv",
    "cells.csv",
    "epoch_times.csv",
    "skipped.csv",
    "cells_graphed.csv",
    "training.csv",
    "training_summary.csv",
)
CALL_OUTPUTS = 8  # files one device call brings back
EPOCH_LINE = re.compile(r"^epoch=(\d+) (.*)$")


class OutOfTime(Exception):
    """A step reached its deadline: what it finished is kept, the rest is left out."""


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


def process_start() -> float:
    """``time.monotonic()`` at this process's start (Linux ``/proc``; elsewhere: now), so
    that the budget counts the interpreter's start and imports too."""
    try:
        fields = Path("/proc/self/stat").read_text().rpartition(")")[2].split()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        age = uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.monotonic()
    return time.monotonic() - min(max(age, 0.0), 60.0)


@dataclass(frozen=True)
class Step:
    """One step of a call: ``run(context, deadline)`` yields (file name, row) pairs.
    An ``isolated`` step runs in a process of its own, killed at its hard deadline: one
    long native operation (a CPU backward pass) cannot be interrupted from Python, and a
    failed CUDA operation spoils its process's context, not the next step's."""

    name: str
    weight: float  # its share of the time left, against the steps after it
    run: Callable[[SimpleNamespace, float], Iterator[tuple[str, dict]]]
    isolated: bool = False


class Outputs:
    """The rows of each output file, rewritten as each row arrives."""

    def __init__(self, folder: Path):
        self.folder, self.rows = folder, {}

    def add(self, name: str, row: dict) -> None:
        self.rows.setdefault(name, []).append(row)
        write_csv(self.folder / name, self.rows[name])


def run_steps(steps: list[Step], context: SimpleNamespace, out: Outputs, end: float) -> None:
    """Run ``steps`` in order, each within its deadline, until ``end``; one row per step in
    ``steps.csv``. Each deadline leaves ``grace`` seconds before the hard one: a step that
    stops itself has them to write what it finished."""
    grace = context.grace = max(2.0, 0.04 * context.budget)
    for index, step in enumerate(steps):
        started = time.monotonic()
        weights = sum(s.weight for s in steps[index:])
        left = max(end - grace - started, 0.0)
        deadline = started + left * step.weight / weights if weights else started
        hard = min(deadline + grace, end)
        outcome, message = "ok", ""
        print(f"[{step.name}] {deadline - started:.0f} s", flush=True)
        if step.isolated:
            rows = isolated(step, context, deadline, hard)
        else:
            rows = step.run(context, deadline)
        try:
            for name, row in rows:
                out.add(name, row)
        except (OutOfTime, TimeoutError) as stopped:
            outcome, message = "timeout", str(stopped)
        except Exception as error:  # the next step starts all the same
            outcome, message = "error", f"{type(error).__name__}: {error}"
            traceback.print_exc()
        finally:
            rows.close()  # a step's own clean-up (a child process stopped) runs now
        seconds = time.monotonic() - started
        print(f"[{step.name}] {outcome} in {seconds:.1f} s {message}", flush=True)
        out.add(
            "steps.csv",
            {
                "step": step.name,
                "allotted_seconds": round(deadline - started, 1),
                "seconds": round(seconds, 1),
                "outcome": outcome,
                "message": message[:500],
            },
        )


def isolated(
    step: Step, context: SimpleNamespace, deadline: float, hard: float
) -> Iterator[tuple[str, dict]]:
    """``step`` in a child process (this script with ``--step``), killed at ``hard``: the rows
    it wrote before it ended, then its outcome raised as the step's own would be."""
    rows_file = context.work / f"{step.name}.jsonl"
    rows_file.unlink(missing_ok=True)
    command = [sys.executable, __file__, *context.argv, "--work", str(context.work)]
    command += ["--step", step.name, "--step-deadline", repr(deadline), "--rows", str(rows_file)]
    proc = subprocess.Popen(command, cwd=ROOT)
    killed = False
    try:
        proc.wait(timeout=max(hard - time.monotonic(), 0.1))
    except subprocess.TimeoutExpired:
        killed = True
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    ending = {"outcome": "error", "message": f"the step's process ended with {proc.returncode}"}
    lines = rows_file.read_text().splitlines() if rows_file.is_file() else []
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # the line it was writing when killed
            continue
        if "file" in record:
            yield record["file"], record["row"]
        else:
            ending = record
    if killed:
        raise TimeoutError("killed at the step's hard deadline")
    if ending["outcome"] == "timeout":
        raise OutOfTime(ending["message"])
    if ending["outcome"] != "ok":
        raise RuntimeError(ending["message"])


def run_child(step: Step, context: SimpleNamespace, deadline: float, rows_file: Path) -> int:
    """The child's side of ``isolated``: each row a JSON line as it comes, then the outcome."""
    ending = {"outcome": "ok", "message": ""}
    with rows_file.open("a") as f:
        try:
            for name, row in step.run(context, deadline):
                f.write(json.dumps({"file": name, "row": row}, default=str) + "\n")
                f.flush()
        except OutOfTime as stopped:
            ending = {"outcome": "timeout", "message": str(stopped)}
        except Exception as error:
            traceback.print_exc()
            ending = {"outcome": "error", "message": f"{type(error).__name__}: {error}"}
        f.write(json.dumps(ending) + "\n")
    return 0


@contextmanager
def tf32_off() -> Iterator[None]:
    """Full FP32 inside (``rnnrepro.precision``), the settings before restored after."""
    before = precision.tf32_settings()
    precision.full_fp32()
    try:
        yield
    finally:
        precision.restore(before)


def settings_label(settings: dict[str, str]) -> str:
    return " ".join(f"{name}={value}" for name, value in settings.items())


def environment(context: SimpleNamespace, deadline: float) -> Iterator[tuple[str, dict]]:
    device = context.device
    cuda = device.type == "cuda"
    with tf32_off():
        compared = settings_label(precision.tf32_settings())
    yield (
        "environment.csv",
        {
            "device": bench_cells.device_label(device),
            "torch": torch.__version__,
            "cuda": torch.version.cuda if cuda else "",
            "cudnn": torch.backends.cudnn.version() if cuda else "",
            "python": platform.python_version(),
            "cpu_loops": os.environ.get("RNNREPRO_KERNELS", "auto"),
            "float32_cells_and_tests": compared,
            "float32_epochs_and_training": settings_label(precision.tf32_settings()),
            "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG", ""),
            "host": platform.node(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        },
    )


def cuda_tests(
    work: Path, timeout: float, paths: list[Path], stop_wait: float = STOP_WAIT
) -> list[dict]:
    """Run the test modules ``paths``; one row per test case from pytest's JUnit XML. Past
    ``timeout`` pytest is interrupted (SIGINT, so that it writes the XML of the tests it
    finished; killed ``stop_wait`` seconds later), and a last row says the rest timed out."""
    report = work / f"tests_{paths[0].stem}.xml"
    report.unlink(missing_ok=True)
    command = [sys.executable, "-c", PYTEST_INTERRUPTIBLE, "-q", "-p", "no:cacheprovider"]
    command += [str(p) for p in paths] + [f"--junitxml={report}", "-o", "junit_logging=all"]
    proc = subprocess.Popen(command, cwd=ROOT)
    timed_out = False
    try:
        proc.wait(timeout=max(timeout, 0.1))
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        stop(proc, stop_wait)
    rows = []
    cases = ET.parse(report).iter("testcase") if report.is_file() else ()
    for case in cases:
        if case.get("name") is None:  # the test that was interrupted
            continue
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome, message = child.tag, failure_message(case, child)
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


def failure_message(case: ET.Element, failure: ET.Element) -> str:
    """A failed test's message in at most 500 characters: its first line, where it was raised
    outside the installed packages (the last 3 such frames of the traceback), and any device-side
    assertion the test printed (CUDA reports those asynchronously, at a later call)."""
    first = (failure.get("message") or "").splitlines()[:1]
    frames = re.findall(r"^(\S+\.py:\d+): ", failure.text or "", re.M)
    frames = [frame for frame in frames if "site-packages" not in frame]
    printed = "".join(out.text or "" for out in case if out.tag in ("system-out", "system-err"))
    asserts = [line.strip() for line in printed.splitlines() if "Assertion" in line][:2]
    parts = first + ([f"at {' < '.join(reversed(frames[-3:]))}"] if frames else []) + asserts
    return " | ".join(parts)[:500]


def stop(proc: subprocess.Popen, wait: float = STOP_WAIT) -> None:
    """Wait ``wait`` seconds for ``proc`` (already signalled, or ending), then kill it."""
    try:
        proc.wait(timeout=wait)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_step(*modules: str) -> Callable[[SimpleNamespace, float], Iterator[tuple[str, dict]]]:
    """A step running the test modules ``tests/<module>.py`` until its deadline."""

    def run(context: SimpleNamespace, deadline: float) -> Iterator[tuple[str, dict]]:
        paths = [ROOT / "tests" / f"{module}.py" for module in modules]
        # interrupted at the deadline, pytest has the grace period to write its report
        rows = cuda_tests(context.work, deadline - time.monotonic(), paths, context.grace)
        for row in rows:
            yield "tests.csv", row
        if rows and rows[-1]["outcome"] == "timeout":
            raise OutOfTime(f"{len(rows) - 1} test(s) finished")

    return run


def cells(context: SimpleNamespace, deadline: float) -> Iterator[tuple[str, dict]]:
    """Every model against cuDNN (``bench_cells.run``, ``run_text``), TF32 off: the Dyck size
    and the WikiText-2 size (every cell, with the ratio per recurrent parameter; the cost model
    prices the Dyck runs from the Dyck rows), then the paper-size text models."""
    device = context.device
    if context.small:
        jobs = [lambda: bench_cells.run(["dyck"], 1, 100, device, ("lstm", "attention_lstm"))]
    else:
        jobs = [
            lambda size=size: bench_cells.run([size], 3, 1000, device) for size in ("dyck", "wt2")
        ]
        jobs += [
            lambda size=size: bench_cells.run_text([size], 3, None, device)
            for size in bench_cells.TEXT_SIZES
        ]
    with tf32_off():
        for done, job in enumerate(jobs):
            if time.monotonic() > deadline:
                raise OutOfTime(f"{done} of {len(jobs)} sizes timed")
            for row in job():
                yield "cells.csv", {**row, "float32": "ieee"}


def graphs(context: SimpleNamespace, deadline: float) -> Iterator[tuple[str, dict]]:
    """The paper-size text models' batches eager and replayed from a CUDA graph
    (``bench_cells.run_text(graphs=True)``), models not begun by ``deadline`` left out."""
    if context.device.type != "cuda" or context.small:
        return
    with tf32_off():
        sizes = list(bench_cells.TEXT_SIZES)
        for row in bench_cells.run_text(sizes, 1, None, context.device, True, deadline):
            yield "cells_graphed.csv", row


def epochs(context: SimpleNamespace, deadline: float) -> Iterator[tuple[str, dict]]:
    """Timed samples of every paper-scale text model (of ``--models``) whose data is prepared
    under ``--data``. ``skipped.csv`` lists first the models whose data is not there, then
    (if the step stops itself) those it did not reach. One task per dataset and settings."""
    args = SimpleNamespace(
        data=context.data,
        batches=1 if context.small else 3,
        val_lines=20 if context.small else 300,
        val_tokens=2000 if context.small else 20000,
    )
    order = sample_order(context.config, text_runs(context.config, context.models))
    ready = []
    for experiment, dataset, model_name in order:
        if (context.data / dataset / "vocab.txt").is_file():
            ready.append((experiment, dataset, model_name))
        else:
            key = {"experiment": experiment, "dataset": dataset, "model": model_name}
            yield "skipped.csv", {**key, "why": f"no prepared data in {context.data / dataset}"}
    if len(ready) == len(order):
        yield "skipped.csv", {"experiment": "", "why": "none without data"}
    tasks = {}
    for done, (experiment, dataset, model_name) in enumerate(ready):
        if time.monotonic() > deadline:
            for experiment, dataset, model_name in ready[done:]:
                key = {"experiment": experiment, "dataset": dataset, "model": model_name}
                yield "skipped.csv", {**key, "why": "out of the step's time"}
            raise OutOfTime(f"{done} of {len(ready)} models sampled")
        run = cfg.run_config(context.config, experiment, dataset, model_name)
        task_key = (dataset, json.dumps([run.get(k) for k in TASK_KEYS], sort_keys=True))
        if task_key not in tasks:
            tasks[task_key] = epoch_times.task_of(run, dataset, args, context.device)
        row = epoch_times.measure(
            context.config, experiment, dataset, model_name, args, context.device,
            tasks[task_key],
        )  # fmt: skip
        yield "epoch_times.csv", {**row, "device": bench_cells.device_label(context.device)}
        print(", ".join(f"{k}={v}" for k, v in row.items()), flush=True)


TASK_KEYS = ("task", "text", "training", "dyck")  # what a run's task is built from


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


def translation_models(config: dict, models: list[str] | None) -> list[tuple[str, str, str]]:
    """(experiment, dataset, model) of each translation model (of ``models``, if given)."""
    return [
        (experiment, dataset, name)
        for experiment, entry in config["experiments"].items()
        for name, model in entry["models"].items()
        if cfg.architecture(config, experiment, name) in cfg.TRANSLATION_ARCHITECTURES
        and (not models or name in models)
        for dataset in cfg.datasets(config, experiment)
        if dataset in cfg.model_families(entry, model)
    ]


def translation(context: SimpleNamespace, deadline: float) -> Iterator[tuple[str, dict]]:
    """Timed training steps of each paper-scale translation model (``--sample small``: at
    0.05 of the width, a vocabulary of 500) on random pairs of WMT'14's assumed lengths, the
    batch's target padded as assumed; extrapolated to an epoch (max_steps / max_epochs)."""
    keys = translation_models(context.config, context.models)
    for done, key in enumerate(keys):
        if time.monotonic() > deadline:
            raise OutOfTime(f"{done} of {len(keys)} translation models timed")
        row = translation_row(context.config, *key, context.device, context.small)
        print(", ".join(f"{k}={v}" for k, v in row.items()), flush=True)
        yield "epoch_times.csv", row


def translation_row(
    config: dict, experiment: str, dataset: str, name: str, device: torch.device, small: bool
) -> dict:
    from rnnrepro.evaluation.translation import batch_nll, pair_batch
    from rnnrepro.models import build_model

    lengths = WMT14
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
    return {
        "experiment": experiment,
        "dataset": cfg.family(dataset),
        "model": name + (" (small sample)" if small else ""),
        "params": net.num_parameters(),
        "batches_per_epoch": steps,
        "seconds_per_batch": round(per_batch, 4),
        "train_seconds": round(per_batch * steps, 1),
        "val_seconds": "",
        "epoch_seconds": round(per_batch * steps, 1),
        "load_average": round(os.getloadavg()[0], 2),
        "device": bench_cells.device_label(device),
    }


def training(context: SimpleNamespace, deadline: float) -> Iterator[tuple[str, dict]]:
    """TRAINING at paper settings (search trial ``context.trial``) until ``deadline``: its epochs
    as they finish, and a summary, with its test perplexity if it finished and the evaluation
    fits too."""
    folder = context.data / TRAINING[1]
    if not (folder / "vocab.txt").is_file():
        raise FileNotFoundError(f"no prepared data in {folder}")
    experiment, dataset, model = TRAINING
    run = cfg.run_config(context.config, experiment, dataset, model, trial=context.trial)
    work = context.work / "training"
    work.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable, "-m", "rnnrepro.scripts.train", "--run", json.dumps(run), "--seed", "1",
        "--device", str(context.device), "--train", str(folder / "train.txt"),
        "--val", str(folder / "val.txt"), "--vocab", str(folder / "vocab.txt"),
        "--checkpoint", str(work / "checkpoint.pt"), "--out-model", str(work / "model.pt"),
        "--out-history", str(work / "history.csv"),
        "--identity", json.dumps({"experiment": experiment, "dataset": dataset, "model": model,
                                  "seed": 1, "stage": "train", "trial": context.trial}),
    ]  # fmt: skip
    env = {**os.environ, "CUBLAS_WORKSPACE_CONFIG": ":4096:8", "PYTHONUNBUFFERED": "1"}
    started = time.monotonic()
    # the test evaluation's room: a CPU pass over PTB's test stream takes about a minute
    evaluation = 20.0 if context.device.type == "cuda" else 0.25 * (deadline - started)
    log_path = work / "train.log"
    seen = 0
    with log_path.open("w") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        try:
            while proc.poll() is None and time.monotonic() < deadline - evaluation:
                time.sleep(1.0)
                for row in epoch_rows(log_path)[seen:]:
                    seen += 1
                    yield "training.csv", row
        finally:
            if proc.poll() is None and not ended_by_itself(log_path):
                proc.send_signal(signal.SIGTERM)  # checkpoints and exits
            # it has until the step's hard deadline to write its checkpoint, then it is killed
            stop(proc, max(deadline + context.grace - time.monotonic(), 0.5))
    for row in epoch_rows(log_path)[seen:]:
        yield "training.csv", row
    finished = proc.returncode == 0
    test_ppl, note = "", ""
    if finished:
        metrics = work / "metrics.json"
        command = [
            sys.executable, "-m", "rnnrepro.scripts.evaluate_text", "--model",
            str(work / "model.pt"), "--val", str(folder / "val.txt"), "--test",
            str(folder / "test.txt"), "--scale", context.config["scale"], "--device",
            str(context.device), "--out-metrics", str(metrics),
        ]  # fmt: skip
        try:
            subprocess.run(command, check=True, cwd=ROOT, timeout=deadline - time.monotonic())
            test_ppl = json.loads(metrics.read_text())["test"]["ppl"]
        except subprocess.TimeoutExpired:
            note = "trained; the test evaluation did not fit the budget"
    yield (
        "training_summary.csv",
        {
            "model": "/".join(TRAINING),
            "trial": context.trial,
            "lr": run["training"]["lr"],
            "weight_decay": run["training"]["weight_decay"],
            "exit_code": proc.returncode,
            "finished": finished,
            # the last validation's epoch (a recipe with eval_every validates inside epochs)
            "epochs": int(epoch_rows(log_path)[-1]["epoch"]) if epoch_rows(log_path) else 0,
            "wall_seconds": round(time.monotonic() - started, 1),
            "max_epochs": run["training"]["max_epochs"],
            "test_ppl": test_ppl,
            "paper_test_ppl": PAPER_TEST_PPL,
            "note": note,
        },
    )


def ended_by_itself(log: Path) -> bool:
    """Whether a training has logged the end of its epochs (``rnnrepro.training.train``'s
    ``stopped:`` line): it is writing its model and history and is not to be stopped. A
    SIGTERM then would kill it mid-write, past the handler that turns one into a checkpoint
    (seen: a run that stopped early at the deadline, its model written, reported as exit -15)."""
    return any(line.startswith("stopped: ") for line in log.read_text().splitlines())


def epoch_rows(log: Path) -> list[dict]:
    """The ``epoch=N key=value ...`` lines a training has logged so far."""
    rows = []
    for line in log.read_text().splitlines():
        if m := EPOCH_LINE.match(line):
            fields = dict(item.split("=", 1) for item in m.group(2).split())
            rows.append({"epoch": int(m.group(1)), **fields})
    return rows


# The check's steps in the order a lost call would cost most, weighted by the seconds each
# takes of a 210 s budget on one GPU (estimates: none has run on one yet)
STEPS = [
    Step("environment", 2, environment),
    Step("correctness", 30, test_step("test_cuda")),
    Step("cells", 40, cells, isolated=True),
    Step("epochs", 60, epochs, isolated=True),
    Step("translation", 12, translation, isolated=True),
    Step("training_tests", 45, test_step("test_cuda_training", "test_cuda_resume")),
    Step("graph_tests", 6, test_step("test_cuda_graphs")),
    Step("graphs", 15, graphs, isolated=True),
]
TRAINING_STEPS = [Step("environment", 1, environment), Step("training", 99, training)]
STEP_NAMES = [step.name for step in STEPS] + ["training"]


def main(argv: list[str] | None = None) -> int:
    started = process_start()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=os.environ.get("RNNREPRO_GPU_CHECK_OUT"))
    parser.add_argument("--device", default="cuda")
    parser.add_argument(
        "--budget", type=float, default=210.0, help="seconds for the whole call, from its start"
    )
    parser.add_argument("--data", type=Path, default=ROOT / "results" / "data")
    parser.add_argument("--config", type=Path, default=ROOT / "config.yaml")
    parser.add_argument("--sample", choices=("full", "small"), default="full")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=STEP_NAMES,
        help="run these steps only (the environment is always written); 'training' is its "
        "own call: --only training",
    )
    parser.add_argument("--skip", nargs="+", choices=STEP_NAMES, default=[])
    parser.add_argument("--models", nargs="*", help="sample the epochs of these models only")
    parser.add_argument(
        "--trial", type=int, default=1, help="training: the search trial of the LSTM-650 (1-10)"
    )
    parser.add_argument(
        "--work",
        type=Path,
        help="scratch: the tests' XML, the training's checkpoint and log (default: a new "
        "temporary folder; --out holds only the CSVs, which a device call returns)",
    )
    # a step's own process (``isolated``): its name, deadline (monotonic) and rows file
    parser.add_argument("--step", choices=STEP_NAMES, help=argparse.SUPPRESS)
    parser.add_argument("--step-deadline", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--rows", type=Path, help=argparse.SUPPRESS)
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    if args.out is None:
        parser.error("give --out or set RNNREPRO_GPU_CHECK_OUT")
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device here (use --device cpu --sample small)")
    end = started + args.budget
    if device.type == "cpu":  # one core per job, as the pipeline's local profile runs them
        torch.set_num_threads(1)
    # the CPU side of the CUDA tests runs the Python loops (the oracle); building the compiled
    # CPU loops would take tens of seconds of the budget and time nothing on the GPU
    os.environ.setdefault("RNNREPRO_KERNELS", "python")
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    work = args.work or Path(tempfile.mkdtemp(prefix="gpu_check_"))
    config = yaml.safe_load(args.config.read_text())
    config["scale"] = "paper"
    context = SimpleNamespace(
        device=device, data=args.data, config=config, work=work, budget=args.budget,
        small=args.sample == "small", models=args.models, argv=argv, trial=args.trial,
    )  # fmt: skip
    if args.step:
        by_name = {step.name: step for step in STEPS + TRAINING_STEPS}
        return run_child(by_name[args.step], context, args.step_deadline, args.rows)
    check_config(config)
    args.out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    print(f"scratch in {work}", flush=True)
    wanted = set(args.only or [step.name for step in STEPS]) - set(args.skip)
    if device.type != "cuda":
        wanted.discard("graphs")  # CUDA graphs need CUDA
    steps = [
        step
        for step in (TRAINING_STEPS if "training" in wanted else STEPS)
        if step.name in wanted | {"environment"}
    ]
    if "training" in wanted and len(wanted) > 1:
        parser.error("--only training is a call of its own")
    run_steps(steps, context, Outputs(args.out), end)
    written = sorted(path.name for path in args.out.iterdir())
    assert len(written) <= CALL_OUTPUTS, f"{written}: more files than a device call returns"
    print(f"done in {time.monotonic() - started:.0f} s of {args.budget:.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
