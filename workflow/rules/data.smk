# Data: generated m-bounded Dyck-k languages and their generator floors.


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
    shell:
        "python -m rnnrepro.scripts.generate_dyck --k {params.k} --m {wildcards.m}"
        " --sizes {params.sizes[train]} {params.sizes[val]} {params.sizes[test]}"
        " --seeds {params.seeds[train]} {params.seeds[val]} {params.seeds[test]}"
        " --min-length {params.min_length} --max-length {params.max_length}"
        " --out {output.train} {output.val} {output.test} > {log} 2>&1"


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
    shell:
        "python -m rnnrepro.scripts.dyck_floor --k {params.k} --m {wildcards.m}"
        " --min-length {params.min_length} --splits {input} --out {output} > {log} 2>&1"
