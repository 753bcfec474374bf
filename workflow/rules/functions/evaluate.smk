# Input functions and options of the evaluation and analysis rules (evaluate.smk).


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
