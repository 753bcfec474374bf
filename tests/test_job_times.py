"""benchmarks/job_times.py: job durations read back from Snakemake's logs."""

from __future__ import annotations

from pipeline_utils import load_script

LOG = """\
[Fri Nov 27 13:21:50 2026]
localrule train:
    output: results/runs/memory/ptb_stream/lstm_650/seed1/trial1/model.pt
    jobid: 2
    wildcards: experiment=memory, dataset=ptb_stream, model=lstm_650, seed=1, trialdir=/trial1
[Fri Nov 27 13:21:50 2026]
localrule ngram_baselines:
    jobid: 5
    wildcards: dataset=ptb_stream
[Fri Nov 27 13:21:52 2026]
Finished jobid: 5 (Rule: ngram_baselines)
[Fri Nov 27 13:22:10 2026]
localrule evaluate_text:
    jobid: 7
    wildcards: experiment=memory, dataset=ptb_stream, model=lstm_650, seed=1
[Fri Nov 27 13:23:50 2026]
Finished jobid: 2 (Rule: train)
[Fri Nov 27 13:24:00 2026]
localrule memory:
    jobid: 0
[Fri Nov 27 13:24:00 2026]
Finished jobid: 0 (Rule: memory)
"""


def test_jobs_are_paired_and_an_unfinished_one_runs_to_the_logs_end(tmp_path):
    log = tmp_path / "2026-11-27T132150.000000.snakemake.log"
    log.write_text(LOG)
    jobs = {row["rule"]: row for row in load_script("benchmarks/job_times.py").jobs_of_log(log)}
    assert (jobs["train"]["seconds"], jobs["train"]["finished"]) == (120, True)
    assert jobs["train"]["experiment"] == "memory"
    assert (jobs["ngram_baselines"]["seconds"], jobs["ngram_baselines"]["experiment"]) == (
        2,
        "(shared)",
    )
    # Started, never finished in this log (killed): counted to the log's last timestamp.
    assert (jobs["evaluate_text"]["seconds"], jobs["evaluate_text"]["finished"]) == (110, False)
