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
        # every maker of one table but the agreement report's (below)
        table="|".join(
            output_names(m) for m in makers.MAKERS if m not in ("figure", "agreement")
        ),
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
        figure=output_names("figure", figures=True),
    localrule: True
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        options=output_options,
        caption=output_caption,
        code=script_code("make_figure"),
    shell:
        "python -m rnnrepro.scripts.make_figure {params.options} --out {output:q} > {log:q} 2>&1"


# Linzen agreement: one job writes the table, the Venn figure (and its counts) and the examples
# that a catalogue declares with the maker "agreement" (by kind: table, venn, examples).
AGREEMENT = {o.kind: o for o in OUTPUTS.values() if o.maker == "agreement"}

if AGREEMENT:

    rule agreement_report:
        input:
            unpack(lambda w: output_inputs({"table": AGREEMENT["table"].name})),
        output:
            csv=f"results/tables/{AGREEMENT['table'].name}.csv",
            md=report(
                makers.path(AGREEMENT["table"]),
                caption="../report/output.rst",
                category=AGREEMENT["table"].paper,
            ),
            venn=report(
                makers.path(AGREEMENT["venn"]),
                caption="../report/output.rst",
                category=AGREEMENT["venn"].paper,
            ),
            venn_csv=f"results/figures/{AGREEMENT['venn'].name}.csv",
            examples=report(
                makers.path(AGREEMENT["examples"]),
                caption="../report/output.rst",
                category=AGREEMENT["examples"].paper,
            ),
        log:
            f"results/logs/tables/{AGREEMENT['table'].name}.log",
        localrule: True
        conda:
            "../../envs/rnnrepro.yaml"
        params:
            options=lambda w, input: output_options(
                {"table": AGREEMENT["table"].name}, input
            ),
            # one job, one caption: the three outputs' own, one after the other
            caption=Untracked("\n\n".join(o.caption for o in AGREEMENT.values())),
            code=script_code("make_agreement_report"),
        shell:
            "python -m rnnrepro.scripts.make_agreement_report {params.options}"
            " --out-table-csv {output.csv:q} --out-table-md {output.md:q} --out-venn {output.venn:q}"
            " --out-venn-csv {output.venn_csv:q} --out-examples {output.examples:q} > {log:q} 2>&1"
