"""Compare reproduced run metrics with one paper table and write it as CSV and Markdown.

Example:
    python -m rnnrepro.scripts.make_table --paper seed000 --table "Table 1" \\
        --metrics results/runs/seed000/*/*/seed*/metrics.json \\
        --floors results/data/*/floor.json --out-csv t1.csv --out-md t1.md
"""

from __future__ import annotations

import argparse
import sys

from rnnrepro.reporting.reference import load_reference
from rnnrepro.reporting.tables import (
    build_table,
    collect_metrics,
    describe_tolerances,
    read_floors,
    write_table,
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paper", required=True, help="paper id, e.g. seed000")
    parser.add_argument("--table", help="table label, e.g. 'Table 1' (default: all of the paper)")
    parser.add_argument("--datasets", nargs="*", help="only reference rows of these datasets")
    parser.add_argument("--metrics", nargs="*", default=[], help="metrics.json files of the runs")
    parser.add_argument("--floors", nargs="*", default=[], help="floor.json files (Dyck datasets)")
    parser.add_argument("--ppl-tolerance", type=float, default=0.01, help="relative")
    parser.add_argument("--wcpa-tolerance", type=float, default=0.05, help="absolute")
    parser.add_argument("--params-tolerance", type=float, default=0.05, help="relative")
    parser.add_argument("--title", help="Markdown title (default: paper and table)")
    parser.add_argument("--out-csv", required=True)
    parser.add_argument("--out-md", required=True)
    args = parser.parse_args(argv)

    reference = load_reference(args.paper, args.table)
    if args.datasets:
        reference = reference[reference["dataset"].isin(args.datasets)].reset_index(drop=True)
    if reference.empty:
        parser.error(f"no reference rows for paper {args.paper!r}, table {args.table!r}")
    tolerances = {
        "ppl": args.ppl_tolerance,
        "wcpa": args.wcpa_tolerance,
        "params": args.params_tolerance,
    }
    table = build_table(
        reference, collect_metrics(args.metrics), read_floors(args.floors), tolerances
    )
    title = args.title or f"{args.paper} {args.table or '(all tables)'}: paper vs reproduction"
    notes = [
        describe_tolerances(tolerances),
        "Epochs and training minutes are listed for information only (hardware-dependent).",
        f"Runs read: {len(args.metrics)}; sources of every paper number: paper_numbers.csv.",
    ]
    write_table(table, args.out_csv, args.out_md, title, notes)
    for _, row in table[table["verdict"] == "below floor"].iterrows():
        print(
            f"WARNING: {row['dataset']}/{row['model']} {row['metric']} below generator floor",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
