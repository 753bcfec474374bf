"""Per-run SLURM resources: the device a run asks for and its time limit from measurements."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from pipeline_utils import ROOT, base_config

from rnnrepro import config as cfg
from rnnrepro.config_check import check_config
from rnnrepro.resources import run_resources
from rnnrepro.scripts import estimate_cost

EPOCH_TIMES = "experiment,dataset,model,epoch_seconds\n"


def paper_config() -> dict:
    config = base_config()
    config["scale"] = "paper"
    return config


def one_run(config: dict, experiment: str, family: str, model: str) -> cfg.Run:
    return next(
        r
        for r in cfg.jobs(config, experiment)
        if r.model == model and cfg.family(r.dataset) == family
    )


def write_tables(folder, epoch_rows: str, cells: str | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "epoch_times.csv").write_text(EPOCH_TIMES + epoch_rows)
    if cells is not None:
        (folder / "cells.csv").write_text("size,model,tokens_per_s\n" + cells)


def test_dyck_runs_ask_for_cpus_and_text_runs_for_a_gpu(tmp_path):
    config = paper_config()
    dyck = one_run(config, "second_order_lstm", "dyck", "lstm")
    text = one_run(config, "second_order_lstm", "wikitext2", "lstm")
    assert run_resources(config, dyck, tmp_path).gpu == 0
    assert run_resources(config, text, tmp_path).gpu == 1
    config["cluster"]["cpu_families"] = ["dyck", "wikitext2"]
    assert run_resources(config, text, tmp_path).gpu == 0


def test_time_limit_is_margin_times_epochs_times_the_measured_epoch(tmp_path):
    config = paper_config()
    run = one_run(config, "second_order_lstm", "wikitext2", "lstm")
    max_epochs = cfg.run_config(config, run.experiment, run.dataset, run.model)["training"][
        "max_epochs"
    ]
    write_tables(tmp_path / "gpu", "second_order_lstm,wikitext2,lstm,100\n")
    found = run_resources(config, run, tmp_path)
    margin = config["cluster"]["runtime"]["margin"]
    assert found.runtime == math.ceil(margin * max_epochs * 100 / 60)
    assert found.basis == f"{max_epochs} epochs of 100 s"
    # The CPU table does not count for a GPU run.
    write_tables(tmp_path / "cpu_only", "second_order_lstm,wikitext2,lstm,100\n")
    unmeasured = run_resources(config, run, tmp_path / "cpu_only")
    assert unmeasured.runtime == config["cluster"]["runtime"]["unmeasured"]
    assert unmeasured.basis == "not measured on a gpu"


@pytest.mark.parametrize(("seconds", "bound"), [(0.01, "min"), (10**6, "max")])
def test_time_limit_is_clamped(tmp_path, seconds, bound):
    config = paper_config()
    run = one_run(config, "second_order_lstm", "wikitext2", "lstm")
    write_tables(tmp_path / "gpu", f"second_order_lstm,wikitext2,lstm,{seconds}\n")
    assert run_resources(config, run, tmp_path).runtime == config["cluster"]["runtime"][bound]


def test_dyck_time_limit_follows_the_cpu_token_model(tmp_path):
    config = paper_config()
    run = one_run(config, "multi_matrix", "dyck", "lstm")
    write_tables(tmp_path, "", cells="dyck,lstm,1000\n")
    slow = run_resources(config, run, tmp_path)
    write_tables(tmp_path / "fast", "", cells="dyck,lstm,4000\n")
    fast = run_resources(config, run, tmp_path / "fast")
    assert slow.gpu == fast.gpu == 0
    config["cluster"]["runtime"]["max"] = 10**9
    slow = run_resources(config, run, tmp_path)
    fast = run_resources(config, run, tmp_path / "fast")
    assert slow.runtime == pytest.approx(4 * fast.runtime, rel=0.01)


def test_reduced_scales_get_their_fixed_limit(tmp_path):
    config = base_config()
    write_tables(tmp_path / "gpu", "second_order_lstm,wikitext2,lstm,100\n")
    for scale, minutes in config["cluster"]["runtime"]["fixed"].items():
        config["scale"] = scale
        run = one_run(config, "second_order_lstm", "wikitext2", "lstm")
        found = run_resources(config, run, tmp_path)
        assert (found.runtime, found.basis, found.gpu) == (minutes, f"scale {scale}", 1)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"min": 100, "max": 10}, "'cluster.runtime': min 100 > max 10"),
        ({"fixed": {"tiny": 5}}, "'cluster.runtime.fixed.tiny': no scale of that name"),
    ],
)
def test_bad_cluster_settings_name_their_key(change, message):
    config = base_config()
    config["cluster"]["runtime"].update(change)
    with pytest.raises(cfg.ConfigError, match=message.replace("(", r"\(")):
        check_config(config)


def test_estimate_cost_lists_each_kind_of_runs_request(capsys):
    assert estimate_cost.main(["--config", str(ROOT / "config.yaml"), "--resources"]) == 0
    lines = capsys.readouterr().out.splitlines()
    dyck = next(line.split() for line in lines if line.startswith("second_order_lstm     dyck"))
    text = next(line.split() for line in lines if " wikitext2 " in line)
    assert dyck[4:6] == ["CPUs", str(int(dyck[5]))] and dyck[-1] == "s"  # "... epochs of N s"
    assert text[4:6] == ["1", "GPU"], text


def test_gpu_hours_come_from_the_gpu_tables_or_say_they_are_missing(tmp_path, capsys):
    """With the GPU check's tables, --gpu prices the same runs on the GPU: here tables ten
    times faster than the CPU's give a tenth of the hours, in that device's name."""
    bench = tmp_path / "results"
    bench.mkdir()
    real = ROOT / "benchmarks" / "results"
    cpu_cells = pd.read_csv(real / "cells.csv")
    cpu_cells.to_csv(bench / "cells.csv", index=False)
    pd.read_csv(real / "epoch_times.csv").to_csv(bench / "epoch_times.csv", index=False)
    argv = ["--config", str(ROOT / "config.yaml"), "--throughput", str(bench / "cells.csv")]
    argv += ["--scale", "paper", "--runs-dir", str(tmp_path / "no_runs")]
    assert estimate_cost.main([*argv, "--gpu"]) == 2
    missing = bench / "gpu" / "cells.csv"
    assert f"no GPU measurement ({missing} is missing)" in capsys.readouterr().err
    (bench / "gpu").mkdir()
    gpu_cells = cpu_cells.assign(tokens_per_s=cpu_cells["tokens_per_s"] * 10, device="H100")
    gpu_cells.to_csv(bench / "gpu" / "cells.csv", index=False)
    epochs = pd.read_csv(bench / "epoch_times.csv")
    epochs.assign(epoch_seconds=epochs["epoch_seconds"] / 10).to_csv(
        bench / "gpu" / "epoch_times.csv", index=False
    )
    assert estimate_cost.main([*argv, "--epoch-times", str(bench / "epoch_times.csv"),
                               "--out", str(tmp_path / "cpu.csv")]) == 0  # fmt: skip
    assert estimate_cost.main([*argv, "--gpu", "--out", str(tmp_path / "gpu.csv")]) == 0
    assert "measured on H100" in capsys.readouterr().out
    cpu, gpu = (pd.read_csv(tmp_path / f"{d}.csv").set_index("experiment") for d in ("cpu", "gpu"))
    assert gpu.loc["total", "device"] == "H100"
    assert gpu.loc["total", "upper_bound_hours"] == pytest.approx(
        cpu.loc["total", "upper_bound_hours"] / 10, rel=0.01
    )
