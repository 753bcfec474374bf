"""Configuration resolution shared by the Snakefile and the scripts (kept free of torch imports).

The config file is validated against ``workflow/schemas/config.schema.yaml`` first;
``rnnrepro.config_check.check_config`` then verifies what a JSON schema cannot (cross
references), raising ``ConfigError`` naming the key. This module imports neither.

Dataset families and names: ``rnnrepro.data.names``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from pathlib import Path

from rnnrepro import budget
from rnnrepro.data import names
from rnnrepro.data.names import dyck_m, family
from rnnrepro.evaluation import IDENTITY, OPTIONAL_IDENTITY
from rnnrepro.provenance import architecture_names

# Text families: how a sentence becomes a training sequence, the reported metric, and the
# vocabulary size (known before any data exists, so that parameter budgets resolve in the DAG).
# "eos": inputs <eos> x_1..x_n, targets x_1..x_n <eos> (multi_matrix); "none": inputs x_1..x_{n-1},
# targets x_2..x_n (general_second_order, docs/methods.md §1.4: the 27-symbol alphabet has no room
# for markers);
# "stream": every line then <eos>, one stream in BPTT windows with the state carried across.
TEXT_FAMILIES = {
    "ptb_char": {"framing": "eos", "metric": "bpc", "vocab_size": 50},
    "ptb_word": {"framing": "eos", "metric": "ce", "vocab_size": 10000},
    "ptb_char_cut": {"framing": "eos", "metric": "bpc", "vocab_size": 50},
    "ptb_lines_unigram": {"framing": "none", "metric": "bpc", "vocab_size": 27},
    "ptb_lines_bigram": {"framing": "none", "metric": "bpc", "vocab_size": 703},
    "wikitext2": {"framing": "stream", "metric": "ppl", "vocab_size": 33278},
    "ptb_stream": {"framing": "stream", "metric": "ppl", "vocab_size": 10000},
    "wikitext103": {"framing": "stream", "metric": "ppl", "vocab_size": 267735},
    # Linzen's sentences (memory Table 2): the 10k most common words, POS tags for the rest;
    # the size is approximate (it only matters to parameter budgets, which no model sets here)
    "linzen": {"framing": "stream", "metric": "ppl", "vocab_size": 10050},
}
# The downloaded corpus each stream family reads (results/downloads/<corpus>/{train,valid,test}).
STREAM_CORPORA = {"wikitext2": "wikitext2", "wikitext103": "wikitext103", "ptb_stream": "ptb"}
# Recurrent sizes a scale's text ``width`` multiplies (each entry of a list); a model with
# ``layer_sizes`` (awd_lstm) has its embedding scaled too, as its decoder is tied to it.
WIDTH_KEYS = ("hidden_size", "inner_size", "layer_sizes")
# Parallel corpora (major_minor §V-D4): the evaluated test sets after the validation set, in the
# paper's order; at a scale whose ``translation.stand_in`` is set every split is generated
# (``rnnrepro.data.parallel``) and no run reads the corpus.
TRANSLATION_FAMILIES = {
    "wmt14_de_en": {"val": "newstest2013", "tests": ("newstest2015", "newstest2016")},
}
# The architectures that translate (an encoder-decoder): they train on the translation families
# only, and those families only with them.
TRANSLATION_ARCHITECTURES = ("luong_nmt",)
# The one list of each: architectures are the model registry's names, families Dyck + text +
# translation.
ARCHITECTURES = architecture_names()
FAMILIES = ("dyck", *TEXT_FAMILIES, *TRANSLATION_FAMILIES)


class ConfigError(ValueError):
    """An invalid configuration; the message names the offending key."""


def config_file(workdir: str | Path, basedir: str | Path) -> Path:
    """The workflow's config file: ``config.yaml`` of the working directory (``--directory``)
    when it has one, else the repository's; its YAML syntax checked first, so that an error
    names the file, line and column (Snakemake's own message names neither)."""
    path = Path(workdir, "config.yaml")
    if not path.exists():
        path = Path(basedir, "config.yaml")
    check_yaml_syntax(path)
    return path


def check_yaml_syntax(path: str | Path) -> None:
    """ConfigError naming ``path``, the line and the column of a YAML syntax error."""
    import yaml

    text = Path(path).read_text(encoding="utf-8")
    try:  # libyaml's loader first (20x faster); PyYAML's words its error messages
        yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        pass
    else:
        return
    try:
        yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{path}, line {mark.line + 1}, column {mark.column + 1}" if mark else str(path)
        problem = " ".join(filter(None, (error.context, error.problem)))
        raise ConfigError(f"{where}: invalid YAML: {problem}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: invalid YAML: {error}") from None


# Training stages of a run, in order; a later stage starts from the previous stage's model.pt
# and lives in a subdirectory of the run named after it (the first stage in the run's own).
STAGES = ("train", "finetune")


# Hyper-parameters a random search may sample (a model's ``search``), uniformly in a range.
SEARCHABLE = ("lr", "weight_decay")


@dataclass(frozen=True)
class Run:
    """One training job: (experiment, dataset, model, seed), its stage and, for a model with a
    random search, its trial (1-based)."""

    experiment: str
    dataset: str
    model: str
    seed: int
    stage: str = "train"
    trial: int | None = None

    @property
    def path(self) -> str:
        base = f"{self.experiment}/{self.dataset}/{self.model}/seed{self.seed}"
        return f"{base}{trial_dir(self.trial)}{stage_dir(self.stage)}"

    def identity(self) -> dict:
        """The run's identity, recorded in its model file and every result read from it: the
        ``IDENTITY`` keys, then the ``OPTIONAL_IDENTITY`` ones that are set (a search trial)."""
        identity = {key: getattr(self, key) for key in IDENTITY}
        optional = {key: getattr(self, key) for key in OPTIONAL_IDENTITY}
        return {**identity, **{key: value for key, value in optional.items() if value is not None}}


def trial_dir(trial: int | None) -> str:
    """Path suffix of a search trial below its run's directory ("" without a search)."""
    return "" if trial is None else f"/trial{trial}"


def trial_from_dir(suffix: str) -> int | None:
    """The trial a ``trial_dir`` suffix names (None for "")."""
    return int(suffix.removeprefix("/trial")) if suffix else None


def search_trials(config: dict, experiment: str, model: str) -> list[int]:
    """The trials of a model's random search at the selected scale ([None]: no search)."""
    if not config["experiments"][experiment]["models"][model].get("search"):
        return [None]
    return list(range(1, scale_settings(config).get("search_trials", 1) + 1))


def trial_settings(config: dict, experiment: str, dataset: str, model: str, trial: int) -> dict:
    """The training settings trial ``trial`` samples: each key of the model's ``search``
    uniformly in its [low, high], from a generator seeded with the trial's name (so every
    machine and rerun draws the same trials; 6 significant digits)."""
    space = config["experiments"][experiment]["models"][model]["search"]
    rng = random.Random(f"{experiment}/{dataset}/{model}/trial{trial}")
    return {key: float(f"{rng.uniform(*space[key]):.6g}") for key in sorted(space)}


def stage_dir(stage: str) -> str:
    """Path suffix of a stage below its run's directory: "" for "train", "/finetune" else."""
    return "" if stage == STAGES[0] else f"/{stage}"


def stages(config: dict, experiment: str, model: str, dataset: str) -> list[str]:
    """The stages of a configured model on a dataset: train, then finetune if it names a
    fine-tuning procedure there."""
    entry = config["experiments"][experiment]["models"][model]
    return ["train", *(["finetune"] if per_dataset(entry, "finetune", family(dataset)) else [])]


def per_dataset(entry: dict, key: str, fam: str) -> str | None:
    """A model entry's ``key`` (training, finetune, dynamic_eval) on dataset family ``fam``:
    its ``dataset_<key>`` entry for ``fam`` if any, else ``key`` (None when neither is set)."""
    return entry.get(f"dataset_{key}", {}).get(fam, entry.get(key))


def dynamic_eval_settings(config: dict, experiment: str, dataset: str, model: str) -> dict | None:
    """The dynamic-evaluation settings of a run (``dynamic_eval.<name>``), or None."""
    entry = config["experiments"][experiment]["models"][model]
    name = per_dataset(entry, "dynamic_eval", family(dataset))
    if name is None:
        return None
    settings = dict(config["dynamic_eval"][name])
    return _capped(settings, training_caps(config, experiment), ("max_batches", "max_eval_tokens"))


def feature_masking(config: dict) -> dict:
    """The feature-masking grid at the selected scale (``feature_masking`` with the scale's
    replacements): ``layers`` (``"all"`` or a layer number, as text), ``probabilities`` (0 to
    max_probability in steps) and ``mask_seeds`` (1..n)."""
    settings = feature_masking_settings(config, config["scale"])
    steps = round(settings["max_probability"] / settings["step"])
    return {
        "layers": [str(layer) for layer in settings["layers"]],
        "probabilities": [round(k * settings["step"], 6) for k in range(steps + 1)],
        "mask_seeds": list(range(1, settings["mask_seeds"] + 1)),
    }


def feature_masking_settings(config: dict, scale: str) -> dict:
    """``feature_masking`` with scale ``scale``'s replacements."""
    return {**config["feature_masking"], **config["scales"][scale].get("feature_masking", {})}


def procedure_settings(config: dict, procedure: str) -> dict:
    """A training procedure's settings at the selected scale: ``training.<procedure>`` with the
    scale's replacements (``scales.<scale>.training.<procedure>``)."""
    replaced = scale_settings(config).get("training", {}).get(procedure, {})
    return {**config["training"][procedure], **replaced}


def scale_settings(config: dict) -> dict:
    """The settings of the selected scale."""
    return config["scales"][config["scale"]]


# What a scale (or an experiment at a scale) may cap: a run's epochs, batches per epoch and
# evaluated tokens of a stream.
CAPS = ("max_epochs", "max_batches", "max_eval_tokens")


def _capped(settings: dict, caps: dict, keys: tuple[str, ...]) -> dict:
    """``settings`` with each of ``keys`` lowered to its cap (set to it when absent)."""
    out = dict(settings)
    for key in keys:
        if key in caps:
            out[key] = min(out.get(key, caps[key]), caps[key])
    return out


def training_caps(config: dict, experiment: str, model: str | None = None) -> dict:
    """The selected scale's caps on an experiment's runs: ``max_epochs`` (the scale's, or the
    experiment's own ``scales.<scale>``), ``max_batches`` and ``max_eval_tokens`` (the
    experiment's); a model's own ``scales.<scale>`` replaces the experiment's (the translation
    models of major_minor, whose sentence pairs are not its language models' streams)."""
    caps = {k: v for k, v in scale_settings(config).items() if k == "max_epochs"}
    entry = config["experiments"].get(experiment, {})
    own = entry.get("scales", {}).get(config["scale"], {})
    if model is not None and "scales" in entry["models"][model]:
        own = entry["models"][model]["scales"].get(config["scale"], {})
    return {**caps, **own}


def text_settings(config: dict) -> dict:
    """The selected scale's text-data settings, with defaults filled in."""
    text = scale_settings(config).get("text", {})
    return {
        "train_lines": text.get("train_lines"),
        "eval_lines": text.get("eval_lines"),
        "folds": text.get("folds", list(range(1, config["text"]["folds"] + 1))),
        "width": text.get("width", 1.0),
        "syneval_pairs": text.get("syneval_pairs"),
        "agreement_items": text.get("agreement_items"),
    }


def translation_settings(config: dict) -> dict:
    """The selected scale's translation settings: ``translation`` with the scale's
    replacements (``scales.<scale>.translation``); ``stand_in`` is None where the runs read the
    corpus itself."""
    own = scale_settings(config).get("translation", {})
    return {"stand_in": None, **config["translation"], **own}


def dataset_names(config: dict, family_name: str) -> list[str]:
    """The dataset names a family expands to at the selected scale."""
    return names.expand(
        family_name,
        m=scale_settings(config)["dyck"]["m"],
        cutoffs=config["text"]["cutoffs"],
        folds=text_settings(config)["folds"],
    )


def model_families(experiment: dict, model: dict, scale: str | None = None) -> list[str]:
    """The dataset families a model of ``experiment`` runs on, in the experiment's order; at
    ``scale``, only those its ``scale_datasets`` keeps there (all of them when it names none)."""
    wanted = model.get("datasets", experiment["datasets"])
    kept = model.get("scale_datasets", {}).get(scale, wanted)
    return [f for f in experiment["datasets"] if f in wanted and f in kept]


def datasets(config: dict, experiment: str) -> list[str]:
    """Dataset names of an experiment at the selected scale (none if it is not configured)."""
    names = []
    for fam in config["experiments"].get(experiment, {}).get("datasets", []):
        names += dataset_names(config, fam)
    return names


def seeds(config: dict, experiment: str) -> list[int]:
    """Seeds of an experiment: its own ``seeds`` if set, else the scale's."""
    return config["experiments"][experiment].get("seeds", scale_settings(config)["seeds"])


def runs(config: dict, experiment: str | None = None, model: str | None = None) -> list[Run]:
    """Every training job of the selected scale, optionally restricted (an experiment that is
    not configured has none)."""
    experiments = [experiment] if experiment else list(config["experiments"])
    experiments = [exp for exp in experiments if exp in config["experiments"]]
    out = []
    for exp in experiments:
        entry = config["experiments"][exp]
        for name, model_entry in entry["models"].items():
            if model is not None and name != model:
                continue
            for fam in model_families(entry, model_entry, config["scale"]):
                for dataset in dataset_names(config, fam):
                    out += [
                        Run(exp, dataset, name, s, trial=k)
                        for s in seeds(config, exp)
                        for k in search_trials(config, exp, name)
                    ]
    return out


def jobs(config: dict, experiment: str | None = None) -> list[Run]:
    """Every training job: each run at each of its stages (training, then fine-tuning)."""
    return [
        replace(run, stage=stage)
        for run in runs(config, experiment)
        for stage in stages(config, run.experiment, run.model, run.dataset)
    ]


def _solve(architecture: str, fam: str, settings: dict, hparams: dict) -> dict:
    fixed = {k: v for k, v in hparams.items() if k not in ("dropout",)}
    return budget.solve(
        architecture,
        TEXT_FAMILIES[fam]["vocab_size"],
        settings["budget"],
        settings.get("ratio", 1.0),
        **fixed,
    )


def task_kind(fam: str) -> str:
    """What a run of this dataset family trains on (``rnnrepro.tasks.TASKS``): "dyck",
    "stream" (one token stream in BPTT windows), "sentences" (one sequence per line) or
    "translation" (sentence pairs, ``rnnrepro.translation_task``)."""
    if fam == "dyck":
        return "dyck"
    if fam in TRANSLATION_FAMILIES:
        return "translation"
    return "stream" if TEXT_FAMILIES[fam]["framing"] == "stream" else "sentences"


def architecture(config: dict, experiment: str, model: str) -> str:
    """The architecture of a configured model (default: the model's name)."""
    return config["experiments"][experiment]["models"][model].get("architecture", model)


def run_config(
    config: dict,
    experiment: str,
    dataset: str,
    model: str,
    stage: str = "train",
    trial: int | None = None,
) -> dict:
    """Everything that defines a run's result except its seed and device (rule params); a
    ``finetune`` stage trains with the model's ``finetune`` procedure, a search trial with the
    settings it samples."""
    entry = config["experiments"][experiment]["models"][model]
    fam = family(dataset)
    arch = architecture(config, experiment, model)
    merged = {**entry["hparams"], **entry.get("dataset_hparams", {}).get(fam, {})}
    hparams = {}
    for key, value in merged.items():
        if key.endswith("_per_m"):
            hparams[key.removesuffix("_per_m")] = value * dyck_m(dataset)
        else:
            hparams[key] = value
    out = {"architecture": arch, "task": task_kind(fam)}
    if "budget" in entry:
        solved = _solve(arch, fam, entry["budget"], hparams)
        hparams.update({k: solved[k] for k in WIDTH_KEYS if k in solved})
        out["budget"] = {**entry["budget"], "params": solved["params"]}
    if fam in TEXT_FAMILIES:
        width = text_settings(config)["width"]
        if width != 1.0:
            scaled = [*WIDTH_KEYS, *(["embedding_dim"] if "layer_sizes" in hparams else [])]
            for key in scaled:
                if key in hparams:
                    hparams[key] = _scaled(hparams[key], width)
            out["width"] = width
        out["text"] = {k: TEXT_FAMILIES[fam][k] for k in ("framing", "metric")}
        if fam == "ptb_char_cut":
            out["text"]["cutoff"] = names.parse(dataset).cutoff
    if fam in TRANSLATION_FAMILIES:
        out.update(_translation(config, hparams))
    procedure = per_dataset(entry, "training", fam)
    if stage == "finetune":
        procedure = per_dataset(entry, "finetune", fam)
        out["stage"] = stage
    training = procedure_settings(config, procedure)
    if trial is not None:
        sampled = trial_settings(config, experiment, dataset, model, trial)
        training.update(sampled)
        out["trial"] = {"index": trial, **sampled}
    training = _capped(training, training_caps(config, experiment, model), CAPS)
    out["hparams"] = hparams
    out["training"] = training
    if fam == "dyck":
        out["dyck"] = {
            "k": config["dyck"]["k"],
            "m": dyck_m(dataset),
            "wcpa_min_events": config["dyck"]["wcpa_min_events"],
        }
        out["reading"] = config["dyck"]["reading"]
    return out


# What defines a translation run's data and schedule (``translation`` in config.yaml); the beam
# and the decoding length are the translate rule's, so that changing them retrains nothing.
TRANSLATION_RUN_KEYS = ("vocab_size", "max_length", "max_steps", "halve_from", "halvings")


def _translation(config: dict, hparams: dict) -> dict:
    """A translation run's ``translation`` section (its corpus, or the stand-in it reads
    instead) and ``width`` (its sizes scaled in ``hparams`` in place, embedding included)."""
    settings = translation_settings(config)
    out = {"translation": {k: settings[k] for k in TRANSLATION_RUN_KEYS}}
    out["translation"]["corpus"] = "stand_in" if settings["stand_in"] else "wmt"
    if settings["stand_in"]:
        out["translation"]["stand_in"] = settings["stand_in"]
    width = settings.get("width", 1.0)
    if width != 1.0:
        for key in ("embedding_dim", "layer_sizes"):
            if key in hparams:
                hparams[key] = _scaled(hparams[key], width)
        out["width"] = width
    return out


def _scaled(size: int | list[int], width: float) -> int | list[int]:
    if isinstance(size, list):
        return [max(1, round(s * width)) for s in size]
    return max(1, round(size * width))
