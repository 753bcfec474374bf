"""src/rnnrepro/scripts/archive.py: an archived run's code against this checkout's, for manifests
of syntax digests and for the byte digests recorded before them."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess

import pytest
from pipeline_utils import ROOT

from rnnrepro import config as cfg
from rnnrepro.provenance import DIGEST_KIND, byte_digest, code_digest
from rnnrepro.scripts import archive as ta

RUN = cfg.Run("multi_matrix", "dyck_m4", "lstm", 1)


def git(repo, *args) -> str:
    command = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    return subprocess.run([*command, *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def checkout(tmp_path):
    """A git repository holding a commit of the package sources, and that commit."""
    repo = tmp_path / "repo"
    shutil.copytree(
        ROOT / "src/rnnrepro", repo / "src/rnnrepro", ignore=shutil.ignore_patterns("__pycache__")
    )
    git(repo, "init", "-q")
    git(repo, "add", "src")
    git(repo, "commit", "-q", "-m", "sources")
    return repo, git(repo, "rev-parse", "--short", "HEAD").strip()


@pytest.fixture(scope="module")
def config():
    return ta.load_config(ROOT / "config.yaml", "smoke")


def row_of(repo, config, commit, digest=code_digest, kind=""):
    """A manifest row of RUN made at ``commit`` (the sources in ``repo`` now)."""
    fingerprint = ta.fingerprint(config, RUN, repo)
    architecture = cfg.architecture(config, RUN.experiment, RUN.model)
    codes = ta.code_digests(architecture, RUN.dataset, repo / "src/rnnrepro", digest)
    return {**fingerprint, **codes, "commit": commit, "digest": kind}


def changes(row, repo, config):
    code_digest.cache_clear()
    byte_digest.cache_clear()
    return ta.code_changes(row, RUN, config, repo, ta.Commits(repo))


def append(path, text):
    path.write_text(path.read_text() + text)


def test_syntax_rows_ignore_comments_and_see_code(checkout, config):
    repo, commit = checkout
    row = row_of(repo, config, commit, kind=DIGEST_KIND)
    assert changes(row, repo, config) == ([], "")
    append(repo / "src/rnnrepro/training.py", "\n# a comment\n")
    assert changes(row, repo, config) == ([], "")
    append(repo / "src/rnnrepro/scripts/evaluate_dyck.py", "\n_EDITED = 1\n")
    assert changes(row, repo, config) == (["code_evaluate"], "")
    append(repo / "src/rnnrepro/training.py", "\n_EDITED = 1\n")
    assert "code_train" in changes(row, repo, config)[0]


def test_byte_rows_are_compared_by_the_syntax_of_their_commit(checkout, config):
    """A row of the old kind (byte digests, no digest column): its commit's sources reproduce
    the recorded digests, so their syntax is compared with this checkout's; a comment is no
    change, code is."""
    repo, commit = checkout
    row = row_of(repo, config, commit, byte_digest)
    del row["digest"]  # manifests written before the column
    append(repo / "src/rnnrepro/training.py", "\n# a comment\n")
    assert changes(row, repo, config) == ([], "")
    append(repo / "src/rnnrepro/training.py", "\n_EDITED = 1\n")
    assert changes(row, repo, config)[0] == ["code_train"]  # evaluation does not import it


def test_byte_rows_fall_back_to_bytes(checkout, config):
    """Without the commit, or when the commit is not the recorded code (a checkout with
    uncommitted edits when saved), bytes are compared with bytes, and the note says so."""
    repo, commit = checkout
    row = row_of(repo, config, "0123456", byte_digest)
    note = "byte digests compared: commit '0123456' is not in this repository"
    assert changes(row, repo, config) == ([], note)
    append(repo / "src/rnnrepro/training.py", "\n# a comment\n")
    code, note = changes(row, repo, config)
    assert "code_train" in code and "not in this repository" in note
    row = row_of(repo, config, commit, byte_digest)  # the edited bytes, not the commit's
    code, note = changes(row, repo, config)
    assert code == [] and "does not hold the recorded code" in note


@pytest.mark.parametrize("archive", ["fold1", "dyck_paper"])
def test_the_archived_manifests_are_their_commits_code(archive):
    """Every row of the paper-scale archives records the byte digests of its commit's sources:
    the commit column names the code that trained, scored and analysed the run."""
    with (ROOT / f"benchmarks/results/{archive}/manifest.csv").open() as f:
        rows = list(csv.DictReader(f))
    commits = ta.Commits(ROOT)
    for row in rows:
        root = commits.root(row["commit"])
        if root is None:
            pytest.skip(f"commit {row['commit']} is not in this clone")
        architecture = json.loads(row["settings"])["architecture"]
        recorded = {key: row[key] for key in ("code_train", "code_evaluate", "code_analyse")}
        assert ta.code_digests(architecture, row["dataset"], root, byte_digest) == recorded, row


def test_search_trials_are_archived_as_runs_of_their_own():
    """memory's models are searched: each trial is one training job, archived under its trial
    (a manifest row's ``trial``) with that trial's sampled settings."""
    config = ta.load_config(ROOT / "config.yaml", "paper")
    runs = [r for r in ta.single_stage_runs(config) if r.model == "lstm_650"]
    assert {r.trial for r in runs} == set(range(1, 11))
    first, second = (cfg.Run("memory", "ptb_stream", "lstm_650", 1, trial=k) for k in (1, 2))
    assert first in runs and first.path.endswith("seed1/trial1")
    settings = [json.loads(ta.fingerprint(config, r, ROOT)["settings"]) for r in (first, second)]
    assert settings[0]["training"]["lr"] != settings[1]["training"]["lr"]
    assert settings[0]["trial"]["index"] == 1
    row = {"experiment": "memory", "dataset": "ptb_stream", "model": "lstm_650", "seed": "1"}
    assert ta.run_of(row | {"trial": "1"}) == first
    assert ta.run_of(row | {"trial": ""}).trial is None  # a run without a search
    assert ta.run_of(row).trial is None  # a manifest saved before the column


def test_an_unfinished_run_validated_in_steps_is_told_in_validations():
    """Under ``eval_every`` an epoch has several progress rows: `status` counts validations and
    names the last one's step and epoch, not one epoch a row."""
    rows = [{"epoch": str(e), "step": str(s), "val_loss": str(v), "batches": ""}
            for e, s, v in ((1, 415, 5.38), (1, 830, 5.16), (2, 1245, 5.07))]  # fmt: skip
    said = ta.progress_summary(rows)
    assert said == (
        "3 validation(s), the last at step 1245 in epoch 2, best val_loss 5.0700 (epoch 2)"
    )
    plain = [{**r, "step": ""} for r in rows[:2]]
    assert ta.progress_summary(plain).startswith("2 epoch(s), best val_loss 5.1600 (epoch 1)")
