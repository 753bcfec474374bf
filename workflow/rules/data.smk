# Data: generated m-bounded Dyck-k languages and their generator floors, the downloaded corpora
# and the datasets prepared from them, and the n-gram baselines (input functions:
# functions/data.smk).


rule dyck_data:
    output:
        train="results/data/dyck_m{m}/train.txt",
        val="results/data/dyck_m{m}/val.txt",
        test="results/data/dyck_m{m}/test.txt",
    log:
        "results/logs/data/dyck_m{m}.log",
    wildcard_constraints:
        m=r"\d+",
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        k=config["dyck"]["k"],
        sizes=lambda w: cfg.scale_settings(config)["dyck"]["sizes"],
        seeds=config["dyck"]["split_seeds"],
        min_length=cfg.scale_settings(config)["dyck"]["min_length"],
        max_length=cfg.scale_settings(config)["dyck"]["max_length"],
        code=script_code("generate_dyck"),
    shell:
        "python -m rnnrepro.scripts.generate_dyck --k {params.k} --m {wildcards.m}"
        " --sizes {params.sizes[train]} {params.sizes[val]} {params.sizes[test]}"
        " --seeds {params.seeds[train]} {params.seeds[val]} {params.seeds[test]}"
        " --min-length {params.min_length} --max-length {params.max_length}"
        " --out {output.train:q} {output.val:q} {output.test:q} > {log:q} 2>&1"


rule dyck_floor:
    input:
        rules.dyck_data.output,
    output:
        "results/data/dyck_m{m}/floor.json",
    log:
        "results/logs/data/dyck_m{m}_floor.log",
    wildcard_constraints:
        m=r"\d+",
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        k=config["dyck"]["k"],
        min_length=cfg.scale_settings(config)["dyck"]["min_length"],
        max_length=cfg.scale_settings(config)["dyck"]["max_length"],
        code=script_code("dyck_floor"),
    shell:
        "python -m rnnrepro.scripts.dyck_floor --k {params.k} --m {wildcards.m}"
        " --min-length {params.min_length} --max-length {params.max_length} --splits {input:q} --out {output:q} > {log:q} 2>&1"


# Corpora: fetched from the mirror (config data_mirror) or the canonical URL, verified by sha256
# and written atomically (src/rnnrepro/data/download.py); errors are shown on the terminal too.
rule download:
    output:
        "results/downloads/{corpus}/{name}",
    log:
        "results/logs/downloads/{corpus}/{name}.log",
    wildcard_constraints:
        corpus="[a-z0-9_]+",
        name=r"[A-Za-z0-9_.]+",
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        content=download_content,
        mirror=Untracked(config["data_mirror"]),
        sources=Untracked(config.get("data_sources")),
    shell:
        "python -m rnnrepro.scripts.fetch_data --corpus {wildcards.corpus} --name {wildcards.name}"
        " --mirror={params.mirror:q} --sources={params.sources:q} --out {output:q} 2>&1 | tee {log:q}"


# multi_matrix: PTB sentences, word or character level, optionally with truncated training lines.
rule ptb_text:
    input:
        unpack(ptb_raw_files),
    output:
        train="results/data/{dataset}/train.txt",
        val="results/data/{dataset}/val.txt",
        test="results/data/{dataset}/test.txt",
        vocab="results/data/{dataset}/vocab.txt",
    log:
        "results/logs/data/{dataset}.log",
    wildcard_constraints:
        dataset=names.pattern("ptb_char", "ptb_word", "ptb_char_cut"),
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        options=ptb_text_options,
        code=script_code("prepare_text"),
    shell:
        "python -m rnnrepro.scripts.prepare_text ptb {params.options}"
        " --train {input.train:q} --valid {input.valid:q} --test {input.test:q}"
        ' --out-dir "$(dirname {output.train:q})" > {log:q} 2>&1'


# WikiText-2 and PTB as streams: every line kept, read as one token stream by the training task.
rule stream_text:
    input:
        unpack(stream_inputs),
    output:
        train="results/data/{dataset}/train.txt",
        val="results/data/{dataset}/val.txt",
        test="results/data/{dataset}/test.txt",
        vocab="results/data/{dataset}/vocab.txt",
    log:
        "results/logs/data/{dataset}.log",
    wildcard_constraints:
        dataset="|".join(cfg.STREAM_CORPORA),
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        lines=text_line_options(),
        code=script_code("prepare_text"),
    shell:
        "python -m rnnrepro.scripts.prepare_text stream --train {input.train:q}"
        " --valid {input.valid:q} --test {input.test:q} {params.lines}"
        ' --out-dir "$(dirname {output.train:q})" > {log:q} 2>&1'


# The n-gram baselines under a text table: fit on the dataset's training split, scored on its
# validation and test tokens as the runs score them.
rule ngram_baselines:
    input:
        train="results/data/{dataset}/train.txt",
        val="results/data/{dataset}/val.txt",
        test="results/data/{dataset}/test.txt",
        vocab="results/data/{dataset}/vocab.txt",
    output:
        "results/ngram/{dataset}.csv",
    log:
        "results/logs/ngram/{dataset}.log",
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        options=ngram_options,
        code=script_code("ngram_baselines"),
    shell:
        "python -m rnnrepro.scripts.ngram_baselines {params.options}"
        ' --data "$(dirname {input.train:q})" --out {output:q} > {log:q} 2>&1'


# memory Table 2 (the paper's setting): Linzen's data set split by Linzen's protocol into an LM
# corpus and the test dependencies.
rule linzen_data:
    input:
        "results/downloads/linzen_full/agr_50_mostcommon_10K.tsv.gz",
    output:
        train="results/data/linzen/train.txt",
        val="results/data/linzen/val.txt",
        test="results/data/linzen/test.txt",
        vocab="results/data/linzen/vocab.txt",
        dependencies="results/data/linzen/agreement.tsv",
    log:
        "results/logs/data/linzen.log",
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        lines=text_line_options(),
        code=script_code("prepare_linzen"),
    shell:
        "python -m rnnrepro.scripts.prepare_linzen --deps {input:q} {params.lines}"
        ' --out-dir "$(dirname {output.train:q})" > {log:q} 2>&1'


# general_second_order: every PTB line normalised to 27 symbols, one document per line.
rule ptb_lines:
    input:
        train="results/downloads/ptb/train.txt",
        valid="results/downloads/ptb/valid.txt",
        test="results/downloads/ptb/test.txt",
    output:
        "results/data/ptb_lines/lines.txt",
    log:
        "results/logs/data/ptb_lines.log",
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        code=script_code("prepare_text"),
    shell:
        "python -m rnnrepro.scripts.prepare_text lines --train {input.train:q}"
        " --valid {input.valid:q} --test {input.test:q} --out {output:q} > {log:q} 2>&1"


# general_second_order: one cross-validation fold, tokenised into characters or character bigrams.
rule ptb_lines_fold:
    input:
        rules.ptb_lines.output,
    output:
        train="results/data/ptb_lines_{tokenization}_fold{fold}/train.txt",
        val="results/data/ptb_lines_{tokenization}_fold{fold}/val.txt",
        test="results/data/ptb_lines_{tokenization}_fold{fold}/test.txt",
        vocab="results/data/ptb_lines_{tokenization}_fold{fold}/vocab.txt",
    log:
        "results/logs/data/ptb_lines_{tokenization}_fold{fold}.log",
    wildcard_constraints:
        tokenization="unigram|bigram",
        fold=r"\d+",
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        folds=config["text"]["folds"],
        seed=config["text"]["fold_seed"],
        lines=text_line_options(),
        code=script_code("prepare_text"),
    shell:
        "python -m rnnrepro.scripts.prepare_text folds --lines {input:q}"
        " --tokenization {wildcards.tokenization} --fold {wildcards.fold} --folds {params.folds}"
        ' --seed {params.seed} {params.lines} --out-dir "$(dirname {output.train:q})" > {log:q} 2>&1'
