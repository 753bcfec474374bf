# Reproduction pipeline for recurrent LM papers with input-dependent transitions.
# Targets: all (default), dyck, wikitext2, multi_matrix, general_second_order, memory,
# major_minor. See README.md.

import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

# The DAG is built from src/ directly, so that a dry run works before installing.
sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from rnnrepro import config as cfg  # noqa: E402  (light: no torch import)

# config.yaml of the working directory, else the repository's (README: --directory).
try:
    CONFIG_FILE = cfg.config_file(Path.cwd(), workflow.basedir)
except cfg.ConfigError as error:
    raise WorkflowError(str(error)) from None


configfile: CONFIG_FILE


include: "workflow/rules/common.smk"
include: "workflow/rules/resources.smk"


rule all:
    default_target: True
    input:
        all_targets(),


rule dyck:
    input:
        dyck_targets(),


rule wikitext2:
    input:
        wikitext2_targets(),


rule multi_matrix:
    input:
        multi_matrix_targets(),


rule general_second_order:
    input:
        general_second_order_targets(),


rule memory:
    input:
        memory_targets(),


rule major_minor:
    input:
        major_minor_targets(),


include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/report.smk"
