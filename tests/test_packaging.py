"""What a plain ``pip install -e .`` brings must cover every advertised feature."""

from __future__ import annotations

import re
import tomllib

import yaml
from pipeline_utils import ROOT


def requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0].lower() for r in requirements}


def test_report_dependency_is_in_the_base_install():
    # `snakemake --report` needs pygments; the README advertises the report after `pip install -e .`
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "pygments" in requirement_names(project["dependencies"])


def test_conda_env_lists_every_base_dependency():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    env = yaml.safe_load((ROOT / "envs/rnnrepro.yaml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert requirement_names(project["dependencies"]) <= requirement_names(pip)
