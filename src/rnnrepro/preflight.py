"""Checks made once the jobs of a run are planned and before any of them starts (``onstart``:
``plan_problem`` runs them on the planned jobs, in this order).

- ``device_problem``: a ``device`` naming CUDA (``cuda``, ``cuda:N``) must exist on this
  machine when the jobs run here, so that no job starts (and Snakemake deletes no finished
  output of a forced job) only to fail on a missing GPU; a cluster run plans here and trains on
  the GPU nodes, and is not checked.
- ``unavailable``: every corpus file a planned ``download`` job needs must be in the data mirror
  or its source URL must answer, so that an offline run stops at once instead of after hours of
  training the jobs that need no corpus.
- ``check_writable``: the checkpoint directory of the jobs that write checkpoints.
- ``cost_summary``: the training jobs about to run and, at paper scale, the expected
  device-hours from the measured cost model (``rnnrepro.cost``; translation runs from their
  counted FLOPs, with their GPU-hours at an assumed rate).

Light imports only (no torch): this runs inside the Snakemake process.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
from collections.abc import Collection, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.error import HTTPError, URLError
from urllib.request import Request, urlopen

from rnnrepro import config as cfg
from rnnrepro.cost import (
    DEFAULT_EXPECTED_FRACTION,
    CostError,
    estimate,
    group_shares,
    read_epoch_times,
    read_throughput,
    summarise,
    translation_summary,
)
from rnnrepro.cost.translation import ASSUMED_GPU, format_flops
from rnnrepro.data.download import USER_AGENT, archive_path
from rnnrepro.data.sources import Source, UnknownSource, apply_overrides, get_source
from rnnrepro.resources import device_flop_rate

PROBE_TIMEOUT = 10.0  # seconds per URL; probes run in parallel
GONE = (404, 410)  # answers that mean the file is not there (others: the server is reachable)


@dataclass(frozen=True)
class PlannedJob:
    """What the checks need of one job Snakemake plans to run."""

    rule: str
    wildcards: dict[str, str]
    names_device: bool  # its params name the device: it trains or evaluates a model


def plan_problem(
    config: dict, jobs: Sequence[PlannedJob], local: bool, checkpointing: Collection[str]
) -> str | None:
    """Why the planned ``jobs`` cannot all succeed (None when no check finds a reason): the
    device, when a job that runs here uses it (``local``: the jobs run on this machine); the
    downloads; the checkpoint directory, when a job of a rule in ``checkpointing`` is planned."""
    if any(job.names_device for job in jobs):
        error = device_problem(config["device"], local)
        if error:
            return error
    files = [
        (job.wildcards["corpus"], job.wildcards["name"]) for job in jobs if job.rule == "download"
    ]
    error = check_downloads(
        files, config["data_mirror"] or None, config.get("data_sources") or None
    )
    if error:
        return error
    if any(job.rule in checkpointing for job in jobs):
        directory = Path(config["checkpoint_dir"], config["scale"])
        return check_writable(directory, "checkpoint_dir")
    return None


def check_writable(directory: str | Path, key: str) -> str | None:
    """None when ``directory`` (config key ``key``) can be created and a file written in it,
    else why not. Leaves nothing behind: the directories it had to create are removed again
    (the jobs make them)."""
    directory = Path(directory)
    missing = [p for p in (directory, *directory.parents) if not p.exists()]
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".rnnrepro-write-test-"):
            pass
    except OSError as error:
        return (
            f"config key '{key}': cannot create or write {directory} "
            f"({error.strerror or error}); no job was started"
        )
    finally:
        for path in missing:  # deepest first
            with contextlib.suppress(OSError):
                path.rmdir()
    return None


def accelerators() -> dict[str, int]:
    """Devices of each kind this machine's PyTorch sees: ``cuda`` (a count) and ``mps`` (0 or
    1), asked in a subprocess (no torch in here)."""
    code = (
        "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0, "
        "int(torch.backends.mps.is_available()))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"could not ask PyTorch for its devices: {proc.stderr[-500:]}")
    cuda, mps = map(int, proc.stdout.split()[-2:])
    return {"cuda": cuda, "mps": mps}


def device_problem(device: str, local: bool, have: dict[str, int] | None = None) -> str | None:
    """None when jobs that run here can use ``device`` (config key ``device``), else why not.
    ``local``: the jobs run on this machine (not on cluster nodes); ``have``: the devices here
    (``accelerators``, asked by default)."""
    kind, _, index = device.partition(":")
    if not local or kind not in ("cuda", "mps"):
        return None
    have = accelerators() if have is None else have
    count = have[kind]
    if int(index or 0) < count:
        return None
    if kind == "mps":
        have = "no MPS device"
    elif count:
        have = f"{count} CUDA device(s) (cuda:0 to cuda:{count - 1})"
    else:
        have = "no CUDA device"
    return (
        f"config key 'device': {device!r}, but this machine has {have}; no job was started "
        "and no file was touched. Use device=auto (CUDA when there is one, else the CPU) or "
        "device=cpu, or run where the device is; a SLURM run (--profile profiles/slurm) plans "
        "here and trains on the GPU nodes, and is not checked here (docs/cluster.md)."
    )


def probe_url(url: str, timeout: float = PROBE_TIMEOUT) -> str | None:
    """None when ``url`` answers (a HEAD request), else why not."""
    request = Request(url, method="HEAD", headers={"User-Agent": USER_AGENT})
    try:
        with urlopen(request, timeout=timeout):
            return None
    except HTTPError as exc:
        return f"{url} answered HTTP {exc.code} {exc.reason}" if exc.code in GONE else None
    except (URLError, OSError) as exc:
        reason = exc.reason if isinstance(exc, URLError) else exc
        return f"cannot reach {url} ({reason})"


def _probe_target(src: Source) -> str:
    """The URL whose answer tells whether ``src`` can be downloaded."""
    if src.method == "syneval_pickles":
        return f"{src.url}{src.parts[0]}.pickle"
    return src.url


def unavailable(
    files: Iterable[tuple[str, str]],
    mirror: str | None,
    downloads_dir: str | Path = "results/downloads",
    timeout: float = PROBE_TIMEOUT,
) -> list[str]:
    """Problems (one line each) that would stop the download of ``(corpus, name)`` files.

    With a mirror, each file (or its ``.gz``) must be there; without one, its URL must answer,
    unless its archive is already cached under ``downloads_dir``.
    """
    sources = [get_source(corpus, name) for corpus, name in sorted(set(files))]
    if mirror:
        problems = []
        for src in sources:
            plain = Path(mirror) / src.mirror_path
            if not plain.is_file() and not plain.with_name(plain.name + ".gz").is_file():
                problems.append(f"{src.key}: not in the data mirror (looked for {plain}[.gz])")
        return problems
    remote = [
        src
        for src in sources
        if not (src.member and archive_path(src.url, downloads_dir).is_file())  # cached
    ]
    urls = sorted({_probe_target(src) for src in remote})
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = dict(zip(urls, pool.map(lambda u: probe_url(u, timeout), urls), strict=True))
    return [
        f"{src.key}: {answers[_probe_target(src)]}" for src in remote if answers[_probe_target(src)]
    ]


def check_downloads(
    files: list[tuple[str, str]], mirror: str | None, sources: str | None = None
) -> str | None:
    """The message that stops the run when a planned download cannot succeed, else None;
    ``sources`` is the config's ``data_sources`` override file."""
    if not files:
        return None
    try:
        if sources:
            apply_overrides(sources)
        problems = unavailable(files, mirror)
    except (UnknownSource, OSError) as error:
        return f"Data check failed: {error}"
    return data_error(problems, mirror) if problems else None


def data_error(problems: list[str], mirror: str | None) -> str:
    """The message that stops an offline run, naming the files and both ways out."""
    lines = [f"{len(problems)} corpus file(s) needed by the requested targets cannot be had:"]
    lines += [f"  - {p}" for p in problems]
    where = f"the data mirror {mirror}" if mirror else "the internet"
    lines += [
        f"No job was started (they would have read the corpora from {where}). Either:",
        "  - set `data_mirror` (config.yaml or --config data_mirror=PATH) to a directory laid "
        "out like the mirror (docs/data.md lists every file's path and sha256), or",
        "  - allow internet access to the URLs above and leave `data_mirror` empty.",
        "Targets that need no corpus (e.g. `dyck`) run without either.",
    ]
    return "\n".join(lines)


def cost_summary(
    config: dict, runs: list[cfg.Run], basedir: str | Path, runs_dir: str | Path = "results/runs"
) -> str:
    """What the planned training jobs will cost, from the measured cost model (paper scale);
    ``basedir`` holds ``benchmarks/results``, ``runs_dir`` the finished runs."""
    scale = config["scale"]
    if not runs:
        return f"Scale {scale!r}: no training job to run."
    head = f"Scale {scale!r}: {len(runs)} training job(s) to run."
    if scale != "paper":
        return head + " (The device-hour estimate is made for the paper scale only.)"
    bench = Path(basedir) / "benchmarks/results"
    try:
        throughput = read_throughput(bench / "cells.csv", None, "CPU, 1 thread")
        epoch_times = read_epoch_times(bench / "epoch_times.csv")
        rate = device_flop_rate(bench, "cpu", epoch_times)  # translation runs: counted FLOPs
        costs = estimate(config, throughput, runs_dir, DEFAULT_EXPECTED_FRACTION, epoch_times, rate)
    except (CostError, OSError, ValueError) as exc:
        return f"{head} (No cost estimate: {exc}.)"
    planned = set(runs)
    costs = [c for c in costs if c.run in planned]
    total = summarise(costs)[-1] if costs else None
    lines = [head]
    if total:
        lines.append(
            f"Expected cost of {total.jobs} of them: {total.expected_hours:,.0f} device-hours "
            f"(upper bound {total.upper_hours:,.0f}) on {throughput.device}, one job at a time."
        )
        for group in group_shares(config, costs):
            if group.jobs:
                lines.append(
                    f"  of which {group.experiment}: {group.jobs} job(s), "
                    f"{group.expected_hours:,.0f} device-hours"
                )
        translation = translation_summary(costs)
        if translation:
            lines.append(
                f"  of which translation: {translation.jobs} job(s), "
                f"{translation.hours:,.0f} device-hours ({format_flops(translation.flops)} "
                f"counted; {translation.assumed_gpu_hours:,.0f} GPU-hours at an assumed "
                f"{format_flops(ASSUMED_GPU.flops_per_s)}/s, docs/cost.md)"
            )
    if len(costs) < len(runs):
        lines.append(f"{len(runs) - len(costs)} job(s) have no measured epoch time (not counted).")
    lines.append(
        "Paper scale is GPU-cluster work (README: Cluster execution). To try the pipeline first: "
        "--config scale=smoke (minutes) or scale=cpu (about 4.5 hours on 2 cores), each in its own "
        "--directory; details: python -m rnnrepro.scripts.estimate_cost."
    )
    return "\n".join(lines)
