"""The scoreboard (rnnrepro.reporting.scoreboard, scripts/make_scoreboard.py): archives are read
like runs, the best evidence wins, differences link their notes, and the README's copy of the
summary is the one the archives give."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from pipeline_utils import ROOT, base_config, run_snakemake

from rnnrepro.archive import archive_folders
from rnnrepro.reporting.accounts import read_accounts
from rnnrepro.scripts import make_scoreboard

ARCHIVES = ROOT / "benchmarks" / "results"
WORD_RUN = ARCHIVES / "multi_matrix_word/multi_matrix/ptb_word/lstm/seed1/metrics.json"


def fake_run(folder: Path, scale: str, test_ppl: float, val_ppl: float) -> Path:
    """A finished memory LSTM-650 run on PTB (metrics.json) at ``scale`` below ``folder``."""
    metrics = json.loads(WORD_RUN.read_text())
    metrics |= {"experiment": "memory", "dataset": "ptb_stream", "model": "lstm_650",
                "scale": scale, "devices": ["cuda"]}  # fmt: skip
    metrics["params"] = {"total": 9_900_000, "recurrent": 3_382_000}
    metrics["val"] |= {"ppl": val_ppl, "loss": None, "ce": None}
    metrics["test"] |= {"ppl": test_ppl, "loss": None, "ce": None}
    path = folder / "memory/ptb_stream/lstm_650/seed1/metrics.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(metrics))
    return path


def make(tmp_path: Path, archives: Path, metrics: list[Path], scale: str = "smoke") -> Path:
    """Run the script into ``tmp_path/results``; the CSV as a frame."""
    out = tmp_path / "results"
    code = make_scoreboard.main([
        "--scale", scale, "--archives", str(archives), "--studies", str(tmp_path / "studies"),
        "--metrics", *map(str, metrics), "--out-csv", str(out / "scoreboard.csv"),
        "--out-md", str(out / "scoreboard.md"), "--out-figure", str(out / "scoreboard.png"),
    ])  # fmt: skip
    assert code == 0
    return out


def memory_rows(board: pd.DataFrame) -> pd.DataFrame:
    return board[(board["paper"] == "memory") & (board["model"] == "lstm_650")
                 & (board["dataset"] == "ptb_stream")].set_index("metric")  # fmt: skip


def test_an_added_archive_adds_its_rows_and_beats_reduced_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # as the rule runs it: in the directory holding results/
    archives = tmp_path / "archives"
    shutil.copytree(ARCHIVES / "multi_matrix_word", archives / "multi_matrix_word",
                    ignore=shutil.ignore_patterns("*.pt"))  # fmt: skip
    own = fake_run(tmp_path / "own", "smoke", 900.0, 950.0)
    board = pd.read_csv(make(tmp_path, archives, [own]) / "scoreboard.csv").fillna("")
    assert memory_rows(board).loc["test_ppl", "verdict"] == "smoke-scale differs"
    assert memory_rows(board).loc["test_ppl", "evidence"] == "this directory"

    # an archive is a folder with a manifest: no code names it
    fake_run(archives / "memory_ptb", "paper", 68.5, 69.0)
    manifest = ("experiment,dataset,model,seed,scale,settings,commit,host\n"
                "memory,ptb_stream,lstm_650,1,paper,{},abc1234,h200\n")  # fmt: skip
    (archives / "memory_ptb" / "manifest.csv").write_text(manifest)
    note = tmp_path / "studies" / "memory_recipe" / "README.md"  # a study's note
    note.parent.mkdir(parents=True)
    note.write_text("---\nexplains: [memory/ptb_stream]\n---\n# Why\n")
    (tmp_path / "studies" / "memory_l2.md").write_text(note.read_text())  # not a study: no folder
    track = archives / "memory_ptb" / "README.md"  # an archive's README: its track's note
    track.write_text(note.read_text())
    out = make(tmp_path, archives, [own])
    rows = memory_rows(pd.read_csv(out / "scoreboard.csv").fillna(""))
    test = rows.loc["test_ppl"]
    assert (test["scale"], test["evidence"], test["verdict"]) == (
        "paper",
        "archive memory_ptb (trained with earlier settings, not the shipped config's)",
        "differs",
    )  # fmt: skip  (its manifest's settings are not the shipped config's)
    assert test["mean"] == pytest.approx(68.5) and test["devices"] == "cuda (h200)"
    assert test["account"] == f"{note} {track}"  # 68.5 vs 67.2: outside 1 %; notes explain it
    assert rows.loc["val_ppl", "verdict"] == "match"  # 69.0 vs 69.2
    assert rows.loc["val_ppl", "account"] == ""  # a match needs no account
    markdown = (out / "scoreboard.md").read_text()
    assert "[memory_recipe](../studies/memory_recipe/README.md)" in markdown
    assert "memory_l2" not in markdown
    summary = markdown.split("## Per paper")[1].split("\n\n")[2]  # the claims, then the table
    memory = next(line for line in summary.splitlines() if line.startswith("| memory |"))
    said = markdown.split("## Per paper")[1].split("\n\n")[1]
    assert "- **memory**: Stack memories achieve the best held-out perplexity" in said
    # results at the paper's settings 2 (val, test): match 1, differ explained 1; the
    # parameter count is a setting checked apart, not a result
    cells = memory.split(" | ")
    assert cells[3] == "2: 1 / 1 / 0 / 0" and cells[6] == "1 of 1"
    settings = markdown.split("### memory: settings checked")[1].split("\n\n")[1]
    assert "| params_total |" in settings and "| test_ppl |" not in settings
    assert (out / "scoreboard.png").read_bytes()[:4] == b"\x89PNG"
    links = set(re.findall(r"\]\(([^)#]+)\)", markdown))
    outputs = {link for link in links if link.startswith(("tables/", "figures/"))}
    assert "tables/second_order_lstm_table3.md" in outputs  # this directory's, made before
    assert all((out / link).exists() for link in links - outputs), links


def test_the_archives_give_the_paper_scale_rows():
    """The archived tracks, read from their files: Dyck, fold 1 and the word block; the runs of
    the shipped Dyck reading (dyck_literal) replace the plateau reading's (dyck_paper)."""
    board = make_board([])
    word = board[(board["paper"] == "multi_matrix") & (board["dataset"] == "ptb_word")
                 & (board["metric"] == "test_ce") & (board["model"] == "lstm")]  # fmt: skip
    assert word["evidence"].tolist() == ["archive multi_matrix_word"]
    assert word["mean"].tolist() == pytest.approx([4.9429], abs=1e-4)
    fold1 = board[board["evidence"] == "archive fold1"]
    assert len(fold1) and set(fold1["scale"]) == {"fold1"}
    assert fold1["verdict"].str.startswith("fold1-scale ").all()
    dyck = board[(board["evidence"] == "archive dyck_paper")]
    assert set(dyck["paper"]) == {"multi_matrix"}
    literal = board[(board["paper"] == "second_order_lstm") & (board["table"] == "Table 1")]
    literal = literal[literal["dataset"].str.startswith("dyck_")]
    assert len(literal) == 30 and set(literal["evidence"]) == {"archive dyck_literal"}
    assert set(board.loc[board["runs"] == 0, "scale"]) == {""}


def make_board(metrics: list[Path]) -> pd.DataFrame:
    from rnnrepro.reporting import scoreboard as sb
    from rnnrepro.reporting.paper_numbers import load_paper_numbers

    config = base_config()
    archives = [sb.read_archive(f, config) for f in archive_folders(ARCHIVES)]
    reference = sb.reference_rows(load_paper_numbers(), sb.compare_outputs())
    tolerances = config["reporting"]["tolerances"]
    own = sb.Evidence(sb.OWN, sb.collect_metrics(metrics))
    accounts = read_accounts(ROOT / "studies", ARCHIVES)
    return sb.build_scoreboard(reference, own, "smoke", archives, tolerances, accounts)


def test_the_readme_summary_is_the_archives_one():
    """The README's copy of the per-paper summary and the cost table (in docs/cost.md too) are
    what the archives and the cost model give now: rerun `python -m
    rnnrepro.scripts.make_scoreboard --readme README.md --cost-doc docs/cost.md` after archiving
    runs or changing a setting."""
    assert make_scoreboard.main(["--readme", str(ROOT / "README.md"), "--cost-doc",
                                 str(ROOT / "docs/cost.md"), "--check-readme"]) == 0  # fmt: skip


def test_a_stale_readme_summary_is_named(tmp_path, capsys):
    readme = tmp_path / "README.md"
    text = (ROOT / "README.md").read_text()
    readme.write_text(text.replace("| memory |", "| memory (edited) |", 1))
    assert make_scoreboard.main(["--readme", str(readme), "--check-readme"]) == 1
    assert "is stale; rerun" in capsys.readouterr().err
    assert make_scoreboard.main(["--readme", str(readme)]) == 0
    assert make_scoreboard.main(["--readme", str(readme), "--check-readme"]) == 0
    summary = readme.read_text().split("<!-- end of the scoreboard summary -->")[0]
    assert "| memory (edited) |" not in summary
    assert summary.count("| memory |") == 1


@pytest.mark.slow
def test_the_scoreboard_is_planned_with_the_configured_archives(tmp_path):
    """`snakemake scoreboard` plans the scoreboard on the archives and studies config.yaml
    names (``reporting``), relative to the repository."""
    config = base_config() | {"scale": "smoke"}
    config["reporting"] |= {"archives": str(tmp_path / "archives")}
    proc = run_snakemake(tmp_path, config, "scoreboard", "-n", "-p")
    command = proc.stdout[proc.stdout.index("make_scoreboard") :].split("\n")[0]
    assert f"--archives {tmp_path / 'archives'}" in command
    assert f"--studies {ROOT / 'studies'}" in command


def test_a_claim_is_as_strong_as_its_weakest_check():
    """A claim fails when one of its orderings fails, is not yet tested while one has no runs
    at the papers' settings, sits within noise when one does, and holds when all hold."""
    from rnnrepro.papers import Claim

    claim = Claim("a beats b and c", "test", orderings=("a < b", "a < c"))

    def status(*verdicts: str) -> str:
        rows = pd.DataFrame({"ordering": ["a < b", "a < c"][: len(verdicts)],
                             "verdict": list(verdicts)})  # fmt: skip
        return make_scoreboard.claim_status(claim, rows)

    assert status("holds", "holds") == "holds"
    assert status("holds", "fold1-scale holds") == "holds"
    assert status("holds", "within noise") == "within the seeds' noise"
    assert status("within noise", "fails") == "fails"
    assert status("holds", "missing") == "not yet tested (1 of its checks run)"
    assert status("holds", "mixed recipes").startswith("not yet tested (its rows' runs")
    assert status("holds") == "not yet tested (1 of its checks run)"
    own = Claim("learns faster", "test", checked_in="paper_fig3_claim")
    assert make_scoreboard.claim_status(own, pd.DataFrame()).startswith("tested by its own")

    def own_status(*verdicts: str) -> str:
        rows = pd.DataFrame({"output": "paper_fig3_claim", "verdict": list(verdicts)})
        return make_scoreboard.claim_status(own, rows)

    assert own_status("holds", "holds") == "holds"
    assert own_status("holds", "holds where testable") == "holds where testable"
    assert own_status("holds where testable", "fails") == "fails"
    assert own_status("holds", "missing") == "not yet tested (1 of its checks run)"


def write_wcpa_history(folder: Path, dataset: str, model: str, seed: int,
                       curve: list[float]) -> Path:  # fmt: skip
    """A Dyck run's metrics.json path whose history.csv holds ``curve`` as its validation
    (robust) WCPA, one value an epoch."""
    run = folder / "second_order_lstm" / dataset / model / f"seed{seed}"
    run.mkdir(parents=True)
    pd.DataFrame({"experiment": "second_order_lstm", "dataset": dataset, "model": model,
                  "seed": seed, "epoch": range(1, len(curve) + 1), "val_wcpa": curve,
                  "val_robust_wcpa": curve}).to_csv(run / "history.csv", index=False)  # fmt: skip
    return run / "metrics.json"


def test_the_fig3_claim_is_checked_on_archived_histories_per_m(tmp_path):
    """second_order_lstm's Fig. 3 claim, which an output of its own checks, is checked on the
    histories beside the archived runs: per m, on runs of one recipe, else ``mixed recipes``;
    an m without runs of both models is ``missing``; a part that cannot tell the models apart
    (every run trained the same epochs) leaves the claim holding where testable."""
    from rnnrepro.reporting.scoreboard import check_output_claims

    steady, oscillating = [0.2, 0.6, 0.95, 0.97, 0.98, 0.98], [0.1, 0.5, 0.3, 0.92, 0.2, 0.96]
    rows = []
    for dataset, model, curve, current in [
        ("dyck_m4", "attention_lstm", steady, True), ("dyck_m4", "lstm", oscillating, True),
        ("dyck_m6", "attention_lstm", steady, False), ("dyck_m6", "lstm", oscillating, True),
        ("dyck_m8", "lstm", oscillating, True),
    ]:  # fmt: skip
        path = write_wcpa_history(tmp_path, dataset, model, 1, curve)
        rows.append({"experiment": "second_order_lstm", "dataset": dataset, "model": model,
                     "seed": 1, "stage": "train", "scale": "paper", "path": str(path),
                     "origin": "new" if current else "old", "current": current})  # fmt: skip
    config = base_config() | {"scale": "paper"}
    claims = check_output_claims([pd.DataFrame(), pd.DataFrame(rows)], config)
    mine = claims[claims["output"] == "second_order_lstm_fig3_claim"].set_index(
        claims["ordering"].str.extract(r"\((dyck_m\d)\)$")[0]
    )
    assert list(mine.index) == ["dyck_m4", "dyck_m6", "dyck_m8"]
    assert mine.loc["dyck_m4", "verdict"] == "holds where testable"
    assert "fewer epochs not testable (every run trained 6 epochs)" in mine.loc[
        "dyck_m4", "reproduced margin"]  # fmt: skip
    assert mine.loc["dyck_m4", "evidence"] == "one run per model (new); robust WCPA"
    assert mine.loc["dyck_m6", "verdict"] == "mixed recipes"
    assert mine.loc["dyck_m8", "verdict"] == "missing"
    assert set(mine["paper"]) == {"second_order_lstm"}
    # the LSTM faster, in fewer epochs: the claim fails
    write_wcpa_history(tmp_path / "b", "dyck_m4", "lstm", 1, [0.95, 0.96])
    lstm = {**rows[1], "path": str(tmp_path / "b/second_order_lstm/dyck_m4/lstm/seed1/"
                                                  "metrics.json")}  # fmt: skip
    claims = check_output_claims([pd.DataFrame([rows[0], lstm])], config)
    assert claims.loc[0, "verdict"] == "fails"


def test_an_archive_with_todays_settings_replaces_one_with_earlier_ones():
    """A model with archived runs of today's settings is read from those alone, not averaged
    with runs of an earlier recipe; one with only earlier runs keeps them (and says so)."""
    from rnnrepro.reporting.scoreboard import current_first

    runs = pd.DataFrame({
        "experiment": ["e"] * 4, "dataset": ["d"] * 4, "model": ["a", "a", "a", "b"],
        "seed": [1, 2, 1, 1], "current": [False, False, True, False],
    })  # fmt: skip
    kept = current_first(runs)
    assert kept[["model", "seed", "current"]].values.tolist() == [
        ["a", 1, True], ["b", 1, False]
    ]  # fmt: skip


def test_the_figure_draws_results_at_the_papers_settings_only():
    """Parameter counts are settings and reduced-scale runs no evidence: neither is drawn, so
    neither sets the axes; a Dyck perplexity's band is the one its excess allows."""
    from rnnrepro.reporting.figures.scoreboard import figure_rows

    board = pd.DataFrame({
        "paper": ["p"] * 4, "metric": ["test_ppl", "params", "test_ppl", "test_wcpa"],
        "comparison": ["="] * 4, "paper_value": [2.393, 2100, 100.0, 1.0],
        "mean": [2.42, 2064, 900.0, 0.9], "allowed": [0.004, 105, 1.0, 0.05],
        "scale": ["paper", "paper", "smoke", "fold1"], "setting": [False, True, False, False],
        "verdict": ["differs", "match", "smoke-scale differs", "differs"],
    })  # fmt: skip
    rows = figure_rows(board, {"ppl": 0.01, "params": 0.05, "wcpa": 0.05})
    assert rows["metric"].tolist() == ["test_ppl", "test_wcpa"]
    assert rows["band"].tolist() == pytest.approx([0.004 / 2.393, 0.05])
    assert rows["relative"].tolist() == pytest.approx([(2.42 - 2.393) / 2.393, -0.1])


def test_an_ordering_across_recipes_is_not_judged():
    """An ordering whose rows come from runs of today's settings and of an earlier recipe would
    measure the recipes as much as the models."""
    from rnnrepro.papers import Ordering
    from rnnrepro.reporting.scoreboard import mixes_recipes

    ordering = Ordering("a beats b", "test", ("a",), ("b",), metric="test_ppl", dataset="d")
    table = pd.DataFrame({
        "metric": ["test_ppl", "test_ppl", "val_ppl"], "dataset": ["d"] * 3,
        "model": ["a", "b", "b"], "n_seeds": [1, 3, 3],
        "evidence": ["archive new", "archive old (trained with earlier settings, not the "
                     "shipped config's)", "archive new"],
    })  # fmt: skip
    assert mixes_recipes(ordering, table)
    same = table.assign(evidence="archive new")
    assert not mixes_recipes(ordering, same)


def test_a_clone_makes_the_scoreboard_from_the_configured_archives_alone(tmp_path, monkeypatch):
    """With no option but the config, the scoreboard is the archives' that config.yaml's
    ``reporting`` names (a lab's published folder), written under results/ of the current
    directory: no run, no training."""
    monkeypatch.chdir(tmp_path)
    published = tmp_path / "published"
    shutil.copytree(ARCHIVES / "multi_matrix_word", published / "our_lab",
                    ignore=shutil.ignore_patterns("*.pt"))  # fmt: skip
    config = base_config()
    config["reporting"] |= {"archives": str(published)}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    assert make_scoreboard.main(["--config", str(tmp_path / "config.yaml")]) == 0
    board = pd.read_csv(tmp_path / "results/scoreboard.csv").fillna("")
    assert set(board.loc[board["runs"] > 0, "evidence"]) == {"archive our_lab"}
    assert set(board.loc[board["runs"] > 0, "dataset"]) == {"ptb_word"}
    word = board[(board["paper"] == "multi_matrix") & (board["dataset"] == "ptb_word")]
    assert word["account"].str.contains("studies/ce_readings/README.md").any()
    assert (tmp_path / "results/scoreboard.md").stat().st_size > 0
    assert (tmp_path / "results/figures/scoreboard.png").read_bytes()[:4] == b"\x89PNG"


def test_seeds_of_an_earlier_recipe_still_measure_the_noise(tmp_path):
    """Once a run of today's settings replaces three seeds of an earlier recipe on the board, the
    seeds' spread those measured stays the noise a one-run margin is read against."""
    from rnnrepro.reporting import scoreboard as sb
    from rnnrepro.reporting.paper_numbers import load_paper_numbers

    reference = sb.reference_rows(load_paper_numbers(), sb.compare_outputs())
    tolerances = base_config()["reporting"]["tolerances"]
    ppls = {1: 88.0, 2: 90.0, 3: 92.0}
    earlier = sb.collect_metrics([fake_run(tmp_path / f"s{s}", "paper", p, p + 1)
                                  for s, p in ppls.items()])  # fmt: skip
    earlier = earlier.assign(seed=list(ppls), current=False)
    today = sb.collect_metrics([fake_run(tmp_path / "new", "paper", 80.0, 81.0)])
    archives = [sb.Evidence("old", earlier), sb.Evidence("new", today.assign(current=True))]
    board = sb.build_scoreboard(reference, sb.Evidence(sb.OWN, pd.DataFrame()), "smoke",
                                archives, tolerances, {})  # fmt: skip
    test = memory_rows(board).loc["test_ppl"]
    assert (test["runs"], test["mean"]) == (1, 80.0)  # today's run alone on the board
    assert "ppl" not in sb.relative_spreads(board.rename(columns={"runs": "n_seeds"}))
    spread = sb.seed_spreads(board, archives, reference, tolerances)["ppl"]
    assert spread == pytest.approx((2.0 / 90 + 2.0 / 91) / 2)  # the earlier seeds' std / mean
