# Input functions and options of the data rules (data.smk).


def download_content(wildcards):
    """A download's params: what its file's content is pinned to (its checksums, after the
    data_sources overrides), so that only a change of content reruns it."""
    try:
        return sources.pinned_content(
            wildcards.corpus, wildcards.name, config.get("data_sources") or None
        )
    except (ValueError, OSError) as error:
        raise WorkflowError(f"data_sources: {error}") from None


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


def ngram_options(wildcards):
    """ngram_baselines options of a text dataset (config ``ngram``): its framing, the
    Kneser-Ney order (``char`` for a family reported in bits per character, else ``word``), the
    training size above which only the unigram is fit and, for a stream, the evaluated-token
    caps of the experiments that read it (0: the whole split)."""
    spec = cfg.TEXT_FAMILIES[names.family(wildcards.dataset)]
    ngram = config["ngram"]
    order = ngram["order"]["char" if spec["metric"] == "bpc" else "word"]
    options = (
        f"--framing {spec['framing']} --order {order}"
        f" --max-train-tokens {ngram['max_train_tokens']}"
    )
    if spec["framing"] == "stream":
        readers = {
            r.experiment for r in cfg.runs(config) if r.dataset == wildcards.dataset
        }
        caps = {cfg.training_caps(config, e).get("max_eval_tokens", 0) for e in readers}
        options += " --eval-tokens " + " ".join(map(str, sorted(caps) or [0]))
    return options
