"""A Linzen agreement report: the accuracy table, the Venn diagram of the three models' mistakes
and a table of examples (memory's Table 2, Figure 2 and Table 3).

Example:
    python -m rnnrepro.scripts.make_agreement_report --paper memory --table "Table 2" \\
        --figure-table "Figure 2" --title "..." --examples-title "..." \\
        --models lstm_920 attention_10 multipop_stack --summaries */agreement.json \\
        --scored-items */agreement_items.csv --scale paper --out-table-csv t2.csv \\
        --out-table-md t2.md --out-venn fig2.png --out-venn-csv fig2.csv --out-examples t3.md
"""

from __future__ import annotations

import argparse

import pandas as pd

from rnnrepro.fileio import atomic_open, write_csv_atomic
from rnnrepro.reporting import agreement
from rnnrepro.reporting.metrics import add_tolerances_option
from rnnrepro.reporting.paper_numbers import load_paper_numbers


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paper", required=True, help="paper key of paper_numbers.csv")
    parser.add_argument("--table", nargs="+", required=True, help="the table's labels there")
    parser.add_argument("--figure-table", nargs="+", required=True, help="the Venn figure's")
    parser.add_argument("--title", required=True)
    parser.add_argument("--examples-title", required=True)
    parser.add_argument("--models", nargs=3, required=True, help="the three models, in order")
    parser.add_argument("--summaries", nargs="+", required=True, help="agreement.json files")
    parser.add_argument(
        "--scored-items", nargs="+", required=True, help="agreement_items.csv files"
    )
    add_tolerances_option(parser)
    parser.add_argument("--scale", default="paper")
    parser.add_argument("--note", action="append", default=[], help="a line under each title")
    parser.add_argument("--out-table-csv", required=True)
    parser.add_argument("--out-table-md", required=True)
    parser.add_argument("--out-venn", required=True)
    parser.add_argument("--out-venn-csv", required=True)
    parser.add_argument("--out-examples", required=True)
    args = parser.parse_args(argv)

    summaries = agreement.read_summaries(args.summaries)
    corpora = sorted({s["lm_corpus"] for s in summaries})
    trained = (
        f"LMs trained on {'/'.join(corpora)}: Linzen's training split is not available "
        "(docs/data.md), so this is not the paper's setting"
        if corpora != ["linzen"]
        else "LMs trained on Linzen's training split"
    )
    notes = [f"{trained}.", *args.note]

    reference = load_paper_numbers(args.paper, args.table)
    tolerances = {kind: args.tolerances[kind] for kind in ("accuracy", "ppl")}
    table = agreement.table2(summaries, reference, tolerances, args.scale)
    write_csv_atomic(table, args.out_table_csv, index=False)
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
    # the corpus the LMs were trained on belongs in each title: not the paper's, unless Linzen's
    agreement.write_markdown(args.out_table_md, f"{args.title} ({trained})", notes, body)

    items = pd.concat([pd.read_csv(p) for p in args.scored_items], ignore_index=True)
    wrong = agreement.mistakes(items, args.models)
    counts = agreement.venn_counts(wrong, args.models)
    paper = load_paper_numbers(args.paper, args.figure_table).set_index("metric")["value"]
    venn = pd.DataFrame(
        {
            "region": list(counts),
            "mistakes": list(counts.values()),
            "paper": [paper.get(f"venn:{r}") for r in counts],
        }
    )
    with atomic_open(args.out_venn_csv, "w", newline="") as f:
        venn.to_csv(f, index=False)
    agreement.venn_figure(counts, args.models, len(wrong), args.out_venn, notes)
    agreement.write_markdown(
        args.out_examples,
        f"{args.examples_title} ({trained})",
        notes,
        [
            f"The first item (by file and line) of each pattern over {len(wrong):,} items "
            "scored by all three models (✗ wrong, ✓ right; first seed).",
            "",
            *agreement.example_lines(wrong, args.models),
        ],
    )
    print(venn.to_string(index=False))


if __name__ == "__main__":
    main()
