"""The scoreboard: every paper number with the best evidence for it, per paper a summary line,
the claims at the papers' settings, and a figure (``rnnrepro.reporting.scoreboard``).

    python -m rnnrepro.scripts.make_scoreboard --scale smoke \\
        --metrics results/runs/*/*/*/seed*/metrics.json \\
        --archives benchmarks/results --studies studies \\
        --out-csv results/scoreboard.csv --out-md results/scoreboard.md \\
        --out-figure results/figures/scoreboard.png

Without ``--metrics`` it reads the archives alone: in a fresh clone,
``python -m rnnrepro.scripts.make_scoreboard`` writes ``results/scoreboard.md`` (and its CSV and
figure) from the archived runs in seconds, with no run trained (``snakemake scoreboard`` also
makes every table and figure, training the runs the directory lacks). With ``--readme README.md``
it rewrites the README's summary block from the archives; ``--check-readme`` exits 1, naming the
difference, when that block is stale.
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

from rnnrepro import config as cfg
from rnnrepro import papers
from rnnrepro.archive import PAPER_SETTINGS, archive_folders, current_runs
from rnnrepro.cost import PaperCost, estimate, paper_costs
from rnnrepro.fileio import write_csv_atomic, write_text_atomic
from rnnrepro.reporting.accounts import read_accounts
from rnnrepro.reporting.figures.scoreboard import scoreboard_figure
from rnnrepro.reporting.markdown import markdown_lines
from rnnrepro.reporting.metrics import collect_metrics, read_tolerances
from rnnrepro.reporting.paper_numbers import load_paper_numbers
from rnnrepro.reporting.scoreboard import (
    OWN,
    Evidence,
    archived_runs,
    build_scoreboard,
    check_claims,
    check_output_claims,
    compare_outputs,
    read_archive,
    reference_rows,
    seed_spreads,
    summary,
)
from rnnrepro.reporting.tables import read_floors
from rnnrepro.resources import device_of, measurements

REPO = Path(__file__).resolve().parents[3]
BEGIN = "<!-- scoreboard summary: made by `python -m rnnrepro.scripts.make_scoreboard --readme README.md`; do not edit -->"  # noqa: E501
END = "<!-- end of the scoreboard summary -->"
COST_BEGIN = "<!-- cost table: made by `python -m rnnrepro.scripts.make_scoreboard --readme README.md --cost-doc docs/cost.md`; do not edit -->"  # noqa: E501
COST_END = "<!-- end of the cost table -->"
COST_LEGEND = (
    "Expected device-hours of every training job at paper scale by the cost model "
    "(docs/cost.md), on the device a cluster runs it on: a GPU for text jobs (the H200's "
    "measurements), one CPU core for Dyck jobs. Done: archived with today's settings."
)
SUMMARY_CHECKED = ["match", "differ, explained", "differ, unexplained", "info only"]
SUMMARY_CLAIMS = ["claims hold", "claims fail", "claims within noise", "claims not yet checked"]
SUMMARY_LEGEND = (
    "Results: the numbers a run measures, compared at the papers' settings "
    f"({' or '.join(PAPER_SETTINGS)}): match / differ with a measured account (the note of a "
    "study under `studies/` or an archive's README) / differ unexplained / information only; "
    "not yet run there, with the hours of their runs. Settings checked: parameter counts, set to "
    "the papers' by construction. Orderings: those the papers state, on the means; a margin "
    "inside the seeds' noise is within noise. How each is counted: docs/results.md."
)


def device_costs(config: dict, archives: list[Path], results: Path) -> list[PaperCost]:
    """Per paper, its training jobs at paper scale and their expected hours by the cost model on
    the device each runs on in a cluster (``resources.device_of``: a GPU, the measured H200's
    tables in ``results/gpu``, or one CPU core for the data families of ``cluster.cpu_families``,
    the CPU's tables in ``results``), split into done (archived with today's settings:
    ``current_runs``) and to do; none without the GPU's tables."""
    paper = {**config, "scale": "paper"}
    costs = []
    for device in ("gpu", "cpu"):
        tables = measurements(str(results), device)
        if tables.throughput is None:
            return []
        costs += [
            cost
            for cost in estimate(
                paper,
                tables.throughput,
                None,
                epoch_times=tables.epoch_times,
                flop_rate=tables.flop_rate,
            )  # fmt: skip
            if device_of(paper, cost.run) == device
        ]
    done = set().union(*(current_runs(folder, config) for folder in archives))
    return paper_costs(cfg.jobs(paper), costs, done)


def cost_lines(costs: list[PaperCost]) -> list[str]:
    """The per-paper cost as Markdown: jobs and expected device-hours, all, done and to do."""
    if not costs:
        return ["No GPU measurements (benchmarks/results/gpu/): no cost in device-hours."]

    def hours(value: float) -> str:
        return f"{value:,.1f}" if value < 10 else f"{value:,.0f}"

    fields = ("jobs", "hours", "done_jobs", "done_hours", "unpriced")
    total = PaperCost("total", *(sum(getattr(c, f) for c in costs) for f in fields))
    rows = [
        {
            "paper": c.paper,
            "training jobs at paper scale": c.jobs,
            "expected device-hours": hours(c.hours),
            "done: jobs (hours)": f"{c.done_jobs} ({hours(c.done_hours)})",
            "to do: jobs (hours)": f"{c.todo_jobs} ({hours(c.todo_hours)})",
            "not priced": c.unpriced,
        }
        for c in [*costs, total]
    ]
    return markdown_lines(pd.DataFrame(rows))


def link(path: str, base: Path) -> str:
    """A Markdown link to ``path`` relative to the folder ``base`` (where the file goes), named
    by its folder where it is a folder's README."""
    target = Path(path).resolve()
    name = target.parent.name if target.name == "README.md" else target.stem
    return f"[{name}]({os.path.relpath(target, base.resolve())})"


def summary_lines(table: pd.DataFrame, board: pd.DataFrame, base: Path) -> list[str]:
    """The per-paper summary as Markdown, each paper's measured accounts linked from ``base``."""

    def counts(row: pd.Series, columns: list[str]) -> str:
        return " / ".join(str(row[c]) for c in columns)

    def hours(value: float) -> str:
        return "" if math.isnan(value) else f" ({value:,.1f} h)" if value < 10 else (
            f" ({value:,.0f} h)"
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
            "orderings: hold / fail / within noise / not yet": [
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


def claim_status(claim, checked: pd.DataFrame) -> str:
    """A claim's status at the papers' settings from its orderings' verdicts (``checked``: the
    paper's rows of ``check_claims``): fails if one fails; not yet tested while one has no
    runs there; within noise if one is; else holds. A claim an output of its own tests says
    which: its rows are those of that output (``check_output_claims``), one per dataset; "holds
    where testable" when a part of it could not be tested."""
    if claim.checked_in is not None:
        rows = checked[checked["output"] == claim.checked_in] if not checked.empty else checked
        if rows.empty:
            return f"tested by its own output ({claim.checked_in}), not yet from the archives"
        expected = len(rows)
    else:
        rows = checked[checked["ordering"].isin(claim.orderings)] if not checked.empty else checked
        expected = len(claim.orderings)
    verdicts = list(rows["verdict"]) if not rows.empty else []
    if any(v.endswith("fails") for v in verdicts):
        return "fails"
    if any(v.endswith("mixed recipes") for v in verdicts):
        return "not yet tested (its rows' runs trained under different recipes)"
    if len(verdicts) < expected or any(v.endswith("missing") for v in verdicts):
        tested = sum(v.endswith(("holds", "within noise", "testable")) for v in verdicts)
        return "not yet tested" + (f" ({tested} of its checks run)" if tested else "")
    if any(v.endswith("within noise") for v in verdicts):
        return "within the seeds' noise"
    if any(v.endswith("holds where testable") for v in verdicts):
        return "holds where testable"
    return "holds"


def claim_lines(table: pd.DataFrame, board: pd.DataFrame, claims: pd.DataFrame,
                base: Path) -> list[str]:  # fmt: skip
    """One line per paper: each of its headline claims with its status at the papers'
    settings, its results there, and the notes that account for the differences."""
    lines = []
    for _, row in table.iterrows():
        paper = row["paper"]
        checked = claims[claims["paper"] == paper] if not claims.empty else claims
        said = "; ".join(f"{c.text}: **{claim_status(c, checked)}**"
                         for c in papers.claims(paper))  # fmt: skip
        notes = [n for cell in board.loc[board["paper"] == paper, "account"] for n in cell.split()]
        why = ", ".join(link(note, base) for note in dict.fromkeys(notes))
        mine = board[(board["paper"] == paper) & board["scale"].isin(PAPER_SETTINGS)
                     & ~board["setting"].astype(bool)]  # fmt: skip
        earlier = mine["evidence"].str.contains("earlier settings").sum()
        results = (
            f"results at the papers' settings: {row['match']} match, "
            f"{row['differ, explained'] + row['differ, unexplained']} differ"
            + (f" (why: {why})" if why else "")
            + (
                f"; {earlier} of the {len(mine)} numbers from runs of earlier settings than the "
                "shipped config's"
                if earlier
                else ""
            )  # fmt: skip
            if row["at paper settings"]
            else "no result at the papers' settings yet"
        )
        lines.append(f"- **{paper}**: {said}. {results[0].upper()}{results[1:]}.")
    return lines


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


def readme_block(
    table: pd.DataFrame, board: pd.DataFrame, claims: pd.DataFrame, readme: Path
) -> str:
    legend = textwrap.fill(SUMMARY_LEGEND, 100, break_on_hyphens=False)
    said = claim_lines(table, board, claims, readme.parent)
    return "\n".join([BEGIN, "", *said, "", *summary_lines(table, board, readme.parent), "",
                      legend, "", END])  # fmt: skip


def cost_block(costs: list[PaperCost]) -> str:
    """The cost table between its markers (README and docs/cost.md carry the same)."""
    legend = textwrap.fill(COST_LEGEND, 100, break_on_hyphens=False)
    return "\n".join([COST_BEGIN, "", *cost_lines(costs), "", legend, "", COST_END])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--metrics", nargs="*", default=[], help="this directory's metrics.json")
    parser.add_argument("--floors", nargs="*", default=[], help="its Dyck splits' floor.json")
    parser.add_argument("--scale", default="paper", help="the scale of those runs")
    room = "(default: the config's reporting.{}, relative to the repository)"
    parser.add_argument("--archives", type=Path, help="folder of the archives, each a folder "
                        "with a manifest.csv " + room.format("archives"))  # fmt: skip
    parser.add_argument("--studies", type=Path, help="folder of the studies, each note's front "
                        "matter saying what it explains " + room.format("studies"))  # fmt: skip
    parser.add_argument("--config", type=Path, default=REPO / "config.yaml",
                        help="its paper scale prices the runs still to do")  # fmt: skip
    parser.add_argument("--measurements", type=Path, default=REPO / "benchmarks" / "results",
                        help="the cost model's measured tables (gpu/, else the CPU's)")  # fmt: skip
    parser.add_argument(
        "--tolerances",
        type=read_tolerances,
        help="JSON: metric kind -> tolerance (default: the config's)",
    )
    parser.add_argument("--out-csv", default="results/scoreboard.csv")
    parser.add_argument("--out-md", default="results/scoreboard.md")
    parser.add_argument("--out-figure", default="results/figures/scoreboard.png")
    parser.add_argument("--readme", type=Path, help="rewrite this README's summary block")
    parser.add_argument("--cost-doc", type=Path, help="with --readme: its cost table too")
    parser.add_argument("--check-readme", action="store_true", help="with --readme: only check")
    args = parser.parse_args(argv)  # fmt: skip

    config = yaml.safe_load(args.config.read_text())
    for room in ("archives", "studies"):  # relative to the repository unless absolute
        setattr(args, room, getattr(args, room) or REPO / config["reporting"][room])
    args.tolerances = args.tolerances or read_tolerances(
        json.dumps(config["reporting"]["tolerances"])
    )
    archives = [read_archive(folder, config) for folder in archive_folders(args.archives)]
    own = Evidence(OWN, collect_metrics(args.metrics), read_floors(args.floors))
    outputs = compare_outputs()
    reference = reference_rows(load_paper_numbers(), outputs)
    board = build_scoreboard(
        reference,
        own,
        args.scale,
        archives,
        args.tolerances,
        read_accounts(args.studies, args.archives),
    )
    own_runs = own.runs.assign(path=args.metrics, origin=OWN) if not own.runs.empty else own.runs
    claims = pd.concat(
        [check_claims(board, outputs,
                      seed_spreads(board, archives, reference, args.tolerances)),
         check_output_claims([own_runs if args.scale in PAPER_SETTINGS else pd.DataFrame(),
                              archived_runs(archives, reference)], config)],
        ignore_index=True,
    )  # fmt: skip
    folders = archive_folders(args.archives)
    costs = device_costs(config, folders, args.measurements)
    table = summary(board, claims, {c.paper: c.todo_hours for c in costs})
    if args.readme:
        blocks = {args.readme: [(BEGIN, END, readme_block(table, board, claims, args.readme)),
                                (COST_BEGIN, COST_END, cost_block(costs))]}  # fmt: skip
        if args.cost_doc:
            blocks[args.cost_doc] = [(COST_BEGIN, COST_END, cost_block(costs))]
        return max(update_block(path, *block, args.check_readme)
                   for path, file_blocks in blocks.items() for block in file_blocks)  # fmt: skip
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
             *claim_lines(table, board, claims, md.parent), "",
             *summary_lines(table, board, md.parent), "", SUMMARY_LEGEND, "",
             *board_lines(board, claims, md.parent)]  # fmt: skip
    write_text_atomic(md, "\n".join(lines) + "\n")
    scoreboard_figure(board, args.tolerances, args.out_figure,
                      [f"Directory scale: {args.scale}; archives: {origins}."])  # fmt: skip
    return 0


def update_block(path: Path, begin: str, end: str, block: str, check: bool) -> int:
    """Put ``block`` between the markers ``begin`` and ``end`` of the file ``path``; with
    ``check``, 1 when it differs; 2 when the file has no such markers."""
    text = path.read_text(encoding="utf-8")
    if begin not in text or end not in text:
        print(f"{path}: no generated block ({begin!r} ... {end!r})", file=sys.stderr)
        return 2
    start, stop = text.index(begin), text.index(end) + len(end)
    if check:
        if text[start:stop] != block:
            print(f"{path}: the generated block {begin[5:40]!r}... is stale; rerun "
                  "`python -m rnnrepro.scripts.make_scoreboard --readme README.md "
                  "--cost-doc docs/cost.md`", file=sys.stderr)  # fmt: skip
            return 1
        return 0
    write_text_atomic(path, text[:start] + block + text[stop:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
