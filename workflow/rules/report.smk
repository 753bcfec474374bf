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
        model=r"attention_lstm(_\d+)?",
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        code=run_code("analyse_attention"),
    shell:
        "python -m rnnrepro.scripts.analyse_attention --model {input.model:q} --test {input.test:q}"
        " --out-angles {output.angles:q} --out-heatmap {output.heatmap:q} > {log:q} 2>&1"


rule table_second_order_lstm_table1:
    input:
        metrics=run_files("metrics.json", SECOND_ORDER_LSTM_DYCK),
        histories=run_files("history.csv", SECOND_ORDER_LSTM_DYCK),
        floors=dyck_floors(),
    output:
        csv="results/tables/second_order_lstm_table1.csv",
        md=report(
            "results/tables/second_order_lstm_table1.md",
            caption="../report/table_second_order_lstm_table1.rst",
            category="second_order_lstm",
        ),
    log:
        "results/logs/tables/second_order_lstm_table1.log",
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        tolerance=config["reporting"],
        scale=config["scale"],
        notes=scale_note_options("dyck"),
        min_events=config["dyck"]["wcpa_min_events"],
        code=script_code("make_table"),
    shell:
        "python -m rnnrepro.scripts.make_table --paper second_order_lstm --table 'Table 1'"
        " --title 'second_order_lstm Table 1 (Dyck-2): paper vs reproduction'"
        " --metrics {input.metrics:q} --histories {input.histories:q} --floors {input.floors:q}"
        " --scale {params.scale} {params.notes}"
        " --ppl-tolerance {params.tolerance[ppl_tolerance]}"
        " --wcpa-tolerance {params.tolerance[wcpa_tolerance]}"
        " --wcpa-min-events {params.min_events}"
        " --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"


rule table_multi_matrix_dyck:
    input:
        metrics=run_files("metrics.json", family_runs("multi_matrix", ["dyck"])),
        histories=run_files("history.csv", family_runs("multi_matrix", ["dyck"])),
        floors=dyck_floors(),
    output:
        csv="results/tables/multi_matrix_table2_dyck.csv",
        md=report(
            "results/tables/multi_matrix_table2_dyck.md",
            caption="../report/table_multi_matrix_dyck.rst",
            category="multi_matrix",
        ),
    log:
        "results/logs/tables/multi_matrix_table2_dyck.log",
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        tolerance=config["reporting"],
        datasets=DYCK_DATASETS,
        scale=config["scale"],
        notes=scale_note_options("dyck"),
        min_events=config["dyck"]["wcpa_min_events"],
        code=script_code("make_table"),
    shell:
        "python -m rnnrepro.scripts.make_table --paper multi_matrix --datasets {params.datasets}"
        " --title 'multi_matrix Dyck results (Tables 1-2, sections 5.4 and 6.2): paper vs reproduction'"
        " --metrics {input.metrics:q} --histories {input.histories:q} --floors {input.floors:q}"
        " --scale {params.scale} {params.notes}"
        " --ppl-tolerance {params.tolerance[ppl_tolerance]}"
        " --wcpa-tolerance {params.tolerance[wcpa_tolerance]}"
        " --wcpa-min-events {params.min_events}"
        " --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"


# Seed 000 Fig. 3's claim (attention learns WCPA faster and more steadily), from every history.
rule table_second_order_lstm_fig3_claim:
    input:
        run_files("history.csv", SECOND_ORDER_LSTM_DYCK),
    output:
        csv="results/tables/second_order_lstm_fig3_claim.csv",
        md=report(
            "results/tables/second_order_lstm_fig3_claim.md",
            caption="../report/table_second_order_lstm_fig3_claim.rst",
            category="second_order_lstm",
        ),
    log:
        "results/logs/tables/second_order_lstm_fig3_claim.log",
    localrule: True
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        notes=scale_note_options("dyck"),
        code=script_code("check_wcpa_claim"),
    shell:
        "python -m rnnrepro.scripts.check_wcpa_claim --histories {input:q} {params.notes}"
        " --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"


# One rule per seed-000 figure (a loop, so that each gets its own report caption).
for figure, (kind, run_file, figure_runs, track) in FIGURE_INPUTS.items():

    rule:
        name:
            f"figure_second_order_lstm_{figure}"
        input:
            run_files(run_file, figure_runs),
        output:
            report(
                f"results/figures/second_order_lstm_{figure}.png",
                caption=f"../report/second_order_lstm_{figure}.rst",
                category="second_order_lstm",
            ),
        log:
            f"results/logs/figures/second_order_lstm_{figure}.log",
        localrule: True
        conda:
            "../../envs/rnnrepro.yaml"
        params:
            kind=kind,
            options=figure_options(kind),
            notes=scale_note_options(track),
            code=script_code("make_figure"),
        shell:
            "python -m rnnrepro.scripts.make_figure {params.kind} --inputs {input:q} --out {output:q}"
            " {params.options} {params.notes} > {log:q} 2>&1"


# Seed 000 Table 3: syntactic evaluation of the WikiText-2 language models.
rule table_second_order_lstm_table3:
    input:
        run_files("syneval.csv", SYNEVAL_RUNS),
    output:
        csv="results/tables/second_order_lstm_table3.csv",
        md=report(
            "results/tables/second_order_lstm_table3.md",
            caption="../report/table_second_order_lstm_table3.rst",
            category="second_order_lstm",
        ),
    log:
        "results/logs/tables/second_order_lstm_table3.log",
    localrule: True
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        models=" ".join(dict.fromkeys(r.model for r in SYNEVAL_RUNS)),
        tolerance=config["reporting"]["accuracy_tolerance"],
        scale=config["scale"],
        notes=scale_note_options("text"),
        code=script_code("make_syneval_table"),
    shell:
        "python -m rnnrepro.scripts.make_syneval_table --results {input:q} --models {params.models}"
        " --tolerance {params.tolerance} --scale {params.scale} {params.notes}"
        " --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"


# Text tables: one rule per table, the paper's numbers next to the runs.
# name -> (paper, table labels, dataset filter, metrics files of the runs, title)
TEXT_TABLES = {
    "multi_matrix_table2_ptb": (
        "multi_matrix",
        "'Table 2'",
        "ptb_char ptb_word",
        run_files(
            "metrics.json", family_runs("multi_matrix", ["ptb_char", "ptb_word"])
        ),
        "multi_matrix Table 2 (PTB): paper vs reproduction",
    ),
    "multi_matrix_table3": (
        "multi_matrix",
        "'Table 3'",
        " ".join(cfg.dataset_names(config, "ptb_char_cut")),
        run_files("metrics.json", family_runs("multi_matrix", ["ptb_char_cut"])),
        "multi_matrix Table 3 (partial-sentence training): paper vs reproduction",
    ),
    "multi_matrix_table1": (
        "multi_matrix",
        "'Table 1'",
        "ptb_char ptb_word",
        run_files(
            "metrics.json", family_runs("multi_matrix", ["ptb_char", "ptb_word"])
        ),
        "multi_matrix Table 1 (PTB training time and epochs): paper vs reproduction",
    ),
    "second_order_lstm_table2": (
        "second_order_lstm",
        "'Table 2'",
        "wikitext2",
        run_files("metrics.json", SECOND_ORDER_LSTM_WIKITEXT2),
        "second_order_lstm Table 2 (WikiText-2): paper vs reproduction",
    ),
    "memory_table1": (
        "memory",
        "'Table 1'",
        "ptb_stream wikitext2",
        run_files("metrics.json", MEMORY_RUNS),
        "memory Table 1 (PTB and WikiText-2 perplexity): paper vs reproduction",
    ),
    "general_second_order_table1": (
        "general_second_order",
        "'Table 1' 'Section 4.1'",
        "",
        run_files(
            "metrics.json",
            [
                r
                for r in family_runs("general_second_order", ["ptb_lines_unigram"])
                if r.model in GENERAL_SECOND_ORDER_TABLE1
            ],
        ),
        "general_second_order Table 1 (first-order term ablation): paper vs reproduction",
    ),
    "major_minor_table2": (
        "major_minor",
        "'Table II'",
        "ptb_stream",
        stage_metrics(family_runs("major_minor", ["ptb_stream"])),
        "major_minor Table II (PTB: trained, + fine-tuning, + dynamic evaluation): paper vs reproduction",
    ),
    "major_minor_table3": (
        "major_minor",
        "'Table III'",
        "wikitext2",
        stage_metrics(family_runs("major_minor", ["wikitext2"])),
        "major_minor Table III (WikiText-2: trained, + fine-tuning, + dynamic evaluation): paper vs reproduction",
    ),
    "major_minor_table7": (
        "major_minor",
        "'Table VII'",
        "wikitext103",
        stage_metrics(family_runs("major_minor", ["wikitext103"])),
        "major_minor Table VII (WikiText-103): paper vs reproduction",
    ),
}

for name, (paper, labels, datasets, metrics_files, title) in TEXT_TABLES.items():

    rule:
        name:
            f"table_{name}"
        input:
            metrics=metrics_files,
            corpus=corpus_files(name),
        output:
            csv=f"results/tables/{name}.csv",
            md=report(
                f"results/tables/{name}.md",
                caption=f"../report/table_{name}.rst",
                category=paper,
            ),
        log:
            f"results/logs/tables/{name}.log",
        localrule: True
        conda:
            "../../envs/rnnrepro.yaml"
        params:
            paper=paper,
            labels=labels,
            datasets=f"--datasets {datasets}" if datasets else "",
            corpus=(
                f"--corpus {CHECKED_CORPORA[name]} {' '.join(corpus_files(name))}"
                if name in CHECKED_CORPORA
                else ""
            ),
            title=title,
            notes=scale_note_options("text", paper),
            scale=config["scale"],
            tolerance=config["reporting"],
            code=script_code("make_table"),
        shell:
            "python -m rnnrepro.scripts.make_table --paper {params.paper} --table {params.labels}"
            " {params.datasets} --title {params.title:q} --metrics {input.metrics:q} {params.notes}"
            " {params.corpus}"
            " --scale {params.scale}"
            " --bpc-tolerance {params.tolerance[bpc_tolerance]}"
            " --ce-tolerance {params.tolerance[ce_tolerance]}"
            " --ppl-tolerance {params.tolerance[ppl_tolerance]}"
            " --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"


# Seed 003 figures: Fig. 1 from the ratio sweep; Figs. 2-3 from the best Table 1 model.
GENERAL_SECOND_ORDER_FIGURES = {
    "fig1_ratio": (
        "ratio",
        run_files(
            "metrics.json",
            [
                r
                for r in cfg.runs(config, "general_second_order")
                if r.model.startswith("ratio_")
            ],
        ),
    ),
    "fig2_examples": ("examples", general_second_order_table1_files("examples.json")),
    "fig3_position_loss": (
        "position_loss",
        general_second_order_table1_files("position_loss.csv"),
    ),
}

for figure, (kind, figure_inputs) in GENERAL_SECOND_ORDER_FIGURES.items():

    rule:
        name:
            f"figure_general_second_order_{figure}"
        input:
            figure_inputs,
        output:
            report(
                f"results/figures/general_second_order_{figure}.png",
                caption=f"../report/general_second_order_{figure}.rst",
                category="general_second_order",
            ),
        log:
            f"results/logs/figures/general_second_order_{figure}.log",
        localrule: True
        conda:
            "../../envs/rnnrepro.yaml"
        params:
            kind=kind,
            notes=scale_note_options("text"),
            code=script_code("make_figure"),
        shell:
            "python -m rnnrepro.scripts.make_figure {params.kind} --inputs {input:q} --out {output:q}"
            " {params.notes} > {log:q} 2>&1"


# Seed 002 Table 2, Figure 2 and Table 3: Linzen agreement of the three configured models.
rule report_memory_agreement:
    input:
        summaries=run_files("agreement.json", AGREEMENT_RUNS),
        scored=run_files("agreement_items.csv", AGREEMENT_RUNS),
    output:
        csv="results/tables/memory_table2.csv",
        md=report(
            "results/tables/memory_table2.md",
            caption="../report/table_memory_table2.rst",
            category="memory",
        ),
        venn=report(
            "results/figures/memory_fig2_venn.png",
            caption="../report/memory_fig2_venn.rst",
            category="memory",
        ),
        venn_csv="results/figures/memory_fig2_venn.csv",
        examples=report(
            "results/tables/memory_table3.md",
            caption="../report/table_memory_table3.rst",
            category="memory",
        ),
    log:
        "results/logs/tables/memory_agreement.log",
    localrule: True
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        models=" ".join(AGREEMENT["models"]) if AGREEMENT else "",
        tolerance=config["reporting"],
        scale=config["scale"],
        notes=scale_note_options("text"),
        code=script_code("make_agreement_report"),
    shell:
        "python -m rnnrepro.scripts.make_agreement_report --models {params.models}"
        " --summaries {input.summaries:q} --items {input.scored:q} --scale {params.scale}"
        " --accuracy-tolerance {params.tolerance[accuracy_tolerance]}"
        " --ppl-tolerance {params.tolerance[ppl_tolerance]} {params.notes}"
        " --out-table-csv {output.csv:q} --out-table-md {output.md:q} --out-venn {output.venn:q}"
        " --out-venn-csv {output.venn_csv:q} --out-examples {output.examples:q} > {log:q} 2>&1"


rule figure_memory_fig3_stack_actions:
    input:
        run_files("stack_states.csv", STACK_RUNS),
        run_files("stack_max_prob.csv", STACK_RUNS),
    output:
        report(
            "results/figures/memory_fig3_stack_actions.png",
            caption="../report/memory_fig3_stack_actions.rst",
            category="memory",
        ),
    log:
        "results/logs/figures/memory_fig3_stack_actions.log",
    localrule: True
    conda:
        "../../envs/rnnrepro.yaml"
    params:
        notes=scale_note_options("text"),
        code=script_code("make_figure"),
    shell:
        "python -m rnnrepro.scripts.make_figure stack_actions --inputs {input:q} --out {output:q}"
        " {params.notes} > {log:q} 2>&1"


# Seed 004 Tables IV and V: the AWD-MMLSTM-MoS hyper-parameters and its dynamic-evaluation
# settings, as config.yaml resolves them (paper scale, and the selected scale where different).
for number, table in ((4, "Table IV"), (5, "Table V")):

    rule:
        name:
            f"table_major_minor_table{number}"
        output:
            csv=f"results/tables/major_minor_table{number}.csv",
            md=report(
                f"results/tables/major_minor_table{number}.md",
                caption=f"../report/table_major_minor_table{number}.rst",
                category="major_minor",
            ),
        log:
            f"results/logs/tables/major_minor_table{number}.log",
        localrule: True
        conda:
            "../../envs/rnnrepro.yaml"
        params:
            table=table,
            settings=config_table_settings("paper"),
            scaled=(
                ""
                if config["scale"] == "paper"
                else f"--scaled {shlex.quote(config_table_settings(config['scale']))}"
            ),
            scale=config["scale"],
            code=script_code("make_config_table"),
        shell:
            "python -m rnnrepro.scripts.make_config_table --paper major_minor"
            " --table {params.table:q} --settings {params.settings:q} {params.scaled}"
            " --scale {params.scale}"
            " --title 'major_minor {params.table}: paper vs config.yaml'"
            " --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"
