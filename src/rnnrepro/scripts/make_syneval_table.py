"""A targeted syntactic evaluation table (Marvin & Linzen's pairs) of language models, against the
paper's numbers (second_order_lstm's Table 3).

Example:
    python -m rnnrepro.scripts.make_syneval_table --paper second_order_lstm --table "Table 3" \\
        --title "..." \\
        --results results/runs/second_order_lstm/wikitext2/*/seed*/syneval.csv \\
        --models lstm attention_lstm attention_lstm_5 --out-csv t3.csv --out-md t3.md
"""

from __future__ import annotations

import argparse

from rnnrepro.reporting import syneval
from rnnrepro.reporting.metrics import add_tolerances_option
from rnnrepro.reporting.paper_numbers import load_paper_numbers


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", nargs="*", default=[], help="syneval.csv files of the runs")
    parser.add_argument("--models", nargs="+", required=True, help="column order")
    add_tolerances_option(parser)
    parser.add_argument("--scale", default="paper")
    parser.add_argument("--note", action="append", default=[], help="line under the title")
    parser.add_argument("--paper", required=True, help="paper key of paper_numbers.csv")
    parser.add_argument("--table", nargs="+", required=True, help="the table's labels there")
    parser.add_argument("--title", required=True)
    parser.add_argument("--out-csv", required=True)
    parser.add_argument("--out-md", required=True)
    args = parser.parse_args(argv)

    results = syneval.read_results(args.results)
    tolerance = args.tolerances["accuracy"]
    comparison = syneval.paper_comparison(
        results, load_paper_numbers(args.paper, args.table), tolerance, args.scale
    )
    categories = syneval.side_by_side(results, args.models)
    notes = [
        f"Tolerance for a match: accuracy {tolerance:g} (absolute).",
        "Accuracy: share of pairs whose grammatical sentence has the higher log-probability "
        "(words and a final '.', after <eos>); NPI triples compared three ways (G>I, I>U, G>U). "
        "Baseline = lstm; the paper's attention column is taken as the 5-cell model [A].",
        f"Runs read: {len(args.results)}; methods: docs/methods.md; the paper's numbers: "
        "paper_numbers.csv.",
    ]
    syneval.write(
        comparison,
        categories,
        args.out_csv,
        args.out_md,
        args.title,
        args.note,
        notes,
    )


if __name__ == "__main__":
    main()
