"""Configuration resolution shared by the Snakefile and the scripts (kept free of torch imports).

The config file is validated against ``workflow/schemas/config.schema.yaml`` first; ``check`` then
verifies what a JSON schema cannot (cross references), raising ``ConfigError`` naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass

ARCHITECTURES = (
    "lstm",
    "attention_lstm",
    "assignment_lstm",
    "dyck_rnn",
    "rnn",
    "mrnn",
    "mlstm",
    "mmrnn",
    "mmlstm",
)
DYCK_PREFIX = "dyck_m"


class ConfigError(ValueError):
    """An invalid configuration; the message names the offending key."""


@dataclass(frozen=True)
class Run:
    """One training job: (experiment, dataset, model, seed)."""

    experiment: str
    dataset: str
    model: str
    seed: int

    @property
    def path(self) -> str:
        return f"{self.experiment}/{self.dataset}/{self.model}/seed{self.seed}"


def scale_settings(config: dict) -> dict:
    """The settings of the selected scale."""
    return config["scales"][config["scale"]]


def check(config: dict) -> None:
    """Cross-reference checks beyond the JSON schema."""
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
    for exp_name, experiment in config["experiments"].items():
        for model_name, model in experiment["models"].items():
            key = f"experiments.{exp_name}.models.{model_name}"
            architecture = model.get("architecture", model_name)
            if architecture not in ARCHITECTURES:
                raise ConfigError(
                    f"config key '{key}': unknown model {architecture!r}; set 'architecture' to "
                    f"one of {', '.join(ARCHITECTURES)}"
                )
            if model["training"] not in config["training"]:
                raise ConfigError(
                    f"config key '{key}.training': {model['training']!r} is not defined under "
                    f"'training' ({', '.join(config['training'])})"
                )
            hparams = model["hparams"]
            for stem in ("hidden_size", "stack_depth"):
                if stem in hparams and f"{stem}_per_m" in hparams:
                    raise ConfigError(
                        f"config key '{key}.hparams': give {stem} or {stem}_per_m, not both"
                    )


def datasets(config: dict, experiment: str) -> list[str]:
    """Dataset names of an experiment at the selected scale (``dyck`` expands to dyck_m<m>)."""
    names = []
    for family in config["experiments"][experiment]["datasets"]:
        if family == "dyck":
            names += [f"{DYCK_PREFIX}{m}" for m in scale_settings(config)["dyck"]["m"]]
    return names


def dyck_m(dataset: str) -> int:
    """The bound m of a Dyck dataset name such as ``dyck_m4``."""
    if not dataset.startswith(DYCK_PREFIX):
        raise ValueError(f"not a Dyck dataset: {dataset!r}")
    return int(dataset[len(DYCK_PREFIX) :])


def runs(config: dict, experiment: str | None = None, model: str | None = None) -> list[Run]:
    """Every training job of the selected scale, optionally restricted."""
    experiments = [experiment] if experiment else list(config["experiments"])
    out = []
    for exp in experiments:
        for dataset in datasets(config, exp):
            for name in config["experiments"][exp]["models"]:
                if model is None or name == model:
                    out += [Run(exp, dataset, name, s) for s in scale_settings(config)["seeds"]]
    return out


def run_config(config: dict, experiment: str, dataset: str, model: str) -> dict:
    """Everything that defines a run's result except its seed and device (rule params)."""
    entry = config["experiments"][experiment]["models"][model]
    hparams = {}
    for key, value in entry["hparams"].items():
        if key.endswith("_per_m"):
            hparams[key.removesuffix("_per_m")] = value * dyck_m(dataset)
        else:
            hparams[key] = value
    training = dict(config["training"][entry["training"]])
    cap = scale_settings(config).get("max_epochs")
    if cap is not None:
        training["max_epochs"] = min(training["max_epochs"], cap)
    out = {
        "architecture": entry.get("architecture", model),
        "hparams": hparams,
        "training": training,
    }
    if dataset.startswith(DYCK_PREFIX):
        out["dyck"] = {"k": config["dyck"]["k"], "m": dyck_m(dataset)}
        out["reading"] = config["dyck"]["reading"]
    return out
