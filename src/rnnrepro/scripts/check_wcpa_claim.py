"""Check a claim that a model learns validation WCPA faster and more steadily than a baseline, in
fewer epochs, on every seed's training history; write CSV + Markdown. The paper's own words come
as a ``--note`` (the catalogue declares them).

    python -m rnnrepro.scripts.check_wcpa_claim --title "..." --models lstm attention_lstm \\
        --histories results/runs/second_order_lstm/dyck_m*/*/seed*/history.csv \\
        --out-csv claim.csv --out-md claim.md
"""

from __future__ import annotations

import argparse

from rnnrepro.fileio import write_csv_atomic, write_text_atomic
from rnnrepro.reporting.markdown import markdown_lines
from rnnrepro.reporting.wcpa_claim import DROP, LEARNT, claim_table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--histories", nargs="+", required=True, help="history.csv of the runs")
    parser.add_argument("--note", action="append", default=[], help="a line under the title")
    parser.add_argument("--title", required=True)
    parser.add_argument(
        "--models", nargs=2, required=True, metavar=("BASELINE", "MODEL"), help="the two compared"
    )
    parser.add_argument("--out-csv", required=True, help="per-run measures")
    parser.add_argument("--out-md", required=True)
    args = parser.parse_args(argv)
    per_run, verdicts = claim_table(args.histories, *args.models)
    write_csv_atomic(per_run, args.out_csv, index=False)
    lines = [
        f"# {args.title}",
        "",
        *[f"> {note}  " for note in args.note],
        "",
        f"Measures per run (from its history.csv; docs/methods.md §4.4): epochs until the "
        f"validation WCPA first reaches {LEARNT:g}; the mean absolute change of validation WCPA "
        f"from one epoch to the next and the number of drops by more than {DROP:g}; epochs "
        f"trained. Each part holds for an m when {args.models[1]}'s mean over seeds is lower than "
        f"{args.models[0]}'s, by more than the seeds' noise when both have several runs (else "
        "`within noise`); a model with fewer runs that never reach the level is the faster. A "
        "part is `not testable` when it cannot tell the models apart: as many runs of each never "
        "reach the level, or every run trained the same number of epochs (the budget). `claim`: "
        "fails if a part does not hold, holds if all three do, else within noise or holds where "
        "testable. Rows for the papers' WCPA and for the robust WCPA (distances with enough "
        "events, `dyck.wcpa_min_events`).",
        "",
    ]
    lines += markdown_lines(verdicts) if not verdicts.empty else ["No runs of both models yet."]
    lines += ["", "Per run:", "", *markdown_lines(per_run)] if not per_run.empty else []
    write_text_atomic(args.out_md, "\n".join(lines) + "\n")
    print(verdicts.to_string() if not verdicts.empty else "no runs of both models")


if __name__ == "__main__":
    main()
