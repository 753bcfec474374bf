# One training job per (experiment, model, dataset, seed) and stage: `train` writes the first
# stage in the run's directory; `finetune` (the same job, its own rule) a later one in a
# subdirectory, starting from the model of the stage before (train_inputs;
# functions/train.smk).


rule train:
    input:
        unpack(train_inputs),
    output:
        model=f"{STAGED}/model.pt",
        history=f"{STAGED}/history.csv",
    log:
        "results/logs/train/{experiment}/{dataset}/{model}/seed{seed}{trialdir}{stagedir}.log",
    wildcard_constraints:
        stagedir="(?:)",  # the first stage: no subdirectory
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
        code=run_code("train"),
        options=train_options,
        # where and on what it runs, not what it computes: no rerun when they change
        device=Untracked(config["device"]),
        checkpoint=untracked(checkpoint_path),
    shell:
        # exec: SLURM's SIGTERM reaches the training process itself, which checkpoints and exits.
        "exec python -m rnnrepro.scripts.train --run {params.run:q} --seed {wildcards.seed}"
        " --identity {params.identity:q}"
        " --threads {threads} --train {input.train:q} --val {input.val:q} {params.options}"
        " --device {params.device:q}"
        " --checkpoint {params.checkpoint:q} --code {params.code}"
        " --out-model {output.model:q} --out-history {output.history:q} > {log:q} 2>&1"


use rule train as finetune with:
    wildcard_constraints:
        stagedir=cfg.stage_dir("finetune"),
