"""Pick a random search's result: the trial with the lowest validation loss.

Writes ``search.json``: the chosen trial's ``metrics.json`` (so tables read it as any run's) plus
``search``: the number of trials, the chosen one, and every trial's sampled settings and
validation loss. A diverged trial is never chosen; a tie goes to the lower trial number.

    python -m rnnrepro.scripts.select_trial --metrics .../trial*/metrics.json --out search.json
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from rnnrepro.fileio import atomic_open


def select(metrics: list[dict]) -> dict:
    """The search.json record of the trials' metrics (ValueError if none finished finitely)."""
    trials = sorted(metrics, key=lambda m: m["trial"])
    usable = [
        m for m in trials if not m.get("diverged") and math.isfinite(m["val"].get("loss", math.nan))
    ]
    if not usable:
        raise ValueError("no trial ended with a finite validation loss: nothing to select")
    best = min(usable, key=lambda m: (m["val"]["loss"], m["trial"]))
    summary = [
        {
            "trial": m["trial"],
            "settings": {k: v for k, v in m["run"]["trial"].items() if k != "index"},
            "val_loss": m["val"].get("loss"),
            "val_ppl": m["val"].get("ppl"),
            "diverged": bool(m.get("diverged")),
        }
        for m in trials
    ]
    search = {"trials": len(trials), "chosen": best["trial"], "every_trial": summary}
    return {**best, "search": search}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--metrics", nargs="+", required=True, help="each trial's metrics.json")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    metrics = [json.loads(Path(path).read_text()) for path in args.metrics]
    record = select(metrics)
    with atomic_open(args.out, "w") as f:
        f.write(json.dumps(record, indent=2) + "\n")
    chosen = record["search"]["chosen"]
    print(f"trial {chosen} of {record['search']['trials']}: val loss {record['val']['loss']:.4f}")


if __name__ == "__main__":
    main()
