"""Cost before launch: training jobs and device-hours of a scale, from a throughput table.

Model of one run's cost (kept free of torch imports):

- tokens per epoch: training sequences × (mean length + 1 for ``<end>``); the mean comes from
  the exact length distribution of the Dyck sampler for the scale's min/max length;
- computed tokens include the padding of each batch to its longest sequence (expected maximum
  of ``batch_size`` lengths); validation batches of ``VAL_BATCH_SIZE`` run forward only and
  count at ``VAL_COST`` of a training token;
- seconds per epoch = computed tokens / tokens_per_s of the architecture's benchmark row;
- text runs (PTB): seconds per epoch measured at paper size on real data by
  ``benchmarks/epoch_times.py`` (``benchmarks/results/epoch_times.csv``); a run without one
  takes the measured epoch of its experiment's model on the same dataset family with the same
  architecture and batch size and the nearest parameter count, scaled by the ratio of the
  counts (``scaled_epoch``: e.g. a study's variant of a main model); runs with neither are left
  out (``estimate`` says how many);
- Dyck runs at paper size: the epoch time of the finished paper-scale runs in that CSV when it
  has their (experiment, dataset, model), else the token model above;
- epochs: ``max_epochs`` of the run's training procedure (upper bound) and an expected figure:
  the run's own ``history.csv`` when it has finished, else the mean over finished runs of the
  same experiment, model and stage on the same dataset family, else ``max_epochs`` for a
  procedure that never stops early (AWD-LSTM/MoS: the best of all epochs is kept) or stops only
  on rises in a row (``stop_on: increase``: no run has, before its budget), else
  ``expected_fraction`` × ``max_epochs``;
- every training stage (fine-tuning too) is a job, costed with its own procedure;
- translation runs (``rnnrepro.cost.translation``): a measured epoch of the run in that CSV, or
  one of another translation model of its experiment scaled by their counted FLOPs, else their
  counted FLOPs ÷ a sustained FLOP rate (``FlopRate``: derived on the CPU from its measured
  language models, assumed on a GPU); no rate, no estimate (left out). Their hours include the
  jobs after training (test perplexities and beam search), which the other runs' do not.

Modules: ``dyck`` (the token model), ``measured`` (the measured tables), ``runs`` (a job's cost
and ``estimate``), ``translation`` (counted FLOPs), ``summary`` (per experiment, per catalogue
group, per paper: done and to do). Torch-free: the workflow prices
a scale with it before any job runs.
"""

from .dyck import (
    VAL_BATCH_SIZE,
    VAL_COST,
    expected_max_length,
    length_distribution,
    mean_length,
    padded_tokens,
)
from .measured import (
    CostError,
    Throughput,
    benchmark_size,
    epoch_key,
    read_epoch_times,
    read_throughput,
)
from .runs import (
    DEFAULT_EXPECTED_FRACTION,
    History,
    RunCost,
    estimate,
    model_key,
    never_stops_early,
    paper_sized_dyck,
    paper_sized_translation,
    read_history,
    run_cost,
    run_size,
    scaled_epoch,
    translation_run_cost,
)
from .summary import (
    PaperCost,
    Summary,
    TranslationSummary,
    group_shares,
    paper_costs,
    summarise,
    translation_lines,
    translation_summary,
)

__all__ = [
    "DEFAULT_EXPECTED_FRACTION",
    "VAL_BATCH_SIZE",
    "VAL_COST",
    "CostError",
    "History",
    "PaperCost",
    "RunCost",
    "Summary",
    "Throughput",
    "TranslationSummary",
    "benchmark_size",
    "epoch_key",
    "estimate",
    "expected_max_length",
    "group_shares",
    "length_distribution",
    "mean_length",
    "model_key",
    "never_stops_early",
    "padded_tokens",
    "paper_costs",
    "paper_sized_dyck",
    "paper_sized_translation",
    "read_epoch_times",
    "read_history",
    "read_throughput",
    "run_cost",
    "run_size",
    "scaled_epoch",
    "summarise",
    "translation_lines",
    "translation_run_cost",
    "translation_summary",
]
