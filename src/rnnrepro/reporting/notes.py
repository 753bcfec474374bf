"""The notes under every table and figure: how the selected scale departs from the papers'
settings (config.yaml ``scales``), and what the runs read (a setting's value per run), in plain
language (no torch import)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rnnrepro.config import (
    FAMILIES,
    TRANSLATION_FAMILIES,
    model_families,
    per_dataset,
    scale_settings,
    text_settings,
    training_caps,
    translation_settings,
)

# a translation setting -> how a note names it (``translation`` in config.yaml)
TRANSLATION_TERMS = {
    "max_steps": "training steps",
    "vocab_size": "joint BPE vocabulary",
    "max_length": "longest training sentence (subwords)",
    "halve_from": "learning-rate halving from this share of the steps",
    "halvings": "learning-rate halvings",
    "beam_width": "beam width",
    "max_decode_ratio": "longest translation (times the source's subwords)",
}


def family_track(family: str) -> str:
    """The track of a dataset family: ``dyck``, ``translation`` or ``text``."""
    if family == "dyck":
        return "dyck"
    return "translation" if family in TRANSLATION_FAMILIES else "text"


def scale_notes(config: dict, track: str = "text", experiment: str | None = None) -> list[str]:
    """Plain-language reductions of the selected scale against the papers' settings (the
    ``paper`` scale), for the notes under every table and figure; ``track`` is ``"dyck"``,
    ``"text"`` or ``"translation"`` and selects which data reductions are listed; ``experiment``
    adds its own (``experiments.<name>.scales``, or its track's models' own)."""
    scale, settings = config["scale"], scale_settings(config)
    if scale == "paper":
        return ["Scale paper: the papers' settings."]
    paper = config["scales"]["paper"]
    notes, folds = [], None
    caps = track_caps(config, track, experiment) if experiment else settings
    if "max_epochs" in caps:
        notes.append(f"at most {caps['max_epochs']} epochs per run;")
    if "max_batches" in caps:
        notes.append(
            f"at most {caps['max_batches']} batches per epoch (the first windows of each column) "
            "and as many windows of dynamic evaluation's gradient statistics;"
        )
    if "max_eval_tokens" in caps:
        notes.append(
            f"validation, test and dynamic evaluation on the first {caps['max_eval_tokens']:,} "
            "tokens of each stream;"
        )
    if track == "dyck":
        dyck, full = settings["dyck"], paper["dyck"]
        if dyck["m"] != full["m"]:
            dropped = [m for m in full["m"] if m not in dyck["m"]]
            notes.append(
                f"m in {dyck['m']} only (the paper also has {dropped}: those rows are not run);"
            )
        sizes, full_sizes = dyck["sizes"], full["sizes"]
        if sizes != full_sizes:
            notes.append(
                "train/val/test sequences "
                + "/".join(f"{sizes[s]:,}" for s in ("train", "val", "test"))
                + " (paper "
                + "/".join(f"{full_sizes[s]:,}" for s in ("train", "val", "test"))
                + ");"
            )
        lengths = (dyck["min_length"], dyck["max_length"])
        if lengths != (full["min_length"], full["max_length"]):
            notes.append(
                f"lengths {lengths[0]}-{lengths[1]} (paper {full['min_length']}-"
                f"{full['max_length']}; shorter sequences hold shorter dependencies);"
            )
    elif track == "translation":
        notes += translation_notes(config)
    else:
        text = text_settings(config)
        if text["train_lines"]:
            notes.append(f"only the first {text['train_lines']} training sentences/documents;")
        if text["eval_lines"]:
            notes.append(f"only the first {text['eval_lines']} validation and test ones;")
        if len(text["folds"]) < config["text"]["folds"]:
            folds = f"folds {text['folds']} of {config['text']['folds']};"
            notes.append(folds)
        if text["width"] != 1.0:
            notes.append(f"hidden sizes x{text['width']:g} (fewer parameters than the paper);")
        if text["syneval_pairs"]:
            notes.append(
                f"syntactic evaluation on the first {text['syneval_pairs']} pairs of each template;"
            )
        trials = settings.get("search_trials", 1)
        if trials != paper.get("search_trials", 1):
            notes.append(
                f"{trials} random-search trial(s) per searched model (paper "
                f"{paper.get('search_trials', 1)});"
            )
        if text["agreement_items"]:
            notes.append(
                f"number agreement on the first {text['agreement_items']} items of each file;"
            )
    notes += procedure_notes(config, track, experiment) + thinned_notes(config, experiment, track)
    if settings["seeds"] != paper["seeds"]:
        notes.append(f"seeds {settings['seeds']} (experiments may set their own).")
    if folds is not None and notes == [folds]:  # the papers' runs of fewer folds
        return [
            f"Scale {scale}: the papers' settings (config.yaml, scales.{scale}) on {notes[0][:-1]} "
            "only; the paper's numbers are means over every fold."
        ]
    if not notes:
        return [f"Scale {scale}: the papers' settings on this track."]
    return [
        f"Scale {scale}: reduced from the papers' settings (config.yaml, scales.{scale}), so "
        "these results check the pipeline and are no reproduction of the paper:",
        *notes,
    ]


def track_caps(config: dict, track_name: str, experiment: str) -> dict:
    """The selected scale's caps on ``experiment``'s runs of a track: the experiment's, or on
    the translation track its translation models' own (``training_caps``)."""
    if track_name != "translation":
        return training_caps(config, experiment)
    entry = config["experiments"].get(experiment, {})
    caps: dict = {}
    for name, model in entry.get("models", {}).items():
        if any(family_track(fam) == track_name for fam in model_families(entry, model)):
            caps.update(training_caps(config, experiment, name))
    return caps or training_caps(config, experiment)


def translation_notes(config: dict) -> list[str]:
    """The selected scale's translation settings that differ from the paper scale's: the
    generated stand-in read instead of the corpus, the model width and ``TRANSLATION_TERMS``."""
    scaled = translation_settings(config)
    paper = translation_settings({**config, "scale": "paper"})
    notes = []
    stand_in = scaled["stand_in"]
    if stand_in and stand_in != paper["stand_in"]:
        notes.append(
            f"generated sentence pairs instead of the corpus ({stand_in['train']:,} / "
            f"{stand_in['val']:,} / {stand_in['test']:,} train / validation / test pairs of "
            f"{stand_in['words']:,} source words; rnnrepro.data.parallel);"
        )
    width = scaled.get("width", 1.0)
    if width != paper.get("width", 1.0):
        notes.append(f"layer sizes and embedding x{width:g} (fewer parameters than the paper);")
    for key, term in TRANSLATION_TERMS.items():
        if scaled[key] != paper[key]:
            notes.append(f"{term} {scaled[key]:,} (paper {paper[key]:,});")
    return notes


def procedures(config: dict, track_name: str, experiment: str | None) -> set[str]:
    """The training procedures the models of ``experiment`` (every experiment if None) train
    with on the datasets of a track (``dyck``: the Dyck family; ``translation``: the parallel
    corpora; ``text``: the others)."""
    names = set()
    for exp_name, exp in config["experiments"].items():
        if experiment not in (None, exp_name):
            continue
        for model in exp["models"].values():
            for fam in model_families(exp, model):
                if fam not in FAMILIES or family_track(fam) != track_name:
                    continue
                names |= {per_dataset(model, key, fam) for key in ("training", "finetune")}
    return names - {None}


def procedure_notes(config: dict, track: str, experiment: str | None) -> list[str]:
    """One note per training procedure whose settings the selected scale replaces
    (``scales.<scale>.training``) and that the track's runs use: the paper's value and this
    scale's."""
    notes = []
    used = procedures(config, track, experiment)
    for name, replaced in scale_settings(config).get("training", {}).items():
        if name in used:
            full = config["training"][name]
            changes = ", ".join(f"{k} {full.get(k, 'unset')} → {v}" for k, v in replaced.items())
            notes.append(f"training procedure {name}: {changes};")
    return notes


def thinned_notes(config: dict, experiment: str | None, track_name: str | None = None) -> list[str]:
    """One note per experiment whose models (of a track's datasets, where given) the selected
    scale runs on fewer of their datasets (``scale_datasets``: a study's thinner grid), naming
    how many run where and how many not."""
    notes = []
    for exp_name, exp in config["experiments"].items():
        if experiment not in (None, exp_name):
            continue
        kept: dict[str, int] = {}
        for model in exp["models"].values():
            families = model_families(exp, model)
            if track_name and all(family_track(f) != track_name for f in families):
                continue
            scaled = model_families(exp, model, config["scale"])
            if scaled != families:
                where = f"on {', '.join(scaled)} only" if scaled else "not run"
                kept[where] = kept.get(where, 0) + 1
        if kept:
            counts = "; ".join(f"{n} {where}" for where, n in kept.items())
            notes.append(
                f"{exp_name}: models of its studies on fewer datasets (config scale_datasets): "
                f"{counts};"
            )
    return notes


def resolved(settings: Mapping, path: str) -> object:
    """The value at a dotted ``path`` (``translation.corpus``) of a run's resolved settings;
    None where it is unset."""
    value: object = settings
    for key in path.split("."):
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return value


def setting_notes(
    values: Iterable[object], setting: str, lines: Mapping[str, str], scale: str | None = None
) -> list[str]:
    """A line per value of a run ``setting`` (``values``: one per run, in order): how many runs
    have it (runs configured at ``scale``, where given), then its line in ``lines`` (a
    predicate: "2 runs read ..."), else the setting and the value themselves."""
    counts: dict[str, int] = {}
    for value in values:
        key = "unset" if value is None else str(value)
        counts[key] = counts.get(key, 0) + 1
    where = f" at {scale} scale" if scale else ""
    return [
        f"{n} run{'s' * (n != 1)}{where} "
        + lines.get(value, f"{'have' if n != 1 else 'has'} `{setting}` {value}.")
        for value, n in counts.items()
    ]
