"""Every archive of paper-scale runs holds its comparison tables, made from it by one command
(``rnnrepro.scripts.archive_tables``), and they are the ones its runs give now."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from pipeline_utils import ROOT

from rnnrepro.archive import ArchiveError, archive_folders, finished_runs
from rnnrepro.scripts import archive_tables

ARCHIVES = archive_folders(ROOT / "benchmarks" / "results")


def copy_archive(archive: Path, to: Path) -> Path:
    """The archive without its model files and checkpoints (the tables read neither)."""
    shutil.copytree(archive, to, ignore=shutil.ignore_patterns("*.pt", "*.part*", "tables"))
    return to


def test_there_are_archives():
    assert {a.name for a in ARCHIVES} >= {"dyck_paper", "fold1", "memory_ptb", "multi_matrix_word"}


@pytest.mark.parametrize("archive", ARCHIVES, ids=[a.name for a in ARCHIVES])
def test_each_archive_holds_the_tables_its_runs_give(archive, tmp_path):
    """Rerun `python -m rnnrepro.scripts.archive_tables benchmarks/results/<archive>` after
    archiving runs or changing how tables are made."""
    committed = sorted((archive / "tables").glob("*.md"))
    if not finished_runs(archive):  # a track whose first runs still train
        assert not committed
        return
    assert committed, f"{archive.name} has no tables"
    copy = copy_archive(archive, tmp_path / archive.name)
    archive_tables.main([str(copy)])
    for table in committed:
        made = (copy / "tables" / table.name).read_text()
        assert made == table.read_text(), f"{table} is stale"
    assert sorted(p.name for p in (copy / "tables").glob("*.md")) == [p.name for p in committed]


def test_a_folder_that_is_no_archive_is_refused_by_name(tmp_path, capsys):
    with pytest.raises(SystemExit):
        archive_tables.main([str(tmp_path)])
    assert f"{tmp_path}: no manifest.csv" in capsys.readouterr().err


def test_the_archives_notes_go_under_each_title(tmp_path):
    copy = copy_archive(ROOT / "benchmarks/results/memory_ptb", tmp_path / "memory_ptb")
    (copy / "notes.txt").write_text("First note,\nwrapped.\n\nSecond note.\n")
    archive_tables.main([str(copy)])
    text = (copy / "tables" / "memory_table1.md").read_text()
    assert (
        "> First note, wrapped.  \n> Second note.  \n> From the archive memory_ptb: 2 run(s)"
        in text
    )


@pytest.mark.parametrize("archive", ARCHIVES, ids=[a.name for a in ARCHIVES])
def test_a_finished_run_leaves_no_checkpoint_in_its_archive(archive):
    """Checkpoints are temporary: an archive keeps one only for a run still training (a row of
    its manifest is a finished run), so that the repository does not grow with them."""
    manifest = pd.read_csv(archive / "manifest.csv", dtype=str, keep_default_na=False)
    for _, row in manifest.iterrows():
        trial = f"/trial{row['trial']}" if row.get("trial") else ""
        run = f"{row['experiment']}/{row['dataset']}/{row['model']}/seed{row['seed']}{trial}"
        left = list((archive / "checkpoints").glob(f"{run}.pt*"))
        assert not left, f"{archive.name}: {run} finished but keeps {left}"


def test_an_archive_that_is_not_one_is_refused_by_name(tmp_path):
    """A manifest without a column readers need, a metrics.json that is another run than its
    folder says, or a run the manifest does not list: each stops the reader, naming the file."""
    archive = copy_archive(ROOT / "benchmarks/results/memory_ptb", tmp_path / "memory_ptb")
    assert len(finished_runs(archive)) == 2
    manifest = (archive / "manifest.csv").read_text()
    (archive / "manifest.csv").write_text(manifest.replace(",settings,", ",setting,", 1))
    with pytest.raises(ArchiveError, match=r"manifest.csv: no column settings"):
        finished_runs(archive)
    (archive / "manifest.csv").write_text(manifest)
    metrics = archive / "memory/ptb_stream/lstm_920/seed1/trial5/metrics.json"
    record = json.loads(metrics.read_text())
    metrics.write_text(json.dumps({**record, "model": "lstm_650"}))
    with pytest.raises(ArchiveError, match=r"trial5/metrics.json: it is the run "
                       r"memory/ptb_stream/lstm_650/seed1/trial5, not .*lstm_920"):  # fmt: skip
        finished_runs(archive)
    metrics.write_text(json.dumps(record))
    lines = manifest.splitlines()
    (archive / "manifest.csv").write_text(
        "\n".join(line for line in lines if "lstm_920" not in line)
    )
    with pytest.raises(ArchiveError, match=r"lstm_920/seed1/trial5 is not in .*manifest.csv"):
        finished_runs(archive)
