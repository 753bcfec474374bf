"""Why multi_matrix's unfrozen 1-d Dyck-RNN (§6.2, "unable to achieve good performance") learns
for some seeds: the sign pattern of its push/pop gate at initialisation.

The gate is g = σ(w·e(x)) with a scalar w and a trainable scalar embedding e per token. The
stack works only if every opening bracket pushes (w·e > 0) and every closing one pops
(w·e < 0). Each seed's model is built exactly as ``rnnrepro.scripts.train`` builds it (seed,
then ``build_model``), its initial pattern is recorded, and it is then trained and scored with
the pipeline's paper-scale settings (``multi_matrix``/``dyck_rnn_1d``; ``dyck_runs``). The CSV
has, per seed: the initial w·e of each bracket, how many brackets it treats the wrong way, and
the epochs, stop reason and test WCPA (strict and robust) it reached.

    python studies/dyck_rnn_1d_seeds/dyck_rnn_1d_seeds.py --data results/data/dyck_m4 \\
        --out-dir runs/seeds_1d \\
        [--seeds 1 2 ... 24] [--summary studies/dyck_rnn_1d_seeds/dyck_rnn_1d_seeds_m4.csv]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # studies/: dyck_runs
from dyck_runs import train_and_score  # noqa: E402

from rnnrepro import config as cfg  # noqa: E402
from rnnrepro.data import dyck
from rnnrepro.fileio import write_rows  # noqa: E402
from rnnrepro.models import build_model
from rnnrepro.training import seed_everything

MODEL = "dyck_rnn_1d"


def initial_gate(run: dict, seed: int) -> dict[str, float]:
    """w·e(token) of each bracket in the model ``train`` builds for ``run`` at ``seed``."""
    vocab = dyck.vocabulary(run["dyck"]["k"])
    seed_everything(seed)
    model = build_model(run["architecture"], vocab, **run["hparams"])
    logits = model.proj(model.embedding.weight).squeeze(1).tolist()
    return {tok: logit for tok, logit in zip(vocab, logits, strict=True) if dyck.parse_bracket(tok)}


def wrong_side(gate: dict[str, float]) -> int:
    """Brackets the gate treats the wrong way: opening ones that pop, closing ones that push."""
    return sum((logit > 0) != dyck.parse_bracket(tok)[0] for tok, logit in gate.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config.yaml")
    parser.add_argument("--data", required=True, help="a paper-scale Dyck dataset directory")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(1, 25)))
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--summary", type=Path, help="default: <out-dir>/summary_<dataset>.csv")
    args = parser.parse_args()
    config = yaml.safe_load(Path(args.config).read_text())
    data = Path(args.data)
    dataset = data.name
    run = cfg.run_config({**config, "scale": "paper"}, "multi_matrix", dataset, MODEL)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for seed in args.seeds:
        gate = initial_gate(run, seed)
        identity = {"experiment": "multi_matrix", "dataset": dataset, "model": MODEL,
                    "seed": seed, "stage": "train"}  # fmt: skip
        out = str(args.out_dir / f"seed{seed}")
        m = train_and_score(run, identity, seed, data, out, config["dyck"]["wcpa_min_events"])
        rows.append(
            {
                "dataset": dataset,
                "seed": seed,
                **{f"initial_gate_{tok}": round(logit, 4) for tok, logit in gate.items()},
                "wrong_side_at_init": wrong_side(gate),
                "epochs": m["epochs"],
                "stopped_because": m["stopped_because"],
                "test_wcpa": m["test"]["wcpa"],
                "test_robust_wcpa": m["test"]["robust_wcpa"],
            }
        )
        print(rows[-1], flush=True)
    summary = args.summary or args.out_dir / f"summary_{dataset}.csv"
    write_rows(summary, rows)
    for wrong in sorted({row["wrong_side_at_init"] for row in rows}):
        group = [row for row in rows if row["wrong_side_at_init"] == wrong]
        learnt = sum(row["test_wcpa"] == 1.0 for row in group)
        print(
            f"{wrong} bracket(s) on the wrong side at init: {learnt} of {len(group)} seed(s) learnt"
        )
    print(f"wrote {summary}")


if __name__ == "__main__":
    main()
