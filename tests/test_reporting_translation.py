"""Reporting the translation runs (major_minor Tables XI and XII): the test sets of a
translation.json as table columns, BLEU verdicts and orderings where higher is better, the
configuration table's derived settings, and the corpus each table says its runs read."""

from __future__ import annotations

import importlib
import json
import math
import shlex
from pathlib import Path

import pandas as pd
import pytest
from pipeline_utils import TOLERANCES, base_config

from rnnrepro import config as cfg
from rnnrepro import makers, papers
from rnnrepro.makers import config_settings, options
from rnnrepro.papers import Ordering
from rnnrepro.papers.major_minor import NMT_ORDERINGS
from rnnrepro.reporting.configs import config_table
from rnnrepro.reporting.metrics import METRIC_KIND, collect_metrics
from rnnrepro.reporting.notes import scale_notes
from rnnrepro.reporting.orderings import check_orderings
from rnnrepro.reporting.paper_numbers import load_paper_numbers
from rnnrepro.reporting.tables import build_table

PAPER = {  # Table XII: (newstest2015 ppl, BLEU), (newstest2016 ppl, BLEU)
    "nmt_lstm": ((6.83, 29.36), (5.39, 33.38)),
    "nmt_mmlstm": ((6.15, 30.83), (4.88, 35.48)),
}
SIGNATURE = "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.4.0"
TOKENIZED = "moses-en+nrefs:1|case:mixed|eff:no|tok:none|smooth:exp|version:2.4.0"


def config_at(scale: str) -> dict:
    return {**base_config(), "scale": scale}


def write_translation(
    root: Path, model: str, scores: tuple, scale: str = "smoke", total: int = 172_830_000
) -> Path:
    """A translation.json of ``model`` as score_translation writes it: ``scores`` is (ppl,
    BLEU) per test set; the tokenized BLEU is 0.2 above the detokenized one."""
    config = config_at(scale)
    run = cfg.run_config(config, "major_minor", "wmt14_de_en", model)
    tests = {
        test_set: {
            "loss": math.log(ppl),
            "ppl": ppl,
            "tokens": 5000,
            "sentences": 200,
            "bleu": bleu,
            "signature": SIGNATURE,
            "bleu_tokenized": bleu + 0.2,
            "signature_tokenized": TOKENIZED,
            "beam_width": 10,
        }
        for test_set, (ppl, bleu) in zip(("newstest2015", "newstest2016"), scores, strict=True)
    }
    metrics = {
        "experiment": "major_minor",
        "dataset": "wmt14_de_en",
        "model": model,
        "seed": 1,
        "stage": "train",
        "architecture": "luong_nmt",
        "params": {"total": total, "recurrent": 120_000_000},
        "epochs": 10,
        "best_epoch": 10,
        "train_seconds": 123.4,
        "stopped_because": "max_steps",
        "diverged": False,
        "training": run["training"],
        "run": run,
        "scale": scale,
        "val": {"loss": 1.2, "ppl": 3.3, "tokens": 5000, "sentences": 200},
        "test": {},
        "tests": tests,
    }
    path = root / model / "translation.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(metrics))
    return path


def test_collect_metrics_makes_a_column_of_each_test_sets_metric(tmp_path):
    path = write_translation(tmp_path, "nmt_mmlstm", PAPER["nmt_mmlstm"])
    metrics = json.loads(path.read_text())
    metrics["tests"]["newstest2016"]["bleu"] = None  # not scored: NaN, as a split's metric
    path.write_text(json.dumps(metrics))
    (row,) = collect_metrics([path]).to_dict("records")
    assert row["newstest2015_ppl"] == 6.15 and row["newstest2016_ppl"] == 4.88
    assert row["newstest2015_bleu"] == 30.83
    assert row["newstest2015_bleu_tokenized"] == pytest.approx(31.03)
    assert math.isnan(row["newstest2016_bleu"])
    assert row["newstest2015_signature"] == SIGNATURE
    assert row["newstest2016_signature_tokenized"] == TOKENIZED
    assert row["newstest2015_beam_width"] == 10
    assert row["val_ppl"] == 3.3 and math.isnan(row["test_ppl"])  # "test" is empty
    assert row["params_total"] == 172_830_000
    # the test sets' metrics are compared: ppl relatively, both BLEU readings absolutely
    assert METRIC_KIND["newstest2016_ppl"] == "ppl"
    assert METRIC_KIND["newstest2015_bleu"] == METRIC_KIND["newstest2016_bleu_tokenized"] == "bleu"


def test_table12_compares_every_printed_number_bleu_within_an_absolute_tolerance(tmp_path):
    reference = load_paper_numbers("major_minor", "Table XII")
    assert len(reference) == 2 * 7  # params and, per test set, ppl and two BLEU readings
    assert set(reference["dataset"]) == {"wmt14_de_en"}
    lstm = ((6.83, 29.36 + 0.45), (5.39, 33.38 - 0.55))  # BLEU just inside, just outside
    paths = [
        write_translation(tmp_path, "nmt_lstm", lstm, scale="paper", total=180_000_000),
        write_translation(tmp_path, "nmt_mmlstm", ((6.15, 30.83 - 5.0), (9.9, 35.48)), "paper"),
    ]
    table = build_table(reference, collect_metrics(paths), {}, TOLERANCES)
    verdict = table.set_index(["model", "metric"])["verdict"]
    assert verdict["nmt_lstm", "newstest2015_bleu"] == "match"  # |0.45| <= 0.5 BLEU
    assert verdict["nmt_lstm", "newstest2016_bleu"] == "differs"  # |0.55| > 0.5
    assert verdict["nmt_lstm", "newstest2015_bleu_tokenized"] == "differs"  # 0.65 above
    assert verdict["nmt_mmlstm", "newstest2015_bleu"] == "differs"
    assert verdict["nmt_mmlstm", "newstest2016_bleu"] == "match"
    assert verdict["nmt_mmlstm", "newstest2015_ppl"] == "match"
    assert verdict["nmt_mmlstm", "newstest2016_ppl"] == "differs"
    assert verdict["nmt_lstm", "params_total"] == "differs"  # 180M: 5.4% above 170.7M
    assert verdict["nmt_mmlstm", "params_total"] == "match"  # 172.83M
    row = table.set_index(["model", "metric"]).loc[("nmt_lstm", "newstest2015_bleu")]
    assert row["reproduced"] == "29.81 ± n/a" and row["delta"] == pytest.approx(0.45)
    # a wider BLEU tolerance (config reporting.tolerances.bleu) turns the 0.55 into a match
    wider = build_table(reference, collect_metrics(paths), {}, {**TOLERANCES, "bleu": 0.6})
    verdict = wider.set_index(["model", "metric"])["verdict"]
    assert verdict["nmt_lstm", "newstest2016_bleu"] == "match"


def test_the_trivial_translators_stand_beside_the_runs_numbers(tmp_path):
    """The unigram of the training targets beside each perplexity and the copied source beside
    each BLEU, from the runs' own scores, and a verdict that says when a run does not beat them."""
    reference = load_paper_numbers("major_minor", "Table XII")
    paths = []
    for model, bleu in (("nmt_lstm", 3.0), ("nmt_mmlstm", 40.0)):
        path = write_translation(tmp_path, model, ((6.0, bleu), (5.0, bleu)), scale="paper")
        metrics = json.loads(path.read_text())
        for test in metrics["tests"].values():
            test.update(unigram_ppl=5.5, copy_bleu=4.0, copy_bleu_tokenized=4.5)
        path.write_text(json.dumps(metrics))
        paths.append(path)
    table = build_table(reference, collect_metrics(paths), {}, TOLERANCES).set_index(
        ["model", "metric"]
    )
    assert table.loc[("nmt_lstm", "newstest2015_ppl"), "unigram"] == 5.5
    assert table.loc[("nmt_lstm", "newstest2016_bleu"), "copy"] == 4.0
    assert table.loc[("nmt_lstm", "newstest2016_bleu_tokenized"), "copy"] == 4.5
    assert math.isnan(table.loc[("nmt_lstm", "newstest2016_bleu"), "unigram"])
    assert table.loc[("nmt_lstm", "newstest2015_ppl"), "verdict"].endswith(
        "no better than the unigram"
    )  # 6.0 >= 5.5
    assert table.loc[("nmt_lstm", "newstest2015_bleu"), "verdict"].endswith(
        "no better than copying the source"
    )  # 3.0 <= 4.0
    assert not table.loc[("nmt_mmlstm", "newstest2015_bleu"), "verdict"].endswith("source")


def test_the_bleu_orderings_are_higher_is_better():
    """Table XII's orderings hold on the paper's numbers, perplexity lower and BLEU higher; a
    reproduced BLEU lower for the MMLSTM fails them; a BLEU ordering read as lower-is-better
    would not hold on the paper's numbers."""
    assert {o.metric for o in NMT_ORDERINGS if o.higher_is_better} == {
        f"{test_set}_{bleu}"
        for test_set in ("newstest2015", "newstest2016")
        for bleu in ("bleu", "bleu_tokenized")
    }
    assert all(not o.higher_is_better for o in NMT_ORDERINGS if o.metric.endswith("_ppl"))
    paper = build_table(
        load_paper_numbers("major_minor", "Table XII"), pd.DataFrame(), {}, TOLERANCES
    )
    table = paper.assign(mean=paper["paper"], n_seeds=1)
    bleu = table["metric"] == "newstest2016_bleu"
    table.loc[bleu & (table["model"] == "nmt_mmlstm"), "mean"] = 33.0  # the baseline: 33.38
    checked = check_orderings(NMT_ORDERINGS, table).set_index("ordering")
    failing = "MMLSTM-NMT beats the LSTM baseline (newstest2016, BLEU)"
    assert checked.loc[failing, "verdict"] == "fails"
    assert checked.loc[failing, "reproduced margin"] == pytest.approx(33.0 - 33.38)
    assert checked.loc[failing, "paper margin"] == pytest.approx(35.48 - 33.38)
    assert checked.loc[failing, "check"] == (
        "wmt14_de_en: nmt_mmlstm > nmt_lstm (higher is better)"
    )
    assert (checked.drop(index=failing)["verdict"] == "holds").all()
    ppl = checked.loc["MMLSTM-NMT beats the LSTM baseline (newstest2015, perplexity)"]
    assert ppl["paper margin"] == pytest.approx(6.83 - 6.15)
    lower = Ordering(
        "lower BLEU",
        "test",
        better=("nmt_mmlstm",),
        worse=("nmt_lstm",),
        metric="newstest2015_bleu",
    )
    with pytest.raises(ValueError, match="does not hold on the paper's numbers"):
        check_orderings((lower,), table)
    # a claim on gaps reads the other way too: a larger BLEU gain over b than over c
    gap = Ordering(
        "gap", "test", ("a",), ("b",), ("a",), ("c",), metric="bleu", higher_is_better=True
    )
    values = {("a", "train"): 30.0, ("b", "train"): 25.0, ("c", "train"): 28.0}
    assert gap.margin(values) == pytest.approx((30 - 25) - (30 - 28))
    assert gap.check() == "a − b > a − c (higher is better)"


def table11_settings(scale: str, dropout: float | None = None) -> tuple[pd.DataFrame, dict]:
    config = config_at(scale)
    if dropout is not None:
        config["experiments"]["major_minor"]["models"]["nmt_mmlstm"]["hparams"]["dropout"] = dropout
    output = papers.outputs()["major_minor_table11"]
    return load_paper_numbers("major_minor", "Table XI"), json.loads(
        config_settings(output, scale, config)
    )


def test_table11_resolves_the_derived_settings_and_the_training_steps():
    reference, settings = table11_settings("paper")
    table = config_table(reference, settings, "paper", None)
    assert set(table["verdict"]) == {"match"} and len(table) == 2 * 13
    rows = table.set_index(["model", "metric"])
    assert rows.loc[("nmt_mmlstm", "keep_probability"), "config_key"] == "1 − hparams.dropout"
    assert rows.loc[("nmt_lstm", "max_steps"), "config_key"] == "translation.max_steps"
    assert rows.loc[("nmt_lstm", "max_steps"), "config"] == 340_000
    assert rows.loc[("nmt_mmlstm", "layers"), "config"] == 4
    assert rows.loc[("nmt_mmlstm", "major_proportion_3"), "config"] == 0.8
    assert rows.loc[("nmt_lstm", "major_proportion_1"), "config"] == 1.0  # plain LSTM layers
    # a dropout probability of 0.3 is a keep probability of 0.7: no longer the printed 1.0
    reference, settings = table11_settings("paper", dropout=0.3)
    rows = config_table(reference, settings, "paper", None).set_index(["model", "metric"])
    keep = rows.loc[("nmt_mmlstm", "keep_probability")]
    assert keep["config"] == pytest.approx(0.7) and keep["verdict"] == "differs"
    assert rows.loc[("nmt_lstm", "keep_probability"), "verdict"] == "match"
    # the cpu scale's values beside them: its steps and its narrower layers
    reference, paper = table11_settings("paper")
    _, scaled = table11_settings("cpu")
    rows = config_table(reference, paper, "cpu", scaled).set_index(["model", "metric"])
    cpu = config_at("cpu")["scales"]["cpu"]["translation"]
    assert rows.loc[("nmt_lstm", "max_steps"), "at cpu scale"] == cpu["max_steps"]
    assert rows.loc[("nmt_lstm", "layer_size_1"), "at cpu scale"] == round(1000 * cpu["width"])
    assert rows.loc[("nmt_lstm", "keep_probability"), "at cpu scale"] == ""


def run_script(name: str, argv: list[str]) -> None:
    importlib.import_module(f"rnnrepro.scripts.{name}").main(argv)


def declared_options(name: str, config: dict, files: dict) -> list[str]:
    return shlex.split(options(papers.outputs()[name], config, files))


@pytest.mark.parametrize("corpus", ["stand_in", "wmt"])
def test_table12_says_which_corpus_its_runs_read_and_each_bleus_signature(tmp_path, corpus):
    scale = "smoke" if corpus == "stand_in" else "paper"
    paths = [write_translation(tmp_path, model, scores, scale) for model, scores in PAPER.items()]
    assert json.loads(paths[0].read_text())["run"]["translation"]["corpus"] == corpus
    argv = declared_options(
        "major_minor_table12", config_at(scale), {"metrics": list(map(str, paths))}
    )
    tolerances = json.loads(argv[argv.index("--tolerances") + 1])
    assert tolerances["bleu"] == 0.5  # config reporting.tolerances.bleu
    out_md = tmp_path / "t12.md"
    run_script(
        "make_table", [*argv, "--out-csv", str(tmp_path / "t12.csv"), "--out-md", str(out_md)]
    )
    md = out_md.read_text()
    header = md.split("Columns:")[0]
    stand_in = "2 runs read the generated stand-in, NOT WMT"
    wmt = "2 runs read WMT'14 English-German training data"
    assert (stand_in in header) == (corpus == "stand_in")
    assert (wmt in header) == (corpus == "wmt")
    assert ("generated sentence pairs instead of the corpus" in header) == (corpus == "stand_in")
    assert "hidden sizes x" not in header  # the text track's reductions are not these runs'
    signatures = md.split("## BLEU signatures")[1].split("## Orderings")[0]
    for metric, signature in (
        ("newstest2016_bleu", SIGNATURE),
        ("newstest2015_bleu_tokenized", TOKENIZED),
    ):
        for model in PAPER:
            cell = signature.replace("|", "\\|")  # escaped in a Markdown table
            assert f"| {metric} | wmt14_de_en | {model} | `{cell}` | 10 | 1 |" in signatures
    orderings = md.split("## Orderings the paper states")[1]
    assert orderings.count("(higher is better)") == 4
    verdict = "smoke-scale holds" if corpus == "stand_in" else "holds"
    assert orderings.count(f"| {verdict} |") == 6


def test_a_run_that_read_another_corpus_is_named_as_such(tmp_path):
    """The note comes from each run's file, not from the config: runs of both corpora are
    counted apart."""
    paths = [
        write_translation(tmp_path / "a", "nmt_lstm", PAPER["nmt_lstm"], "smoke"),
        write_translation(tmp_path / "b", "nmt_mmlstm", PAPER["nmt_mmlstm"], "paper"),
    ]
    argv = declared_options(
        "major_minor_table12", config_at("smoke"), {"metrics": list(map(str, paths))}
    )
    out_md = tmp_path / "t12.md"
    run_script(
        "make_table", [*argv, "--out-csv", str(tmp_path / "t12.csv"), "--out-md", str(out_md)]
    )
    header = out_md.read_text().split("Columns:")[0]
    assert "1 run read the generated stand-in, NOT WMT" in header
    assert "1 run read WMT'14 English-German training data" in header


@pytest.mark.parametrize("scale", ["smoke", "paper"])
def test_table11_says_which_corpus_the_configured_runs_read(tmp_path, scale):
    argv = declared_options("major_minor_table11", config_at(scale), {})
    out_md = tmp_path / "t11.md"
    run_script(
        "make_config_table",
        [*argv, "--out-csv", str(tmp_path / "t11.csv"), "--out-md", str(out_md)],
    )
    header = out_md.read_text().split("Each row:")[0]
    assert (f"2 runs at {scale} scale read the generated stand-in" in header) == (scale == "smoke")
    assert (f"2 runs at {scale} scale read WMT'14" in header) == (scale == "paper")
    table = pd.read_csv(tmp_path / "t11.csv")
    assert set(table["verdict"]) == {"match"}


def test_the_translation_tables_are_targets_where_their_runs_exist():
    for scale in ("smoke", "cpu", "paper"):
        config = config_at(scale)
        targets = makers.targets(config)
        assert "results/tables/major_minor_table11.md" in targets
        assert "results/tables/major_minor_table12.md" in targets
    config = config_at("smoke")
    del config["experiments"]["major_minor"]["models"]["nmt_lstm"]
    del config["experiments"]["major_minor"]["models"]["nmt_mmlstm"]
    assert "results/tables/major_minor_table12.md" not in makers.targets(config)
    assert makers.MAKERS["compare"].files["translation.json"] == "metrics"


def test_each_track_states_its_own_reductions():
    """The translation runs' reductions are stated under the translation tables only, and the
    language models' under theirs."""
    config = config_at("cpu")
    text = " ".join(scale_notes(config, "text", "major_minor"))
    translation = " ".join(scale_notes(config, "translation", "major_minor"))
    assert "training procedure luong_nmt" in translation and "luong_nmt" not in text
    assert "training steps 2,000 (paper 340,000)" in translation
    assert "generated sentence pairs instead of the corpus" not in text
    assert "hidden sizes x0.25" in text and "hidden sizes" not in translation
    assert "scale_datasets" in text and "scale_datasets" not in translation
    # the language models' caps (batches, evaluated tokens) are not the translation models'
    assert "batches per epoch" in text and "batches per epoch" not in translation
