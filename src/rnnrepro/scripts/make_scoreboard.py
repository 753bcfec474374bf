"""The scoreboard: every paper number with the best evidence for it, per paper a summary line,
the claims at the papers' settings, and a figure (``rnnrepro.reporting.scoreboard``).

    python -m rnnrepro.scripts.make_scoreboard --scale smoke \\
        --metrics results/runs/*/*/*/seed*/metrics.json \\
        --archives benchmarks/results --notes benchmarks/notes \\
        --out-csv results/scoreboard.csv --out-md results/scoreboard.md \\
        --out-figure results/figures/scoreboard.png

With ``--readme README.md`` (and no runs) it rewrites the README's summary block from the
archives alone; ``--check-readme`` exits 1, naming the difference, when that block is stale.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import textwrap
from pathlib import Path

import pandas as pd
import yaml

from rnnrepro.cost import estimate
from rnnrepro.data import names
from rnnrepro.fileio import write_csv_atomic, write_text_atomic
from rnnrepro.reporting.figures.scoreboard import scoreboard_figure
from rnnrepro.reporting.markdown import markdown_lines
from rnnrepro.reporting.metrics import collect_metrics, read_tolerances
from rnnrepro.reporting.paper_numbers import load_paper_numbers
from rnnrepro.reporting.scoreboard import (
    OWN,
    Evidence,
    archive_folders,
    build_scoreboard,
    check_claims,
    compare_outputs,
    read_accounts,
    read_archive,
    reference_rows,
    summary,
)
from rnnrepro.reporting.tables import PAPER_SETTINGS, read_floors
from rnnrepro.resources import measurements

REPO = Path(__file__).resolve().parents[3]
BEGIN = "<!-- scoreboard summary: made by `python -m rnnrepro.scripts.make_scoreboard --readme README.md`; do not edit -->"  # noqa: E501
END = "<!-- end of the scoreboard summary -->"
SUMMARY_CHECKED = ["match", "differ, explained", "differ, unexplained", "info only"]
SUMMARY_CLAIMS = ["claims hold", "claims fail", "claims within noise", "claims not yet checked"]
SUMMARY_LEGEND = (
    "Results: the paper's numbers of `paper_numbers.csv` that a run measures (each BPC row that "
    "a table reads both as bits and as nats counts twice). At the paper's settings: compared "
    f"with runs at the papers' settings ({' or '.join(PAPER_SETTINGS)}: one fold of five): "
    "they match, differ with a measured account (a note under `benchmarks/notes/` that "
    "explains it), differ unexplained, or are information only (epochs, minutes). Not yet run: "
    "compared only at a reduced scale or not at all; device-hours: the expected GPU-hours of "
    "their runs by the cost model (docs/cost.md). Settings checked: parameter counts, which the "
    "pipeline sets to the paper's (a match there is by construction, not a result). Checked in "
    "other tables: agreement, syntactic evaluation, settings and figures, each in its own "
    "output. Claims: the orderings the papers state, on the means at the papers' settings; "
    "a margin inside the seeds' noise is within noise (docs/results.md)."
)


def paper_hours(config: dict, board: pd.DataFrame, results: Path) -> dict[str, float]:
    """Paper -> the expected GPU-hours (the GPU's measured tables in ``results/gpu``; none
    without them) of the paper-scale runs behind its numbers not yet run at the papers'
    settings."""
    paper = {**config, "scale": "paper"}
    tables = measurements(str(results), "gpu")
    if tables.throughput is None:
        return {}
    costs = estimate(paper, tables.throughput, None, epoch_times=tables.epoch_times,
                     flop_rate=tables.flop_rate)  # fmt: skip
    pending = board[
        ~board["scale"].isin(PAPER_SETTINGS)
        & ~board["verdict"].str.startswith(("checked in", "not checked"))
    ]
    wanted = set(zip(pending["paper"], pending["dataset"], pending["model"], strict=True))
    hours: dict[str, float] = {}
    for cost in costs:
        run = cost.run
        datasets = (run.dataset, names.parse(run.dataset).unfolded)
        keys = {(run.experiment, d, run.model) for d in datasets}
        if keys & wanted:
            hours[run.experiment] = hours.get(run.experiment, 0.0) + cost.expected_hours
    return hours


def link(path: str, base: Path) -> str:
    """A Markdown link to ``path`` relative to the folder ``base`` (where the file goes)."""
    target = Path(path).resolve()
    return f"[{target.stem}]({os.path.relpath(target, base.resolve())})"


def summary_lines(table: pd.DataFrame, board: pd.DataFrame, base: Path) -> list[str]:
    """The per-paper summary as Markdown, each paper's measured accounts linked from ``base``."""

    def counts(row: pd.Series, columns: list[str]) -> str:
        return " / ".join(str(row[c]) for c in columns)

    def hours(value: float) -> str:
        return "" if math.isnan(value) else f" ({value:,.1f} GPU-h)" if value < 10 else (
            f" ({value:,.0f} GPU-h)"
        )  # fmt: skip

    def accounts(paper: str) -> str:
        notes = [n for cell in board.loc[board["paper"] == paper, "account"] for n in cell.split()]
        return ", ".join(link(note, base) for note in dict.fromkeys(notes))

    shown = pd.DataFrame(
        {
            "paper": table["paper"],
            "numbers": table["numbers"],
            "results": table["results"],
            "at the paper's settings: match / differ, explained / differ, unexplained / info": [
                f"{r['at paper settings']}: " + counts(r, SUMMARY_CHECKED)
                for _, r in table.iterrows()
            ],
            "not yet run there": [
                f"{r['not yet at paper settings']}" + hours(r["device-hours to run them"])
                for _, r in table.iterrows()
            ],
            "claims: hold / fail / within noise / not yet": [
                counts(r, SUMMARY_CLAIMS) for _, r in table.iterrows()
            ],
            "settings checked: match": [
                f"{r['settings match']} of {r['settings checked']}" for _, r in table.iterrows()
            ],
            "in other tables": table["checked in other tables"],
            "measured accounts of the differences": [accounts(p) for p in table["paper"]],
        }
    )
    return markdown_lines(shown)


def checked_link(verdict: str, base: Path) -> str:
    """A verdict ``checked in <path>`` with the path linked from ``base``; others as they are."""
    prefix = "checked in "
    if not verdict.startswith(prefix):
        return verdict
    target = verdict.removeprefix(prefix)
    return f"{prefix}[{Path(target).stem}]({os.path.relpath(target, base)})"


def board_lines(board: pd.DataFrame, claims: pd.DataFrame, base: Path) -> list[str]:
    """The claims and every number, per paper; notes and tables linked from ``base``."""
    lines = ["## Claims at the papers' settings", ""]
    if claims.empty:
        lines += ["No catalogue declares an ordering.", ""]
    else:
        columns = ["paper", "output", "ordering", "check", "paper margin", "reproduced margin",
                   "evidence", "verdict"]  # fmt: skip
        lines += markdown_lines(claims[columns])
    for paper, rows in board.groupby("paper", sort=False):
        shown = rows.assign(
            account=[" ".join(link(n, base) for n in a.split()) for a in rows["account"]],
            verdict=[checked_link(v, base) for v in rows["verdict"]],
        )  # fmt: skip
        setting = shown["setting"].astype(bool)
        shown = shown.drop(columns=["paper", "mean", "std", "allowed", "setting"])
        lines += ["", f"## {paper}", ""]
        lines += markdown_lines(shown[~setting])
        if setting.any():
            lines += ["", f"### {paper}: settings checked (set to the paper's, not results)", ""]
            lines += markdown_lines(shown[setting])
    return lines


def readme_block(table: pd.DataFrame, board: pd.DataFrame, readme: Path) -> str:
    legend = textwrap.fill(SUMMARY_LEGEND, 100, break_on_hyphens=False)
    return "\n".join([BEGIN, "", *summary_lines(table, board, readme.parent), "", legend, "", END])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--metrics", nargs="*", default=[], help="this directory's metrics.json")
    parser.add_argument("--floors", nargs="*", default=[], help="its Dyck splits' floor.json")
    parser.add_argument("--scale", default="paper", help="the scale of those runs")
    results = REPO / "benchmarks" / "results"
    for option, default, text in (
        ("--archives", results, "folder of the archives (each a folder with a manifest.csv)"),
        ("--notes", REPO / "benchmarks" / "notes", "the measured accounts (front matter)"),
        ("--config", REPO / "config.yaml", "its paper scale prices the runs still to do"),
        ("--measurements", results, "the cost model's measured tables (gpu/, else the CPU's)"),
    ):
        parser.add_argument(option, type=Path, default=default, help=text)
    parser.add_argument(
        "--tolerances",
        type=read_tolerances,
        help="JSON: metric kind -> tolerance (default: the config's)",
    )
    parser.add_argument("--out-csv")
    parser.add_argument("--out-md")
    parser.add_argument("--out-figure")
    parser.add_argument("--readme", type=Path, help="rewrite this README's summary block")
    parser.add_argument("--check-readme", action="store_true", help="with --readme: only check")
    args = parser.parse_args(argv)  # fmt: skip

    config = yaml.safe_load(args.config.read_text())
    args.tolerances = args.tolerances or read_tolerances(
        json.dumps(config["reporting"]["tolerances"])
    )
    archives = [read_archive(folder) for folder in archive_folders(args.archives)]
    own = Evidence(OWN, collect_metrics(args.metrics), read_floors(args.floors))
    outputs = compare_outputs()
    reference = reference_rows(load_paper_numbers(), outputs)
    board = build_scoreboard(
        reference, own, args.scale, archives, args.tolerances, read_accounts(args.notes)
    )
    claims = check_claims(board, outputs)
    table = summary(board, claims, paper_hours(config, board, args.measurements))
    if args.readme:
        return update_readme(args.readme, readme_block(table, board, args.readme),
                             args.check_readme)  # fmt: skip
    origins = ", ".join(e.origin for e in archives if not e.runs.empty) or "none"
    intro = [
        f"> Runs of this directory: {len(own.runs)}, at {args.scale} scale"
        + ("" if args.scale in PAPER_SETTINGS else " (no evidence: they check the pipeline, "
           "not the papers)") + f". Archives of runs at the papers' settings: {origins} "
        "(benchmarks/results/). Each number takes this directory's runs when they are at the "
        "papers' settings, else an archive's, else this directory's.  ",
        f"> Tolerances for a match: {', '.join(f'{k} {v:g}' for k, v in args.tolerances.items())}"
        " (relative for ppl, params, bpc and ce). The tables (results/tables/) give each "
        "number's n-gram baselines and the floor checks; paper_numbers.csv the source of each.",
    ]  # fmt: skip
    write_csv_atomic(board, args.out_csv, index=False)
    md = Path(args.out_md)
    lines = ["# Scoreboard: what reproduces", "", *intro, "", "## Per paper", "",
             *summary_lines(table, board, md.parent), "", SUMMARY_LEGEND, "",
             *board_lines(board, claims, md.parent)]  # fmt: skip
    write_text_atomic(md, "\n".join(lines) + "\n")
    scoreboard_figure(board, args.tolerances, args.out_figure,
                      [f"Directory scale: {args.scale}; archives: {origins}."])  # fmt: skip
    return 0


def update_readme(readme: Path, block: str, check: bool) -> int:
    """Put ``block`` between the markers of ``readme``; with ``check``, 1 when it differs."""
    text = readme.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        print(f"{readme}: no scoreboard block ({BEGIN!r} ... {END!r})", file=sys.stderr)
        return 2
    start, stop = text.index(BEGIN), text.index(END) + len(END)
    if check:
        if text[start:stop] != block:
            print(f"{readme}: the scoreboard summary is stale; rerun "
                  "`python -m rnnrepro.scripts.make_scoreboard --readme README.md`",
                  file=sys.stderr)  # fmt: skip
            return 1
        return 0
    write_text_atomic(readme, text[:start] + block + text[stop:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
