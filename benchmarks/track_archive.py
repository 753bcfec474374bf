"""Keep the finished runs of a long paper-scale track across machines that do not last.

The paper-scale Dyck track takes longer than one of our sessions, and each session starts on a
fresh machine. ``save`` copies every finished run of a Snakemake directory (its model file,
history, metrics and analyses: a few tens of kB each) into an archive with a manifest: the
run's identity and settings, the digests of the code that trained and scored it, its training
time, the commit and the machine. ``restore`` puts the archived runs back into a directory
(after making its data, so that the runs are newer than their inputs): Snakemake then finds
them complete and goes on with the rest of the track. A run whose settings or code digest in
the current checkout differ from the archived ones is not restored (its jobs run again).

    python benchmarks/track_archive.py save --directory runs/dyck-paper \\
        [--source <checkout the runs used>] [--archive benchmarks/results/dyck_paper]
    python benchmarks/track_archive.py restore --directory runs/dyck-paper \\
        [--archive benchmarks/results/dyck_paper]

Restored runs carry no Snakemake metadata, so Snakemake says they "cannot be used to trigger
re-runs": this script's own check (settings and code digests) stands in for it.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import torch
import yaml

from rnnrepro import config as cfg
from rnnrepro.provenance import code_digest, model_module

REPO = Path(__file__).resolve().parent.parent
# Files of a finished run, in the order they are made (restored with increasing mtimes).
RUN_FILES = ("model.pt", "history.csv", "metrics.json", "ldpa.csv", "pabs.csv", "heatmap.csv")
# The script behind each file after model.pt and history.csv (a file present for the run only).
SCRIPTS = {"train": "model.pt", "evaluate_dyck": "metrics.json", "analyse_attention": "pabs.csv"}
MANIFEST = "manifest.csv"
# What tells a run apart from another of the same identity (the rest says where it ran).
SAME_RUN = ("scale", "settings", *(f"code_{script}" for script in SCRIPTS), "train_seconds")
COLUMNS = [
    "experiment",
    "dataset",
    "model",
    "seed",
    "scale",
    "settings",
    *(f"code_{script}" for script in SCRIPTS),
    "epochs",
    "stopped_because",
    "train_seconds",
    "kernels",
    "commit",
    "host",
    "saved_at",
]


def load_config(path: Path, scale: str) -> dict:
    """The pipeline's config at ``scale``."""
    config = yaml.safe_load(path.read_text())
    config["scale"] = scale
    cfg.check(config)
    return config


def digests(config: dict, run: cfg.Run, source: Path) -> dict:
    """Code digest of each script of the run (as the Snakefile's ``run_code``), in ``source``."""
    module = model_module(
        cfg.architecture(config, run.experiment, run.model), source / "src" / "rnnrepro"
    )
    return {
        f"code_{script}": code_digest(
            f"scripts/{script}.py", module, root=source / "src" / "rnnrepro"
        )
        for script in SCRIPTS
    }


def settings_json(settings: dict) -> str:
    return json.dumps(settings, sort_keys=True)


def read_manifest(archive: Path) -> dict[str, dict]:
    path = archive / MANIFEST
    if not path.exists():
        return {}
    with path.open() as f:
        return {cfg.Run(**identity(row)).path: row for row in csv.DictReader(f)}


def identity(row: dict) -> dict:
    return {
        k: (int(row[k]) if k == "seed" else row[k])
        for k in ("experiment", "dataset", "model", "seed")
    }


def save(directory: Path, archive: Path, source: Path, configfile: Path, scale: str) -> None:
    config = load_config(configfile, scale)
    commit = subprocess.run(
        ["git", "-C", str(source), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    host = f"{platform.node()} ({os.cpu_count()} cores)"
    manifest = read_manifest(archive)
    added = 0
    for run in cfg.runs(config):
        if cfg.family(run.dataset) != "dyck":
            continue
        run_dir = directory / "results" / "runs" / run.path
        if not (run_dir / "metrics.json").exists():
            continue  # not finished: its checkpoint stays where it is
        record = torch.load(run_dir / "model.pt", map_location="cpu", weights_only=True)
        if record["identity"] != run.identity():
            sys.exit(f"save: {run_dir}/model.pt is the run {record['identity']}, not {run.path}")
        row = {
            **run.identity(),
            "scale": scale,
            "settings": settings_json(record["run"]),
            **digests(config, run, source),
            "epochs": record["epochs"],
            "stopped_because": record["stopped_because"],
            "train_seconds": f"{record['train_seconds']:.1f}",
            "kernels": record["kernels"],
            "commit": commit,
            "host": host,
            "saved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        row.pop("stage")
        known = manifest.get(run.path)
        if known and all(known[k] == str(row[k]) for k in SAME_RUN):
            continue
        out = archive / run.path
        out.mkdir(parents=True, exist_ok=True)
        for name in RUN_FILES:
            if (run_dir / name).exists():
                shutil.copyfile(run_dir / name, out / name)
        manifest[run.path] = row
        added += 1
    archive.mkdir(parents=True, exist_ok=True)
    with (archive / MANIFEST).open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(manifest[path] for path in sorted(manifest))
    print(f"save: {added} run(s) added or updated; {len(manifest)} in {archive}")


def restore(directory: Path, archive: Path, configfile: Path, scale: str) -> None:
    config = load_config(configfile, scale)
    manifest = read_manifest(archive)
    if not manifest:
        sys.exit(f"restore: no {MANIFEST} in {archive}")
    # the data first: restored runs must be newer than their inputs
    data = sorted(
        {
            f"results/data/{row['dataset']}/{split}.txt"
            for row in manifest.values()
            for split in ("train", "val", "test")
        }
    )
    command = [sys.executable, "-m", "snakemake", *data, "--cores", "1"]
    command += ["--directory", str(directory), "--snakefile", str(REPO / "Snakefile")]
    command += ["--configfile", str(configfile)]
    subprocess.run([*command, "--config", f"scale={scale}"], check=True)
    restored = 0
    for path, row in manifest.items():
        run = cfg.Run(**identity(row))
        now = {
            "scale": scale,
            "settings": settings_json(
                cfg.run_config(config, run.experiment, run.dataset, run.model)
            ),
            **digests(config, run, REPO),
        }
        changed = [key for key, value in now.items() if row[key] != value]
        target = directory / "results" / "runs" / path
        if changed:
            print(f"restore: {path}: {', '.join(changed)} changed since it ran: not restored")
            continue
        if (target / "metrics.json").exists():
            continue
        target.mkdir(parents=True, exist_ok=True)
        stamp = time.time()
        for k, name in enumerate(RUN_FILES):
            if (archive / path / name).exists():
                shutil.copyfile(archive / path / name, target / name)
                os.utime(target / name, (stamp + k, stamp + k))
        restored += 1
    print(f"restore: {restored} run(s) restored into {directory}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["save", "restore"])
    parser.add_argument("--directory", type=Path, required=True, help="the Snakemake directory")
    parser.add_argument("--archive", type=Path, default=REPO / "benchmarks/results/dyck_paper")
    parser.add_argument(
        "--source", type=Path, default=REPO, help="save: the checkout the runs were made with"
    )
    parser.add_argument("--configfile", type=Path, help="default: <source>/config.yaml")
    parser.add_argument("--scale", default="paper")
    args = parser.parse_args()
    source = args.source.resolve()
    configfile = args.configfile or source / "config.yaml"
    if args.action == "save":
        save(args.directory, args.archive, source, configfile, args.scale)
    else:
        restore(args.directory, args.archive, configfile, args.scale)


if __name__ == "__main__":
    main()
