"""major_minor's studies through Snakemake at smoke scale, on fixture corpora: the sweeps,
MMLM-2, the ratio and ablation models train once each, the feature-masking rule scores the
trained models, and the study target makes Figs. 3-6 and Tables VIII-X; a change of the masking
grid reruns only the masking jobs and Fig. 5."""

from __future__ import annotations

import pandas as pd
import pytest
from pipeline_utils import base_config, run_snakemake, run_track

pytestmark = pytest.mark.slow
RUNS = "results/runs/major_minor/ptb_stream"


def studies_config(mirror: str, sources: str) -> dict:
    config = base_config()
    config.update(scale="smoke", data_mirror=mirror, data_sources=sources)
    experiment = config["experiments"]["major_minor"]
    for model in experiment["models"].values():  # PTB only: the fixture has no WikiText
        model["datasets"] = ["ptb_stream"]
        model.pop("scale_datasets", None)
    # the standards, one point of each sweep, LM# and MMLM, MMLM-2, two ratios, one ablation
    kept = (
        "awd_lstm",
        "awd_lstm_mos",
        "awd_mmlstm_mos",
        "awd_lstm_layer2_600",
        "awd_lstm_mos_layer3_372",
        "awd_lstm_mos_wide",
        "awd_mmlstm_mos_prev",
        "awd_mmlstm_ratio_9_1",
        "awd_mmlstm_ratio_10_0",
        "awd_mmlstm_mos_no_minor3",
    )
    experiment["models"] = {name: experiment["models"][name] for name in kept}
    for name in kept[3:]:
        assert "finetune" not in experiment["models"][name]
    config["experiments"] = {"major_minor": experiment}
    config["scales"]["smoke"]["feature_masking"] = {"step": 0.25, "mask_seeds": 2}
    return config


@pytest.fixture(scope="module")
def track(tmp_path_factory):
    return run_track(tmp_path_factory.mktemp("studies"), studies_config, "major_minor_studies")


def test_every_study_output_is_made_from_its_runs(track):
    work, _ = track
    for name in ("fig3_layer_sizes", "fig4_size_band", "fig5_feature_masking", "fig6_ratio"):
        assert (work / f"results/figures/major_minor_{name}.png").stat().st_size > 10_000
    table8 = pd.read_csv(work / "results/tables/major_minor_table8.csv")
    assert set(table8["model"]) == {"awd_mmlstm_mos", "awd_mmlstm_mos_prev"}
    prev = table8[table8["model"] == "awd_mmlstm_mos_prev"].set_index("dataset")
    assert prev.loc["ptb_stream", "reproduced"].notna().all()
    assert prev.loc["wikitext2", "verdict"].eq("not run at smoke scale").all()
    md = (work / "results/tables/major_minor_table9.md").read_text()
    assert "9:1 beats 8:2" in md and "not run at smoke scale" in md  # 5:5 ... 8:2: no runs
    assert "info" in md  # Fig. 6's perplexities: drawn, not printed
    table10 = (work / "results/tables/major_minor_table10.md").read_text()
    assert "layer 3's Minor matters more than layer 1's" in table10
    # the sweep points train once and are never fine-tuned; the main models are
    assert not (work / RUNS / "awd_lstm_layer2_600/seed1/finetune").exists()
    masking = pd.read_csv(work / RUNS / "awd_mmlstm_mos/seed1/feature_mask.csv")
    assert set(masking["layer"].astype(str)) == {"all", "1", "2", "3"}
    assert sorted(set(masking["probability"])) == [0.0, 0.25, 0.5]
    assert set(masking["mask_seed"]) == {1, 2} and (masking["stage"] == "train").all()


def test_a_new_masking_grid_reruns_only_the_masking(track):
    work, config = track
    config["scales"]["smoke"]["feature_masking"] = {"step": 0.5, "mask_seeds": 1}
    out = run_snakemake(work, config, "major_minor_studies", "-n", "--quiet", "rules").stdout
    jobs = {
        line.split()[0]: int(line.split()[1])
        for line in out.splitlines()
        if len(line.split()) == 2 and line.split()[1].isdigit()
    }
    assert jobs.get("evaluate_feature_mask") == 3  # LM, LM#, MMLM
    assert jobs.get("figure") == 1 and "train" not in jobs and "evaluate_text" not in jobs
