# Evaluation of trained models and model analyses.


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
        dataset=r"dyck_m\d+",
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        reading=config["dyck"]["reading"],
        device=config["device"],
    shell:
        "python -m rnnrepro.scripts.evaluate_dyck --model {input.model} --history {input.history}"
        " --val {input.val} --test {input.test} --reading {params.reading}"
        " --device {params.device} --out-metrics {output.metrics} --out-ldpa {output.ldpa}"
        " > {log} 2>&1"
