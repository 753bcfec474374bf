# Input functions and options of the training rules (train.smk).


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
