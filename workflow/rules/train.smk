# One training job per (experiment, model, dataset, seed).


rule train:
    input:
        train="results/data/{dataset}/train.txt",
        val="results/data/{dataset}/val.txt",
    output:
        model=f"{RUNS}/model.pt",
        history=f"{RUNS}/history.csv",
    params:
        run=run_params,
    threads: 1
    log:
        "results/logs/train/{experiment}/{dataset}/{model}/seed{seed}.log",
    shell:
        "python {SCRIPTS}/train.py --run {params.run:q} --seed {wildcards.seed}"
        " --threads {threads} --train {input.train} --val {input.val} --device {config[device]}"
        " --checkpoint {config[checkpoint_dir]}/{wildcards.experiment}/{wildcards.dataset}"
        "/{wildcards.model}/seed{wildcards.seed}.pt"
        " --out-model {output.model} --out-history {output.history} > {log} 2>&1"
