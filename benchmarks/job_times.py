"""How long a pipeline's jobs took, from Snakemake's own logs (``.snakemake/log``).

A run that was stopped and resumed spreads over several logs; this pairs each job's start with its
``Finished jobid`` line within a log, counts a job that never finished there (killed, then resumed
from its checkpoint in a later log) up to that log's last timestamp, and sums per experiment and
rule. With ``--cores`` jobs in parallel the wall time of a track is at least its job time / cores.

    python benchmarks/job_times.py runs/cpu [--since 2026-11-27T09:00] [--out job_times.csv]
"""

from __future__ import annotations

import argparse
import re
from datetime import datetime
from pathlib import Path

import pandas as pd

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
RULE = re.compile(r"^(?:local)?rule (\w+):$")
JOBID = re.compile(r"^\s+jobid: (\d+)$")
WILDCARDS = re.compile(r"^\s+wildcards: (.*)$")
FINISHED = re.compile(r"^Finished jobid: (\d+)")


def _experiment(wildcards: str) -> str:
    found = re.search(r"(?:^|, )experiment=([^,]+)", wildcards)
    return found.group(1) if found else "(shared)"


def jobs_of_log(path: Path) -> list[dict]:
    """One row per job started in the log: rule, experiment, seconds, and whether it finished."""
    started: dict[str, dict] = {}
    rows: list[dict] = []
    stamp = last = None
    current: dict | None = None
    for line in path.read_text().splitlines():
        if m := STAMP.match(line):
            stamp = last = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
        elif m := RULE.match(line):
            current = {"rule": m.group(1), "start": stamp, "wildcards": ""}
        elif current is not None and (m := WILDCARDS.match(line)):
            current["wildcards"] = m.group(1)
        elif current is not None and (m := JOBID.match(line)):
            started[m.group(1)] = current
        elif m := FINISHED.match(line):
            job = started.pop(m.group(1), None)
            if job is not None:
                rows.append({**job, "end": stamp, "finished": True})
    rows += [{**job, "end": last, "finished": False} for job in started.values()]
    for row in rows:
        row["experiment"] = _experiment(row.pop("wildcards"))
        row["seconds"] = (row.pop("end") - row.pop("start")).total_seconds()
        row["log"] = path.name
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, help="the run directory given to --directory")
    parser.add_argument("--since", help="only logs started at or after this ISO time")
    parser.add_argument("--out", type=Path, help="write every job as a CSV row")
    args = parser.parse_args()
    logs = sorted((args.directory / ".snakemake" / "log").glob("*.snakemake.log"))
    if args.since:
        logs = [p for p in logs if p.name[:17] >= args.since.replace(":", "")[:17]]
    if not logs:
        raise SystemExit(f"no Snakemake logs in {args.directory}/.snakemake/log")
    jobs = pd.DataFrame([row for log in logs for row in jobs_of_log(log)])
    jobs = jobs[~jobs["rule"].isin(jobs["experiment"])]  # a paper's target rule runs nothing
    if args.out:
        jobs.to_csv(args.out, index=False)
    summary = jobs.groupby(["experiment", "rule"]).agg(
        jobs=("seconds", "size"),
        unfinished=("finished", lambda f: int((~f).sum())),
        minutes=("seconds", "sum"),
    )
    summary["minutes"] = (summary["minutes"] / 60).round(1)
    print(summary.to_string())
    print(
        (jobs.groupby("experiment")["seconds"].sum() / 60)
        .round(1)
        .rename("job minutes")
        .to_string()
    )


if __name__ == "__main__":
    main()
