"""Archives of finished runs at the papers' settings, as readers see them (docs/results.md,
"Archives of paper-scale runs"): the folders that hold one, their manifests, their finished runs
and which of them ran with today's settings. Each is checked as it is read: a manifest without
a column readers need, or a ``metrics.json`` that is not the run its folder and the manifest
name, stops the reader with an ``ArchiveError`` naming the file. ``rnnrepro.scripts.archive``
(``python -m rnnrepro.scripts.archive save|restore|status``) writes and restores them.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from rnnrepro import config as cfg

MANIFEST = "manifest.csv"
# what a reader needs of a manifest row (a manifest may hold more: rnnrepro.scripts.archive.COLUMNS)
REQUIRED = ("experiment", "dataset", "model", "seed", "scale", "settings", "commit", "host")
# the scales whose runs train at the papers' settings (config.yaml): paper, and fold1 (the same
# on one of general_second_order's five folds, which the paper averages)
PAPER_SETTINGS = ("paper", "fold1")


class ArchiveError(ValueError):
    """An archive that cannot be read as one: the message names the file and what is wrong."""


def archive_folders(root: Path) -> list[Path]:
    """The archives under ``root``: its folders holding a ``manifest.csv``."""
    return sorted(p.parent for p in root.glob(f"*/{MANIFEST}")) if root.is_dir() else []


def read_manifest(folder: Path) -> list[dict]:
    """The rows of ``folder``'s manifest, each with the ``REQUIRED`` columns."""
    path = folder / MANIFEST
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise ArchiveError(f"{path}: no column {', '.join(missing)} (docs/results.md)")
        return list(reader)


def run_of(row: dict) -> cfg.Run:
    """The run a manifest row or a ``metrics.json`` names (its trial, when it has one)."""
    trial = int(row["trial"]) if row.get("trial") else None
    return cfg.Run(row["experiment"], row["dataset"], row["model"], int(row["seed"]), trial=trial)


def finished_runs(folder: Path) -> list[Path]:
    """The ``metrics.json`` of every finished run of the archive, each the run that its folder
    (``<experiment>/<dataset>/<model>/seed<seed>[/trial<k>]``) and a manifest row name."""
    listed = {run_of(row).path for row in read_manifest(folder)}
    found = []
    for path in sorted(folder.glob("*/*/*/seed*/**/metrics.json")):
        where = path.parent.relative_to(folder).as_posix()
        metrics = json.loads(path.read_text())
        named = run_of(metrics).path
        if named != where:
            raise ArchiveError(f"{path}: it is the run {named}, not {where}")
        if named not in listed:
            raise ArchiveError(f"{path}: the run {named} is not in {folder / MANIFEST}")
        found.append(path)
    return found


def current_runs(folder: Path, config: dict) -> set[cfg.Run]:
    """The runs an archive's manifest holds at the papers' settings whose settings are today's
    (``config`` at the row's scale): what a restore keeps rather than trains again."""
    done = set()
    for row in read_manifest(folder):
        if row["scale"] not in PAPER_SETTINGS:
            continue
        run = run_of(row)
        scaled = {**config, "scale": row["scale"]}
        try:
            settings = cfg.run_config(
                scaled, run.experiment, run.dataset, run.model, trial=run.trial
            )
        except (KeyError, ValueError):  # a run the config no longer has
            continue
        if json.dumps(settings, sort_keys=True) == row["settings"]:
            done.add(run)
    return done
