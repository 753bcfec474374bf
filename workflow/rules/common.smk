# Config validation, target lists, input functions and wildcard constraints.

import json
import os
from dataclasses import replace
from pathlib import Path

from snakemake.utils import validate

# Jobs run `python -m rnnrepro.scripts.<name>` (the package is installed with `pip install -e .`);
# the Snakefile puts src/ on the path for the DAG.
from rnnrepro import buildcache  # noqa: E402
from rnnrepro import config as cfg  # noqa: E402  (light: no torch import)
from rnnrepro import papers  # noqa: E402
from rnnrepro.data import names, sources  # noqa: E402
from rnnrepro.papers import commands  # noqa: E402
from rnnrepro.papers.commands import quoted  # noqa: E402
from rnnrepro.provenance import code_digest, model_module  # noqa: E402
from rnnrepro.resources import run_resources  # noqa: E402

# The compiled recurrences: a build cache of this Python environment's own, which the jobs
# inherit through the environment (rnnrepro/buildcache.py).
buildcache.use_own_cache()

validate(config, schema="../schemas/config.schema.yaml")
try:
    cfg.check(config)
    cfg.check_masked_layers(
        config,
        [
            run
            for output in papers.outputs().values()
            if "feature_mask.csv" in output.files
            for run in output.select(config)
        ],
    )
except cfg.ConfigError as error:
    raise WorkflowError(f"Invalid configuration: {error}") from None

RUNS = "results/runs/{experiment}/{dataset}/{model}/seed{seed}"
SPLITS = ("train", "valid", "test")  # the downloaded corpora's files
# A job's directory below RUNS: a search trial's (cfg.trial_dir: none without a search), then a
# later stage's (cfg.stage_dir: none for the first stage, train).
STAGED = f"{RUNS}{{trialdir}}{{stagedir}}"


wildcard_constraints:
    experiment="[a-z0-9_]+",
    dataset="[a-z0-9_]+",
    model="[a-z0-9_]+",
    seed=r"\d+",
    split="train|val|test",
    stagedir="(?:" + "|".join(cfg.stage_dir(s) for s in cfg.STAGES[1:]) + ")?",
    trialdir=r"(?:/trial\d+)?",


# The rules that train a run (one job each, a checkpoint each).
TRAINING_RULES = ("train", "finetune", "train_translation")


def before_start():
    """Once every job is planned and before the first starts (not in dry runs, nor inside
    cluster jobs): stop at once if the device is not on this machine (jobs run here), a
    planned download cannot succeed or the checkpoint directory cannot be written, then print
    the cost.
    A build lock of the compiled recurrences left by a killed job is removed.
    """
    from snakemake.logging import logger

    from rnnrepro import preflight

    for lock in buildcache.remove_stale_locks(Path(os.environ[buildcache.VARIABLE])):
        logger.warning(
            f"Removed {lock}: left by a build of the compiled recurrences that was killed"
        )

    planned = list(workflow.dag.needrun_jobs())
    # the rules that train or evaluate a model (their params name the device)
    if any("device" in j.rule.params.keys() for j in planned):
        error = preflight.device_problem(config["device"], workflow.local_exec)
        if error:
            raise WorkflowError(error)
    files = [
        (j.wildcards.corpus, j.wildcards.name)
        for j in planned
        if j.rule.name == "download"
    ]
    error = preflight.check_downloads(
        files, config["data_mirror"] or None, config.get("data_sources") or None
    )
    if error:
        raise WorkflowError(error)
    # the rules that write checkpoints
    if any(j.rule.name in (*TRAINING_RULES, "dynamic_eval") for j in planned):
        error = preflight.check_writable(
            Path(config["checkpoint_dir"], config["scale"]), "checkpoint_dir"
        )
        if error:
            raise WorkflowError(error)
    runs = [run_of(j.wildcards) for j in planned if j.rule.name in TRAINING_RULES]
    logger.info(preflight.cost_summary(config, runs, workflow.basedir))


onstart:
    before_start()


def searched(run):
    """Whether the run's model has a random search (its trials are jobs, search.json its result)."""
    return cfg.search_trials(config, run.experiment, run.model) != [None]


def run_files(name, runs):
    """Paths of one per-run file for the given runs. A searched run's metrics.json is its
    search.json (the chosen trial's metrics); its other files are analyses of the chosen trial
    in the run's own directory, made by rules that read ``scored_model``."""
    return [
        f"results/runs/{run.path}/"
        + (
            "search.json"
            if name == "metrics.json" and run.trial is None and searched(run)
            else name
        )
        for run in runs
    ]


def without_trials(runs):
    """One run per seed: a searched model's trials folded into the run they search for."""
    return list(dict.fromkeys(replace(run, trial=None) for run in runs))


def run_of(wildcards):
    """The run (stage, trial) a job's wildcards stand for."""
    stagedir = wildcards.get("stagedir", "")
    stage = next(s for s in cfg.STAGES if cfg.stage_dir(s) == stagedir)
    return cfg.Run(
        wildcards.experiment,
        wildcards.dataset,
        wildcards.model,
        int(wildcards.seed),
        stage,
        cfg.trial_from_dir(wildcards.get("trialdir", "")),
    )


def checkpoint_path(wildcards):
    """Per-epoch checkpoint of a run: outside results/runs, so never deleted by Snakemake."""
    # per scale: runs of another scale never overwrite (or resume from) this scale's checkpoints
    return str(
        Path(config["checkpoint_dir"], config["scale"], f"{run_of(wildcards).path}.pt")
    )


def train_inputs(wildcards):
    """A run's training data: its splits, the vocabulary for text datasets and, for a later
    stage, the model of the stage before."""
    files = {
        "train": f"results/data/{wildcards.dataset}/train.txt",
        "val": f"results/data/{wildcards.dataset}/val.txt",
    }
    if cfg.family(wildcards.dataset) in cfg.TEXT_FAMILIES:
        files["vocab"] = f"results/data/{wildcards.dataset}/vocab.txt"
    run = run_of(wildcards)
    if run.stage != cfg.STAGES[0]:
        previous = cfg.STAGES[cfg.STAGES.index(run.stage) - 1]
        files["init"] = f"results/runs/{replace(run, stage=previous).path}/model.pt"
    return files


def train_options(wildcards, input):
    """train.py options for the optional inputs (vocabulary, the previous stage's model) and a
    Dyck split's length bounds (dyck_lengths)."""
    options = [
        f"--{key} {quoted(input[key])}"
        for key in ("vocab", "init")
        if key in input.keys()
    ]
    return " ".join(options + [dyck_lengths(wildcards)]).strip()


def dyck_lengths(wildcards):
    """``--dyck-lengths MIN MAX`` for a Dyck dataset: the bounds its splits were generated
    with (scales.<scale>.dyck), so that a line outside them is refused; empty otherwise.
    """
    if cfg.family(wildcards.dataset) != "dyck":
        return ""
    dyck = cfg.scale_settings(config)["dyck"]
    return f"--dyck-lengths {dyck['min_length']} {dyck['max_length']}"


def searched_runs():
    """The runs (without their trial) of every model with a random search."""
    return without_trials(run for run in cfg.runs(config) if run.trial is not None)


def trial_metrics(wildcards):
    """metrics.json of every trial of a searched run (select_trial's input)."""
    run = run_of(wildcards)
    return [
        f"results/runs/{replace(run, trial=k).path}/metrics.json"
        for k in cfg.search_trials(config, run.experiment, run.model)
    ]


def scored_model(wildcards):
    """The model file(s) an analysis of a run reads: its model.pt, or for a searched run its
    search.json and every trial's model.pt (the script loads the chosen one)."""
    run = run_of(wildcards)
    if not searched(run):
        return {"model": f"results/runs/{run.path}/model.pt"}
    return {
        "search": f"results/runs/{run.path}/search.json",
        "trial_models": [
            f"results/runs/{replace(run, trial=k).path}/model.pt"
            for k in cfg.search_trials(config, run.experiment, run.model)
        ],
    }


def scored_model_options(wildcards, input):
    """Options naming scored_model's files: --model, or --search, --trials and --trial-models."""
    if "model" in input.keys():
        return f"--model {quoted(input.model)}"
    run = run_of(wildcards)
    trials = " ".join(map(str, cfg.search_trials(config, run.experiment, run.model)))
    return f"--search {quoted(input.search)} --trials {trials} --trial-models {quoted(input.trial_models)}"


def last_stage(run):
    """The run at its last configured stage (the model dynamic evaluation reads)."""
    stages = cfg.stages(config, run.experiment, run.model, run.dataset)
    return replace(run, stage=stages[-1])


def dynamic_eval_files(runs):
    """dynamic_eval.json of the given runs that configure a dynamic evaluation (their last
    stage's directory)."""
    return [
        f"results/runs/{last_stage(run).path}/dynamic_eval.json"
        for run in runs
        if cfg.dynamic_eval_settings(config, run.experiment, run.dataset, run.model)
    ]


def stage_metrics(runs):
    """Every stage's metrics of the given runs: metrics.json of each training stage, then the
    dynamic evaluation's (a major_minor table row per stage)."""
    files = [
        f"results/runs/{replace(run, stage=stage).path}/metrics.json"
        for run in runs
        for stage in cfg.stages(config, run.experiment, run.model, run.dataset)
    ]
    return files + dynamic_eval_files(runs)


def dynamic_eval_params(wildcards):
    """The run's dynamic-evaluation settings as JSON (a change reruns only this rule)."""
    run = run_of(wildcards)
    settings = cfg.dynamic_eval_settings(config, run.experiment, run.dataset, run.model)
    if settings is None or run != last_stage(run):
        raise WorkflowError(
            f"{run.path}: no dynamic evaluation is configured for this stage "
            f"(experiments.{run.experiment}.models.{run.model}.dynamic_eval)"
        )
    return json.dumps(settings, sort_keys=True)


def dynamic_eval_checkpoint(wildcards):
    """Progress file of a dynamic evaluation: outside results/runs, like training's."""
    return checkpoint_path(wildcards).removesuffix(".pt") + ".dynamic_eval.pt"


class Untracked:
    """A param that says where or on what a job runs, or how its output is shown, not what it
    computes (a data mirror, a checkpoint directory, the device, a report caption): as a value of no builtin type, Snakemake leaves it out
    of the params rerun trigger, so moving the mirror or the checkpoints, or changing the
    device, reruns nothing. What a download holds is pinned by its checksums
    (download_content); a run resumed elsewhere records the devices it ran on.
    """

    def __init__(self, value):
        self.value = value or ""

    def __str__(self):
        return self.value


def untracked(function):
    """An input function whose value is ``Untracked``."""
    return lambda wildcards: Untracked(function(wildcards))


def download_content(wildcards):
    """A download's params: what its file's content is pinned to (its checksums, after the
    data_sources overrides), so that only a change of content reruns it."""
    try:
        return sources.pinned_content(
            wildcards.corpus, wildcards.name, config.get("data_sources") or None
        )
    except (ValueError, OSError) as error:
        raise WorkflowError(f"data_sources: {error}") from None


def stage_files(name):
    """One per-run file of every later stage (e.g. fine-tuning) configured for any run."""
    return [
        f"results/runs/{run.path}/{name}"
        for run in cfg.jobs(config)
        if run.stage != "train"
    ]


def ptb_raw_files(wildcards):
    """The downloaded PTB files a sentence dataset is built from (word or character level)."""
    corpus = "ptb" if names.parse(wildcards.dataset).level == "word" else "ptb_char"
    return {split: f"results/downloads/{corpus}/{split}.txt" for split in SPLITS}


def stream_inputs(wildcards):
    """The downloaded splits a stream dataset is read from (cfg.STREAM_CORPORA)."""
    corpus = cfg.STREAM_CORPORA[wildcards.dataset]
    return {split: f"results/downloads/{corpus}/{split}.txt" for split in SPLITS}


def text_line_options():
    """prepare_text options slicing the corpora at the selected scale."""
    text = cfg.text_settings(config)
    options = []
    if text["train_lines"]:
        options.append(f"--train-lines {text['train_lines']}")
    if text["eval_lines"]:
        options.append(f"--eval-lines {text['eval_lines']}")
    return " ".join(options)


def ptb_text_options(wildcards):
    dataset = names.parse(wildcards.dataset)
    options = f"--level {dataset.level} {text_line_options()}"
    if dataset.cutoff is not None:
        options += f" --cutoff {dataset.cutoff}"
    return options


def reference_options(wildcards):
    """ngram_reference options of a text dataset (config ``references``): its framing, the
    Kneser-Ney order (``char`` for a family reported in bits per character, else ``word``), the
    training size above which only the unigram is fit and, for a stream, the evaluated-token
    caps of the experiments that read it (0: the whole split)."""
    spec = cfg.TEXT_FAMILIES[names.family(wildcards.dataset)]
    references = config["references"]
    order = references["order"]["char" if spec["metric"] == "bpc" else "word"]
    options = (
        f"--framing {spec['framing']} --order {order}"
        f" --max-train-tokens {references['max_train_tokens']}"
    )
    if spec["framing"] == "stream":
        readers = {
            r.experiment for r in cfg.runs(config) if r.dataset == wildcards.dataset
        }
        caps = {cfg.training_caps(config, e).get("max_eval_tokens", 0) for e in readers}
        options += " --eval-tokens " + " ".join(map(str, sorted(caps) or [0]))
    return options


def run_code(script):
    """Input function: digest of ``script``, the model module of the run and what they import
    (params: editing that code reruns exactly the jobs that run it)."""

    def digest(wildcards):
        architecture = cfg.architecture(config, wildcards.experiment, wildcards.model)
        return code_digest(f"scripts/{script}.py", model_module(architecture))

    return digest


def script_code(script):
    """Digest of ``script`` and the package modules it imports (params of data/report rules)."""
    return code_digest(f"scripts/{script}.py")


def run_identity(wildcards):
    """The run's identity as JSON, recorded in its model file and every result read from it."""
    return json.dumps(run_of(wildcards).identity())


def run_params(wildcards):
    """The run's resolved settings as JSON (a change reruns exactly the affected runs)."""
    run = run_of(wildcards)
    settings = cfg.run_config(
        config, run.experiment, run.dataset, run.model, run.stage, run.trial
    )
    return json.dumps(settings, sort_keys=True)


def agreement_data(wildcards):
    """The agreement items: Linzen's own test split when the LMs were trained on it (corpus
    ``linzen``), else the test files of the mirror (numpred.test.1-5, subj_agr_filtered).
    """
    if wildcards.dataset == "linzen":
        return {
            "dependencies": "results/data/linzen/agreement.tsv",
            "sentences": "results/data/linzen/test.txt",
        }
    return {
        "numpred": [f"results/downloads/linzen/numpred.test.{k}" for k in range(1, 6)],
        "text": "results/downloads/linzen/subj_agr_filtered.text",
        "gold": "results/downloads/linzen/subj_agr_filtered.gold",
    }


def agreement_data_options(wildcards, input):
    if "dependencies" in input.keys():
        return f"--dependencies {quoted(input.dependencies)} --sentences {quoted(input.sentences)}"
    return (
        f"--numpred {quoted(input.numpred)} --filtered-text {quoted(input.text)}"
        f" --filtered-gold {quoted(input.gold)}"
    )


SYNEVAL_PAIRS = cfg.text_settings(config)["syneval_pairs"]


# Tables and figures: declared per paper in rnnrepro/papers/<key>.py, made by report.smk's rules.
OUTPUTS = papers.outputs()


def all_targets():
    """Every table and figure the config makes, every later stage and every random search."""
    targets = (
        papers.targets(config)
        + stage_files("metrics.json")
        + [f"results/runs/{run.path}/search.json" for run in searched_runs()]
    )
    return list(dict.fromkeys(targets))


def output_names(maker, figures=False):
    """Wildcard constraint: the names of ``maker``'s outputs that are (not) figures."""
    chosen = [
        o.name for o in OUTPUTS.values() if o.maker == maker and o.is_figure == figures
    ]
    return "|".join(chosen) or "(?!)"


def output_of(wildcards):
    """The declared output a report job makes."""
    return OUTPUTS[wildcards.get("table") or wildcards.get("figure")]


def output_paper(wildcards):
    """The report category of an output: its paper key."""
    return output_of(wildcards).paper


def output_caption(wildcards):
    """An output's caption (workflow/report/output.rst shows it): not a rerun trigger."""
    return Untracked(output_of(wildcards).caption)


def output_inputs(wildcards):
    """The files an output reads, keyed by its script's option: the per-run files of its runs
    (every stage's metrics for a staged table), the generator floors of a Dyck table, the n-gram
    references of a text table's datasets, and the downloaded files of the corpus it checks.
    """
    output = output_of(wildcards)
    runs = output.select(config)
    files = {}
    for name in output.files:
        option = papers.MAKERS[output.maker].options.get(name, "inputs")
        found = (
            stage_metrics(runs)
            if output.stages and name == "metrics.json"
            else run_files(name, runs)
        )
        files.setdefault(option, []).extend(found)
    if output.maker == "compare" and output.track == "dyck":
        files["floors"] = [
            f"results/data/{d}/floor.json" for d in cfg.dataset_names(config, "dyck")
        ]
    text = dict.fromkeys(
        r.dataset for r in runs if names.family(r.dataset) in cfg.TEXT_FAMILIES
    )
    if output.maker == "compare" and text:
        files["references"] = [f"results/references/{d}.csv" for d in text]
    if output.corpus:
        files["corpus"] = [
            f"results/downloads/{output.corpus}/{split}.txt" for split in SPLITS
        ]
    return files


def output_options(wildcards, input):
    """The options of a report job's script (rnnrepro.papers.commands)."""
    files = {key: list(input[key]) for key in input.keys()}
    return commands.options(output_of(wildcards), config, files)


# Translation (translation.smk): the test sets of every translation dataset, its corpus files
# (none for a generated stand-in) and the options naming them.
TRANSLATION_TESTS = sorted(
    {t for spec in cfg.TRANSLATION_FAMILIES.values() for t in spec["tests"]}
)


def translation_corpus_files(wildcards):
    """The downloaded files a translation dataset is prepared from: its training corpora's
    sides, the validation set's and each test set's (none when the scale generates it).
    """
    if cfg.translation_settings(config)["stand_in"]:
        return {}
    spec = cfg.TRANSLATION_FAMILIES[wildcards.dataset]
    files = {
        name: f"results/downloads/{wildcards.dataset}/{name}"
        for name in sources.files(wildcards.dataset)
    }
    return {
        "train_src": [files[f"{c}.de"] for c in sources.WMT_TRAINING],
        "train_tgt": [files[f"{c}.en"] for c in sources.WMT_TRAINING],
        "val": [files[f"{spec['val']}.de"], files[f"{spec['val']}.en"]],
        "tests": [
            files[f"{t}.{side}.sgm"] for t in spec["tests"] for side in ("de", "en")
        ],
    }


def translation_data_options(wildcards, input):
    """prepare_translation's options: the stand-in's sizes or the corpus files, the test sets,
    the BPE vocabulary's size and the training pairs' length limit."""
    settings = cfg.translation_settings(config)
    spec = cfg.TRANSLATION_FAMILIES[wildcards.dataset]
    options = [
        f"--vocab-size {settings['vocab_size']} --max-length {settings['max_length']}"
    ]
    if settings["stand_in"]:
        options.append(f"--stand-in {quoted(json.dumps(settings['stand_in']))}")
        options.append("--test-names " + " ".join(spec["tests"]))
    else:
        options.append(f"--train-src {quoted(list(input.train_src))}")
        options.append(f"--train-tgt {quoted(list(input.train_tgt))}")
        options.append(f"--val {quoted(list(input.val))}")
        sides = iter(input.tests)
        options += [
            f"--test {t} {quoted([next(sides), next(sides)])}" for t in spec["tests"]
        ]
    return " ".join(options)


def translation_test_files(ext):
    """Input function: the prepared test sets of a translation dataset (``tsv`` pairs, ``ref``
    references or ``src`` sources), in the dataset's order."""

    def files(wildcards):
        tests = cfg.TRANSLATION_FAMILIES[wildcards.dataset]["tests"]
        return [f"results/data/{wildcards.dataset}/{t}.{ext}" for t in tests]

    return files


def named_tests(wildcards, paths):
    """``--test NAME PAIRS`` for each test set."""
    tests = cfg.TRANSLATION_FAMILIES[wildcards.dataset]["tests"]
    return " ".join(
        f"--test {t} {quoted(p)}" for t, p in zip(tests, paths, strict=True)
    )


def scored_tests(wildcards, input):
    """``--test NAME HYPOTHESES REFERENCES SOURCES`` for each test set."""
    tests = cfg.TRANSLATION_FAMILIES[wildcards.dataset]["tests"]
    files = zip(tests, input.hypotheses, input.references, input.sources, strict=True)
    return " ".join(f"--test {t} {quoted([h, r, s])}" for t, h, r, s in files)
