#!/usr/bin/env bash
# memory's Table 1, PTB block, at paper scale from the archived track (issue 58), with no
# retraining: the finished trial of each LSTM baseline in benchmarks/results/memory_ptb (one trial
# per model, not the paper's search: docs/methods.md §11.2), the n-gram baselines of the full PTB
# stream (benchmarks/results/ngram_paper); every other row is `missing` (not run by the track).
#   bash benchmarks/memory_ptb_tables.sh
set -euo pipefail
shopt -s nullglob
archive=benchmarks/results/memory_ptb
runs=("$archive"/memory/ptb_stream/*/seed1/trial*)
tolerances=$(python -c 'import json, yaml; print(json.dumps(yaml.safe_load(open("config.yaml"))["reporting"]["tolerances"]))')
note="Paper scale, the LSTM-650 and the LSTM-920 only, one trial of each model's random search, chosen by its settings before any run (the LSTM-650's trial 1, lr 0.00640, l2 3.68e-4: the recipe study's; the LSTM-920's trial 5, lr 0.00621, l2 1.78e-4: of its ten draws the lr nearest the LSTM-650's), seed 1, each trained with two threads on a 2-core CPU machine, the LSTM-650 first (benchmarks/results/memory_ptb: manifest.csv gives each run's commit, machine and training code; segments.csv the stretches of the track). The paper picks each model's best of an unstated number of trials. Every other row (the memory models) is missing: not run by this track."
metrics=() histories=()
for run in "${runs[@]}"; do
    [[ -f $run/metrics.json ]] && metrics+=("$run/metrics.json") && histories+=("$run/history.csv")
done
python -m rnnrepro.scripts.make_table --paper memory --table "Table 1" \
    --datasets ptb_stream --scale paper --tolerances "$tolerances" \
    --title "memory Table 1, PTB block, at paper scale" \
    --metrics "${metrics[@]}" --histories "${histories[@]}" \
    --ngram benchmarks/results/ngram_paper/ptb_stream.csv --note "$note" \
    --out-csv "$archive/memory_table1_ptb.csv" --out-md "$archive/memory_table1_ptb.md"
