"""The notes under every table and figure: how the selected scale departs from the papers'
settings (config.yaml ``scales``), in plain language (no torch import)."""

from __future__ import annotations

from rnnrepro.config import (
    FAMILIES,
    model_families,
    per_dataset,
    scale_settings,
    text_settings,
    training_caps,
)


def scale_notes(config: dict, track: str = "text", experiment: str | None = None) -> list[str]:
    """Plain-language reductions of the selected scale against the papers' settings (the
    ``paper`` scale), for the notes under every table and figure; ``track`` is ``"dyck"`` or
    ``"text"`` and selects which data reductions are listed; ``experiment`` adds its own
    (``experiments.<name>.scales``)."""
    scale, settings = config["scale"], scale_settings(config)
    if scale == "paper":
        return ["Scale paper: the papers' settings."]
    paper = config["scales"]["paper"]
    notes, folds = [], None
    caps = training_caps(config, experiment) if experiment else settings
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
    notes += procedure_notes(config, track, experiment) + thinned_notes(config, experiment)
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


def procedures(config: dict, track: str, experiment: str | None) -> set[str]:
    """The training procedures the models of ``experiment`` (every experiment if None) train
    with on the datasets of ``track`` (``dyck``: the Dyck family; ``text``: the others)."""
    names = set()
    for exp_name, exp in config["experiments"].items():
        if experiment not in (None, exp_name):
            continue
        for model in exp["models"].values():
            for fam in model_families(exp, model):
                if fam not in FAMILIES or (fam == "dyck") != (track == "dyck"):
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


def thinned_notes(config: dict, experiment: str | None) -> list[str]:
    """One note per experiment whose models the selected scale runs on fewer of their datasets
    (``scale_datasets``: a study's thinner grid), naming how many run where and how many not."""
    notes = []
    for exp_name, exp in config["experiments"].items():
        if experiment not in (None, exp_name):
            continue
        kept: dict[str, int] = {}
        for model in exp["models"].values():
            families = model_families(exp, model)
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
