"""What the generic report rules pass each output's script: the command-line options built
from the output's declaration, its input files and the config (no torch import)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping

from rnnrepro import config as cfg
from rnnrepro.papers.base import Output
from rnnrepro.reporting.notes import resolved, scale_notes, setting_notes


def quoted(paths: str | list[str]) -> str:
    """A path, or a list of them, quoted for a shell command."""
    return " ".join(map(shlex.quote, [paths] if isinstance(paths, str) else paths))


def options(output: Output, config: dict, files: Mapping[str, list[str]]) -> str:
    """The options of ``output``'s script: its input ``files`` (by option), the output's
    declaration (paper, table labels, title, dataset families, labels) and the config's
    tolerances and scale notes."""
    tolerance = config["reporting"]
    options = [
        f"--{key.replace('_', '-')} {quoted(paths)}"
        for key, paths in files.items()
        if key not in ("inputs", "corpus")
    ]
    if output.maker == "figure":
        options.append(f"{output.kind} --inputs {quoted(files['inputs'])}")
        if output.track == "dyck":
            options.append(f"--min-events {config['dyck']['wcpa_min_events']}")
        if output.model_labels:
            options.append(f"--labels {shlex.quote(json.dumps(dict(output.model_labels)))}")
    if output.maker in ("compare", "config"):
        options.append(f"--paper {output.paper}")
        if output.labels:  # else every table of the paper
            options.append(f"--table {quoted(list(output.labels))}")
    if output.maker not in ("figure", "agreement"):
        options.append(f"--title {shlex.quote(output.title)}")
    if output.maker == "compare":
        if output.families is not None:
            options.append(
                "--datasets "
                + " ".join(d for f in output.families for d in cfg.dataset_names(config, f))
            )
        options += [
            f"--{kind}-tolerance {tolerance[f'{kind}_tolerance']}"
            for kind in ("ppl", "wcpa", "bpc", "ce", "bleu")
        ]
        if output.track == "dyck":
            options.append(f"--wcpa-min-events {config['dyck']['wcpa_min_events']}")
        if output.corpus:
            options.append(f"--corpus {output.corpus} {quoted(files['corpus'])}")
        if output.bpc_in_nats:
            options.append("--bpc-in-nats")
        for setting, lines in output.setting_notes.items():
            text = json.dumps(dict(lines), sort_keys=True)
            options.append(f"--setting-note {setting} {shlex.quote(text)}")
    if output.maker == "syneval":
        models = dict.fromkeys(run.model for run in output.select(config))
        options.append(f"--models {' '.join(models)}")
        options.append(f"--tolerance {tolerance['accuracy_tolerance']}")
    if output.maker == "agreement":
        models = dict.fromkeys(run.model for run in output.select(config))
        options.append(f"--models {' '.join(models)}")
        options.append(f"--accuracy-tolerance {tolerance['accuracy_tolerance']}")
        options.append(f"--ppl-tolerance {tolerance['ppl_tolerance']}")
    if output.maker == "config":
        options.append(f"--settings {shlex.quote(config_settings(output, 'paper', config))}")
        if config["scale"] != "paper":
            scaled = config_settings(output, config["scale"], config)
            options.append(f"--scaled {shlex.quote(scaled)}")
    if output.maker not in ("wcpa_claim", "figure"):
        options.append(f"--scale {config['scale']}")
    if output.maker != "config":
        notes = [*output.notes, *scale_notes(config, output.track, output.paper)]
    else:  # what the configured runs read at the selected scale
        notes = [*output.notes, *configured_notes(output, config)]
    options += [f"--note {shlex.quote(note)}" for note in notes]
    return " ".join(options)


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
