"""The pipeline on a real SLURM cluster through profiles/slurm (snakemake-executor-plugin-slurm).

A one-node cluster on localhost (Debian's Slurm, one pretend GPU) is brought up by
.ci/slurm/up.sh for this module and torn down by .ci/slurm/down.sh. The tests are skipped only
where up.sh says the machine cannot host it (not root, or the packages cannot be installed).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from pipeline_utils import ROOT, base_config, write_yaml

from rnnrepro import config as cfg
from rnnrepro.resources import run_resources

pytestmark = [pytest.mark.slow, pytest.mark.waits]

SCRIPTS = ROOT / ".ci" / "slurm"
CANNOT_HOST = 77  # up.sh's exit status when this machine cannot run the cluster
RUN = "results/runs/second_order_lstm/dyck_m4/lstm/seed1"
CHECKPOINT = "results/checkpoints/smoke/second_order_lstm/dyck_m4/lstm/seed1.pt"
TRAIN_LOG = "results/logs/train/second_order_lstm/dyck_m4/lstm/seed1.log"
# Jobs call `python -m ...`: make it this interpreter (a venv need not be activated).
ENV = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    state = tmp_path_factory.mktemp("slurm")
    up = subprocess.run([SCRIPTS / "up.sh", state], capture_output=True, text=True)
    if up.returncode == CANNOT_HOST:
        pytest.skip(up.stderr.strip().splitlines()[-1])
    assert up.returncode == 0, up.stdout + up.stderr
    yield state
    subprocess.run([SCRIPTS / "down.sh", state], capture_output=True, check=False)


def small_config(train_size: int | None = None, max_epochs: int | None = None) -> dict:
    """Smoke scale with one dataset (Dyck-4) and one model in each experiment."""
    config = base_config()
    config["scale"] = "smoke"
    config["device"] = "cpu"
    smoke = config["scales"]["smoke"]
    smoke["dyck"]["m"] = [4]
    if train_size:
        smoke["dyck"]["sizes"]["train"] = train_size
    if max_epochs:
        smoke["max_epochs"] = max_epochs
    for experiment, model in (("second_order_lstm", "lstm"), ("multi_matrix", "dyck_rnn")):
        models = config["experiments"][experiment]["models"]
        config["experiments"][experiment]["models"] = {model: models[model]}
    return config


def snakemake_command(workdir: Path, config: dict, *args: str, profile: str = "slurm") -> list:
    """A Snakemake call with config, to be run in workdir; targets go before the options."""
    write_yaml(workdir / "config.yaml", config)
    command = [sys.executable, "-m", "snakemake", *args, "--snakefile", str(ROOT / "Snakefile")]
    if profile == "local":
        return command + ["--cores", "2"]
    return command + [
        "--workflow-profile",
        str(ROOT / "profiles" / profile),
        # No accounting database here, so no sacct: poll with squeue (MinJobAge is 300 s),
        # first after 2 s instead of 40.
        "--slurm-status-command",
        "squeue",
        "--slurm-init-seconds-before-status-checks",
        "2",
        # The user's partition (this cluster has no accounts: slurm_account is left out).
        "--default-resources",
        "slurm_partition=debug",
    ]


def submitted_jobs(output: str) -> list[str]:
    """SLURM job ids in Snakemake's output, in submission order."""
    return re.findall(r"submitted with SLURM jobid (\d+)", output)


def slurm_job(job_id: str) -> dict:
    """`scontrol show job` as a dict (finished jobs stay visible for MinJobAge = 300 s)."""
    out = subprocess.run(
        ["scontrol", "-o", "show", "job", job_id], capture_output=True, text=True, check=True
    ).stdout
    return dict(field.split("=", 1) for field in out.split() if "=" in field)


def train_resources(output: str) -> dict:
    """The resources line of the train job in a dry run's output."""
    line = re.search(r"rule train:.*?resources: ([^\n]*)", output, re.S).group(1)
    return dict(item.split("=", 1) for item in line.split(", ") if "=" in item)


def test_smoke_table_runs_through_slurm_with_cpus_for_a_dyck_run(cluster, tmp_path):
    target = "results/tables/second_order_lstm_table1.md"
    proc = subprocess.run(
        snakemake_command(tmp_path, small_config(), target),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert (tmp_path / target).read_text().count("|") > 10
    # Data, floor and table ran locally; the run (training + evaluation) was one SLURM job.
    (job_id,) = submitted_jobs(out)
    job = slurm_job(job_id)
    assert job["JobState"] == "COMPLETED", job
    assert "train" in job["Comment"] and "evaluate_dyck" in job["Comment"], job  # group "run"
    assert job["Partition"] == "debug"
    # A Dyck model asks for CPUs only (config cluster.cpu_families): set-threads' 2, no GPU.
    assert "gpu" not in job.get("TresPerJob", "") + job.get("CpusPerTres", ""), job
    assert job["NumCPUs"] == "2", job
    # Smoke time limit: training 10 min (cluster.runtime.fixed) + evaluation 15 min (the profile).
    assert job["TimeLimit"] == "00:25:00", job
    assert (tmp_path / RUN / "metrics.json").exists()


def test_training_resources_follow_the_run(cluster, tmp_path):
    """A Dyck run asks for CPUs, a text run for a GPU; the time limit follows the scale and, at
    paper scale, the run's measured epoch time on the device it asks for (the GPU check's tables in
    benchmarks/results/gpu/ for the text run)."""
    found = {}
    for scale in ("smoke", "paper"):
        for dataset in ("dyck_m4", "wikitext2"):
            config = small_config()
            config["scale"] = scale
            workdir = tmp_path / f"{scale}_{dataset}"
            workdir.mkdir()
            target = f"results/runs/second_order_lstm/{dataset}/lstm/seed1/history.csv"
            proc = subprocess.run(
                snakemake_command(workdir, config, target, "-n"),
                cwd=workdir,
                capture_output=True,
                text=True,
                env=ENV,
                timeout=120,
            )
            assert proc.returncode == 0, proc.stdout + proc.stderr
            found[scale, dataset] = train_resources(proc.stdout + proc.stderr)
    for (scale, dataset), resources in found.items():
        assert resources["gpu"] == ("0" if dataset == "dyck_m4" else "1"), (scale, resources)
        assert resources["slurm_extra"] == "--signal=TERM@120 --requeue", resources
    runtime = {key: int(resources["runtime"]) for key, resources in found.items()}
    limits = config["cluster"]["runtime"]
    assert runtime["smoke", "dyck_m4"] == runtime["smoke", "wikitext2"] == limits["fixed"]["smoke"]
    for dataset in ("dyck_m4", "wikitext2"):
        run = cfg.Run("second_order_lstm", dataset, "lstm", 1, "train", None)
        expected = run_resources(config | {"scale": "paper"}, run, ROOT / "benchmarks" / "results")
        assert "epochs of" in expected.basis, expected  # measured, not cluster.runtime.unmeasured
        assert runtime["paper", dataset] == expected.runtime, (runtime, expected)
        assert limits["min"] <= runtime["paper", dataset] < limits["unmeasured"], runtime
    assert int(found["smoke", "dyck_m4"]["mem_mb"]) < int(found["paper", "dyck_m4"]["mem_mb"])


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def finish(proc: subprocess.Popen, timeout: float) -> int:
    """Wait for a Snakemake we started; stop it if it hangs (down.sh cancels its SLURM jobs)."""
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise


def test_cancelled_training_is_resubmitted_and_resumes(cluster, tmp_path):
    # Twelve epochs on 3,000 sequences (0.5-2 s each, by machine load): the cancel, about a
    # second after the first checkpoint, lands mid-training. (At 300 sequences, 0.1 s each, an
    # idle machine finished all twelve before the cancel arrived.)
    config = small_config(train_size=3000, max_epochs=12)
    target = f"{RUN}/history.csv"
    reference, cancelled = tmp_path / "reference", tmp_path / "cancelled"
    reference.mkdir()
    cancelled.mkdir()
    log = cancelled / "snakemake.log"
    # The uninterrupted reference runs locally afterwards, with the same torch thread count (not
    # meanwhile: two 2-thread trainings on 2 cores once slowed each epoch from ~1 s to 244 s).
    # One thread each: a 2-thread training on a busy machine (CI beside other jobs) spins for
    # its second core and once took over 300 s for these twelve epochs.
    threads = ("--set-threads", "train=1")
    local = snakemake_command(reference, config, target, *threads, profile="local")
    with open(log, "w") as out:
        proc = subprocess.Popen(
            snakemake_command(cancelled, config, target, *threads),
            cwd=cancelled,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=ENV,
        )
        # Cancel the SLURM job once the training has checkpointed its first epoch.
        wait_for((cancelled / CHECKPOINT).exists, 240, "the first checkpoint")
        running = subprocess.run(
            ["squeue", "-h", "-t", "RUNNING", "-o", "%i"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert len(running) == 1, running
        subprocess.run(["scancel", running[0]], check=True)
        assert finish(proc, 300) == 0, log.read_text()
    with open(reference / "snakemake.log", "w") as ref_out:
        ref = subprocess.Popen(
            local, cwd=reference, stdout=ref_out, stderr=subprocess.STDOUT, env=ENV
        )
        ref_status = finish(ref, 300)
    assert ref_status == 0, (reference / "snakemake.log").read_text()

    # --retries resubmitted it as attempt 2 (twice the time limit) and it resumed mid-training.
    first, second = submitted_jobs(log.read_text())
    assert first == running[0]
    assert slurm_job(first)["JobState"] == "CANCELLED"
    assert slurm_job(first)["TimeLimit"] == "00:10:00"
    assert slurm_job(second)["JobState"] == "COMPLETED"
    assert slurm_job(second)["TimeLimit"] == "00:20:00"
    train_log = (cancelled / TRAIN_LOG).read_text()
    resumed = re.search(r"resuming from \S+ after epoch (\d+)", train_log)
    assert resumed and 1 <= int(resumed.group(1)) < 12, train_log

    # Same history as the uninterrupted run (only the wall-clock seconds differ).
    history = pd.read_csv(cancelled / target).drop(columns="seconds")
    expected = pd.read_csv(reference / target).drop(columns="seconds")
    assert len(history) == 12
    pd.testing.assert_frame_equal(history, expected, check_exact=True)
