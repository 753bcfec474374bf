"""Make the comparison tables of an archive of finished runs, with no retraining.

    python -m rnnrepro.scripts.archive_tables benchmarks/results/dyck_paper

An archive is a folder with a ``manifest.csv`` and a ``metrics.json`` (and ``history.csv``)
per finished run, as ``src/rnnrepro/scripts/archive.py save`` writes it. For every comparison table
a paper's catalogue declares (``rnnrepro.papers``), the runs of the archive that the table
reads at their scale (``paper`` or ``fold1``) are compared with the paper, on the datasets the
archive holds, into ``<archive>/tables/<output>.{md,csv}``: the Dyck generator floors the
archive keeps (``data/<dataset>/floor.json``), the n-gram baselines of ``--ngram`` (the full
corpora's, ``benchmarks/results/ngram_paper``) and the lines of the archive's ``notes.txt``
(what the track ran and why) under each title.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

import yaml

from rnnrepro import makers, papers
from rnnrepro.archive import ArchiveError, finished_runs
from rnnrepro.config_check import check_config
from rnnrepro.reporting.metrics import collect_metrics
from rnnrepro.scripts import make_table

REPO = Path(__file__).resolve().parents[3]


def archive_scale(runs) -> str:
    """The one scale of an archive's runs (an archive holds runs at the papers' settings)."""
    scales = set(runs["scale"]) - {""}
    if len(scales) != 1 or not scales <= {"paper", "fold1"}:
        raise SystemExit(f"an archive holds runs of one scale, paper or fold1; these: {scales}")
    return scales.pop()


def table_argv(
    output: papers.Output, config: dict, archive: Path, runs, ngram: Path, notes: list[str]
) -> list[str] | None:
    """``make_table``'s arguments for ``output`` on the archive's ``runs`` (None when the
    archive holds none of the runs it reads)."""
    wanted = {(r.experiment, r.dataset, r.model) for r in output.select(config)}
    mine = runs[[key in wanted for key in zip(runs["experiment"], runs["dataset"], runs["model"],
                                                strict=True)]]  # fmt: skip
    if mine.empty:
        return None
    datasets = sorted(set(mine["family"]))
    options = makers.compare_options(output, config, {"corpus": []})
    # the archive's datasets only; the corpus was checked when the runs trained, not here
    kept = [o for o in options if not o.startswith(("--datasets", "--corpus"))]
    argv = shlex.split(" ".join(kept))
    argv += ["--datasets", *datasets]
    argv += ["--metrics", *mine["path"]]
    histories = [str(Path(p).with_name("history.csv")) for p in mine["path"]]
    argv += ["--histories", *[h for h in histories if Path(h).exists()]]
    argv += ["--floors", *map(str, sorted(archive.glob("data/*/floor.json")))]
    text = [ngram / f"{d}.csv" for d in sorted(set(mine["dataset"]))]
    argv += ["--ngram", *[str(p) for p in text if p.exists()]]
    declared = [*output.notes, *makers.MAKERS[output.maker].notes(output, config)]
    for note in [*declared, *notes, f"From the archive {archive.name}: {len(mine)} run(s), "
                 "with no retraining (manifest.csv gives each run's commit, machine and "
                 "training code)."]:  # fmt: skip
        argv += ["--note", note]
    out = archive / "tables" / output.name
    return [*argv, "--out-csv", f"{out}.csv", "--out-md", f"{out}.md"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("archive", type=Path, help="a folder with a manifest.csv")
    parser.add_argument("--config", type=Path, default=REPO / "config.yaml")
    parser.add_argument(
        "--ngram",
        type=Path,
        default=REPO / "benchmarks/results/ngram_paper",
        help="folder of the full corpora's n-gram baselines (<dataset>.csv)",
    )
    args = parser.parse_args(argv)  # fmt: skip
    if not (args.archive / "manifest.csv").exists():
        parser.error(f"{args.archive}: no manifest.csv (not an archive of finished runs)")
    try:
        runs = collect_metrics(finished_runs(args.archive))
    except ArchiveError as error:
        parser.error(str(error))
    if runs.empty:
        parser.error(f"{args.archive}: no finished run (metrics.json)")
    config = yaml.safe_load(args.config.read_text()) | {"scale": archive_scale(runs)}
    check_config(config)
    notes_file = args.archive / "notes.txt"
    notes = notes_file.read_text().split("\n\n") if notes_file.exists() else []
    notes = [" ".join(note.split()) for note in notes if note.strip()]
    made = 0
    for output in papers.outputs().values():
        if output.maker != "compare":
            continue
        table = table_argv(output, config, args.archive, runs, args.ngram, notes)
        if table is not None:
            make_table.main(table)
            made += 1
            print(f"{output.name}: {args.archive / 'tables' / output.name}.md")
    if not made:
        parser.error(f"{args.archive}: none of its runs is read by a comparison table")


if __name__ == "__main__":
    main()
