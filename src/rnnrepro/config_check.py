"""What config.yaml must satisfy beyond its JSON schema (``workflow/schemas/config.schema.yaml``):
the cross references between its keys. Each failure is a ``ConfigError`` naming the key. It reads
``rnnrepro.config``'s resolution of the settings; that module does not import this one."""

from __future__ import annotations

from rnnrepro.config import (
    ARCHITECTURES,
    FAMILIES,
    SEARCHABLE,
    TEXT_FAMILIES,
    TRANSLATION_ARCHITECTURES,
    TRANSLATION_FAMILIES,
    WIDTH_KEYS,
    ConfigError,
    Run,
    _solve,
    feature_masking,
    feature_masking_settings,
    model_families,
    run_config,
)
from rnnrepro.provenance import architecture_hparams


def check_config(config: dict) -> None:
    """Cross-reference checks beyond the JSON schema."""
    _check_scales(config)
    _check_cluster(config)
    _check_feature_masking(config)
    for exp_name, experiment in config["experiments"].items():
        _check_experiment(config, exp_name, experiment)
        for model_name, model in experiment["models"].items():
            key = f"experiments.{exp_name}.models.{model_name}"
            arch = model.get("architecture", model_name)
            _check_model(config, exp_name, key, arch, model)
            for fam in model_families(experiment, model):
                _check_family(key, arch, fam, model)


def _check_scales(config: dict) -> None:
    """The selected scale exists; each scale's Dyck lengths and text folds are possible."""
    scale = config["scale"]
    if scale not in config["scales"]:
        raise ConfigError(
            f"config key 'scale': {scale!r} is not one of the defined scales "
            f"({', '.join(config['scales'])})"
        )
    for name, settings in config["scales"].items():
        dyck = settings["dyck"]
        if dyck["min_length"] > dyck["max_length"]:
            raise ConfigError(
                f"config key 'scales.{name}.dyck': min_length {dyck['min_length']} > "
                f"max_length {dyck['max_length']}"
            )
        for procedure in settings.get("training", {}):
            if procedure not in config["training"]:
                raise ConfigError(
                    f"config key 'scales.{name}.training.{procedure}': no training procedure "
                    f"of that name (training: {', '.join(config['training'])})"
                )
        for fold in settings.get("text", {}).get("folds", []):
            if fold > config["text"]["folds"]:
                raise ConfigError(
                    f"config key 'scales.{name}.text.folds': fold {fold} > text.folds "
                    f"({config['text']['folds']})"
                )


def _check_cluster(config: dict) -> None:
    """The CPU families are dataset families; the time limits' bounds are in order and name
    defined scales."""
    for fam in config["cluster"]["cpu_families"]:
        if fam not in FAMILIES:
            raise ConfigError(
                f"config key 'cluster.cpu_families': unknown dataset family {fam!r}; "
                f"known: {', '.join(FAMILIES)}"
            )
    runtime = config["cluster"]["runtime"]
    if runtime["min"] > runtime["max"]:
        raise ConfigError(
            f"config key 'cluster.runtime': min {runtime['min']} > max {runtime['max']}"
        )
    for scale in runtime["fixed"]:
        if scale not in config["scales"]:
            raise ConfigError(
                f"config key 'cluster.runtime.fixed.{scale}': no scale of that name "
                f"(scales: {', '.join(config['scales'])})"
            )


def _check_feature_masking(config: dict) -> None:
    """Each scale's masking grid (0, step, ..., max_probability) has a masked point, and its
    step divides max_probability, so that the grid ends there and every P is in [0, 1)."""
    for name, scale in config["scales"].items():
        settings = feature_masking_settings(config, name)
        own = scale.get("feature_masking", {})
        step_key, top_key = (
            f"scales.{name}.feature_masking.{k}" if k in own else f"feature_masking.{k}"
            for k in ("step", "max_probability")
        )
        step, top = settings["step"], settings["max_probability"]
        if step > top:
            raise ConfigError(
                f"config key '{step_key}': {step} > {top} ({top_key}): the grid would be "
                "P = 0 alone, nothing masked"
            )
        if abs(top / step - round(top / step)) > 1e-6:
            end = round(round(top / step) * step, 6)
            raise ConfigError(
                f"config key '{step_key}': {step} does not divide {top} ({top_key}): the grid "
                f"0, {step}, ... would end at {end}, not at {top}"
                + (" (every P must be in [0, 1))" if end >= 1 else "")
            )


def check_masked_layers(config: dict, runs: list[Run]) -> None:
    """Every layer ``feature_masking.layers`` names exists in each masked run's model (the
    runs whose ``feature_mask.csv`` an output reads, layered models: ``layer_sizes``)."""
    layers = feature_masking(config)["layers"]
    for run in runs:
        hparams = run_config(config, run.experiment, run.dataset, run.model)["hparams"]
        count = len(hparams.get("layer_sizes", ()))
        wrong = [layer for layer in layers if layer != "all" and not 1 <= int(layer) <= count]
        if wrong:
            raise ConfigError(
                f"config key 'feature_masking.layers': {', '.join(wrong)} named, but model "
                f"{run.model!r} of experiment {run.experiment!r} (masked for its "
                f"feature_mask.csv) has layers 1-{count}"
            )


def _check_experiment(config: dict, exp_name: str, experiment: dict) -> None:
    """An experiment's dataset families are known; its agreement models exist on its corpus."""
    for fam in experiment["datasets"]:
        if fam not in FAMILIES:
            raise ConfigError(
                f"config key 'experiments.{exp_name}.datasets': unknown dataset family "
                f"{fam!r}; known: {', '.join(FAMILIES)}"
            )
    agreement = experiment.get("agreement")
    if not agreement:
        return
    key = f"experiments.{exp_name}.agreement"
    if agreement["corpus"] not in experiment["datasets"]:
        raise ConfigError(
            f"config key '{key}.corpus': {agreement['corpus']!r} is not a dataset of "
            f"experiment {exp_name!r} ({', '.join(experiment['datasets'])})"
        )
    for name in agreement["models"]:
        model = experiment["models"].get(name)
        if model is None or agreement["corpus"] not in model_families(experiment, model):
            raise ConfigError(
                f"config key '{key}.models': {name!r} is no model of experiment "
                f"{exp_name!r} trained on {agreement['corpus']!r}"
            )


def _check_model(config: dict, exp_name: str, key: str, arch: str, model: dict) -> None:
    """A model entry (config ``key``) of experiment ``exp_name``: its architecture, procedures,
    dynamic evaluations, search space and per-dataset sections name things that exist."""
    experiment = config["experiments"][exp_name]
    if arch not in ARCHITECTURES:
        raise ConfigError(
            f"config key '{key}': unknown model {arch!r}; set 'architecture' to "
            f"one of {', '.join(ARCHITECTURES)}"
        )
    procedures = {"training": model["training"]}
    if model.get("finetune"):
        procedures["finetune"] = model["finetune"]
    for stage in ("training", "finetune"):
        procedures |= {
            f"dataset_{stage}.{fam}": name
            for fam, name in model.get(f"dataset_{stage}", {}).items()
        }
    evaluations = {"dynamic_eval": model.get("dynamic_eval")} | {
        f"dataset_dynamic_eval.{fam}": name
        for fam, name in model.get("dataset_dynamic_eval", {}).items()
    }
    for where, name in evaluations.items():
        if name is not None and name not in config.get("dynamic_eval", {}):
            raise ConfigError(
                f"config key '{key}.{where}': {name!r} is not defined under "
                f"'dynamic_eval' ({', '.join(config.get('dynamic_eval', {})) or 'none'})"
            )
    for name, bounds in model.get("search", {}).items():
        if name not in SEARCHABLE:
            raise ConfigError(
                f"config key '{key}.search': {name!r} cannot be searched; "
                f"searchable: {', '.join(SEARCHABLE)}"
            )
        if not bounds[0] <= bounds[1]:
            raise ConfigError(
                f"config key '{key}.search.{name}': low {bounds[0]} > high {bounds[1]}"
            )
    for where, procedure in procedures.items():
        if procedure not in config["training"]:
            raise ConfigError(
                f"config key '{key}.{where}': {procedure!r} is not defined under "
                f"'training' ({', '.join(config['training'])})"
            )
    for scale, families in model.get("scale_datasets", {}).items():
        if scale not in config["scales"]:
            raise ConfigError(
                f"config key '{key}.scale_datasets.{scale}': no such scale "
                f"({', '.join(config['scales'])})"
            )
        for fam in families:
            if fam not in model_families(experiment, model):
                raise ConfigError(
                    f"config key '{key}.scale_datasets.{scale}': {fam!r} is not a dataset "
                    f"of the model ({', '.join(model_families(experiment, model))})"
                )
    for fam in model.get("datasets", []):
        if fam not in experiment["datasets"]:
            raise ConfigError(
                f"config key '{key}.datasets': {fam!r} is not a dataset of experiment "
                f"{exp_name!r} ({', '.join(experiment['datasets'])})"
            )
    sections = ("dataset_hparams", "dataset_training", "dataset_finetune")
    for section in (*sections, "dataset_dynamic_eval"):
        for fam in model.get(section, {}):
            if fam not in experiment["datasets"]:
                raise ConfigError(
                    f"config key '{key}.{section}': {fam!r} is not a dataset of "
                    f"experiment {exp_name!r}"
                )


def _check_family(key: str, arch: str, fam: str, model: dict) -> None:
    """A model's hyper-parameters on one dataset family: sizes given once, accepted by its
    architecture, and a parameter budget that can be solved there; a translation model on
    sentence pairs only, and a language model never on them."""
    if (arch in TRANSLATION_ARCHITECTURES) != (fam in TRANSLATION_FAMILIES):
        kind = "a translation model" if arch in TRANSLATION_ARCHITECTURES else "a language model"
        raise ConfigError(
            f"config key '{key}.datasets': {arch!r} is {kind} and cannot train on {fam!r}"
        )
    hparams = {**model["hparams"], **model.get("dataset_hparams", {}).get(fam, {})}
    for stem in ("hidden_size", "stack_depth"):
        if stem in hparams and f"{stem}_per_m" in hparams:
            raise ConfigError(f"config key '{key}.hparams': give {stem} or {stem}_per_m, not both")
    _check_hparams(key, arch, fam, model, hparams)
    if "budget" in model:
        if fam not in TEXT_FAMILIES:
            raise ConfigError(
                f"config key '{key}.budget': parameter budgets need a text dataset, not {fam!r}"
            )
        try:
            _solve(arch, fam, model["budget"], hparams)
        except ValueError as error:
            raise ConfigError(f"config key '{key}.budget': {error}") from None


def _check_hparams(key: str, arch: str, fam: str, model: dict, hparams: dict) -> None:
    """ConfigError naming the config key of a hyper-parameter ``arch`` does not take, or the
    ones it needs and ``hparams`` (merged for dataset family ``fam``) lacks; the keys it
    accepts come from its class (``provenance.architecture_hparams``)."""
    required, optional = architecture_hparams(arch)
    given = {name.removesuffix("_per_m"): name for name in hparams}
    for name, written in given.items():
        if name not in (*required, *optional):
            where = "hparams"
            if written in model.get("dataset_hparams", {}).get(fam, {}):
                where = f"dataset_hparams.{fam}"
            raise ConfigError(
                f"config key '{key}.{where}.{written}': model {arch!r} takes no {name!r}; it "
                f"takes {', '.join(required + optional)}"
            )
    proportions, sizes = hparams.get("major_proportions"), hparams.get("layer_sizes")
    if proportions and sizes and len(proportions) != len(sizes):
        raise ConfigError(
            f"config key '{key}.hparams.major_proportions': {len(proportions)} entries for "
            f"{len(sizes)} layers (layer_sizes {sizes}, for dataset family {fam!r}): one each"
        )
    solved = WIDTH_KEYS if "budget" in model else ()
    missing = [name for name in required if name not in given and name not in solved]
    if missing:
        raise ConfigError(
            f"config key '{key}.hparams': model {arch!r} needs {', '.join(missing)} "
            f"(for dataset family {fam!r})"
        )
