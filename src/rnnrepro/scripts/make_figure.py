"""Draw one figure of a kind (``rnnrepro.reporting.figures.FIGURES``) from run outputs.

Kinds: ldpa (ldpa.csv files), val_wcpa (history.csv files), pabs (principal-angle CSVs),
heatmap (attention-heatmap CSVs), ratio (metrics.json of an |m|/|h| sweep), examples and
position_loss (metrics.json with examples.json or position_loss.csv of the candidate runs: the
best model's best run is drawn), stack_actions (one run's stack_states.csv and
stack_max_prob.csv), venn (agreement.json and agreement_items.csv of three models),
layer_sizes and size_band (metrics.json of layer-size sweeps and their
standard models, named by --labels), major_ratio (metrics.json of a Major:Minor ratio study),
feature_masking (feature_mask.csv files). Which runs, labels and notes a paper's figure takes
is declared in its catalogue (``rnnrepro.papers``). Every input carries its run identity in its
own columns or fields; none is parsed from paths (a run's files are paired by their directory).

Example:
    python -m rnnrepro.scripts.make_figure ldpa \\
        --inputs results/runs/second_order_lstm/*/*/seed*/ldpa.csv --out fig2_ldpa.png \\
        --labels '{"lstm": "Baseline LSTM"}'
"""

from __future__ import annotations

import argparse
import json

from rnnrepro.reporting.figures import FIGURES, Style


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
        help="the robust WCPA's threshold (config dyck.wcpa_min_events), for the kinds that "
        "draw it (ldpa, val_wcpa)",
    )
    parser.add_argument("--labels", default="{}", help="JSON: model -> legend label")
    args = parser.parse_args(argv)
    style = Style(notes=args.note, labels=json.loads(args.labels), min_events=args.min_events)
    FIGURES[args.kind](args.inputs, args.out, style)


if __name__ == "__main__":
    main()
