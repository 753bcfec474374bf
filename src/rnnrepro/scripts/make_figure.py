"""Draw one seed-000 or seed-003 figure from run outputs.

Seed 000 kinds: ldpa (ldpa.csv files, Fig. 2), val_wcpa (history.csv files, Fig. 3),
pabs (principal-angle CSVs, Fig. 4), heatmap (attention-heatmap CSVs, Fig. 6).
Seed 003 kinds: ratio (metrics.json of the |m|/|h| sweep runs, Fig. 1), examples (metrics.json
and examples.json of the candidate runs, Fig. 2), position_loss (metrics.json and
position_loss.csv of the candidate runs, Fig. 3); the last two draw the best model's best run
(lowest mean test BPC over its folds × seeds, then its lowest-BPC run).
Every input carries its run identity (experiment, dataset, model, seed, stage) in its own
columns or fields; none is parsed from paths (a run's files are paired by their directory).

Example:
    python -m rnnrepro.scripts.make_figure ldpa \\
        --inputs results/runs/second_order_lstm/*/*/seed*/ldpa.csv --out fig2_ldpa.png
    python -m rnnrepro.scripts.make_figure position_loss \\
        --inputs results/runs/general_second_order/*unigram*/so_*/seed*/*.{json,csv} \\
        --out fig3_position_loss.png
"""

from __future__ import annotations

import argparse

from rnnrepro.reporting.figures import FIGURES

EVENT_KINDS = ("ldpa", "val_wcpa")  # figures that take --min-events


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=sorted(FIGURES))
    parser.add_argument("--inputs", nargs="+", required=True)
    parser.add_argument("--out", required=True, help="PNG path")
    parser.add_argument(
        "--note",
        action="append",
        default=[],
        help="footer text (repeatable), e.g. the scale and its reductions",
    )
    parser.add_argument(
        "--min-events",
        type=int,
        help="ldpa, val_wcpa: the robust WCPA's threshold (config dyck.wcpa_min_events)",
    )
    args = parser.parse_args(argv)
    options = {}
    if args.kind in EVENT_KINDS:
        options["min_events"] = args.min_events
    elif args.min_events is not None:
        parser.error(f"--min-events applies to {', '.join(EVENT_KINDS)}, not {args.kind}")
    FIGURES[args.kind](args.inputs, args.out, notes=args.note, **options)


if __name__ == "__main__":
    main()
