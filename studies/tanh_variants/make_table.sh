#!/usr/bin/env bash
# general_second_order's Table 1 with one variant's so_tanh in place of the archived one:
#   bash studies/tanh_variants/make_table.sh lr3e-4 "Adam 3e-4 (general_second_order_lr3e-4.yaml)"
# The other nine models are the archived fold-1 runs (benchmarks/results/fold1, the paper's
# reading); the n-gram baselines are the fold's (benchmarks/results/ngram_paper).
set -euo pipefail
variant=$1 label=$2
out=studies/tanh_variants/$variant
runs=benchmarks/results/fold1/general_second_order/ptb_lines_unigram_fold1
metrics=$(ls "$runs"/*/seed1/metrics.json | grep -v /so_tanh/)
corpus=$(python -c "from rnnrepro.papers.general_second_order import CORPUS_NOTE; print(CORPUS_NOTE)")
tolerances=$(python -c 'import json, yaml; print(json.dumps(yaml.safe_load(open("config.yaml"))["reporting"]["tolerances"]))')
python -m rnnrepro.scripts.make_table --paper general_second_order --table "Table 1" \
    "Section 4.1" --datasets ptb_lines_unigram --bpc-in-nats --scale fold1 --tolerances "$tolerances" \
    --title "general_second_order Table 1 (fold 1), so_tanh under the variant $label" \
    --metrics $metrics "$out"/general_second_order/ptb_lines_unigram_fold1/so_tanh/seed1/metrics.json \
    --ngram benchmarks/results/ngram_paper/ptb_lines_unigram_fold1.csv \
    --note "$corpus" \
    --note "so_tanh trained under the variant $label ($out); the other nine models are the archived fold-1 runs at the paper's reading (Adam 1e-3, B ~ N(0, 1); benchmarks/results/fold1), so the orderings below mix two procedures." \
    --out-csv "$out"/general_second_order_table1.csv --out-md "$out"/general_second_order_table1.md
