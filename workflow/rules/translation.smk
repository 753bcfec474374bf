# Translation (major_minor §V-D4, Tables XI-XII): the prepared pairs, training, perplexity,
# beam search and BLEU. Training, translation and scoring are separate rules: a new beam width
# retranslates and rescores, never retrains (input functions: functions/translation.smk).


# The corpus's files, BPE-encoded with a joint vocabulary trained on its training pairs (or, at
# a scale with `translation.stand_in`, generated pairs: rnnrepro.data.parallel).
rule translation_data:
    input:
        unpack(translation_corpus_files),
    output:
        train="results/data/{dataset}/train.tsv",
        val="results/data/{dataset}/val.tsv",
        tests=expand(
            "results/data/{{dataset}}/{test}.{ext}",
            test=TRANSLATION_TESTS,
            ext=("tsv", "ref", "src"),
        ),
        vocab="results/data/{dataset}/vocab.txt",
        bpe="results/data/{dataset}/bpe.model",
        record="results/data/{dataset}/data.json",
    log:
        "results/logs/data/{dataset}.log",
    wildcard_constraints:
        dataset=names.pattern(*cfg.TRANSLATION_FAMILIES),
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        options=translation_data_options,
        code=script_code("prepare_translation"),
    shell:
        "python -m rnnrepro.scripts.prepare_translation {params.options}"
        ' --out-dir "$(dirname {output.train:q})" > {log:q} 2>&1'


# The training job of a translation run: scripts/train.py's loop and checkpoints with the
# translation task (rnnrepro.translation_task); the train rule's output paths, so it is ordered
# first for the translation datasets, which only it can read.
rule train_translation:
    input:
        train="results/data/{dataset}/train.tsv",
        val="results/data/{dataset}/val.tsv",
        vocab="results/data/{dataset}/vocab.txt",
    output:
        model=f"{RUNS}/model.pt",
        history=f"{RUNS}/history.csv",
    log:
        "results/logs/train/{experiment}/{dataset}/{model}/seed{seed}.log",
    wildcard_constraints:
        dataset=names.pattern(*cfg.TRANSLATION_FAMILIES),
    conda:
        "../../envs/rnnrepro.yaml"
    threads: 1
    resources:
        gpu=train_gpu,
        runtime=train_runtime,
        mem_mb=train_mem_mb,
    params:
        run=run_params,
        identity=run_identity,
        code=run_code("train_translation"),
        device=Untracked(config["device"]),
        checkpoint=untracked(checkpoint_path),
    shell:
        "exec python -m rnnrepro.scripts.train_translation --run {params.run:q}"
        " --seed {wildcards.seed} --identity {params.identity:q} --threads {threads}"
        " --train {input.train:q} --val {input.val:q} --vocab {input.vocab:q}"
        " --device {params.device:q} --checkpoint {params.checkpoint:q} --code {params.code}"
        " --out-model {output.model:q} --out-history {output.history:q} > {log:q} 2>&1"


ruleorder: train_translation > train


# Perplexity per target token on the validation set and every test set (teacher forcing), beside
# an add-one unigram model's of the training targets.
rule evaluate_translation:
    input:
        model=f"{RUNS}/model.pt",
        train="results/data/{dataset}/train.tsv",
        val="results/data/{dataset}/val.tsv",
        tests=translation_test_files("tsv"),
    output:
        metrics=f"{RUNS}/metrics.json",
    log:
        "results/logs/evaluate/{experiment}/{dataset}/{model}/seed{seed}.log",
    wildcard_constraints:
        dataset=names.pattern(*cfg.TRANSLATION_FAMILIES),
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        tests=lambda w, input: named_tests(w, input.tests),
        scale=config["scale"],
        device=Untracked(config["device"]),
        code=run_code("evaluate_translation"),
    shell:
        "python -m rnnrepro.scripts.evaluate_translation --model {input.model:q}"
        " --train {input.train:q} --val {input.val:q} {params.tests} --scale {params.scale} --device {params.device:q}"
        " --out-metrics {output.metrics:q} > {log:q} 2>&1"


# Beam search over one test set; the beam width and the length limit are this rule's params.
rule translate:
    input:
        model=f"{RUNS}/model.pt",
        pairs="results/data/{dataset}/{test}.tsv",
        bpe="results/data/{dataset}/bpe.model",
    output:
        f"{RUNS}/translations/{{test}}.txt",
    log:
        "results/logs/translate/{experiment}/{dataset}/{model}/seed{seed}/{test}.log",
    wildcard_constraints:
        dataset=names.pattern(*cfg.TRANSLATION_FAMILIES),
        test="|".join(TRANSLATION_TESTS),
    conda:
        "../../envs/rnnrepro.yaml"
    threads: 1
    resources:
        gpu=train_gpu,
    params:
        beam=cfg.translation_settings(config)["beam_width"],
        ratio=cfg.translation_settings(config)["max_decode_ratio"],
        device=Untracked(config["device"]),
        code=run_code("translate"),
    shell:
        "python -m rnnrepro.scripts.translate --model {input.model:q} --pairs {input.pairs:q}"
        " --bpe-model {input.bpe:q} --beam-width {params.beam} --max-decode-ratio {params.ratio}"
        " --threads {threads} --device {params.device:q} --out {output:q} > {log:q} 2>&1"


# BLEU of every test set (sacrebleu, its signature beside each score), with the perplexities, and
# the BLEU of the source copied as its translation.
rule score_translation:
    input:
        metrics=f"{RUNS}/metrics.json",
        hypotheses=lambda w: expand(
            f"results/runs/{run_of(w).path}/translations/{{test}}.txt",
            test=cfg.TRANSLATION_FAMILIES[w.dataset]["tests"],
        ),
        references=translation_test_files("ref"),
        sources=translation_test_files("src"),
    output:
        f"{RUNS}/translation.json",
    log:
        "results/logs/score_translation/{experiment}/{dataset}/{model}/seed{seed}.log",
    wildcard_constraints:
        dataset=names.pattern(*cfg.TRANSLATION_FAMILIES),
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        tests=lambda w, input: scored_tests(w, input),
        beam=cfg.translation_settings(config)["beam_width"],
        code=script_code("score_translation"),
    shell:
        "python -m rnnrepro.scripts.score_translation --metrics {input.metrics:q}"
        " {params.tests} --beam-width {params.beam} --out {output:q} > {log:q} 2>&1"
