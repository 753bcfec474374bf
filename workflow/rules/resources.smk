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


# A training job's time limit (minutes) and memory (MB) on its first attempt, per scale; a scale
# not listed gets the paper values. Attempt n (a resubmission by --retries after a time limit,
# preemption or running out of memory) asks for n times as much. Training resumes from its
# checkpoint, so a retry only has to fit the remaining epochs. profiles/slurm may override both.
TRAIN_RESOURCES = {
    "paper": {"runtime": 12 * 60, "mem_mb": 8000},
    "cpu": {"runtime": 3 * 60, "mem_mb": 4000},
    "smoke": {"runtime": 10, "mem_mb": 2000},
}


def _train_resource(name, attempt):
    base = TRAIN_RESOURCES.get(config["scale"], TRAIN_RESOURCES["paper"])
    return base[name] * attempt


def train_runtime(wildcards, attempt):
    return _train_resource("runtime", attempt)


def train_mem_mb(wildcards, attempt):
    return _train_resource("mem_mb", attempt)
