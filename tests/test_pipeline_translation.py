"""major_minor's translation runs through Snakemake at smoke scale, on the generated stand-in
(no download): prepared pairs, training, perplexities, beam search and BLEU as separate rules;
a new beam width retranslates and rescores but never retrains, a new step count retrains."""

from __future__ import annotations

import hashlib
import json

import pytest
from pipeline_utils import base_config, dry_run_jobs, run_snakemake, write_yaml

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


def write_wmt_fixture(mirror, pairs_per_file: int = 40) -> dict:
    """WMT-shaped files of generated German-English pairs under ``mirror`` (the registry's
    mirror paths: plain aligned training and validation sides, SGML test sets, one with an
    escaped entity) and their ``data_sources`` overrides."""
    from rnnrepro.data.parallel import stand_in_pairs
    from rnnrepro.data.sources import WMT_FILES

    overrides, seed = {}, 10
    for name in WMT_FILES:
        stem, side = name.split(".")[0], name.split(".")[1]
        seed += side == "de"
        pairs = stand_in_pairs(pairs_per_file, seed, words=30)
        lines = [src if side == "de" else tgt for src, tgt in pairs]
        if name.endswith(".sgm"):
            lines[0] += " &amp; co"  # an entity: unescaped to "&"
            body = "".join(f'<seg id="{i}">{line}</seg>\n' for i, line in enumerate(lines, 1))
            text = f'<srcset setid="{stem}">\n<doc docid="d1">\n{body}</doc>\n</srcset>\n'
        else:
            text = "".join(f"{line}\n" for line in lines)
        path = mirror / "wmt14-de-en" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        digest = hashlib.sha256(text.encode()).hexdigest()
        overrides[name] = {"sha256": digest, "mirror_path": f"wmt14-de-en/{name}"}
    return {"wmt14_de_en": overrides}


def test_the_corpus_path_reads_wmts_files_through_the_mirror(tmp_path):
    """With no stand-in, the runs read the corpus: the three training corpora's sides, the
    validation set and the SGML test sets, downloaded (here: from a fixture mirror, verified by
    sha256) and prepared; Table XII then says that the runs read WMT."""
    mirror, work = tmp_path / "mirror", tmp_path / "work"
    write_yaml(tmp_path / "sources.yaml", write_wmt_fixture(mirror))
    work.mkdir()
    config = translation_config()
    config.update(data_mirror=str(mirror), data_sources=str(tmp_path / "sources.yaml"))
    config["scales"]["smoke"]["translation"]["stand_in"] = None
    target = f"{RUN.format(model='nmt_mmlstm')}/translation.json"
    run_snakemake(work, config, target)
    data = json.loads((work / "results/data/wmt14_de_en/data.json").read_text())
    assert data["corpus"] == "wmt" and data["pairs"]["train_read"] == 3 * 40
    assert data["pairs"]["val"] == data["pairs"]["newstest2015"] == 40
    references = (work / "results/data/wmt14_de_en/newstest2016.ref").read_text().splitlines()
    assert len(references) == 40 and references[0].endswith(" & co")
    scored = json.loads((work / target).read_text())
    assert scored["run"]["translation"]["corpus"] == "wmt"
    assert set(scored["tests"]) == {"newstest2015", "newstest2016"}
