"""major_minor's translation runs through Snakemake at smoke scale, on the generated stand-in
(no download): prepared pairs, training, perplexities, beam search and BLEU as separate rules;
a new beam width retranslates and rescores but never retrains, a new step count retrains."""

from __future__ import annotations

import json

import pytest
from pipeline_utils import base_config, dry_run_jobs, run_snakemake

pytestmark = pytest.mark.slow
RUN = "results/runs/major_minor/wmt14_de_en/{model}/seed1"
MODELS = ("nmt_lstm", "nmt_mmlstm")
TARGETS = [f"{RUN.format(model=m)}/translation.json" for m in MODELS]


def translation_config() -> dict:
    config = base_config()
    config["scale"] = "smoke"
    experiment = config["experiments"]["major_minor"]
    experiment["models"] = {name: experiment["models"][name] for name in MODELS}
    config["experiments"] = {"major_minor": experiment}
    return config


@pytest.fixture(scope="module")
def track(tmp_path_factory):
    work = tmp_path_factory.mktemp("translation")
    config = translation_config()
    run_snakemake(work, config, *TARGETS)
    return work, config


def test_every_run_is_scored_on_both_test_sets_with_its_signature(track):
    work, _ = track
    data = json.loads((work / "results/data/wmt14_de_en/data.json").read_text())
    assert data["corpus"] == "stand_in" and data["pairs"]["train"] == 64
    for model in MODELS:
        scored = json.loads((work / RUN.format(model=model) / "translation.json").read_text())
        assert scored["run"]["translation"]["corpus"] == "stand_in"
        assert scored["epochs"] == 2 and scored["val"]["ppl"] > 1
        for name in ("newstest2015", "newstest2016"):
            test = scored["tests"][name]
            assert test["sentences"] == 16 and test["ppl"] > 1 and test["beam_width"] == 2
            assert 0 <= test["bleu"] <= 100 and "tok:13a" in test["signature"]
            assert test["signature_tokenized"].startswith("moses-en+")
            # the trivial translators: the source copied (stand-in: no word in common) and a
            # unigram model of the training targets
            assert test["copy_bleu"] == 0.0 and test["unigram_ppl"] > 1
            lines = (work / RUN.format(model=model) / f"translations/{name}.txt").read_text()
            assert len(lines.splitlines()) == 16


def test_nothing_reruns_then_a_beam_width_retranslates_and_steps_retrain(track):
    work, config = track
    assert dry_run_jobs(work, config, *TARGETS) == {}
    config["scales"]["smoke"]["translation"]["beam_width"] = 3
    assert dry_run_jobs(work, config, *TARGETS) == {"translate": 4, "score_translation": 2}
    config["scales"]["smoke"]["translation"]["max_steps"] = 6
    jobs = dry_run_jobs(work, config, *TARGETS)
    assert jobs["train_translation"] == 2 and jobs["evaluate_translation"] == 2
    assert "translation_data" not in jobs  # the data do not depend on the schedule
