"""Write a configuration table (major_minor Tables IV, V): the paper's hyper-parameters next to the
settings config.yaml resolves to, as CSV and Markdown.

``--settings`` is JSON mapping "dataset/model/stage" to a run's resolved ``training``,
``hparams`` and ``dynamic_eval`` (and a translation run's ``translation``) at paper scale;
``--scaled`` the same at the selected scale. ``--note`` (repeatable) puts a line under the
title, e.g. which corpus the configured runs read.
"""

from __future__ import annotations

import argparse
import json

from rnnrepro.fileio import write_csv_atomic, write_text_atomic
from rnnrepro.reporting.configs import config_table
from rnnrepro.reporting.markdown import markdown_lines
from rnnrepro.reporting.paper_numbers import load_paper_numbers


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paper", required=True)
    parser.add_argument("--table", required=True, help="e.g. 'Table IV'")
    parser.add_argument("--settings", required=True, help="JSON, paper scale")
    parser.add_argument("--scaled", help="JSON, the selected scale (omit at paper scale)")
    parser.add_argument("--scale", default="paper")
    parser.add_argument("--title", required=True)
    parser.add_argument("--note", action="append", default=[], help="a line under the title")
    parser.add_argument("--out-csv", required=True)
    parser.add_argument("--out-md", required=True)
    args = parser.parse_args(argv)

    reference = load_paper_numbers(args.paper, args.table)
    if reference.empty:
        parser.error(f"no reference rows for paper {args.paper!r}, table {args.table!r}")
    scaled = json.loads(args.scaled) if args.scaled else None
    table = config_table(reference, json.loads(args.settings), args.scale, scaled)
    write_csv_atomic(table, args.out_csv, index=False)
    counts = table["verdict"].value_counts()
    lines = [f"# {args.title}", ""]
    if args.note:
        lines += [f"> {note}  " for note in args.note] + [""]
    lines.append(
        "Each row: the paper's printed value (`paper`, source in paper_numbers.csv), the value "
        "config.yaml gives at paper scale (`config`, from the key `config_key` of the run's "
        "resolved training, hparams, translation or dynamic_eval settings, or derived from one "
        "as `config_key` writes it) and whether they are equal."
    )
    if scaled is not None:
        lines.append(
            f"The `at {args.scale} scale` column shows the value the selected scale runs with "
            "where it differs (docs/methods.md, scales)."
        )
    lines += ["", "Verdicts: " + ", ".join(f"{k} {v}" for k, v in counts.items()), ""]
    lines += markdown_lines(table)
    write_text_atomic(args.out_md, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
