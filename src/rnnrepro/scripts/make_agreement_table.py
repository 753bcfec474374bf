"""A Linzen agreement table: accuracy by attractors, overall accuracy and perplexity of the
scored language models beside the paper's (memory Table 2).

Example:
    python -m rnnrepro.scripts.make_agreement_table --paper memory --table "Table 2" \\
        --title "..." --summaries */agreement.json --tolerances '{"accuracy": 0.01, ...}' \\
        --scale paper --out-csv t2.csv --out-md t2.md
"""

from __future__ import annotations

import argparse

from rnnrepro.fileio import write_csv_atomic
from rnnrepro.reporting import agreement
from rnnrepro.reporting.metrics import add_tolerances_option
from rnnrepro.reporting.paper_numbers import load_paper_numbers


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paper", required=True, help="paper key of paper_numbers.csv")
    parser.add_argument("--table", nargs="+", required=True, help="the table's labels there")
    parser.add_argument("--title", required=True)
    parser.add_argument("--summaries", nargs="+", required=True, help="agreement.json files")
    add_tolerances_option(parser)
    parser.add_argument("--scale", default="paper")
    parser.add_argument("--note", action="append", default=[], help="a line under the title")
    parser.add_argument("--out-csv", required=True)
    parser.add_argument("--out-md", required=True)
    args = parser.parse_args(argv)

    summaries = agreement.read_summaries(args.summaries)
    trained = agreement.trained_line(summaries)
    reference = load_paper_numbers(args.paper, args.table)
    tolerances = {kind: args.tolerances[kind] for kind in ("accuracy", "ppl")}
    table = agreement.table2(summaries, reference, tolerances, args.scale)
    write_csv_atomic(table, args.out_csv, index=False)
    body = [
        "Accuracy = share of items where the subject's verb number is the more probable (the "
        "`source` column names the items and how they are scored: on Linzen's own test split, "
        "the verb against its re-inflection, attractors under homogeneous intervention; on the "
        "mirror's files, 0 attractors and Acc. on subj_agr_filtered with the verb's two forms, "
        "1-5 attractors on numpred.test.N by singular vs plural mass of the verb pairs, since "
        "those files do not give the verb). "
        f"Tolerances: accuracy {tolerances['accuracy']:g} (absolute), "
        f"perplexity {tolerances['ppl']:g} (relative). Sources of the paper's numbers: "
        "paper_numbers.csv; methods: docs/methods.md.",
        "",
        *agreement.table_lines(table),
    ]
    # the corpus the LMs were trained on belongs in the title: not the paper's, unless Linzen's
    notes = [f"{trained}.", *args.note]
    agreement.write_markdown(args.out_md, f"{args.title} ({trained})", notes, body)


if __name__ == "__main__":
    main()
