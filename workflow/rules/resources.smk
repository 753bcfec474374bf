# Cluster execution (profiles/slurm, README "Cluster execution"): which jobs stay on the
# submitting host and what a training job asks for. Local runs ignore both.


# Seconds-long jobs on small files (data, floors, tables, figures) run where Snakemake runs
# instead of queueing as SLURM jobs (the report rules say so themselves, in report.smk); only
# the per-run jobs (train, evaluate, analyse) are submitted.
localrules:
    dyck_data,
    dyck_floor,
    download,
    ptb_text,
    ptb_lines,
    ptb_lines_fold,
    stream_text,


# A training job's device and time limit come from the run (rnnrepro.resources, config key
# `cluster`): a GPU unless its data family is CPU-only, minutes from its measured epoch time.
# Memory (MB) is per scale; a scale not listed gets the paper value. Attempt n (a resubmission
# by --retries after a time limit, preemption or running out of memory) asks for n times the
# time and memory. Training resumes from its checkpoint, so a retry only has to fit the
# remaining epochs. profiles/slurm may override any of them.
TRAIN_MEM_MB = {"paper": 8000, "cpu": 4000, "smoke": 2000}
BENCHMARK_RESULTS = Path(workflow.basedir) / "benchmarks" / "results"


def train_gpu(wildcards):
    return run_resources(config, run_of(wildcards), BENCHMARK_RESULTS).gpu


def train_runtime(wildcards, attempt):
    return run_resources(config, run_of(wildcards), BENCHMARK_RESULTS).runtime * attempt


def train_mem_mb(wildcards, attempt):
    return TRAIN_MEM_MB.get(config["scale"], TRAIN_MEM_MB["paper"]) * attempt
