"""Helpers to run the pipeline from tests in a scratch directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def base_config() -> dict:
    return yaml.safe_load((ROOT / "config.yaml").read_text())


def run_snakemake(workdir: Path, config: dict, *args: str, check: bool = True):
    """Run the pipeline with ``config`` (written to workdir) in ``workdir``."""
    config_file = workdir / "config.yaml"
    config_file.write_text(yaml.safe_dump(config))
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(config_file),
        "--cores",
        "2",
        *args,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc
