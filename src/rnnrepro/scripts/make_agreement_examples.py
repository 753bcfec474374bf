"""Examples of agreement mistakes: for each pattern of the three models' mistakes (a region of
the Venn diagram), how many items have it, ours beside the paper's count, and its first item
(memory Table 3, with Figure 2's counts).

Example:
    python -m rnnrepro.scripts.make_agreement_examples --paper memory --table "Figure 2" \\
        --title "..." --models lstm_920 attention_10 multipop_stack \\
        --summaries */agreement.json --scored-items */agreement_items.csv \\
        --out-csv t3.csv --out-md t3.md
"""

from __future__ import annotations

import argparse

import pandas as pd

from rnnrepro.fileio import write_csv_atomic
from rnnrepro.reporting import agreement
from rnnrepro.reporting.paper_numbers import load_paper_numbers


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paper", required=True, help="paper key of paper_numbers.csv")
    parser.add_argument(
        "--table", nargs="+", required=True, help="the labels of the paper's counts there"
    )
    parser.add_argument("--title", required=True)
    parser.add_argument("--models", nargs=3, required=True, help="the three models, in order")
    parser.add_argument("--summaries", nargs="+", required=True, help="agreement.json files")
    parser.add_argument(
        "--scored-items", nargs="+", required=True, help="agreement_items.csv files"
    )
    parser.add_argument("--note", action="append", default=[], help="a line under the title")
    parser.add_argument("--out-csv", required=True)
    parser.add_argument("--out-md", required=True)
    args = parser.parse_args(argv)

    trained = agreement.trained_line(agreement.read_summaries(args.summaries))
    items = pd.concat([pd.read_csv(p) for p in args.scored_items], ignore_index=True)
    wrong = agreement.mistakes(items, args.models)
    paper = load_paper_numbers(args.paper, args.table).set_index("metric")["value"]
    table = agreement.examples(wrong, args.models, paper.to_dict())
    write_csv_atomic(table, args.out_csv, index=False)
    agreement.write_markdown(
        args.out_md,
        f"{args.title} ({trained})",
        [f"{trained}.", *args.note],
        [
            f"The first item (by file and line) of each pattern over {len(wrong):,} items "
            "scored by all three models (✗ wrong, ✓ right; first seed).",
            "",
            *agreement.example_lines(table, args.models),
        ],
    )
    print(table[["region", "mistakes", "paper"]].to_string(index=False))


if __name__ == "__main__":
    main()
