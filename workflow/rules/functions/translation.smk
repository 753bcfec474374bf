# Input functions and options of the translation rules (translation.smk).


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
