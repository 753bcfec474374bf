"""The paper catalogues: each output declared once, its runs chosen by what they are (never by
a pattern on a name), and a new table made by declaring it in one catalogue."""

from __future__ import annotations

import os
import shutil

import pytest
from pipeline_utils import ROOT, base_config, snakemake_cli, write_yaml

from rnnrepro import config as cfg
from rnnrepro import makers, papers
from rnnrepro.reporting.figures import FIGURES
from rnnrepro.reporting.paper_numbers import load_paper_numbers


def smoke() -> dict:
    return {**base_config(), "scale": "smoke"}


def test_every_output_is_declared_once_with_a_maker_a_caption_and_paper_numbers():
    outputs = papers.outputs()
    assert len(outputs) == 38
    for output in outputs.values():
        assert output.paper in papers.KEYS and output.name.startswith(output.paper)
        assert output.caption and output.title
        if output.maker == "figure":
            assert output.kind in FIGURES, output.name
        if output.labels:  # the numbers it is compared with exist
            assert not load_paper_numbers(output.paper, list(output.labels)).empty, output.name
    assert [o.paper for o in papers.catalogue("memory")] == ["memory"] * 5


def test_every_paper_declares_its_claims_each_tested_by_its_own_checks():
    """A claim names orderings its paper's tables state (each holds on the paper's numbers:
    ``test_orderings_hold_on_the_papers_numbers``) or an output of its paper that checks it."""
    for key in papers.KEYS:
        claims = papers.claims(key)
        assert claims, f"{key} declares no claim"
        named = {o.name for output in papers.catalogue(key) for o in output.orderings}
        mine = {output.name for output in papers.catalogue(key)}
        for claim in claims:
            assert set(claim.orderings) <= named, (key, set(claim.orderings) - named)
            assert claim.checked_in is None or claim.checked_in in mine, claim.checked_in
    with pytest.raises(ValueError, match="names no ordering and no output"):
        papers.Claim("untested", "nowhere")


def test_every_model_a_catalogue_names_is_configured_at_paper_scale():
    config = {**base_config(), "scale": "paper"}
    configured = {
        (exp, model) for exp, entry in config["experiments"].items() for model in entry["models"]
    }
    for output in papers.outputs().values():
        runs = output.runs
        if isinstance(runs, papers.Runs):
            missing = {m for m in runs.models if (runs.experiment, m) not in configured}
            assert not missing, (output.name, missing)


def test_major_minor_studies_read_their_own_runs_and_the_main_tables_only_theirs():
    config = {**base_config(), "scale": "paper"}
    outputs = papers.outputs()

    def models(name: str) -> set[str]:
        return {run.model for run in outputs[name].select(config)}

    main = {"awd_lstm", "awd_lstm_mos_minus", "awd_lstm_mos", "awd_mmlstm_mos"}
    assert models("major_minor_table2") == models("major_minor_table3") == main
    # Fig. 3: 6 sizes x 2 layers of AWD-LSTM and of MoS, and the two standards (their c point)
    assert len(models("major_minor_fig3_layer_sizes")) == 26
    # Fig. 4: 6 fractions x (2 + 3) layers, and the standards; none coincides with Fig. 3's
    fig4 = models("major_minor_fig4_size_band")
    assert len(fig4) == 32 and fig4 & models("major_minor_fig3_layer_sizes") == {
        "awd_lstm",
        "awd_lstm_mos",
    }
    # the standards alone are no sweep: without a sweep point, no figure (and no failed job)
    main_only = {
        **config,
        "experiments": {"major_minor": dict(config["experiments"]["major_minor"])},
    }
    models = main_only["experiments"]["major_minor"]["models"]
    main_only["experiments"]["major_minor"]["models"] = {m: models[m] for m in main}
    for name in ("major_minor_fig3_layer_sizes", "major_minor_fig4_size_band"):
        assert not outputs[name].select(main_only)
        assert makers.path(outputs[name]) not in makers.targets(main_only, "major_minor")
    masked = outputs["major_minor_fig5_feature_masking"].select(config)
    assert {r.dataset for r in masked} == {"ptb_stream"} and len(masked) == 5
    assert len(outputs["major_minor_table9"].select(config)) == 12  # 6 ratios x 2 corpora
    # the studies' share of the cost is the runs only they read: 101 trainings
    studies = {
        r for o in outputs.values() if "major_minor_studies" in o.groups for r in o.select(config)
    }
    others = {
        r
        for o in outputs.values()
        if "major_minor_studies" not in o.groups
        for r in o.select(config)
    }
    assert len(studies - others) == 101


def test_table9_states_the_layer_sizes_its_runs_use():
    from rnnrepro.papers.major_minor import RATIO_SIZES

    config = {**base_config(), "scale": "paper"}
    for model, sizes in RATIO_SIZES.items():
        for dataset, size in zip(("ptb_stream", "wikitext2"), sizes, strict=True):
            hparams = cfg.run_config(config, "major_minor", dataset, model)["hparams"]
            assert hparams["layer_sizes"] == [size, size, 400], (model, dataset)
    note = papers.outputs()["major_minor_table9"].notes[0]
    assert "5:5 1560 / 1550" in note and "10:0 1150 / 1150" in note


def test_runs_are_chosen_by_family_architecture_hyper_parameters_and_budget():
    config = smoke()
    outputs = papers.outputs()

    def models(name: str) -> list[str]:
        return sorted({run.model for run in outputs[name].select(config)})

    # architecture attention_lstm on Dyck: the 2-cell model (the 5-cell one is WikiText-2's)
    assert models("second_order_lstm_fig4_pabs") == ["attention_lstm"]
    assert models("second_order_lstm_fig5_pabs_wikitext2") == ["attention_lstm", "attention_lstm_5"]
    heatmap = outputs["second_order_lstm_fig6_heatmap_wikitext2"].select(config)
    assert [(r.model, r.seed) for r in heatmap] == [("attention_lstm_5", 1)]  # cells: 5, seed 1
    assert models("memory_fig3_stack_actions") == ["multipop_stack"]  # hparams memory
    ratio = models("general_second_order_fig1_ratio")  # budget sets a ratio
    assert len(ratio) == 8 and all(m.startswith("ratio_") for m in ratio)
    # one run per seed: a searched model's trials are the run they search for
    memory = outputs["memory_table1"].select(config)
    assert memory and all(run.trial is None for run in memory)
    # the agreement models in the configured order; none without agreement
    assert [r.model for r in outputs["memory_table2"].select(config)] == [
        "lstm_920",
        "attention_10",
        "multipop_stack",
    ]
    del config["experiments"]["memory"]["agreement"]
    assert "results/tables/memory_table2.md" not in makers.targets(config)


def test_targets_and_groups_come_from_the_catalogues():
    config = smoke()
    dyck = makers.targets(config, "dyck")
    assert "results/tables/multi_matrix_table2_dyck.md" in dyck  # a group spans papers
    assert all("wikitext2" not in target for target in dyck)
    assert papers.groups() == [*papers.KEYS, "dyck", "wikitext2", "major_minor_studies"]
    assert set(makers.targets(config)) == {makers.path(o) for o in papers.outputs().values()}


def test_a_table_declared_in_one_catalogue_is_planned_and_built(tmp_path):
    """Adding a table is one edit: an Output in its paper's catalogue (here a configuration
    table, which needs no training) appears in the paper's target and is made by the generic
    table rule."""
    repo = tmp_path / "repo"
    for part in ("src", "workflow", "envs"):
        shutil.copytree(ROOT / part, repo / part, ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("Snakefile", "config.yaml"):
        shutil.copy(ROOT / part, repo / part)
    catalogue = repo / "src/rnnrepro/papers/major_minor.py"
    catalogue.write_text(
        catalogue.read_text()
        + """
OUTPUTS += (
    Output(
        "major_minor_table4_ptb",
        title="major_minor Table IV on PTB only: paper vs config.yaml",
        caption="The AWD-MMLSTM-MoS settings of the PTB runs.",
        maker="config",
        runs=Runs("major_minor", ("ptb_stream",)),
        labels=("Table IV",),
    ),
)
"""
    )
    work = tmp_path / "work"
    work.mkdir()
    write_yaml(work / "config.yaml", smoke())
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}  # the jobs import the edited copy

    def snakemake(*args: str) -> str:
        cmd = ["--snakefile", str(repo / "Snakefile"), "--directory", str(work), "--cores", "1"]
        proc = snakemake_cli([*cmd, *args], env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout + proc.stderr

    target = "results/tables/major_minor_table4_ptb.md"
    assert target in snakemake("major_minor", "-n")
    snakemake(target)
    md = (work / target).read_text()
    assert md.startswith("# major_minor Table IV on PTB only: paper vs config.yaml")
    rows = [
        line
        for line in md.splitlines()
        if line.startswith("| ptb_stream") or line.startswith("| wikitext2")
    ]
    # the paper's WikiText-2 rows are there, but only the PTB runs' settings were read
    assert all("not configured" in row for row in rows if row.startswith("| wikitext2"))
    assert any("not configured" not in row for row in rows if row.startswith("| ptb_stream"))
    assert (work / target).with_suffix(".csv").exists()


@pytest.mark.parametrize("family", [*cfg.FAMILIES])
def test_selecting_runs_by_family_never_reads_another(family):
    config = smoke()
    for experiment in config["experiments"]:
        for run in papers.Runs(experiment, (family,)).select(config):
            assert cfg.family(run.dataset) == family
