# Reproduction pipeline for recurrent LM papers with input-dependent transitions.
# Targets: all (default), each paper key, and the dyck and wikitext2 tracks (README.md);
# each paper's tables and figures are declared in src/rnnrepro/papers/<key>.py.

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


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/resources.smk"


rule all:
    default_target: True
    input:
        all_targets(),


# One target per paper key, and per group its catalogue names (the dyck and wikitext2 tracks).
for group in papers.groups():

    rule:
        name:
            group
        input:
            makers.targets(config, group),


include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/translation.smk"
include: "workflow/rules/report.smk"
