"""The measured accounts of the differences from the papers: the note of each study
(``studies/<study>/README.md``) and of each archive's track (``<archive>/README.md``), whose YAML
front matter ``explains`` names the rows (paper/dataset[/model]) it accounts for. Light: read
when Snakemake builds the DAG."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import yaml


def account_notes(*rooms: Path) -> list[Path]:
    """The notes that may account for a difference: the ``README.md`` of each folder of
    ``rooms`` (a study of ``studies/``, an archive with the note of its track)."""
    return [note for room in rooms for note in sorted(Path(room).glob("*/README.md"))]


def read_accounts(*rooms: Path) -> dict[tuple[str, ...], list[str]]:
    """(paper, dataset[, model]) -> the notes (paths, ``account_notes``) whose front matter
    ``explains`` it."""
    accounts: dict[tuple[str, ...], list[str]] = {}
    for note in account_notes(*rooms):
        match = re.match(r"---\n(.*?)\n---\n", note.read_text(encoding="utf-8"), re.S)
        front = yaml.safe_load(match.group(1)) if match else None
        for key in (front or {}).get("explains", []):
            accounts.setdefault(tuple(key.split("/")), []).append(str(note))
    return accounts


def account_of(accounts: Mapping[tuple[str, ...], list[str]], ref: Mapping[str, str]) -> list[str]:
    """The notes that account for row ``ref``: its (paper, dataset) and (paper, dataset,
    model)."""
    keys = [(ref["paper"], ref["dataset"], *m) for m in ((), (ref["model"],))]
    return list(dict.fromkeys(note for key in keys for note in accounts.get(key, [])))
