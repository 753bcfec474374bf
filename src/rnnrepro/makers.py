"""How the generic report rules (``workflow/rules/report.smk``) make each declared output.

A ``Maker`` is one kind of table or figure: the script its job runs, the option under which
each per-run file is passed, which of its outputs are figures, the further inputs it reads and
the options it builds from the output's declaration and the config. A catalogue
(``rnnrepro.papers``) names its output's maker; a new kind of table is one ``Maker`` in
``MAKERS`` and its script, nothing else. The workflow's targets, each output's path and a job's
options come from here. No torch or pandas import: the workflow reads this to plan.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from rnnrepro import config as cfg
from rnnrepro import papers
from rnnrepro.data import names
from rnnrepro.papers import Output
from rnnrepro.reporting.notes import resolved, scale_notes, setting_notes

Files = Mapping[str, list[str]]


def quoted(paths: str | list[str]) -> str:
    """A path, or a list of them, quoted for a shell command."""
    return " ".join(map(shlex.quote, [paths] if isinstance(paths, str) else paths))


def no_inputs(output: Output, config: dict) -> dict[str, list[str]]:
    return {}


def run_notes(output: Output, config: dict) -> list[str]:
    """The lines under a title that say how the selected scale reduces the output's track."""
    return scale_notes(config, output.track, output.paper)


@dataclass(frozen=True)
class Maker:
    """One kind of output. ``script``: ``rnnrepro.scripts.<script>``; ``files``: per-run file ->
    the script's option for it (other files go to ``--inputs``); ``options``: the script's
    options from the output, the config and its input files (by option); ``figures``: which of
    its outputs (by ``kind``; ``True``: all) are figures (PNG under results/figures) rather than
    tables (CSV and Markdown under results/tables); ``inputs``: files it reads besides the runs'
    (by option); ``notes``: the lines under its title besides the output's own."""

    script: str
    options: Callable[[Output, dict, Files], list[str]]
    files: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    figures: bool = False
    inputs: Callable[[Output, dict], dict[str, list[str]]] = no_inputs
    notes: Callable[[Output, dict], list[str]] = run_notes


def title(output: Output) -> list[str]:
    return [f"--title {shlex.quote(output.title)}"]


def paper_tables(output: Output) -> list[str]:
    """The paper and its ``paper_numbers.csv`` table labels (none: every table of the paper)."""
    labels = [f"--table {quoted(list(output.labels))}"] if output.labels else []
    return [f"--paper {output.paper}", *labels]


def scale(config: dict) -> list[str]:
    return [f"--scale {config['scale']}"]


def tolerances(config: dict) -> list[str]:
    """config.yaml's ``reporting.tolerances``, in its order (the order a table states them)."""
    return [f"--tolerances {shlex.quote(json.dumps(config['reporting']['tolerances']))}"]


def run_models(output: Output, config: dict) -> list[str]:
    """The output's models in the order its runs are selected (its columns)."""
    return [f"--models {' '.join(dict.fromkeys(run.model for run in output.select(config)))}"]


def compare_options(output: Output, config: dict, files: Files) -> list[str]:
    options = [*paper_tables(output), *title(output), *tolerances(config)]
    if output.families is not None:
        datasets = [d for f in output.families for d in cfg.dataset_names(config, f)]
        options.append("--datasets " + " ".join(datasets))
    if output.track == "dyck":
        options.append(f"--wcpa-min-events {config['dyck']['wcpa_min_events']}")
    if output.corpus:
        options.append(f"--corpus {output.corpus} {quoted(files['corpus'])}")
    if output.bpc_in_nats:
        options.append("--bpc-in-nats")
    for setting, lines in output.setting_notes.items():
        text = json.dumps(dict(lines), sort_keys=True)
        options.append(f"--setting-note {setting} {shlex.quote(text)}")
    return options + scale(config)


def compare_inputs(output: Output, config: dict) -> dict[str, list[str]]:
    """The generator floors of a Dyck table, the n-gram baselines of a text table."""
    inputs = {}
    if output.track == "dyck":
        inputs["floors"] = [
            f"results/data/{d}/floor.json" for d in cfg.dataset_names(config, "dyck")
        ]
    runs = output.select(config)
    text = dict.fromkeys(r.dataset for r in runs if names.family(r.dataset) in cfg.TEXT_FAMILIES)
    if text:
        inputs["ngram"] = [f"results/ngram/{d}.csv" for d in text]
    return inputs


def figure_options(output: Output, config: dict, files: Files) -> list[str]:
    options = [f"{output.kind} --inputs {quoted(files['inputs'])}"]
    if output.track == "dyck":
        options.append(f"--min-events {config['dyck']['wcpa_min_events']}")
    if output.model_labels:
        options.append(f"--labels {shlex.quote(json.dumps(dict(output.model_labels)))}")
    return options


def syneval_options(output: Output, config: dict, files: Files) -> list[str]:
    return [
        *paper_tables(output),
        *title(output),
        *run_models(output, config),
        *tolerances(config),
        *scale(config),
    ]


def agreement_options(output: Output, config: dict, files: Files) -> list[str]:
    return [*paper_tables(output), *title(output), *tolerances(config), *scale(config)]


def declared_models(output: Output, config: dict) -> list[str]:
    """The models in the order the output's ``Runs`` names them (e.g. the baseline first),
    else in the order its runs are selected."""
    models = getattr(output.runs, "models", ())
    return [f"--models {' '.join(models)}"] if models else run_models(output, config)


def config_options(output: Output, config: dict, files: Files) -> list[str]:
    options = [*paper_tables(output), *title(output)]
    options.append(f"--settings {shlex.quote(config_settings(output, 'paper', config))}")
    if config["scale"] != "paper":
        scaled = config_settings(output, config["scale"], config)
        options.append(f"--scaled {shlex.quote(scaled)}")
    return options + scale(config)


def configured_notes(output: Output, config: dict) -> list[str]:
    """The ``setting_notes`` lines of the settings ``output``'s runs resolve to at the selected
    scale (a configuration table reads no run's files)."""
    if not output.setting_notes:
        return []
    runs = output.select(config)
    settings = [cfg.run_config(config, r.experiment, r.dataset, r.model) for r in runs]
    return [
        line
        for setting, lines in output.setting_notes.items()
        for line in setting_notes(
            [resolved(s, setting) for s in settings], setting, lines, config["scale"]
        )
    ]


def config_settings(output: Output, scale: str, config: dict) -> str:
    """JSON of the resolved settings of a configuration table's runs at ``scale``, keyed
    "dataset/model/stage" (stage train: training + hparams, and a translation run's
    ``translation``; dynamic_eval)."""
    scaled = {**config, "scale": scale}
    settings = {}
    for run in output.select(scaled):
        chosen = cfg.run_config(scaled, run.experiment, run.dataset, run.model)
        key = f"{run.dataset}/{run.model}"
        settings[f"{key}/train"] = {
            "training": chosen["training"],
            "hparams": chosen["hparams"],
            **({"translation": chosen["translation"]} if "translation" in chosen else {}),
        }
        dynamic = cfg.dynamic_eval_settings(scaled, run.experiment, run.dataset, run.model)
        if dynamic:
            settings[f"{key}/dynamic_eval"] = {"dynamic_eval": dynamic}
    return json.dumps(settings, sort_keys=True)


MAKERS = {
    # a translation run's translation.json is its metrics.json with the test sets' BLEU
    "compare": Maker(
        "make_table",
        compare_options,
        {"metrics.json": "metrics", "translation.json": "metrics", "history.csv": "histories"},
        inputs=compare_inputs,
    ),
    "wcpa_claim": Maker(
        "check_wcpa_claim",
        lambda o, c, f: [*title(o), *declared_models(o, c)],
        {"history.csv": "histories"},
    ),
    "syneval": Maker("make_syneval_table", syneval_options, {"syneval.csv": "results"}),
    "config": Maker("make_config_table", config_options, notes=configured_notes),
    # Linzen agreement: the accuracy table, and the examples of each pattern of mistakes
    "agreement": Maker("make_agreement_table", agreement_options, {"agreement.json": "summaries"}),
    "agreement_examples": Maker(
        "make_agreement_examples",
        lambda o, c, f: [*paper_tables(o), *title(o), *run_models(o, c)],
        {"agreement.json": "summaries", "agreement_items.csv": "scored_items"},
    ),
    "figure": Maker("make_figure", figure_options, figures=True),
}


def options(output: Output, config: dict, files: Files) -> str:
    """The command-line options of ``output``'s job: its input ``files`` by option (but the
    per-run files a figure reads as ``--inputs`` and a corpus's files, which its maker places),
    its maker's options, and the lines under its title."""
    maker = MAKERS[output.maker]
    options = [
        f"--{key.replace('_', '-')} {quoted(paths)}"
        for key, paths in files.items()
        if key not in ("inputs", "corpus")
    ]
    options += maker.options(output, config, files)
    notes = [*output.notes, *maker.notes(output, config)]
    options += [f"--note {shlex.quote(note)}" for note in notes]
    return " ".join(options)


def is_figure(output: Output) -> bool:
    return MAKERS[output.maker].figures


def path(output: Output) -> str:
    """The file a target names: the Markdown table or the PNG figure."""
    return (
        f"results/figures/{output.name}.png"
        if is_figure(output)
        else f"results/tables/{output.name}.md"
    )


def outputs() -> dict[str, Output]:
    """Every declared output by name (``papers.outputs``), each naming a maker of ``MAKERS``."""
    found = papers.outputs()
    for output in found.values():
        if output.maker not in MAKERS:
            raise ValueError(
                f"{output.paper}: output {output.name!r} has unknown maker {output.maker!r}"
            )
    return found


def targets(config: dict, group: str | None = None) -> list[str]:
    """The files of every output (of one paper key or group) that the config makes: all but an
    ``optional`` output without runs."""
    chosen = []
    for output in outputs().values():
        if group is not None and group != output.paper and group not in output.groups:
            continue
        if output.optional and not output.select(config):
            continue
        chosen.append(path(output))
    return chosen
