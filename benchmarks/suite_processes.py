"""Where the test command's CPU time goes, process by process.

Runs pytest (by default the README's first test command) with a ``sitecustomize`` module on
``PYTHONPATH`` that records, when each Python process exits, its command, CPU and wall seconds,
the test that started it (``PYTEST_CURRENT_TEST``, which subprocesses inherit) and whether it
imported torch and ``torch._dynamo``; then prints the CPU seconds per kind of process and per
test file. A process killed by a signal (the resume tests' victims) records nothing.

    python benchmarks/suite_processes.py [--out DIR] [-- PYTEST ARGUMENTS]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
TEST_COMMAND = ["-q", "-n", "auto", "-m", "not timing"]
RECORDER = """
import atexit, json, os, sys, time

_START = time.time()


def _record():
    times = os.times()
    row = {
        "argv": list(getattr(sys, "orig_argv", sys.argv)),
        "cpu": times.user + times.system,
        "wall": time.time() - _START,
        "test": os.environ.get("PYTEST_CURRENT_TEST", ""),
        "torch": "torch" in sys.modules,
        "dynamo": "torch._dynamo" in sys.modules,
    }
    path = os.path.join(os.environ["SUITE_PROCESSES_DIR"], f"{os.getpid()}-{_START}.json")
    with open(path, "w") as f:
        json.dump(row, f)


if os.environ.get("SUITE_PROCESSES_DIR"):
    atexit.register(_record)
"""


def kind(argv: list[str]) -> str:
    """What a process was: the module of ``-m``, the script's name, or pytest's worker."""
    args = argv[1:]
    if len(args) >= 2 and args[0] == "-m":
        return args[1].removeprefix("rnnrepro.scripts.")
    if args and args[0] in ("-c", "-u"):
        return "pytest worker" if "exec(eval(" in " ".join(args) else "python -c"
    return Path(args[0]).name if args else "python"


def summary(records: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series]:
    rows = pd.DataFrame([json.loads(p.read_text()) for p in records.glob("*.json")])
    rows["kind"] = rows["argv"].map(kind)
    rows["file"] = rows["test"].str.split("::").str[0].replace("", "(none)")
    by_kind = rows.groupby("kind").agg(
        processes=("cpu", "size"), cpu_s=("cpu", "sum"), torch=("torch", "sum")
    )
    by_kind["cpu_s_each"] = by_kind["cpu_s"] / by_kind["processes"]
    by_file = rows.groupby("file").agg(processes=("cpu", "size"), cpu_s=("cpu", "sum"))
    totals = pd.Series(
        {
            "processes": len(rows),
            "cpu_s": rows["cpu"].sum(),
            "importing torch": int(rows["torch"].sum()),
            "importing torch._dynamo": int(rows["dynamo"].sum()),
            "snakemake starts": int((rows["kind"] == "snakemake").sum()),
        }
    )
    return (
        by_kind.sort_values("cpu_s", ascending=False),
        by_file.sort_values("cpu_s", ascending=False),
        totals,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="keep the per-process records here")
    parser.add_argument("pytest_args", nargs="*", help="after --; default the README's")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="suite-processes-"))
    records = out / "processes"
    records.mkdir(parents=True, exist_ok=True)
    hook = Path(tempfile.mkdtemp(prefix="suite-processes-hook-"))
    (hook / "sitecustomize.py").write_text(RECORDER)
    paths = [str(hook), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "SUITE_PROCESSES_DIR": str(records)}
    start = time.monotonic()
    command = [sys.executable, "-m", "pytest", *(args.pytest_args or TEST_COMMAND)]
    status = subprocess.run(command, cwd=ROOT, env=env).returncode
    wall = time.monotonic() - start
    by_kind, by_file, totals = summary(records)
    by_kind.to_csv(out / "by_kind.csv")
    by_file.to_csv(out / "by_file.csv")
    print(f"\n{' '.join(command)}: exit {status}, {wall:.0f} s wall; records in {out}")
    print(totals.round(1).to_string())
    print("\nper kind of process:\n" + by_kind.round(2).head(20).to_string())
    print("\nper test file:\n" + by_file.round(1).head(20).to_string())
    return status


if __name__ == "__main__":
    sys.exit(main())
