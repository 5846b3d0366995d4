#!/usr/bin/env bash
# The analyses of a passes campaign (scripts/passes_campaign.sh; pre-registration G of session
# 23): the protocol check against the quiet host's rows, then notebook 05 on the fresh rows with
# the v3 + v4 operators (judged) and the v3 operators alone (reported), 5 seeds, nothing tuned.
# Usage: scripts/passes_analyses.sh PLATFORM      (~15 min on the Zen 5)
set -euo pipefail
cd "$(dirname "$0")/.."
P=${1:?platform name}
PY=${PYTHON:-.venv/bin/python}
PM=${PAPERMILL:-$(dirname "$PY")/papermill}
B3="data/kernels/${P}_session21.parquet"; B4="data/kernels/${P}_sampler4.parquet"
say() { echo "[passes analyses] $1 $(date -u +%FT%TZ)"; }
nb05() {  # $1: kernel_bench as YAML, $2: output suffix
  "$PM" notebooks/05_cross_family.ipynb "runs/05_cross_family_${P}_passes$2.ipynb" \
    -p source_dataset "data/other_cpus/$P.parquet" \
    -p target_dataset "data/other_cpus/new_families/${P}_passes.parquet" -y "kernel_bench: $1" \
    -y "target_audit: null" \
    -p source_reference "results/measurement/${P}_reference.parquet" \
    -p target_reference "results/measurement/${P}_passes_reference.parquet" \
    -y "ks: [10, 50]" -p n_seeds 5 -p preset default \
    -p fig_dir "figures/other_cpus/${P}_passes$2" -p results_dir "results/other_cpus/${P}_passes$2"
}
mkdir -p runs
say "protocol check"
$PY scripts/passes_check.py "results/measurement/passes_$P/pass_rows.parquet" --quiet "data/other_cpus/new_families/$P.parquet" \
  "data/other_cpus/$P.parquet" --out "results/measurement/passes_$P/check.txt"
say "notebook 05, v3 + v4 operators"
nb05 "[$B3, $B4]" "_sampler4"
say "notebook 05, v3 operators"
nb05 "$B3" ""
say "done"
