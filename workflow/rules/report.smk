# Analyses, tables and figures (what a declared output gives its job: functions/report.smk).


rule analyse_attention:
    input:
        model=f"{RUNS}/model.pt",
        test="results/data/{dataset}/test.txt",
    output:
        angles=f"{RUNS}/pabs.csv",
        heatmap=f"{RUNS}/heatmap.csv",
    log:
        "results/logs/analyse/{experiment}/{dataset}/{model}/seed{seed}.log",
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        code=run_code("analyse_attention"),
    shell:
        "python -m rnnrepro.scripts.analyse_attention --model {input.model:q} --test {input.test:q}"
        " --out-angles {output.angles:q} --out-heatmap {output.heatmap:q} > {log:q} 2>&1"


# Tables and figures: one rule per kind of product, for every output the papers' catalogues
# (src/rnnrepro/papers/<key>.py) declare; its inputs and options come from the declaration.
rule table:
    input:
        unpack(output_inputs),
    output:
        csv="results/tables/{table}.csv",
        md=report(
            "results/tables/{table}.md",
            caption="../report/output.rst",
            category=output_paper,
        ),
    log:
        "results/logs/tables/{table}.log",
    wildcard_constraints:
        table=output_names(figures=False),
    localrule: True
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        script=lambda w: makers.MAKERS[output_of(w).maker].script,
        options=output_options,
        caption=output_caption,
        code=lambda w: script_code(makers.MAKERS[output_of(w).maker].script),
    shell:
        "python -m rnnrepro.scripts.{params.script} {params.options}"
        " --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"


rule figure:
    input:
        unpack(output_inputs),
    output:
        report(
            "results/figures/{figure}.png",
            caption="../report/output.rst",
            category=output_paper,
        ),
    log:
        "results/logs/figures/{figure}.log",
    wildcard_constraints:
        figure=output_names(figures=True),
    localrule: True
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        script=lambda w: makers.MAKERS[output_of(w).maker].script,
        options=output_options,
        caption=output_caption,
        code=lambda w: script_code(makers.MAKERS[output_of(w).maker].script),
    shell:
        "python -m rnnrepro.scripts.{params.script} {params.options} --out {output:q} > {log:q} 2>&1"


# The scoreboard: every paper number with the best evidence for it (this directory's runs, the
# archived paper-scale runs), per paper a summary line, the claims and a figure; the report
# opens on it.
rule scoreboard:
    input:
        unpack(scoreboard_inputs),
    output:
        csv="results/scoreboard.csv",
        md=report(
            "results/scoreboard.md",
            caption="../report/scoreboard.rst",
            category="0 Scoreboard",
        ),
        figure=report(
            "results/figures/scoreboard.png",
            caption="../report/scoreboard.rst",
            category="0 Scoreboard",
        ),
    log:
        "results/logs/scoreboard.log",
    localrule: True
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        scale=config["scale"],
        archives=repository_path(config["reporting"]["archives"]),
        studies=repository_path(config["reporting"]["studies"]),
        measurements=repository_path("benchmarks/results"),
        tolerances=json.dumps(config["reporting"]["tolerances"]),
        code=script_code("make_scoreboard"),
    shell:
        "python -m rnnrepro.scripts.make_scoreboard --scale {params.scale}"
        " --metrics {input.metrics:q} --floors {input.floors:q} --archives {params.archives:q}"
        " --studies {params.studies:q}"
        " --config {input.config:q} --measurements {params.measurements:q}"
        " --tolerances {params.tolerances:q}"
        " --out-csv {output.csv:q} --out-md {output.md:q} --out-figure {output.figure:q}"
        " > {log:q} 2>&1"
