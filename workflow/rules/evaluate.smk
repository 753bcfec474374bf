# Evaluation of trained models and model analyses (input functions: functions/evaluate.smk).


rule evaluate_dyck:
    input:
        model=f"{RUNS}/model.pt",
        history=f"{RUNS}/history.csv",
        val="results/data/{dataset}/val.txt",
        test="results/data/{dataset}/test.txt",
    output:
        metrics=f"{RUNS}/metrics.json",
        ldpa=f"{RUNS}/ldpa.csv",
    log:
        "results/logs/evaluate/{experiment}/{dataset}/{model}/seed{seed}.log",
    wildcard_constraints:
        dataset=names.pattern("dyck"),
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        reading=config["dyck"]["reading"],
        min_events=config["dyck"]["wcpa_min_events"],
        lengths=dyck_lengths,
        scale=config["scale"],
        device=Untracked(config["device"]),
        code=run_code("evaluate_dyck"),
    shell:
        "python -m rnnrepro.scripts.evaluate_dyck --model {input.model:q} --history {input.history:q}"
        " --val {input.val:q} --test {input.test:q} --reading {params.reading}"
        " --wcpa-min-events {params.min_events} {params.lengths} --scale {params.scale}"
        " --device {params.device:q} --out-metrics {output.metrics:q} --out-ldpa {output.ldpa:q}"
        " > {log:q} 2>&1"


rule evaluate_text:
    input:
        model=f"{STAGED}/model.pt",
        val="results/data/{dataset}/val.txt",
        test="results/data/{dataset}/test.txt",
    output:
        metrics=f"{STAGED}/metrics.json",
    log:
        "results/logs/evaluate/{experiment}/{dataset}/{model}/seed{seed}{trialdir}{stagedir}.log",
    wildcard_constraints:
        dataset=names.pattern(*cfg.TEXT_FAMILIES),
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        scale=config["scale"],
        device=Untracked(config["device"]),
        code=run_code("evaluate_text"),
    shell:
        "python -m rnnrepro.scripts.evaluate_text --model {input.model:q} --val {input.val:q}"
        " --test {input.test:q} --scale {params.scale} --device {params.device:q}"
        " --out-metrics {output.metrics:q} > {log:q} 2>&1"


# major_minor: dynamic evaluation of a run's last stage (after fine-tuning), on validation and test,
# each from the trained weights; its own rule, so changing its settings never retrains.
rule dynamic_eval:
    input:
        model=f"{STAGED}/model.pt",
        train="results/data/{dataset}/train.txt",
        val="results/data/{dataset}/val.txt",
        test="results/data/{dataset}/test.txt",
    output:
        f"{STAGED}/dynamic_eval.json",
    log:
        "results/logs/dynamic_eval/{experiment}/{dataset}/{model}/seed{seed}{trialdir}{stagedir}.log",
    conda:
        "../../envs/rnnrepro.yaml"
    threads: 1
    resources:
        gpu=train_gpu,
        runtime=train_runtime,
        mem_mb=train_mem_mb,
    params:
        settings=dynamic_eval_params,
        scale=config["scale"],
        device=Untracked(config["device"]),
        checkpoint=untracked(dynamic_eval_checkpoint),
        code=run_code("dynamic_eval"),
    shell:
        # exec: SLURM's SIGTERM reaches the process itself, which checkpoints and exits.
        "exec python -m rnnrepro.scripts.dynamic_eval --model {input.model:q}"
        " --settings {params.settings:q} --train {input.train:q} --val {input.val:q}"
        " --test {input.test:q} --scale {params.scale} --device {params.device:q}"
        " --threads {threads} --checkpoint {params.checkpoint:q} --code {params.code}"
        " --out {output:q} > {log:q} 2>&1"


# major_minor Fig. 5: test perplexity of a trained model with a share of its layers' output
# features masked (config feature_masking; a change reruns only this rule).
rule evaluate_feature_mask:
    input:
        model=f"{RUNS}/model.pt",
        test="results/data/{dataset}/test.txt",
    output:
        f"{RUNS}/feature_mask.csv",
    log:
        "results/logs/feature_mask/{experiment}/{dataset}/{model}/seed{seed}.log",
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        settings=json.dumps(cfg.feature_masking(config)),
        scale=config["scale"],
        device=Untracked(config["device"]),
        code=run_code("evaluate_feature_mask"),
    shell:
        "python -m rnnrepro.scripts.evaluate_feature_mask --model {input.model:q}"
        " --test {input.test:q} --settings {params.settings:q} --scale {params.scale}"
        " --device {params.device:q} --out {output:q} > {log:q} 2>&1"


# A random search's result: the trial with the lowest validation loss (and every trial's).
rule select_trial:
    input:
        trial_metrics,
    output:
        f"{RUNS}/search.json",
    log:
        "results/logs/select/{experiment}/{dataset}/{model}/seed{seed}.log",
    localrule: True
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        code=script_code("select_trial"),
    shell:
        "python -m rnnrepro.scripts.select_trial --metrics {input:q} --out {output:q} > {log:q} 2>&1"


# second_order_lstm Table 3: Marvin & Linzen's sentence pairs scored by a WikiText-2 model.
rule evaluate_syneval:
    input:
        model=f"{RUNS}/model.pt",
        pairs="results/downloads/syneval/emnlp2018_pairs.tsv",
    output:
        f"{RUNS}/syneval.csv",
    log:
        "results/logs/syneval/{experiment}/{dataset}/{model}/seed{seed}.log",
    wildcard_constraints:
        dataset="wikitext2",
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        max_pairs=f"--max-pairs {SYNEVAL_PAIRS}" if SYNEVAL_PAIRS else "",
        scale=config["scale"],
        device=Untracked(config["device"]),
        code=run_code("evaluate_syneval"),
    shell:
        "python -m rnnrepro.scripts.evaluate_syneval --model {input.model:q} --pairs {input.pairs:q}"
        " {params.max_pairs} --scale {params.scale} --device {params.device:q} --out {output:q}"
        " > {log:q} 2>&1"


# memory Table 2: Linzen's agreement items scored by a language model (its chosen trial).
rule evaluate_agreement:
    input:
        unpack(scored_model),
        unpack(agreement_data),
    output:
        scored=f"{RUNS}/agreement_items.csv",
        summary=f"{RUNS}/agreement.json",
    log:
        "results/logs/agreement/{experiment}/{dataset}/{model}/seed{seed}.log",
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        model=scored_model_options,
        data=agreement_data_options,
        max_items=(
            f"--max-items {cfg.text_settings(config)['agreement_items']}"
            if cfg.text_settings(config)["agreement_items"]
            else ""
        ),
        scale=config["scale"],
        device=Untracked(config["device"]),
        code=run_code("evaluate_agreement"),
    shell:
        "python -m rnnrepro.scripts.evaluate_agreement {params.model} {params.data}"
        " {params.max_items}"
        " --scale {params.scale} --device {params.device:q} --out-items {output.scored:q}"
        " --out-summary {output.summary:q} > {log:q} 2>&1"


# memory Fig. 3: the multipop stack's action probabilities on the test stream.
rule analyse_stack:
    input:
        unpack(scored_model),
        test="results/data/{dataset}/test.txt",
    output:
        states=f"{RUNS}/stack_states.csv",
        max_prob=f"{RUNS}/stack_max_prob.csv",
    log:
        "results/logs/analyse/{experiment}/{dataset}/{model}/seed{seed}.stack.log",
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        model=scored_model_options,
        scale=config["scale"],
        code=run_code("analyse_stack"),
    shell:
        "python -m rnnrepro.scripts.analyse_stack {params.model} --test {input.test:q}"
        " --scale {params.scale} --out-states {output.states:q}"
        " --out-max-prob {output.max_prob:q} > {log:q} 2>&1"


# general_second_order Figs. 2-3: test loss by character position in a word, and prediction examples.
rule analyse_positions:
    input:
        model=f"{RUNS}/model.pt",
        test="results/data/{dataset}/test.txt",
    output:
        positions=f"{RUNS}/position_loss.csv",
        examples=f"{RUNS}/examples.json",
    log:
        "results/logs/analyse/{experiment}/{dataset}/{model}/seed{seed}.log",
    wildcard_constraints:
        dataset=names.pattern("ptb_lines_unigram"),
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        scale=config["scale"],
        device=Untracked(config["device"]),
        code=run_code("evaluate_text"),
    shell:
        "python -m rnnrepro.scripts.evaluate_text --model {input.model:q} --test {input.test:q}"
        " --scale {params.scale} --device {params.device:q} --out-positions {output.positions:q}"
        " --out-examples {output.examples:q} > {log:q} 2>&1"
