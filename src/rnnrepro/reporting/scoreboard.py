"""The scoreboard: every paper number with the best evidence the project holds for it.

Evidence comes from runs: the directory's own (at its scale) and the paper-scale archives under
``benchmarks/results/`` (any folder with a ``manifest.csv``: ``rnnrepro.archive``),
read alike from their ``metrics.json`` files, each of which names its run and scale. A row takes
the directory's runs when they are at paper scale, else an archive's, else the directory's
reduced-scale runs, labelled with their scale (no evidence, as the tables say). A number that a
``compare`` table does not check (agreement, syntactic evaluation, settings, figures) points to
the output that does. A difference links to the notes whose ``explains`` front matter names its
paper and dataset (and model): the measured accounts of it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rnnrepro import makers, papers
from rnnrepro.archive import PAPER_SETTINGS, current_runs, finished_runs, read_manifest
from rnnrepro.papers import Output
from rnnrepro.reporting import wcpa_claim
from rnnrepro.reporting.accounts import account_of
from rnnrepro.reporting.baselines import with_nats_readings
from rnnrepro.reporting.metrics import METRIC_KIND, SETTING_KINDS, collect_metrics
from rnnrepro.reporting.orderings import check_orderings, relative_spreads
from rnnrepro.reporting.tables import (
    PAPER_SCALE,
    build_table,
    family_of,
    matched_runs,
    read_floors,
)

COLUMNS = [
    "paper", "table", "row", "dataset", "model", "stage", "metric", "comparison", "paper_value",
    "reproduced", "mean", "std", "delta", "allowed", "runs", "scale", "evidence", "devices",
    "verdict", "account", "setting",
]  # fmt: skip
OWN = "this directory"


@dataclass(frozen=True)
class Evidence:
    """Runs of one origin (``OWN`` or an archive's folder name) and the generator floors of
    their Dyck splits (dataset -> split -> perplexity)."""

    origin: str
    runs: pd.DataFrame
    floors: Mapping[str, Mapping[str, float]] = field(default_factory=dict)


def read_archive(folder: Path, config: dict | None = None) -> Evidence:
    """An archive's finished runs (every ``metrics.json`` below it, its ``path``; each names its
    run), with the machine its manifest row names (``host``) and, given the ``config``, whether
    it ran with today's settings (``current``: ``current_runs``)."""
    finished = finished_runs(folder)
    runs = collect_metrics(finished)
    floors = read_floors(sorted(folder.glob("data/*/floor.json")))
    if runs.empty:
        return Evidence(folder.name, runs, floors)
    runs = runs.assign(path=[str(p) for p in finished])
    identity = ["experiment", "dataset", "model", "seed"]
    manifest = pd.DataFrame(read_manifest(folder)).astype({"seed": int})
    hosts = manifest[[*identity, "host"]].drop_duplicates(identity, keep="last")
    runs = runs.merge(hosts, on=identity, how="left")
    if config is not None:
        current = {(r.experiment, r.dataset, r.model, r.seed) for r in current_runs(folder, config)}
        keys = zip(*(runs[c] for c in identity), strict=True)
        runs = runs.assign(current=[key in current for key in keys])
    return Evidence(folder.name, runs, floors)


def compare_outputs() -> list[Output]:
    """The declared outputs whose maker compares run metrics with paper numbers."""
    return [o for o in papers.outputs().values() if o.maker == "compare"]


def reference_rows(reference: pd.DataFrame, outputs: list[Output]) -> pd.DataFrame:
    """The paper numbers with, for each, the file of the output that checks it (``output``,
    e.g. ``results/tables/<name>.md``; a ``compare`` output's rows carry ``compared`` True),
    and the nats reading of each BPC row a ``compare`` output reads both ways
    (``bpc_in_nats``)."""
    checked = {}
    for output in papers.outputs().values():
        for label in output.labels:
            checked.setdefault((output.paper, label), output)
    nats = {(o.paper, label) for o in outputs if o.bpc_in_nats for label in o.labels}
    frames = []
    for (paper, label), rows in reference.groupby(["paper", "table"], sort=False):
        output = checked.get((paper, label))
        rows = with_nats_readings(rows) if (paper, label) in nats else rows
        frames.append(
            rows.assign(
                output=makers.path(output) if output else "",
                compared=bool(output and output.maker == "compare"),
            )
        )
    return pd.concat(frames, ignore_index=True)


def best_evidence(
    ref: pd.Series, own: pd.Series, archived: pd.Series, own_scale: str
) -> tuple[pd.Series, str]:
    """The row of the directory's runs when they are at the papers' settings or no archive has
    runs for it, else the archive's; and where it comes from (``OWN`` or "archive")."""
    if own["n_seeds"] and own_scale in PAPER_SETTINGS:
        return own, OWN
    if archived["n_seeds"]:
        return archived, "archive"
    return own, OWN


def build_scoreboard(
    reference: pd.DataFrame,
    own: Evidence,
    own_scale: str,
    archives: list[Evidence],
    tolerances: Mapping[str, float],
    accounts: Mapping[tuple[str, ...], list[str]],
) -> pd.DataFrame:
    """One row per paper number (``reference_rows``): the best evidence, its scale, origin,
    devices and verdict, and the notes accounting for a difference."""
    compared = reference[reference["compared"]].reset_index(drop=True)
    archived = archived_runs(archives, compared)
    own_runs = with_metrics([own.runs.assign(origin=OWN)] if not own.runs.empty else [], compared)
    own_table = build_table(compared, own_runs, own.floors, tolerances, own_scale)
    archive_table = build_table(compared, archived, archive_floors(archives), tolerances,
                                PAPER_SCALE)  # fmt: skip
    rows = []
    for i, ref in compared.iterrows():
        chosen, origin = best_evidence(ref, own_table.loc[i], archive_table.loc[i], own_scale)
        runs = own_runs if origin == OWN else archived
        matched = matched_runs(runs, ref) if chosen["n_seeds"] else pd.DataFrame()
        if not matched.empty:
            matched = matched[matched[ref["metric"]].notna()]
        scales = sorted(set(matched["scale"]) - {""}) if not matched.empty else []
        # a measured account is of a difference at the papers' settings
        differs = "differs" in chosen["verdict"] and bool(set(scales) & set(PAPER_SETTINGS))
        rows.append(
            {
                **row_identity(ref),
                "reproduced": chosen["reproduced"] if chosen["n_seeds"] else "",
                "mean": chosen["mean"],
                "std": chosen["std"],
                "delta": chosen["delta"],
                "allowed": chosen["allowed"],
                "runs": int(chosen["n_seeds"]),
                "scale": "/".join(scales) or ("" if not chosen["n_seeds"] else own_scale),
                "evidence": evidence_label(matched, origin) if chosen["n_seeds"] else "",
                "devices": devices_of(matched),
                "verdict": chosen["verdict"],
                "account": " ".join(account_of(accounts, ref)) if differs else "",
                "setting": METRIC_KIND[ref["metric"]] in SETTING_KINDS,
            }
        )
    for _, ref in reference[~reference["compared"]].iterrows():
        where = f"checked in {ref['output']}" if ref["output"] else "not checked by any output"
        empty = dict.fromkeys(["reproduced", "scale", "evidence", "devices", "account"], "")
        rows.append({**row_identity(ref), **empty, "runs": 0, "verdict": where, "setting": False})
    order = {key: i for i, key in enumerate(papers.KEYS)}
    board = pd.DataFrame(rows, columns=COLUMNS)
    return board.sort_values("paper", key=lambda s: s.map(order), kind="stable").reset_index(
        drop=True
    )


def archived_runs(archives: list[Evidence], reference: pd.DataFrame) -> pd.DataFrame:
    """The archives' runs in one frame (``origin``: the archive), those of earlier settings
    left out where today's exist (``current_first``)."""
    return current_first(all_archived(archives, reference))


def all_archived(archives: list[Evidence], reference: pd.DataFrame) -> pd.DataFrame:
    """Every archive's runs in one frame (``origin``: the archive), earlier settings included."""
    return with_metrics([e.runs.assign(origin=e.origin) for e in archives if not e.runs.empty],
                        reference)  # fmt: skip


def archive_floors(archives: list[Evidence]) -> dict[str, Mapping[str, float]]:
    """The generator floors of every archive's Dyck splits (dataset -> split -> perplexity)."""
    return {dataset: f for e in archives for dataset, f in e.floors.items()}


def current_first(runs: pd.DataFrame) -> pd.DataFrame:
    """The archived runs, less those trained with earlier settings of a model that has runs with
    today's (``current``): a row is never the mean of two recipes."""
    return runs[~superseded(runs)].reset_index(drop=True)


def superseded(runs: pd.DataFrame) -> pd.Series:
    """Which archived runs trained with earlier settings of a model that has runs with today's
    (``current``)."""
    if runs.empty or "current" not in runs:
        return pd.Series(False, index=runs.index)
    current = runs["current"].fillna(True).astype(bool)
    keys = ["experiment", "dataset", "model"]
    has_current = current.groupby([runs[k] for k in keys]).transform("any")
    return ~current & has_current


def seed_spreads(
    board: pd.DataFrame,
    archives: list[Evidence],
    reference: pd.DataFrame,
    tolerances: Mapping[str, float],
) -> dict[str, float]:
    """Metric kind -> the seeds' relative spread that a one-run margin is read against
    (``relative_spreads``), over the board's rows at the papers' settings and the archived runs
    that it leaves out as of earlier settings (``superseded``), a row's runs of one recipe
    each: seeds' spread measured under an earlier recipe is still a measurement of it."""
    compared = reference[reference["compared"]].reset_index(drop=True)
    runs = all_archived(archives, compared)
    earlier = runs[superseded(runs)].reset_index(drop=True)
    table = build_table(compared, earlier, archive_floors(archives), tolerances, PAPER_SCALE)
    at_settings = board[board["scale"].isin(PAPER_SETTINGS)].rename(columns={"runs": "n_seeds"})
    columns = ["metric", "n_seeds", "std", "mean"]
    return relative_spreads(pd.concat([at_settings[columns], table[columns]], ignore_index=True))


def with_metrics(frames: list[pd.DataFrame], reference: pd.DataFrame) -> pd.DataFrame:
    """The runs of ``frames`` in one frame with a column (NaN where absent) for every metric of
    ``reference`` (a run of one kind has none of another kind's metrics)."""
    runs = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    missing = [m for m in dict.fromkeys(reference["metric"]) if m not in runs]
    return runs.reindex(columns=[*runs.columns, *missing]) if not runs.empty else runs


def row_identity(ref: pd.Series) -> dict:
    return {
        "paper": ref["paper"],
        "table": ref["table"],
        "row": ref["row"],
        "dataset": ref["dataset"],
        "model": ref["model"],
        "stage": ref.get("stage") or "train",
        "metric": ref["metric"],
        "comparison": ref["comparison"],
        "paper_value": ref["value"],
    }


def devices_of(matched: pd.DataFrame) -> str:
    """Where the runs trained: their devices, and the machine an archive's manifest names."""
    if matched.empty:
        return ""
    devices = sorted(set("+".join(matched["devices"]).split("+")) - {""})
    hosts = sorted(set(matched["host"].dropna())) if "host" in matched else []
    where = "/".join(devices) or "device not recorded"
    return f"{where} ({', '.join(hosts)})" if hosts else where


def evidence_label(matched: pd.DataFrame, origin: str) -> str:
    """Where a row's runs are: ``this directory`` or ``archive <folder>`` (several joined),
    saying when an archive's runs trained with other settings than the shipped config's."""
    if origin == OWN:
        return OWN
    label = ", ".join(f"archive {name}" for name in sorted(set(matched["origin"])))
    if "current" in matched and not matched["current"].fillna(True).all():
        label += " (trained with earlier settings, not the shipped config's)"
    return label


def check_claims(
    board: pd.DataFrame, outputs: list[Output], spreads: Mapping[str, float]
) -> pd.DataFrame:
    """Every ordering a ``compare`` output declares, checked on the board's means at the papers'
    settings (rows of a reduced scale count as missing) against the seeds' ``spreads``
    (``seed_spreads``): ``paper``, ``output`` and ``check_orderings``' columns."""
    frames = []
    for output in outputs:
        if not output.orderings:
            continue
        rows = board[(board["paper"] == output.paper) & board["table"].isin(output.labels)]
        if output.families is not None:
            rows = rows[[family_of(d) in output.families for d in rows["dataset"]]]
        settings = rows["scale"].isin(PAPER_SETTINGS)
        table = rows.assign(
            paper=rows["paper_value"],
            mean=rows["mean"].where(settings),
            n_seeds=rows["runs"].where(settings, 0),
        )
        scales = set(rows.loc[settings, "scale"]) or {PAPER_SCALE}
        checked = check_orderings(output.orderings, table, scales, spreads)
        if not checked.empty:
            mixed = [mixes_recipes(o, table) for o in output.orderings if o.name in
                     set(checked["ordering"])]  # fmt: skip
            checked = checked.assign(
                verdict=checked["verdict"].where(
                    ~pd.Series(mixed, index=checked.index), "mixed recipes"
                )  # fmt: skip
            )
            frames.append(checked.assign(paper=output.paper, output=output.name))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def check_output_claims(sources: list[pd.DataFrame], config: dict) -> pd.DataFrame:
    """The claims that an output of their own checks (``Claim.checked_in``), where that output's
    maker has a check on runs here (``OUTPUT_CHECKS``), checked on runs at the papers' settings:
    one row per dataset the output reads (in ``config``), in ``check_claims``' columns.
    ``sources``: frames of runs with their metrics.json ``path``, ``origin`` and (archives)
    ``current``, the best evidence first; a dataset reads the first that holds both sides."""
    declared = papers.outputs()
    frames = []
    for paper in papers.KEYS:
        for claim in papers.claims(paper):
            output = declared.get(claim.checked_in or "")
            if output is None or output.maker not in OUTPUT_CHECKS:
                continue
            datasets = sorted({run.dataset for run in output.runs.select(config)})
            rows = OUTPUT_CHECKS[output.maker](output, claim.source, sources, datasets)
            frames.append(pd.DataFrame(rows).assign(paper=paper, output=output.name))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def wcpa_claim_rows(
    output: Output, source: str, sources: list[pd.DataFrame], datasets: list[str]
) -> list[dict]:
    """second_order_lstm's Fig. 3 claim (``rnnrepro.reporting.wcpa_claim``) per dataset on the
    validation robust WCPA (the papers' WCPA where a history lacks it), from the histories
    beside the runs' metrics.json; ``mixed recipes`` when one model's runs trained with
    today's settings and the other's with earlier ones."""
    baseline, model = output.runs.models
    rows = []
    for dataset in datasets:
        runs = pd.DataFrame()
        for frame in sources:
            if frame.empty:
                continue
            mine = frame[(frame["experiment"] == output.runs.experiment)
                         & (frame["dataset"] == dataset) & frame["model"].isin([baseline, model])
                         & frame["scale"].isin(PAPER_SETTINGS)]  # fmt: skip
            if set(mine["model"]) == {baseline, model}:
                runs = mine
                break
        row = {
            "ordering": f"{model} learns WCPA faster and more steadily than {baseline}, in "
            f"fewer epochs ({dataset})",
            "check": f"epochs to WCPA {wcpa_claim.LEARNT:g}, mean abs. change per epoch, epochs "
            f"trained: {model} < {baseline} (validation)",
            "paper margin": math.nan,
            "reproduced margin": "",
            "runs per model": 0,
            "evidence": "",
            "verdict": "missing",
            "source": source,
        }
        rows.append(row)
        if runs.empty:
            continue
        current = runs["current"] if "current" in runs else pd.Series(True, index=runs.index)
        current = current.fillna(True).astype(bool).groupby(runs["model"]).all()
        counts = runs["model"].value_counts()
        row["runs per model"] = int(counts.min())
        origins = ", ".join(sorted(set(runs["origin"])))
        if current.nunique() > 1:
            row |= {"verdict": "mixed recipes", "evidence": origins}
            continue
        histories = [Path(p).with_name("history.csv") for p in runs["path"]]
        _, verdicts = wcpa_claim.claim_table(histories, baseline, model)
        for metric in ("robust WCPA", "WCPA"):
            chosen = verdicts[verdicts["metric"] == metric] if not verdicts.empty else verdicts
            if not chosen.empty:
                break
        if chosen.empty:
            continue
        parts = chosen.iloc[0]
        shown = [c for c in chosen.columns if c.startswith(("epochs to", "mean abs.", "epochs tr"))]
        runs_said = "one run per model" if counts.min() == 1 else f"{counts.min()} runs per model"
        row |= {
            "reproduced margin": "; ".join(f"{c}: {parts[c]}" for c in shown)
            + "; " + ", ".join(f"{p} {parts[p]}" for p in wcpa_claim.PARTS),
            "evidence": f"{runs_said} ({origins}"
            + ("" if current.all() else "; trained with earlier settings") + f"); {metric}",
            "verdict": parts["claim"],
        }  # fmt: skip
    return rows


# the checks on runs of the claims an output of their own checks, by that output's maker
OUTPUT_CHECKS = {"wcpa_claim": wcpa_claim_rows}


def mixes_recipes(ordering, table: pd.DataFrame) -> bool:
    """Whether an ordering compares rows whose runs trained with today's settings with rows whose
    runs trained with earlier ones (an archive's runs of an earlier recipe): its margin would
    measure the recipes as much as the models."""
    rows = table[table["metric"] == ordering.metric]
    if ordering.dataset is not None:
        rows = rows[rows["dataset"] == ordering.dataset]
    rows = rows[rows["model"].isin(ordering.models) & (rows["n_seeds"] > 0)]
    earlier = rows["evidence"].str.contains("earlier settings")
    return bool(earlier.any() and not earlier.all())


def summary(board: pd.DataFrame, claims: pd.DataFrame, hours: Mapping[str, float]) -> pd.DataFrame:
    """One line per paper: its results checked at the papers' settings (``PAPER_SETTINGS``:
    match, differ with a measured account, differ unexplained, information only), those not yet
    run there with the device-hours of their runs (``hours``: paper -> hours), the settings
    checked apart (``SETTING_KINDS``: parameter counts, sized to the paper's, so matched by
    construction), the numbers other outputs check, and its claims that hold / fail / sit
    within the seeds' noise at the papers' settings."""
    out = []
    for paper in papers.KEYS:
        rows = board[board["paper"] == paper]
        compared = rows[~rows["verdict"].str.startswith(("checked in", "not checked"))]
        settings = compared[compared["setting"].astype(bool)]
        results = compared[~compared["setting"].astype(bool)]
        checked = results[results["scale"].isin(PAPER_SETTINGS)]
        compared_rows = checked[~checked["verdict"].str.startswith(("info", "missing"))]
        differ = compared_rows["verdict"].str.contains("differs")
        match = compared_rows["verdict"].str.contains("match")
        settings = settings[settings["scale"].isin(PAPER_SETTINGS)]
        mine = claims[claims["paper"] == paper] if not claims.empty else claims
        verdicts = mine["verdict"] if not mine.empty else pd.Series(dtype=str)
        decided = verdicts.str.endswith(("holds", "fails", "within noise"))
        out.append(
            {
                "paper": paper,
                "numbers": len(rows),
                "results": len(results),
                "at paper settings": len(checked),
                "match": int(match.sum()),
                "differ, explained": int((differ & (compared_rows["account"] != "")).sum()),
                "differ, unexplained": int((differ & (compared_rows["account"] == "")).sum()),
                "info only": len(checked) - len(compared_rows),
                "not yet at paper settings": len(results) - len(checked),
                "device-hours to run them": hours.get(paper, math.nan),
                "settings checked": len(settings),
                "settings match": int(settings["verdict"].str.contains("match").sum()),
                "checked in other tables": len(rows) - len(compared),
                "claims hold": int(verdicts.str.endswith("holds").sum()),
                "claims fail": int(verdicts.str.endswith("fails").sum()),
                "claims within noise": int(verdicts.str.endswith("within noise").sum()),
                "claims not yet checked": int((~decided).sum()),
            }
        )
    return pd.DataFrame(out)
