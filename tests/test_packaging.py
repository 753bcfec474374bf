"""What a plain ``pip install -e .`` brings must cover every advertised feature."""

from __future__ import annotations

import json
import re
import tomllib

import yaml
from jsonschema import Draft7Validator
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


def test_the_cluster_profile_works_after_the_base_install():
    """A cluster user's first contact: the README's setup command (`pip install -e .`) must
    bring the executor plugin of profiles/slurm, or the README's SLURM command stops in
    Snakemake's parser (`invalid choice: 'slurm'`)."""
    profile = yaml.safe_load((ROOT / "profiles/slurm/config.yaml").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    plugin = f"snakemake-executor-plugin-{profile['executor']}"
    assert plugin in requirement_names(project["dependencies"])
    readme = (ROOT / "README.md").read_text()
    cluster = readme[readme.index("## Cluster execution") :]
    assert "pip install -e ." in cluster.split("```")[0]  # the section says what installs it
    assert "[dev]" not in cluster.split("```")[0]


def test_the_citation_file_is_valid_and_cites_the_five_papers():
    """GitHub's "cite this repository" reads CITATION.cff: it must pass the Citation File
    Format's schema (version 1.2.0, ``tests/data/cff-1.2.0.schema.json``, the schema
    citation-file-format.github.io publishes), and list every paper the pipeline reproduces."""
    schema = json.loads((ROOT / "tests/data/cff-1.2.0.schema.json").read_text())
    validator = Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER)
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0"
    errors = [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(citation)]
    assert not errors
    assert list(validator.iter_errors({**citation, "licence": "MIT"}))  # a misspelt key fails
    keys = {reference["notes"].split("key ")[-1].split()[0].strip(".;,")
            for reference in citation["references"]}  # fmt: skip
    assert keys == {"second_order_lstm", "multi_matrix", "memory", "general_second_order",
                    "major_minor"}  # fmt: skip
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
