"""The whole Dyck DAG at smoke scale through Snakemake, in a scratch directory."""

from __future__ import annotations

import csv
import json
import math
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import torch
from pipeline_utils import base_config, run_snakemake, write_yaml

from rnnrepro import makers, papers

pytestmark = pytest.mark.slow


def smoke_config() -> dict:
    """The smoke scale on one Dyck dataset (m = 4; the smoke scale's m = 6 takes the same path
    through every rule), its checkpoints in a directory whose name has a space (every path in
    the rules' shell commands is quoted)."""
    config = base_config()
    config["scale"] = "smoke"
    config["scales"]["smoke"]["dyck"]["m"] = [4]
    config["checkpoint_dir"] = "results/check points"
    return config


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("smoke")
    run_snakemake(workdir, smoke_config(), "dyck")
    assert list((workdir / "results/check points/smoke").rglob("*.pt"))
    return workdir


def test_tables_hold_paper_and_reproduced_numbers(smoke_run):
    table = pd.read_csv(smoke_run / "results/tables/second_order_lstm_table1.csv")
    assert {"paper", "mean", "n_seeds", "delta", "floor", "verdict"} <= set(table.columns)
    smoke_datasets = {"dyck_m4"}
    ran = table[table["dataset"].isin(smoke_datasets)]
    assert len(ran) > 0 and (ran["n_seeds"] == 1).all()
    not_run = table.loc[~table["dataset"].isin(smoke_datasets), "verdict"]
    assert set(not_run) == {"not run at smoke scale"}  # m = 6 and 8 are not configured here
    assert ran["verdict"].str.startswith("smoke-scale ").all()  # never a bare "match"
    assert ran.loc[ran["metric"] == "test_ppl", "paper"].tolist()  # paper numbers present
    for _, row in ran[ran["metric"].str.endswith("_ppl")].iterrows():
        # Finite and above the generator floor; two smoke epochs leave it near uniform (7 tokens).
        assert row["floor"] <= row["mean"] < 8, row.to_dict()
    for _, row in ran[ran["metric"].str.endswith("_wcpa")].iterrows():
        assert 0.0 <= row["mean"] <= 1.0
    assert (smoke_run / "results/tables/second_order_lstm_table1.md").read_text().count("|") > 20
    multi_matrix = pd.read_csv(smoke_run / "results/tables/multi_matrix_table2_dyck.csv")
    smoke_rows = multi_matrix.loc[multi_matrix["dataset"].isin(smoke_datasets), "verdict"]
    compared = smoke_rows[smoke_rows != "info"]
    assert len(compared) and compared.str.startswith("smoke-scale ").all()


@pytest.mark.parametrize("table", ["second_order_lstm_table1", "multi_matrix_table2_dyck"])
def test_tables_state_the_scale_and_its_reductions(smoke_run, table):
    header = (smoke_run / f"results/tables/{table}.md").read_text().split("Columns:")[0]
    assert "Scale smoke: reduced from the papers' settings" in header
    assert "m in [4] only (the paper also has [6, 8]: those rows are not run)" in header
    assert "train/val/test sequences 48/24/24 (paper 10,000/4,000/10,000)" in header
    assert "Scale of the runs read: smoke" in header and "unstated" not in header


def test_run_outputs_are_complete_and_consistent(smoke_run):
    run = smoke_run / "results/runs/second_order_lstm/dyck_m4/attention_lstm/seed1"
    metrics = json.loads((run / "metrics.json").read_text())
    history = pd.read_csv(run / "history.csv")
    assert metrics["epochs"] == len(history) == 2 and metrics["scale"] == "smoke"
    assert metrics["params"]["recurrent"] > 0
    assert math.isfinite(metrics["test"]["ppl"]) and 0 <= metrics["test"]["wcpa"] <= 1
    assert history["temperature"].tolist() == pytest.approx([1.0, 0.9])
    ldpa = pd.read_csv(run / "ldpa.csv")
    assert set(ldpa["split"]) == {"val", "test"}
    assert (ldpa["correct"] <= ldpa["total"]).all()
    floor = json.loads((smoke_run / "results/data/dyck_m4/floor.json").read_text())
    assert set(floor) == {"train", "val", "test"} and all(f > 1 for f in floor.values())
    dyck_rnn = json.loads(
        (smoke_run / "results/runs/multi_matrix/dyck_m4/dyck_rnn/seed1/metrics.json").read_text()
    )
    assert dyck_rnn["test"]["ppl"] is None and dyck_rnn["params"]["total"] == 5


def test_figures_are_pngs_stating_the_scale(smoke_run):
    from PIL import Image

    for name in ("fig2_ldpa", "fig3_val_wcpa", "fig4_pabs", "fig6_heatmap"):
        path = smoke_run / f"results/figures/second_order_lstm_{name}.png"
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000
        with Image.open(path) as image:  # the footer's text, also kept as PNG metadata
            assert "Scale smoke: reduced" in image.text["Description"], name


def test_data_files_follow_the_umask(smoke_run):
    umask = os.umask(0)
    os.umask(umask)
    files = [*(smoke_run / "results/data").rglob("*.txt"), *(smoke_run / "results/runs").rglob("*")]
    assert files
    for path in files:
        if path.is_file():
            assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask, path


def test_second_run_executes_nothing(smoke_run):
    proc = run_snakemake(smoke_run, smoke_config(), "dyck", "-n")
    assert "Nothing to be done" in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "change",
    [{"checkpoint_dir": "/moved/to scratch"}, {"device": "cpu"}, {"device": "cuda"}],
    ids=["checkpoint_dir", "device_cpu", "device_cuda"],
)
def test_where_and_on_what_runs_execute_reruns_nothing(smoke_run, change):
    """The checkpoints' directory and the device are not what a run computes: changing them
    on a finished directory plans no job (a resumed run records the devices it ran on)."""
    proc = run_snakemake(smoke_run, {**smoke_config(), **change}, "dyck", "-n")
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_runs_record_where_they_ran(smoke_run):
    run = smoke_run / "results/runs/second_order_lstm/dyck_m4/attention_lstm/seed1"
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["devices"] == ["cpu"] and metrics["eval_device"] == "cpu"
    assert set(pd.read_csv(run / "history.csv")["device"]) == {"cpu"}


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_a_device_this_machine_lacks_stops_before_any_job_and_deletes_nothing(smoke_run):
    """Forced, the job's finished outputs were deleted first, then it failed on a missing GPU."""
    run = smoke_run / "results/runs/second_order_lstm/dyck_m4/lstm/seed1"
    before = {name: (run / name).stat().st_mtime_ns for name in ("model.pt", "history.csv")}
    target = str(run.relative_to(smoke_run) / "model.pt")
    config = {**smoke_config(), "device": "cuda"}
    proc = run_snakemake(smoke_run, config, target, "--force", check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "config key 'device': 'cuda', but this machine has no CUDA device" in output
    assert {name: (run / name).stat().st_mtime_ns for name in before} == before
    write_yaml(smoke_run / "config.yaml", smoke_config())  # as it was


def test_an_unwritable_checkpoint_directory_stops_before_any_job(tmp_path):
    (tmp_path / "a file").write_text("")
    config = {**smoke_config(), "checkpoint_dir": str(tmp_path / "a file" / "checkpoints")}
    proc = run_snakemake(tmp_path, config, "dyck", check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert (
        f"config key 'checkpoint_dir': cannot create or write {tmp_path / 'a file'}"
        f"/checkpoints/smoke (Not a directory); no job was started"
    ) in output
    assert not (tmp_path / "results").exists()


def test_changing_one_model_reruns_only_its_jobs(smoke_run):
    config = smoke_config()
    config["experiments"]["second_order_lstm"]["models"]["lstm"]["dataset_hparams"]["dyck"][
        "embedding_dim"
    ] = 31
    stats, out = planned_jobs(smoke_run, config)
    assert stats.get("train") == "1", out  # second_order_lstm's lstm only
    assert stats.get("evaluate_dyck") == "1", out
    assert "dyck_data" not in stats


def planned_jobs(workdir, config) -> tuple[dict[str, str], str]:
    """Jobs per rule that ``snakemake dyck -n`` would run in workdir, and its output."""
    proc = run_snakemake(workdir, config, "dyck", "-n", "--quiet", "rules")
    out = proc.stdout + proc.stderr
    stats = dict(
        line.split()[:2]
        for line in out.splitlines()
        if len(line.split()) == 2 and line.split()[1].isdigit()
    )
    return stats, out


def test_archived_runs_restore_as_complete(smoke_run, tmp_path):
    """`python -m rnnrepro.scripts.archive`: runs saved from one directory and restored into a
    fresh one are complete to Snakemake; a run whose settings changed since it ran is not
    restored; an unfinished run's checkpoint is kept (compacted, in parts) and resumed to the
    same numbers."""

    def archive(action, workdir, config, name="archive", *extra):
        write_yaml(workdir / "config.yaml", config)
        command = [sys.executable, "-m", "rnnrepro.scripts.archive", action, *extra]
        command += ["--directory", str(workdir), "--archive", str(tmp_path / name)]
        command += ["--configfile", str(workdir / "config.yaml"), "--scale", "smoke"]
        proc = subprocess.run(command, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return proc.stdout

    archive("save", smoke_run, smoke_config())
    manifest = pd.read_csv(tmp_path / "archive/manifest.csv")
    # m = 4; 3 second_order_lstm and 7 multi_matrix models; one seed
    assert len(manifest) == 10
    # a segment of the track that started two hours ago and was paused for one of them
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 7200))
    segment = ("--segment-start", started, "--segment-paused", "3600")
    assert "save: 0 run(s) added" in archive("save", smoke_run, smoke_config(), "archive", *segment)
    out = archive("status", smoke_run, smoke_config())
    assert "10/10 runs finished" in out and "1 segment(s): 1.00 h of wall time" in out, out
    assert re.search(r"multi_matrix +dyck_m4 +mmlstm +1/1 +seeds 1\n", out), out
    hours = re.search(r"([\d.]+) training hours \(summed over runs[^;]*; ([\d.]+) h as epochs", out)
    assert hours, out
    # an epoch stretched by a stop counts in the training hours, not in the steady ones
    history = tmp_path / "archive/multi_matrix/dyck_m4/mmlstm/seed1/history.csv"
    original = history.read_text()
    before = pd.read_csv(history)["seconds"]
    epochs = pd.concat([pd.read_csv(history)] * 3, ignore_index=True)
    epochs["seconds"] = 3600.0
    epochs.loc[0, "seconds"] = 36000.0
    epochs.to_csv(history, index=False)
    stretched = re.search(
        r"([\d.]+) training hours \(summed over runs[^;]*; ([\d.]+) h",
        archive("status", smoke_run, smoke_config()),
    )
    assert stretched[1] == hours[1]  # from the manifest
    expected = float(hours[2]) - len(before) * before.median() / 3600 + len(epochs)
    assert float(stretched[2]) == pytest.approx(expected, abs=0.011)
    history.write_text(original)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert "restore: 10 finished run(s)" in archive("restore", fresh, smoke_config())
    stats, out = planned_jobs(fresh, smoke_config())
    assert not {"train", "evaluate_dyck", "analyse_attention", "dyck_data"} & set(stats), out
    assert "table" in stats, out  # tables are made, not archived

    changed = tmp_path / "changed"
    changed.mkdir()
    config = smoke_config()
    config["experiments"]["second_order_lstm"]["models"]["lstm"]["dataset_hparams"]["dyck"][
        "embedding_dim"
    ] = 31
    out = archive("restore", changed, config)
    assert "restore: 9 finished run(s)" in out and "seed1: settings changed since it ran" in out
    stats, out = planned_jobs(changed, config)
    assert stats.get("train") == "1" and stats.get("evaluate_dyck") == "1", out

    # a run whose row says other training and evaluation code made it (commit abc1234): it
    # trains again, or, with --keep-runs-of-other-code, is kept and only its evaluation redone
    other = "multi_matrix/dyck_m4/mmlstm/seed1"
    shutil.copytree(tmp_path / "archive", tmp_path / "other")
    with (tmp_path / "other/manifest.csv").open() as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        if "/".join((row["experiment"], row["dataset"], row["model"], "seed1")) == other:
            row.update(code_train="0" * 16, code_evaluate="1" * 16, commit="abc1234")
    with (tmp_path / "other/manifest.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    retrain, keep = tmp_path / "retrain", tmp_path / "keep"
    retrain.mkdir()
    keep.mkdir()
    out = archive("restore", retrain, smoke_config(), "other")
    assert "restore: 9 finished run(s)" in out, out
    said = f"{other}: code_train, code_evaluate changed since it ran (commit abc1234)"
    assert f"{said}: trains again (--keep-runs-of-other-code keeps it)" in out, out
    out = archive("restore", keep, smoke_config(), "other", "--keep-runs-of-other-code")
    assert "restore: 10 finished run(s)" in out, out
    assert f"{said}: kept as trained by commit abc1234's code; evaluate redone" in out, out
    assert "1 of them trained by other training code" in out, out
    stats, out = planned_jobs(keep, smoke_config())
    assert "train" not in stats and stats.get("evaluate_dyck") == "1", out
    # saved again, the kept run's row still names the code that trained it
    run_snakemake(keep, smoke_config(), f"results/runs/{other}/metrics.json")
    out = archive("save", keep, smoke_config(), "other")
    assert f"save: {other}: trained by commit abc1234's code, other than" in out, out
    assert "save: 0 run(s) added" in out, out
    with (tmp_path / "other/manifest.csv").open() as f:
        assert list(csv.DictReader(f)) == rows
    out = archive("save", keep, smoke_config(), "elsewhere")  # nor into another archive
    assert f"save: {other}: trained by commit abc1234's code" in out, out
    assert "save: 9 run(s) added" in out, out

    # an unfinished run: only its checkpoint (here, of its last epoch) exists
    run = "second_order_lstm/dyck_m4/attention_lstm/seed1"
    unfinished = tmp_path / "unfinished"
    saved = smoke_run / f"results/check points/smoke/{run}.pt"
    (unfinished / saved.relative_to(smoke_run)).parent.mkdir(parents=True)
    shutil.copyfile(saved, unfinished / saved.relative_to(smoke_run))
    # (in parts of 10 kB, as memory's LSTMs' checkpoints are kept in parts of 48 MiB)
    assert "1 checkpoint(s) of unfinished runs" in archive(
        "save", unfinished, smoke_config(), "kept", "--part-mb", "0.01"
    )
    index = json.loads((tmp_path / f"kept/checkpoints/{run}.pt.parts.json").read_text())
    assert len(index["parts"]) > 1
    out = archive("status", unfinished, smoke_config(), "kept")
    assert "0/10 runs finished" in out
    # its curve so far is archived whatever the checkpoint's size
    progress = pd.read_csv(tmp_path / "kept/progress.csv")
    trained = pd.read_csv(smoke_run / f"results/runs/{run}/history.csv")
    assert progress["val_loss"].tolist() == trained["val_loss"].tolist()
    assert set(progress["model"]) == {"attention_lstm"}
    best = trained.loc[trained["val_loss"].idxmin()]
    said = f"{len(trained)} epoch(s), best val_loss {best['val_loss']:.4f} (epoch {best['epoch']})"
    assert f"unfinished: {run}: {said}" in out, out
    resumed = tmp_path / "resumed"
    resumed.mkdir()
    assert "0 finished run(s) and 1 checkpoint(s)" in archive(
        "restore", resumed, smoke_config(), "kept"
    )
    run_snakemake(resumed, smoke_config(), f"results/runs/{run}/history.csv")
    log = (resumed / f"results/logs/train/{run}.log").read_text()
    assert "resuming from" in log
    history = (resumed / f"results/runs/{run}/history.csv").read_text()
    assert history == (smoke_run / f"results/runs/{run}/history.csv").read_text()


def test_report_builds(smoke_run):
    """The report shows every Dyck output with its caption from the paper's catalogue."""
    run_snakemake(smoke_run, smoke_config(), "dyck", "--report", "report.html")
    report = (smoke_run / "report.html").read_text(encoding="utf-8", errors="replace")
    outputs = papers.outputs()
    for target in makers.targets(smoke_config(), "dyck"):
        caption = outputs[Path(target).stem].caption
        assert " ".join(caption.split()[:6]) in report, target
