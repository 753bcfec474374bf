"""Draw one seed-000 figure from run outputs.

Kinds: ldpa (ldpa.csv files, Fig. 2), val_wcpa (history.csv files, Fig. 3),
pabs (principal-angle CSVs, Fig. 4), heatmap (attention-heatmap CSVs, Fig. 6).
Inputs must live in .../{experiment}/{dataset}/{model}/seed{seed}/.

Example:
    python -m rnnrepro.scripts.make_figure ldpa --inputs results/runs/seed000/*/*/seed*/ldpa.csv \\
        --out fig2_ldpa.png
"""

from __future__ import annotations

import argparse

from rnnrepro.reporting.figures import FIGURES


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=sorted(FIGURES))
    parser.add_argument("--inputs", nargs="+", required=True)
    parser.add_argument("--out", required=True, help="PNG path")
    args = parser.parse_args(argv)
    FIGURES[args.kind](args.inputs, args.out)


if __name__ == "__main__":
    main()
