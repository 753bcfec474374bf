# One training job per (experiment, model, dataset, seed).


rule train:
    input:
        train="results/data/{dataset}/train.txt",
        val="results/data/{dataset}/val.txt",
    output:
        model=f"{RUNS}/model.pt",
        history=f"{RUNS}/history.csv",
    log:
        "results/logs/train/{experiment}/{dataset}/{model}/seed{seed}.log",
    conda:
        "../../envs/rnnrepro.yaml"
    threads: 1
    resources:
        runtime=train_runtime,
        mem_mb=train_mem_mb,
    params:
        run=run_params,
        device=config["device"],
        checkpoint=checkpoint_path,
    shell:
        # exec: SLURM's SIGTERM reaches the training process itself, which checkpoints and exits.
        "exec python -m rnnrepro.scripts.train --run {params.run:q} --seed {wildcards.seed}"
        " --threads {threads} --train {input.train} --val {input.val} --device {params.device}"
        " --checkpoint {params.checkpoint}"
        " --out-model {output.model} --out-history {output.history} > {log} 2>&1"
