"""memory's track through Snakemake at smoke scale, on fixture corpora: the random search,
Table 1, Linzen agreement (Table 2, Fig. 2, Table 3) and the stack actions (Fig. 3)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml
from pipeline_utils import (
    LINZEN_VERBS,
    base_config,
    fixture_mirror,
    run_snakemake,
    write_linzen_fixture,
    write_linzen_full_fixture,
    write_yaml,
)

pytestmark = pytest.mark.slow
MODELS = ("lstm_920", "attention_10", "multipop_stack", "discrete_stack")
RUNS = "results/runs/memory"


def memory_config(mirror: str, sources: str) -> dict:
    config = base_config()
    config.update(scale="smoke", data_mirror=mirror, data_sources=sources)
    memory = config["experiments"]["memory"]
    memory["models"] = {name: memory["models"][name] for name in MODELS}
    # WikiText-2 only: the agreement and stack outputs read its runs, and PTB's stream runs
    # take the same path through every rule
    memory["datasets"] = ["wikitext2"]
    config["experiments"] = {"memory": memory}
    config["scales"]["smoke"]["search_trials"] = 2
    return config


def run_memory(root, corpus: str, write_corpus, edit=None, extra_words=()):
    """The memory target on fixture corpora plus ``write_corpus(mirror)``'s files (registered
    as ``corpus``), with ``edit(config)`` applied; returns the work directory and config."""
    mirror, sources = fixture_mirror(root, extra_words=extra_words)
    overrides = yaml.safe_load(sources.read_text())
    overrides[corpus] = write_corpus(mirror)
    write_yaml(sources, overrides)
    config = memory_config(str(mirror), str(sources))
    if edit:
        edit(config["experiments"]["memory"])
    work = root / "work"
    work.mkdir()
    run_snakemake(work, config, "memory")
    return work, config


@pytest.fixture(scope="module")
def memory_run(tmp_path_factory):
    verbs = tuple(form for pair in LINZEN_VERBS for form in pair)
    root = tmp_path_factory.mktemp("memory")
    return run_memory(root, "linzen", write_linzen_fixture, extra_words=verbs)


def test_each_trial_is_a_job_and_table1_shows_the_chosen_settings(memory_run):
    work, config = memory_run
    space = config["experiments"]["memory"]["models"]["lstm_920"]["search"]
    for model in MODELS:
        run = work / RUNS / "wikitext2" / model / "seed1"
        assert (run / "trial1/model.pt").exists() and (run / "trial2/model.pt").exists()
        record = json.loads((run / "search.json").read_text())
        assert record["search"]["trials"] == 2
        for trial in record["search"]["every_trial"]:
            for key, (low, high) in space.items():
                assert low <= trial["settings"][key] <= high
    table = pd.read_csv(work / "results/tables/memory_table1.csv")
    ran = table["model"].isin(MODELS) & (table["dataset"] == "wikitext2")
    assert (table.loc[ran, "n_seeds"] == 1).all()
    assert table.loc[ran, "verdict"].str.startswith("smoke-scale").all()
    assert (table.loc[~ran, "verdict"] == "not run at smoke scale").all()
    markdown = (work / "results/tables/memory_table1.md").read_text()
    section = markdown.split("## Random search")[1].split("\n## ")[0]
    assert section.count("| wikitext2 |") == len(MODELS)
    assert "| trials | diverged | chosen | lr | weight_decay | val_ppl |" in section
    assert "## N-gram baselines on the same data" in markdown and "| wikitext2 | kn5 |" in markdown


def test_table2_names_the_substitute_corpus_and_scores_every_item(memory_run):
    work, _ = memory_run
    md = (work / "results/tables/memory_table2.md").read_text()
    title = md.splitlines()[0]
    assert "wikitext2" in title and "Linzen's training split is not available" in title
    table = pd.read_csv(work / "results/tables/memory_table2.csv")
    assert set(table["model"]) == {"lstm_920", "attention_10", "multipop_stack"}
    assert table["verdict"].str.contains("LM trained on wikitext2").all()
    assert (table["lm_corpus"] == "wikitext2").all()
    summary = json.loads(
        (work / RUNS / "wikitext2/multipop_stack/seed1/agreement.json").read_text()
    )
    chosen = json.loads((work / RUNS / "wikitext2/multipop_stack/seed1/search.json").read_text())
    assert summary["trial"] == chosen["search"]["chosen"]  # the chosen trial's model was scored
    assert summary["cells"]["acc_attr5"]["source"] == "numpred.test.5"
    assert (
        summary["cells"]["acc_overall"]["items"] + summary["cells"]["acc_overall"]["skipped"] == 12
    )


def test_venn_counts_partition_the_mistakes(memory_run):
    work, _ = memory_run
    items = pd.concat(
        pd.read_csv(work / RUNS / "wikitext2" / m / "seed1/agreement_items.csv")
        for m in ("lstm_920", "attention_10", "multipop_stack")
    )
    scored = items[~items["skipped"]]
    wrong_by_any = scored[~scored["correct"].astype(bool)].drop_duplicates(["source", "line"])
    venn = pd.read_csv(work / "results/tables/memory_table3.csv")
    assert venn["mistakes"].sum() == len(wrong_by_any)
    assert venn.set_index("region").loc["all", "paper"] == 6115
    assert len(venn) == 7 and venn["text"].notna().sum() == (venn["mistakes"] > 0).sum()
    examples = (work / "results/tables/memory_table3.md").read_text()
    assert examples.count("\n| ✗") + examples.count("\n| ✓") == 7
    assert (work / "results/figures/memory_fig2_venn.png").stat().st_size > 0


def test_stack_actions_count_every_test_step(memory_run):
    work, _ = memory_run
    run = work / RUNS / "wikitext2/multipop_stack/seed1"
    states = pd.read_csv(run / "stack_states.csv")
    histogram = pd.read_csv(run / "stack_max_prob.csv")
    assert len(states) == 22 and states["argmax_count"].sum() == histogram["steps"].sum() > 0
    assert states["mean_probability"].sum() == pytest.approx(1.0, abs=1e-5)
    assert (work / "results/figures/memory_fig3_stack_actions.png").stat().st_size > 0


def test_rerun_plans_nothing(memory_run):
    work, config = memory_run
    proc = run_snakemake(work, config, "memory", "-n")
    assert "Nothing to be done" in proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def linzen_run(tmp_path_factory):
    """The paper's setting: the three agreement LMs trained on Linzen's own split."""

    def on_linzen(memory: dict) -> None:
        memory["datasets"] = ["linzen"]
        memory["models"] = {
            m: memory["models"][m] for m in ("lstm_920", "attention_10", "multipop_stack")
        }
        memory["agreement"]["corpus"] = "linzen"

    root = tmp_path_factory.mktemp("linzen")
    return run_memory(root, "linzen_full", write_linzen_full_fixture, on_linzen)


def test_linzen_split_trains_the_lms_and_scores_its_test_dependencies(linzen_run):
    work, _ = linzen_run
    data = work / "results/data/linzen"
    train = (data / "train.txt").read_text().splitlines()
    dependencies = pd.read_csv(data / "agreement.tsv", sep="\t")
    assert len(train) == 36 and len(dependencies) == 360  # 400 rows: 9 % / 1 % / 90 %
    table = pd.read_csv(work / "results/tables/memory_table2.csv")
    assert not table["verdict"].str.contains("not Linzen's training split").any()
    assert (table["lm_corpus"] == "linzen").all()
    assert (
        "LMs trained on Linzen's training split"
        in (work / "results/tables/memory_table2.md").read_text().splitlines()[0]
    )
    summary = json.loads((work / RUNS / "linzen/lstm_920/seed1/agreement.json").read_text())
    items = pd.read_csv(work / RUNS / "linzen/lstm_920/seed1/agreement_items.csv")
    assert len(items) == 40  # smoke: the first agreement_items dependencies
    assert summary["cells"]["acc_overall"]["source"] == "agreement.tsv"
    homogeneous = items[items["homogeneous"] & ~items["skipped"]]
    for k in range(4):
        cell = summary["cells"][f"acc_attr{k}"]
        assert cell["items"] == (homogeneous["attractors"] == k).sum()
    assert summary["perplexity"]["source"] == "test.txt"
