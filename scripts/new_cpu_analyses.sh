#!/usr/bin/env bash
# The comparisons of a new CPU measured by scripts/new_cpu_campaign.sh (README, *A fifth CPU*):
# nothing is tuned; every command runs the library's defaults. With the v3 draw alone (as on
# every earlier CPU): the kernel law against the roofline law on the ResNet rows, the Zen 3
# models on this CPU from its operators and k rows, notebook 05 (5 seeds), the new families'
# residuals, the fp16 allocator variant; with both draws (v3 + v4, read as one benchmark):
# notebook 05 again, sampler v4 on held-out operators, and the benchmark ablation.
# Usage: scripts/new_cpu_analyses.sh PLATFORM      (~10 min on session 18's Xeon)
set -euo pipefail
cd "$(dirname "$0")/.."
P=${1:?platform name}
PY=${PYTHON:-.venv/bin/python}
PM=${PAPERMILL:-$(dirname "$PY")/papermill}
B3="data/kernels/$P.parquet"; B4="data/kernels/${P}_sampler4.parquet"
NETS="data/other_cpus/$P.parquet"; FAMS="data/other_cpus/new_families/$P.parquet"
say() { echo "[analyses] $1 $(date -u +%FT%TZ)"; }
nb05() {  # notebook 05 on this CPU's rows; $1: kernel_bench as YAML, $2: output suffix
  "$PM" notebooks/05_cross_family.ipynb "runs/05_cross_family_$P$2.ipynb" \
    -p source_dataset "$NETS" -p target_dataset "$FAMS" -y "kernel_bench: $1" \
    -p target_audit "results/measurement/other_cpus/new_families/${P}_audit_rows.parquet" \
    -p source_reference "results/measurement/${P}_reference.parquet" \
    -p target_reference "results/measurement/${P}_newfam_reference.parquet" \
    -y "ks: [10, 50]" -p n_seeds 5 -p preset default \
    -p fig_dir "figures/other_cpus/$P$2" -p results_dir "results/other_cpus/$P$2"
}
mkdir -p runs
say "kernel law replication"
$PY scripts/kernel_law_replication.py "$NETS" "$B3" --out "results/carb/replication_$P"
$PY scripts/kernel_law_worst_rows.py "$NETS" "$B3" > "results/carb/replication_$P/worst_rows.txt"
say "a new CPU from its operators"
$PY scripts/new_cpu_few_rows.py data/cpu_epyc_zen3_2c.parquet data/kernels/cpu_epyc_zen3_2c.parquet \
  "$NETS" "$B3" --out "results/carb/new_cpu_$P"
say "notebook 05"
nb05 "$B3" ""
say "residuals"
$PY scripts/cross_family_residuals.py "$NETS" "$FAMS" "$B3" --out "results/cross_family/residuals/$P"
$PY scripts/alloc_variant_check.py "$NETS" > "results/carb/alloc_variant_check_$P.txt"
if [ -e "$B4" ]; then
  say "with the sampler-v4 draw"
  nb05 "[$B3, $B4]" "_sampler4"
  $PY scripts/sampler_v4_check.py "$B3" "$B4" --out "results/carb/sampler_v4_check_$P"
  $PY scripts/kernel_bench_ablation.py "$NETS" "$FAMS" "$B3" "$B4" \
    --out "results/carb/kernel_bench_ablation_$P"
fi
say "done"
