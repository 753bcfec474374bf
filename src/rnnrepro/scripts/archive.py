"""Save, restore and report an archive of paper-scale runs (docs/results.md): a track's runs
kept across machines that do not last, or a cluster's runs published for any clone.

A paper-scale track can take longer than one machine lasts, each stretch of it on a fresh
machine. ``save`` copies every finished run of a
Snakemake directory (its model file, history, metrics and analyses: tens of kB) into an archive
with a manifest: the run's identity and settings, the digests of the code that trained, scored and
analysed it, its training time, the commit and the machine. It also keeps the last checkpoint
of each unfinished run (every piece of its state, ``rnnrepro.training``), so that a track whose
machine is lost resumes where it stopped. A checkpoint's best-epoch weights are stored once where
they equal the model's (or each other: tied weights), and a checkpoint larger than ``--part-mb``
(48 MiB, under what git hosts take in one file) is kept as parts with their SHA-256: the
LSTM-650 of memory checkpoints 154 MiB, 75.7 MiB so compacted after an epoch that improved. The
epochs an unfinished run has trained so far (its checkpoint's history, and the epoch in
progress) also go to the archive's ``progress.csv``.

``restore`` makes the directory's data, then puts the archived runs back, newer than their
inputs, so that Snakemake finds them complete, and puts the checkpoints where the unfinished
runs resume from them (``train`` itself refuses a checkpoint of other code). What the current
checkout would make differently is not restored: a run whose settings or training code changed
runs again, and a changed evaluation or analysis script redoes only that step. With
``--keep-runs-of-other-code`` a finished run whose training code changed but whose settings did
not is restored all the same, trained by the code of the commit its manifest row names (said
per run); its evaluation and analysis are still redone where their code changed.

Code is compared by ``rnnrepro.provenance.code_digest`` (syntax trees: comments, docstrings and
formatting do not count). Rows saved before it record ``byte_digest``s (no ``digest`` column):
for those, the sources of the row's commit are taken from git, and when their byte digests are
the recorded ones, their syntax digests are compared with this checkout's; failing that (the
commit is not in this repository), bytes are compared with bytes.

    python -m rnnrepro.scripts.archive save --directory runs/dyck-paper \\
        [--source <checkout the runs used>] [--archive benchmarks/results/dyck_paper] \\
        [--scale paper]
    python -m rnnrepro.scripts.archive restore --directory runs/dyck-paper \\
        [--archive benchmarks/results/dyck_paper] [--scale paper] [--data-mirror DIR] \\
        [--keep-runs-of-other-code]
    python -m rnnrepro.scripts.archive status [--archive ...] [--scale paper] \\
        [--family dyck] [--experiment NAME ...]

``save --segment-start`` appends the stretch of wall time since then (and the seconds the track
was paused within it) to ``segments.csv``; ``status`` prints how far the track is: runs
finished of those planned, their training hours, and the wall time of all segments.

Restored runs carry no Snakemake metadata, so Snakemake says they "cannot be used to trigger
re-runs": this script's check of settings and code digests stands in for it.
"""

from __future__ import annotations

import argparse
import calendar
import csv
import filecmp
import hashlib
import io
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from rnnrepro import config as cfg
from rnnrepro.archive import MANIFEST, run_of
from rnnrepro.archive import read_manifest as archive_rows
from rnnrepro.config_check import check_config
from rnnrepro.fileio import atomic_open
from rnnrepro.provenance import (
    DIGEST_KIND,
    KEPT_FROM_ARCHIVE,
    byte_digest,
    code_digest,
    model_module,
)

REPO = Path(__file__).resolve().parents[3]
# The files a finished run may hold, in the order they are made, and the step making each.
FILES = {
    "model.pt": "train",
    "history.csv": "train",
    "metrics.json": "evaluate",
    "ldpa.csv": "evaluate",
    "pabs.csv": "analyse",
    "heatmap.csv": "analyse",
    "position_loss.csv": "analyse",
    "examples.json": "analyse",
}
STEPS = ("train", "evaluate", "analyse")
PROGRESS = "progress.csv"  # the unfinished runs' epochs so far
PART_MB = 48.0  # an archived checkpoint larger than this is kept in parts
COLUMNS = [
    "experiment",
    "dataset",
    "model",
    "seed",
    "trial",  # a random search's trial (memory); empty for a run without a search
    "scale",
    "settings",
    *(f"code_{step}" for step in STEPS),
    "epochs",
    "stopped_because",
    "train_seconds",
    "kernels",
    "commit",
    "host",
    "saved_at",
    "digest",
]
SEGMENT_COLUMNS = [
    "started",
    "saved_at",
    "wall_seconds",
    "host",
    "commit",
    "finished_before",
    "finished_after",
    "checkpoints_kept",
    "paused_seconds",
    "note",
]
# What tells a run apart from another of the same identity (the rest says where it ran).
SAME_RUN = ("scale", "settings", *(f"code_{step}" for step in STEPS), "train_seconds")


def load_config(path: Path, scale: str) -> dict:
    """The pipeline's config at ``scale``."""
    config = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    config["scale"] = scale
    check_config(config)
    return config


def step_scripts(dataset: str) -> dict[str, str]:
    """The script of each step of a run (the rules' ``run_code`` params)."""
    if cfg.family(dataset) == "dyck":
        return {"train": "train", "evaluate": "evaluate_dyck", "analyse": "analyse_attention"}
    return {"train": "train", "evaluate": "evaluate_text", "analyse": "evaluate_text"}


def code_digests(architecture: str, dataset: str, root: Path, digest=code_digest) -> dict:
    """``code_<step>``: the digest of each step's code for a run of ``architecture`` on
    ``dataset``, in the package sources ``root``."""
    module = model_module(architecture, root)
    return {
        f"code_{step}": digest(f"scripts/{script}.py", module, root=root)
        for step, script in step_scripts(dataset).items()
    }


def fingerprint(config: dict, run: cfg.Run, source: Path) -> dict:
    """The run's scale, resolved settings and code digest of each step, in checkout ``source``."""
    settings = cfg.run_config(config, run.experiment, run.dataset, run.model, trial=run.trial)
    architecture = cfg.architecture(config, run.experiment, run.model)
    return {
        "scale": config["scale"],
        "settings": json.dumps(settings, sort_keys=True),
        **code_digests(architecture, run.dataset, source / "src" / "rnnrepro"),
    }


class Commits:
    """The package sources of past commits of the git repository ``repo``, each taken out once
    (``git archive``) into a temporary directory; None for a commit the repository lacks."""

    def __init__(self, repo: Path):
        self.repo, self.roots, self.directory = repo, {}, None

    def root(self, commit: str) -> Path | None:
        if commit not in self.roots:
            self.roots[commit] = None
            tar = subprocess.run(
                ["git", "-C", str(self.repo), "archive", f"{commit}^{{commit}}", "src/rnnrepro"],
                capture_output=True,
            )
            if commit and tar.returncode == 0:
                if self.directory is None:
                    self.directory = tempfile.TemporaryDirectory(prefix="rnnrepro-archive-")
                out = Path(self.directory.name) / commit
                out.mkdir()
                subprocess.run(["tar", "-x", "-C", str(out)], input=tar.stdout, check=True)
                self.roots[commit] = out / "src" / "rnnrepro"
        return self.roots[commit]


def code_changes(row: dict, run: cfg.Run, config: dict, source: Path, commits: Commits):
    """The steps (``code_<step>``) whose code in checkout ``source`` is not the code the
    manifest row records, and how that was told (a note, empty for syntax digests)."""
    root = source / "src" / "rnnrepro"
    architecture = cfg.architecture(config, run.experiment, run.model)
    recorded = {f"code_{step}": row[f"code_{step}"] for step in step_scripts(run.dataset)}
    if (row.get("digest") or "bytes") == DIGEST_KIND:
        now = code_digests(architecture, run.dataset, root)
        return [key for key in now if recorded[key] != now[key]], ""
    # byte digests: the syntax of the row's commit, if its bytes are the code recorded
    then, past = None, commits.root(row["commit"])
    if past is not None:
        ran = json.loads(row["settings"]).get("architecture", architecture)
        try:
            if code_digests(ran, run.dataset, past, byte_digest) == recorded:
                then = code_digests(ran, run.dataset, past)
        except (FileNotFoundError, KeyError, LookupError, SyntaxError):
            pass
    if then is None:
        now = code_digests(architecture, run.dataset, root, byte_digest)
        note = f"byte digests compared: commit {row['commit']!r} does not hold the recorded code"
        if past is None:
            note = f"byte digests compared: commit {row['commit']!r} is not in this repository"
        return [key for key in now if recorded[key] != now[key]], note
    now = code_digests(architecture, run.dataset, root)
    return [key for key in now if then[key] != now[key]], ""


def single_stage_runs(config: dict) -> list[cfg.Run]:
    """Every run of the scale trained in one job (no later stages): each trial of a model's
    random search is one."""
    return [
        run
        for run in cfg.runs(config)
        if cfg.stages(config, run.experiment, run.model, run.dataset) == ["train"]
    ]


def read_manifest(archive: Path) -> dict[str, dict]:
    """The archive's manifest rows by run path (none for an archive not yet written)."""
    if not (archive / MANIFEST).exists():
        return {}
    return {run_of(row).path: row for row in archive_rows(archive)}


def checkpoint(directory: Path, config: dict, run: cfg.Run) -> Path:
    """Where ``train`` checkpoints the run (the Snakefile's ``checkpoint_path``)."""
    return directory / config["checkpoint_dir"] / config["scale"] / f"{run.path}.pt"


def compact(state: dict) -> dict:
    """A checkpoint whose best-epoch weights are stored once where they equal the model's, or
    each other (tied weights: the training clones them apart), and whose views of larger
    tensors (the task's carried hidden state, a slice of the recurrence's buffers) are copied
    out, since a view saves its whole storage. Only ``best_state`` is shared: it is read, never
    updated in place, after a resume, whereas the optimiser's and the weight average's tensors
    are updated in place and keep storages of their own."""
    import torch

    seen: dict[tuple, list] = {}

    def same(tensor):
        key = (tensor.dtype, tuple(tensor.shape))
        for other in seen.setdefault(key, []):
            if torch.equal(other, tensor):
                return other
        seen[key].append(tensor)
        return tensor

    def own(value):
        if isinstance(value, torch.Tensor):
            whole = value.untyped_storage().nbytes()
            return value.clone() if whole > value.numel() * value.element_size() else value
        if isinstance(value, dict):
            return {key: own(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(own(item) for item in value)
        return value

    for tensor in state["model"].values():
        same(tensor)
    best = {name: same(tensor) for name, tensor in state["best_state"].items()}
    return own({**state, "best_state": best})


def parts_index(kept: Path) -> Path:
    """The index of a checkpoint kept in parts (``<run>.pt.parts.json``)."""
    return kept.with_name(kept.name + ".parts.json")


def drop_checkpoint(kept: Path) -> None:
    """Remove an archived checkpoint, whole or in parts."""
    kept.unlink(missing_ok=True)
    for part in kept.parent.glob(kept.name + ".part*"):
        part.unlink()


def archived_bytes(kept: Path) -> int:
    """What an archived checkpoint takes in the archive now (its file, or its parts and their
    index); 0 when none is kept."""
    files = {kept, parts_index(kept), *kept.parent.glob(kept.name + ".part*")}
    return sum(path.stat().st_size for path in files if path.exists())


def best_weights_apart(path: Path) -> bool:
    """Whether a checkpoint's best-epoch weights differ from its model's (mid-epoch, or after
    an epoch that set no new best): then ``compact`` cannot store them once."""
    import torch

    state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    model = state["model"]
    best = state.get("best_state") or {}
    return any(name not in model or not torch.equal(model[name], t) for name, t in best.items())


def keep_checkpoint(source: Path, kept: Path, part_mb: float) -> int:
    """Archive ``source`` at ``kept`` compacted (``compact``), in parts of at most ``part_mb``
    MiB with an index (size, SHA-256, parts) when larger; its archived size in bytes."""
    import torch

    buffer = io.BytesIO()
    torch.save(compact(torch.load(source, map_location="cpu", weights_only=True)), buffer)
    data = buffer.getbuffer()
    drop_checkpoint(kept)
    kept.parent.mkdir(parents=True, exist_ok=True)
    step = int(part_mb * 2**20)
    if len(data) <= step:
        kept.write_bytes(data)
        return len(data)
    parts = []
    for number, start in enumerate(range(0, len(data), step)):
        part = kept.with_name(f"{kept.name}.part{number:03d}")
        part.write_bytes(data[start : start + step])
        parts.append(part.name)
    index = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "parts": parts}
    parts_index(kept).write_text(json.dumps(index, indent=1) + "\n")
    return len(data)


def archived_checkpoint(archive: Path, run: cfg.Run) -> Path | None:
    """The run's archived checkpoint (the file, or the index of its parts); None if none."""
    kept = archive / "checkpoints" / f"{run.path}.pt"
    return next((path for path in (kept, parts_index(kept)) if path.exists()), None)


def unpack_checkpoint(archived: Path, target: Path) -> None:
    """Write an archived checkpoint to ``target``: copied, or joined from its parts and checked
    against the index's size and SHA-256 (a missing or damaged part stops the restore)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if archived.suffix == ".pt":
        shutil.copyfile(archived, target)
        return
    index = json.loads(archived.read_text())
    data = b"".join((archived.parent / name).read_bytes() for name in index["parts"])
    if len(data) != index["size"] or hashlib.sha256(data).hexdigest() != index["sha256"]:
        sys.exit(f"restore: {archived}: its parts do not join to the checkpoint it indexes")
    with atomic_open(target, "wb") as f:
        f.write(data)


def machine() -> str:
    """The host as manifest and segment rows name it: its name, cores, CPU model, the vector
    unit torch's kernels use and torch's version (machines that differ in these may round
    differently; docs/methods.md §7.1)."""
    import torch

    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    model = names[0] if names else platform.processor() or "unknown CPU"
    kernels = f"{torch.backends.cpu.get_cpu_capability()}, torch {torch.__version__}"
    return f"{platform.node()} ({os.cpu_count()} cores, {model}, {kernels})"


def save(
    directory: Path,
    archive: Path,
    source: Path,
    config: dict,
    segment: tuple | None = None,
    part_mb: float = PART_MB,
) -> None:
    import torch  # here: only saving reads model files, and status and restore start 2 s sooner

    commit = subprocess.run(
        ["git", "-C", str(source), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    host = machine()
    manifest = read_manifest(archive)
    finished_before = len(manifest)
    added = kept = 0
    progress: list[dict] = []
    commits = Commits(source)
    for run in single_stage_runs(config):
        run_dir = directory / "results" / "runs" / run.path
        kept_checkpoint = archive / "checkpoints" / f"{run.path}.pt"
        if not (run_dir / "metrics.json").exists():
            unfinished = checkpoint(directory, config, run)
            if not unfinished.exists():
                continue
            progress += progress_rows(run, unfinished)
            replaced = archived_bytes(kept_checkpoint)
            size = keep_checkpoint(unfinished, kept_checkpoint, part_mb)
            print(
                f"save: {run.path}: checkpoint of {unfinished.stat().st_size / 2**20:.1f} MiB "
                f"archived in {size / 2**20:.1f} MiB, replacing {replaced / 2**20:.1f} MiB: "
                f"{(size + replaced) / 2**20:.1f} MiB of change for the repository's history"
            )
            if best_weights_apart(unfinished):
                print(
                    f"save: {run.path}: the best epoch's weights are not the model's, so both "
                    "are stored; saved right after an epoch that set a new best, it is smaller"
                )
            kept += 1
            continue
        drop_checkpoint(kept_checkpoint)
        record = torch.load(run_dir / "model.pt", map_location="cpu", weights_only=True)
        if record["identity"] != run.identity():
            sys.exit(f"save: {run_dir}/model.pt is the run {record['identity']}, not {run.path}")
        row = {
            **{k: v for k, v in run.identity().items() if k != "stage"},
            **fingerprint(config, run, source),
            "settings": json.dumps(record["run"], sort_keys=True),  # what it ran with
            "epochs": record["epochs"],
            "stopped_because": record["stopped_because"],
            "train_seconds": f"{record['train_seconds']:.1f}",
            "kernels": record["kernels"],
            "commit": commit,
            "host": host,
            "saved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "digest": DIGEST_KIND,
        }
        known = manifest.get(run.path)
        if known and all(known[k] == str(row[k]) for k in SAME_RUN):
            continue
        archived = archive / run.path / "model.pt"
        same_model = known and archived.exists()
        same_model = same_model and filecmp.cmp(archived, run_dir / "model.pt", shallow=False)
        changes = code_changes(known, run, config, source, commits)[0] if same_model else []
        if same_model and not changes:
            continue
        marker = run_dir / KEPT_FROM_ARCHIVE
        kept_row = json.loads(marker.read_text()) if marker.exists() else {}
        if kept_row.get("train_seconds") != row["train_seconds"]:
            kept_row = {}  # trained again since it was restored
        if kept_row or "code_train" in changes:
            # restored with --keep-runs-of-other-code: this checkout did not train it
            print(
                f"save: {run.path}: trained by commit {(kept_row or known)['commit']}'s code, "
                "other than this checkout's: not saved (the archive it came from keeps it)"
            )
            continue
        out = archive / run.path
        out.mkdir(parents=True, exist_ok=True)
        for name in FILES:
            if (run_dir / name).exists():
                shutil.copyfile(run_dir / name, out / name)
        floor = directory / "results" / "data" / run.dataset / "floor.json"
        if floor.exists():  # a Dyck split's generator floor: the tables judge it above it
            (archive / "data" / run.dataset).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(floor, archive / "data" / run.dataset / "floor.json")
        manifest[run.path] = row
        added += 1
    archive.mkdir(parents=True, exist_ok=True)
    with (archive / MANIFEST).open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(manifest[path] for path in sorted(manifest))
    write_progress(archive, progress)
    if segment:
        record_segment(archive, *segment, host, commit, finished_before, len(manifest), kept)
    print(
        f"save: {added} run(s) added or updated, {len(manifest)} in {archive}; "
        f"{kept} checkpoint(s) of unfinished runs"
    )


def progress_rows(run: cfg.Run, path: Path) -> list[dict]:
    """The epochs an unfinished run has trained so far, read from its checkpoint: one row per
    epoch (the run's identity, then its history row), and one for the epoch in progress."""
    import torch

    state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    identity = {k: v for k, v in run.identity().items() if k != "stage"}
    rows = [{**identity, **row} for row in state["result"]["history"]]
    partial = state.get("partial")
    if partial and not state.get("finished"):
        epoch = state["epoch"] + 1
        loss = partial["total"] / partial["count"] if partial["count"] else None
        rows.append({**identity, "epoch": epoch, "train_loss": loss, "batches": partial["batches"]})
    return rows


def write_progress(archive: Path, rows: list[dict]) -> None:
    """progress.csv: the epochs so far of the runs not finished (``progress_rows``), their
    curves readable without their checkpoints; none left, no file."""
    path = archive / PROGRESS
    if not rows:
        path.unlink(missing_ok=True)
        return
    columns = [
        k
        for k in dict.fromkeys(k for row in rows for k in row)
        if any(row.get(k) is not None for row in rows)
    ]  # a task's metrics other tasks' runs lack: left out where no run has them
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def record_segment(archive: Path, started: str, paused: int, note: str, *row) -> None:
    """Append one stretch of the track's wall time (its start to now, ``paused`` seconds of it
    stopped) to segments.csv."""
    path = archive / "segments.csv"
    new = not path.exists()
    start = calendar.timegm(time.strptime(started, "%Y-%m-%dT%H:%M:%SZ"))
    with path.open("a", newline="") as f:
        writer = csv.writer(f)
        if new:
            writer.writerow(SEGMENT_COLUMNS)
        now = time.time()
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
        writer.writerow([started, stamp, round(now - start), *row, paused, note])


def restore(
    directory: Path,
    archive: Path,
    config: dict,
    configfile: Path,
    extra: list,
    keep_other_code: bool = False,
) -> None:
    manifest = read_manifest(archive)
    checkpoints = {
        run.path: kept
        for run in single_stage_runs(config)
        if run.path not in manifest and (kept := archived_checkpoint(archive, run))
    }
    if not manifest and not checkpoints:
        sys.exit(f"restore: nothing in {archive}")
    runs = {path: run_of(row) for path, row in manifest.items()}
    runs |= {run.path: run for run in single_stage_runs(config) if run.path in checkpoints}
    # the data first: the restored files must be newer than their inputs
    data = {
        f"results/data/{run.dataset}/{split}.txt"
        for run in runs.values()
        for split in ("train", "val", "test")
    }
    command = [sys.executable, "-m", "snakemake", *sorted(data), "--cores", "1"]
    command += ["--directory", str(directory), "--snakefile", str(REPO / "Snakefile")]
    command += ["--configfile", str(configfile), "--config", f"scale={config['scale']}", *extra]
    subprocess.run(command, check=True)
    restored = resumable = 0
    kept: list[str] = []
    commits = Commits(REPO)
    for path, run in sorted(runs.items()):
        now = fingerprint(config, run, REPO)
        row = manifest.get(path)
        if row is None:  # unfinished: train resumes it, or starts again if its code changed
            target = checkpoint(directory, config, run)
            if not target.exists():  # one left on this machine is as new as the archive's
                unpack_checkpoint(checkpoints[path], target)
                resumable += 1
            continue
        changed = [key for key in ("scale", "settings") if row[key] != now[key]]
        code, note = code_changes(row, run, config, REPO, commits)
        changed += code
        said = f"{', '.join(changed)} changed since it ran (commit {row['commit']}"
        said += f"; {note})" if note else ")"
        if {"scale", "settings"} & set(changed):
            print(f"restore: {path}: {said}: trains again")
            continue
        if "code_train" in changed and not keep_other_code:
            print(f"restore: {path}: {said}: trains again (--keep-runs-of-other-code keeps it)")
            continue
        if "code_train" in changed:
            redone = [key.removeprefix("code_") for key in code if key != "code_train"]
            print(
                f"restore: {path}: {said}: kept as trained by commit {row['commit']}'s code"
                f"{'; ' + ' and '.join(redone) + ' redone' if redone else ''}"
            )
            kept.append(path)
            (directory / "results" / "runs" / path).mkdir(parents=True, exist_ok=True)
            marker = directory / "results" / "runs" / path / KEPT_FROM_ARCHIVE
            marker.write_text(json.dumps(row, indent=1))
        elif changed:
            print(f"restore: {path}: {said}: {' and '.join(k[5:] for k in code)} redone")
        target = directory / "results" / "runs" / path
        if (target / "metrics.json").exists():
            continue
        target.mkdir(parents=True, exist_ok=True)
        stamp = time.time()
        for name, step in FILES.items():
            if (step == "train" or f"code_{step}" not in changed) and (
                archive / path / name
            ).exists():
                shutil.copyfile(archive / path / name, target / name)
                os.utime(target / name, (stamp + STEPS.index(step), stamp + STEPS.index(step)))
        restored += 1
    print(f"restore: {restored} finished run(s) and {resumable} checkpoint(s) into {directory}")
    if kept:
        print(
            f"restore: {len(kept)} of them trained by other training code than this checkout's "
            "(--keep-runs-of-other-code): their tables are of that code's training"
        )


def steady_seconds(history: Path) -> float:
    """A run's training time without its outlying epochs: epochs times the median epoch.

    An epoch's ``seconds`` are wall time, so an epoch in progress while the track was stopped
    (``SIGSTOP``) counts the stop too.
    """
    with history.open() as f:
        seconds = [float(row["seconds"]) for row in csv.DictReader(f)]
    return len(seconds) * statistics.median(seconds)


def status(archive: Path, config: dict, family: str, experiments: list[str] | None) -> None:
    """Print the runs of ``family``'s datasets finished in the archive of those planned."""
    manifest = read_manifest(archive)
    planned = [
        run
        for run in single_stage_runs(config)
        if cfg.family(run.dataset) == family and (not experiments or run.experiment in experiments)
    ]
    if not planned:
        sys.exit(f"status: no {family} run planned at scale {config['scale']}")
    groups: dict[tuple, list] = {}
    for run in planned:
        groups.setdefault((run.experiment, run.dataset, run.model), []).append(run)
    for (experiment, dataset, model), group in groups.items():
        done = [run.seed for run in group if run.path in manifest]
        seeds = ", ".join(str(seed) for seed in done) or "-"
        print(f"{experiment:20} {dataset:12} {model:22} {len(done)}/{len(group)}  seeds {seeds}")
    finished = [run for run in planned if run.path in manifest]
    hours = sum(float(manifest[run.path]["train_seconds"]) for run in finished) / 3600
    steady = sum(steady_seconds(archive / run.path / "history.csv") for run in finished) / 3600
    print(
        f"{len(finished)}/{len(planned)} runs finished, {hours:.2f} training hours (summed over"
        " runs, on the machines manifest.csv names;"
        f" {steady:.2f} h as epochs x each run's median epoch, which leaves out epochs stretched"
        " while the track was stopped)"
    )
    path = archive / "segments.csv"
    if path.exists():
        with path.open() as f:
            segments = list(csv.DictReader(f))
        wall = sum(int(s["wall_seconds"]) - int(s["paused_seconds"] or 0) for s in segments)
        print(f"{len(segments)} segment(s): {wall / 3600:.2f} h of wall time, pauses excluded")
    path = archive / PROGRESS
    if path.exists():
        with path.open() as f:
            rows = list(csv.DictReader(f))
        for run in planned:
            epochs = [r for r in rows if run_of(r) == run]
            if epochs:
                print(f"unfinished: {run.path}: {progress_summary(epochs)}")


def progress_summary(epochs: list[dict]) -> str:
    """One unfinished run's ``progress.csv`` rows in words: epochs (validations, under
    ``eval_every``: a row each), best, the epoch in progress."""
    done = [r for r in epochs if r["val_loss"]]
    if done and done[-1].get("step"):  # validated every N steps: rows are validations
        last = done[-1]
        said = [f"{len(done)} validation(s), the last at step {last['step']} "
                f"in epoch {last['epoch']}"]  # fmt: skip
    else:
        said = [f"{len(done)} epoch(s)"]
    if done:
        best = min(done, key=lambda r: float(r["val_loss"]))
        said.append(f"best val_loss {float(best['val_loss']):.4f} (epoch {best['epoch']})")
    said += [f"{r['batches']} batches into epoch {r['epoch']}" for r in epochs if not r["val_loss"]]
    return ", ".join(said)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["save", "restore", "status"])
    parser.add_argument("--directory", type=Path, help="save, restore: the Snakemake directory")
    parser.add_argument("--archive", type=Path, default=REPO / "benchmarks/results/dyck_paper")
    parser.add_argument(
        "--source", type=Path, default=REPO, help="save: the checkout the runs were made with"
    )
    parser.add_argument("--configfile", type=Path, help="default: <source>/config.yaml")
    parser.add_argument("--scale", default="paper")
    parser.add_argument("--data-mirror", help="restore: the pipeline's data_mirror")
    parser.add_argument(
        "--keep-runs-of-other-code",
        action="store_true",
        help="restore: also restore finished runs whose settings are this checkout's but whose "
        "training code is not (each is named with the commit that trained it); evaluation and "
        "analysis whose code changed are still redone",
    )
    parser.add_argument(
        "--segment-start",
        help="save: when this stretch of the track started (UTC, 2026-11-25T00:00:00Z): its wall "
        "time is recorded in segments.csv",
    )
    parser.add_argument(
        "--segment-paused", type=int, default=0, help="save: seconds the track was paused in it"
    )
    parser.add_argument("--segment-note", default="", help="save: e.g. what the pauses were for")
    parser.add_argument(
        "--part-mb",
        type=float,
        default=PART_MB,
        help="save: an unfinished run's checkpoint larger than this (MiB) is archived in parts",
    )
    parser.add_argument("--family", default="dyck", help="status: the datasets' family")
    parser.add_argument(
        "--experiment", action="append", help="status: only these experiments (repeatable)"
    )
    args = parser.parse_args()
    source = args.source.resolve()
    configfile = (args.configfile or source / "config.yaml").resolve()
    config = load_config(configfile, args.scale)
    if args.action == "status":
        status(args.archive, config, args.family, args.experiment)
        return
    if args.directory is None:
        parser.error(f"{args.action} needs --directory")
    if args.action == "save":
        segment = None
        if args.segment_start:
            segment = (args.segment_start, args.segment_paused, args.segment_note)
        save(args.directory, args.archive, source, config, segment, args.part_mb)
    else:
        extra = [f"data_mirror={args.data_mirror}"] if args.data_mirror else []
        restore(
            args.directory, args.archive, config, configfile, extra, args.keep_runs_of_other_code
        )


if __name__ == "__main__":
    main()
