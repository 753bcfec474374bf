# Analyses, tables and figures.


rule analyse_attention:
    input:
        model=f"{RUNS}/model.pt",
        test="results/data/{dataset}/test.txt",
    output:
        angles=f"{RUNS}/pabs.csv",
        heatmap=f"{RUNS}/heatmap.csv",
    log:
        "results/logs/analyse/{experiment}/{dataset}/{model}/seed{seed}.log",
    wildcard_constraints:
        model="attention_lstm",
    conda:
        "../../envs/rnnrepro.yaml"
    shell:
        "python -m rnnrepro.scripts.analyse_attention --model {input.model} --test {input.test}"
        " --out-angles {output.angles} --out-heatmap {output.heatmap} > {log} 2>&1"


rule table_seed000_table1:
    input:
        metrics=run_files("metrics.json", cfg.runs(config, "seed000")),
        floors=dyck_floors(),
    output:
        csv="results/tables/seed000_table1.csv",
        md=report(
            "results/tables/seed000_table1.md",
            caption="../report/table_seed000_table1.rst",
            category="Seed 000",
        ),
    log:
        "results/logs/tables/seed000_table1.log",
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        tolerance=config["reporting"],
    shell:
        "python -m rnnrepro.scripts.make_table --paper seed000 --table 'Table 1'"
        " --title 'seed000 Table 1 (Dyck-2): paper vs reproduction'"
        " --metrics {input.metrics} --floors {input.floors}"
        " --ppl-tolerance {params.tolerance[ppl_tolerance]}"
        " --wcpa-tolerance {params.tolerance[wcpa_tolerance]}"
        " --out-csv {output.csv} --out-md {output.md} > {log} 2>&1"


rule table_seed001_dyck:
    input:
        metrics=run_files("metrics.json", cfg.runs(config, "seed001")),
    output:
        csv="results/tables/seed001_table2_dyck.csv",
        md=report(
            "results/tables/seed001_table2_dyck.md",
            caption="../report/table_seed001_dyck.rst",
            category="Seed 001",
        ),
    log:
        "results/logs/tables/seed001_table2_dyck.log",
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        tolerance=config["reporting"],
        datasets=DYCK_DATASETS,
    shell:
        "python -m rnnrepro.scripts.make_table --paper seed001 --datasets {params.datasets}"
        " --title 'seed001 Dyck results (Tables 1-2, sections 5.4 and 6.2): paper vs reproduction'"
        " --metrics {input.metrics}"
        " --ppl-tolerance {params.tolerance[ppl_tolerance]}"
        " --wcpa-tolerance {params.tolerance[wcpa_tolerance]}"
        " --out-csv {output.csv} --out-md {output.md} > {log} 2>&1"


# One rule per seed-000 figure (a loop, so that each gets its own report caption).
for figure, (kind, run_file, figure_runs) in FIGURE_INPUTS.items():

    rule:
        name:
            f"figure_seed000_{figure}"
        input:
            run_files(run_file, figure_runs),
        output:
            report(
                f"results/figures/seed000_{figure}.png",
                caption=f"../report/seed000_{figure}.rst",
                category="Seed 000",
            ),
        log:
            f"results/logs/figures/seed000_{figure}.log",
        localrule: True
        conda:
            "../../envs/rnnrepro.yaml"
        params:
            kind=kind,
        shell:
            "python -m rnnrepro.scripts.make_figure {params.kind} --inputs {input} --out {output}"
            " > {log} 2>&1"
