#!/usr/bin/env bash
# multi_matrix's Tables 1-2, word block, at paper scale from the archived track (issue 46), with
# no retraining: every finished run in benchmarks/results/multi_matrix_word (a run not finished
# yet is a `missing` row), the n-gram baselines of the full PTB (benchmarks/results/ngram_paper).
#   bash benchmarks/multi_matrix_word_tables.sh
set -euo pipefail
archive=benchmarks/results/multi_matrix_word
runs=$archive/multi_matrix/ptb_word
tolerances=$(python -c 'import json, yaml; print(json.dumps(yaml.safe_load(open("config.yaml"))["reporting"]["tolerances"]))')
note="Paper scale, seed 1 only (the paper reports one run per model), each run trained on one CPU core (benchmarks/results/multi_matrix_word: manifest.csv gives each run's commit, machine and training code; segments.csv the stretches of the track). Training minutes are the wall time of the epochs, including minutes the track was stopped (SIGSTOP) while tests were measured (segments.csv, paused_seconds); the paper's are minutes on one Tesla M60 GPU."
for table in 1 2; do
    python -m rnnrepro.scripts.make_table --paper multi_matrix --table "Table $table" \
        --datasets ptb_word --scale paper --tolerances "$tolerances" \
        --title "multi_matrix Table $table, word block, at paper scale" \
        --metrics "$runs"/*/seed1/metrics.json --histories "$runs"/*/seed1/history.csv \
        --ngram benchmarks/results/ngram_paper/ptb_word.csv --note "$note" \
        --out-csv "$archive/multi_matrix_table${table}_word.csv" \
        --out-md "$archive/multi_matrix_table${table}_word.md"
done
