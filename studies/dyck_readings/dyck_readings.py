"""Why a paper-scale Dyck run differs from second_order_lstm's Table 1: one run retrained under
other readings of its procedure (issue 12's suspects), each to the end, on the same data and seed.

Variants of ``training.second_order_lstm_dyck`` (docs/methods.md §7.1):

- ``A_default``: the config as shipped (ReduceLROnPlateau with PyTorch's relative threshold
  1e-4, early stopping after 6 epochs without a new best) — the pipeline's own run;
- ``B_increase``: ``lr_decay_on: increase`` and ``stop_on: increase`` (rises in a row);
- ``C_threshold0``: the plateau reading without the threshold (any new best counts);
- ``D_lr1e-3``: the shipped reading with Adam's default learning rate 1e-3 instead of 1e-4;
- ``E_increase_1000``: ``B_increase`` with a budget of 1,000 epochs instead of 300 (the paper
  states none): where does the reading that never stops at 300 epochs end?
- ``F_validate_hard``: the shipped reading, but the attention LSTM validates each epoch at the
  test setting (hard argmax, ``validation_temperature: test``) instead of the epoch's
  temperature: early stopping and the kept epoch then judge the model that will be tested.

Each variant is a ``rnnrepro.scripts.train`` run (checkpointed every epoch: rerunning the
command resumes it) and is then scored on validation and test (``evaluate_dyck``). The summary
CSV has, per variant: epochs, why it stopped, the best epoch, the LR at the end, validation and
test perplexity, WCPA and robust WCPA, and the generator's floor.

    python studies/dyck_readings/dyck_readings.py --data results/data/dyck_m4 \\
        --out-dir runs/readings \\
        [--model lstm] [--seed 1] [--variants A_default B_increase] \\
        [--pipeline-run results/runs/second_order_lstm/dyck_m4/lstm/seed1]

``--pipeline-run`` takes ``A_default`` from the pipeline's own run of the same model and seed
(its ``metrics.json`` and ``history.csv``) instead of training it again.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # studies/: dyck_runs
from dyck_runs import train_and_score  # noqa: E402

from rnnrepro import config as cfg  # noqa: E402
from rnnrepro.fileio import write_rows  # noqa: E402

VARIANTS = {
    "A_default": {},
    "B_increase": {"lr_decay_on": "increase", "stop_on": "increase"},
    "C_threshold0": {"lr_decay_threshold": 0.0},
    "D_lr1e-3": {"lr": 1.0e-3},
    "E_increase_1000": {"lr_decay_on": "increase", "stop_on": "increase", "max_epochs": 1000},
    "F_validate_hard": {"validation_temperature": "test"},
}


def run_settings(config: dict, dataset: str, model: str, variant: str) -> dict:
    """The pipeline's run settings of (second_order_lstm, dataset, model) at paper scale, with
    the variant's procedure settings."""
    run = cfg.run_config({**config, "scale": "paper"}, "second_order_lstm", dataset, model)
    run["training"].update(VARIANTS[variant])
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config.yaml")
    parser.add_argument("--data", required=True, help="a paper-scale Dyck dataset directory")
    parser.add_argument("--model", default="lstm")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument(
        "--pipeline-run", type=Path, help="the pipeline's run directory: its result is A_default"
    )
    args = parser.parse_args()
    config = yaml.safe_load(Path(args.config).read_text())
    data = Path(args.data)
    dataset = data.name
    args.out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for variant in args.variants:
        run = run_settings(config, dataset, args.model, variant)
        out = args.out_dir / variant
        if variant == "A_default" and args.pipeline_run:
            out = args.out_dir / f"{variant}_pipeline"
            for name, suffix in (("metrics.json", ".metrics.json"), ("history.csv", ".csv")):
                Path(f"{out}{suffix}").write_bytes((args.pipeline_run / name).read_bytes())
        identity = {"experiment": "second_order_lstm", "dataset": dataset, "model": args.model,
                    "seed": args.seed, "stage": "train"}  # fmt: skip
        m = train_and_score(
            run, identity, args.seed, data, str(out), config["dyck"]["wcpa_min_events"]
        )
        with open(f"{out}.csv", newline="") as f:
            final_lr = float(list(csv.DictReader(f))[-1]["lr"])
        floor = json.loads((data / "floor.json").read_text())
        rows.append(
            {
                "variant": variant,
                "settings": json.dumps(VARIANTS[variant]),
                "epochs": m["epochs"],
                "best_epoch": m["best_epoch"],
                "stopped_because": m["stopped_because"],
                "final_lr": final_lr,
                "val_ppl": round(m["val"]["ppl"], 4),
                "test_ppl": round(m["test"]["ppl"], 4),
                "test_floor": round(floor["test"], 4),
                "val_wcpa": m["val"]["wcpa"],
                "test_wcpa": m["test"]["wcpa"],
                "test_robust_wcpa": m["test"]["robust_wcpa"],
                "train_minutes": round(m["train_seconds"] / 60, 1),
            }
        )
        print(rows[-1], flush=True)
    summary = args.out_dir / f"summary_{dataset}_{args.model}_seed{args.seed}.csv"
    write_rows(summary, rows)
    print(f"wrote {summary}")


if __name__ == "__main__":
    main()
