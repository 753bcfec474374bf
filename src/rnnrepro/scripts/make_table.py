"""Compare reproduced run metrics with one paper table and write it as CSV and Markdown.

Example:
    python -m rnnrepro.scripts.make_table --paper second_order_lstm --table "Table 1" \\
        --metrics results/runs/second_order_lstm/*/*/seed*/metrics.json \\
        --floors results/data/*/floor.json --out-csv t1.csv --out-md t1.md

A text table reads the n-gram baselines of its datasets (``--ngram``): each row shows the
unigram and n-gram values on its runs' tokens, and a section lists them.

A reference row whose dataset is a cross-validation family (``ptb_lines_unigram``) is compared
with the runs on its folds (``ptb_lines_unigram_fold1`` ...): mean ± std over folds × seeds.
``--note`` (repeatable) puts a line under the title, e.g. the scale's reductions;
``--setting-note`` one per value of a setting the runs resolved (their files' ``run``), e.g.
which corpus a translation run read. The orderings the paper states about the table (its
catalogue, ``rnnrepro.papers``) follow it, checked on the means. A table of BLEU rows lists
the signature each was scored with.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rnnrepro import papers
from rnnrepro.data.sources import unpublished
from rnnrepro.reporting.baselines import (
    NATS_NOTE,
    ngram_lines,
    read_ngram,
    with_nats_readings,
)
from rnnrepro.reporting.metrics import add_tolerances_option, collect_metrics
from rnnrepro.reporting.notes import resolved, setting_notes
from rnnrepro.reporting.orderings import check_orderings, ordering_lines
from rnnrepro.reporting.paper_numbers import load_paper_numbers
from rnnrepro.reporting.run_lines import (
    describe_kept,
    describe_readings,
    describe_scales,
    excess_lines,
    robust_wcpa_lines,
    search_lines,
    search_summary,
    signature_lines,
    training_lines,
)
from rnnrepro.reporting.tables import (
    build_table,
    describe_tolerances,
    read_floors,
    tolerances_in_use,
    write_table,
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paper", required=True, help="paper id, e.g. second_order_lstm")
    parser.add_argument(
        "--table",
        nargs="+",
        help="table label(s), e.g. 'Table 1' or 'Table 1' 'Section 4.1' (default: all)",
    )
    parser.add_argument("--datasets", nargs="*", help="only reference rows of these datasets")
    parser.add_argument("--metrics", nargs="*", default=[], help="metrics.json files of the runs")
    parser.add_argument("--floors", nargs="*", default=[], help="floor.json files (Dyck datasets)")
    parser.add_argument(
        "--ngram",
        nargs="*",
        default=[],
        help="n-gram baseline CSVs of the text datasets (scripts/ngram_baselines.py)",
    )
    parser.add_argument(
        "--histories",
        nargs="*",
        default=[],
        help="history.csv files of the runs: adds a section on how they trained",
    )
    add_tolerances_option(parser)
    parser.add_argument(
        "--note",
        action="append",
        default=[],
        help="a line shown under the title (repeatable), e.g. the scale's reductions",
    )
    parser.add_argument(
        "--setting-note",
        nargs=2,
        action="append",
        default=[],
        metavar=("SETTING", "JSON"),
        help="a dotted setting of the runs' resolved config (e.g. translation.corpus) and a JSON "
        "object of a line per value: each value the runs read states its line (repeatable)",
    )
    parser.add_argument(
        "--scale",
        default="paper",
        help="the config's scale: verdicts of reduced scales are marked, rows not run say so",
    )
    parser.add_argument(
        "--corpus",
        nargs="+",
        metavar=("NAME", "FILE"),
        help="a corpus and the downloaded files the runs read: the title says whether they are "
        "the published ones (their registered digests)",
    )
    parser.add_argument(
        "--wcpa-min-events",
        type=int,
        help="Dyck tables: add the WCPA over distances with at least this many events",
    )
    parser.add_argument(
        "--bpc-in-nats",
        action="store_true",
        help="read each paper BPC both as bits and as nats per character, each with a verdict",
    )
    parser.add_argument("--title", help="Markdown title (default: paper and table)")
    parser.add_argument("--out-csv", required=True)
    parser.add_argument("--out-md", required=True)
    args = parser.parse_args(argv)

    reference = load_paper_numbers(args.paper, args.table)
    if args.datasets:
        reference = reference[reference["dataset"].isin(args.datasets)].reset_index(drop=True)
    table_label = " + ".join(args.table) if args.table else None
    if reference.empty:
        parser.error(f"no reference rows for paper {args.paper!r}, table {table_label!r}")
    if args.bpc_in_nats:
        reference = with_nats_readings(reference)
        args.note.append(NATS_NOTE)
    tolerances = args.tolerances
    if args.corpus:
        args.note.append(corpus_note(args.corpus[0], args.corpus[1:]))
    for setting, lines in args.setting_note:
        args.note += setting_notes(run_settings(args.metrics, setting), setting, json.loads(lines))
    runs = collect_metrics(args.metrics)
    for note in (describe_readings(args.metrics), describe_kept(args.metrics)):
        if note:
            args.note.append(note)
    floors = read_floors(args.floors)
    ngram_scores = read_ngram(args.ngram)
    table = build_table(reference, runs, floors, tolerances, args.scale, ngram_scores)
    run_scales = set(runs["scale"]) - {""} if "scale" in runs else set()
    orderings = check_orderings(
        papers.orderings(args.paper, args.table), table, run_scales or {args.scale}
    )
    title = args.title or f"{args.paper} {table_label or '(all tables)'}: paper vs reproduction"
    notes = [
        describe_tolerances(tolerances_in_use(reference, tolerances)),
        "Epochs and training minutes are listed for information only (hardware-dependent).",
        f"Runs read: {len(args.metrics)}; sources of every paper number: paper_numbers.csv.",
        "How the models, metrics and procedures are implemented, and the decisions where the "
        "papers are silent: docs/methods.md; the papers: docs/papers.md.",
    ]
    write_table(
        table,
        args.out_csv,
        args.out_md,
        title,
        notes,
        title_notes=[*args.note, describe_scales(runs)],
        sections=[
            *search_lines(search_summary(args.metrics)),
            *(robust_wcpa_lines(runs, args.wcpa_min_events) if args.wcpa_min_events else []),
            *training_lines(runs, args.histories, floors),
            *excess_lines(runs),
            *ngram_lines(ngram_scores),
            *signature_lines(table, runs),
            *ordering_lines(orderings),
        ],
    )
    for _, row in table[table["verdict"] == "below floor"].iterrows():
        print(
            f"WARNING: {row['dataset']}/{row['model']} {row['metric']} below generator floor",
            file=sys.stderr,
        )


def run_settings(paths: list[str], setting: str) -> list[object]:
    """The value of a dotted ``setting`` in each metrics file's resolved run config (``run``;
    None where unset)."""
    return [resolved(json.loads(Path(p).read_text()).get("run") or {}, setting) for p in paths]


def corpus_note(corpus: str, files: list[str]) -> str:
    """Whether the runs read the published ``corpus`` (a line under the table's title)."""
    different = unpublished(corpus, files)
    if not different:
        return f"Corpus {corpus}: the published files (registered digests verified)."
    return (
        f"Corpus {corpus}: NOT the published files ({', '.join(different)} differ from the "
        "registered digests): no run in this table read the real corpus; its rows test the "
        "pipeline on a stand-in."
    )


if __name__ == "__main__":
    main()
