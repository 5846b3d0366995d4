#!/usr/bin/env bash
# Pre-registration O (session 26; results/cross_family/source_subset/PREREGISTRATION.md): the
# narrow, early-downsampling ResNet source, chosen on the Zen 5's data sets, scored unchanged on
# four data sets never scored with a source subset: the Zen 3's (the paper grid and its new
# families), the fifth CPU's two (Xeon GNR) and the fourth CPU's (Xeon EMR). Then the judgement.
# Usage: scripts/source_subset_blind.sh   (about 10 minutes on 2 cores; times nothing)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
K=data/kernels; N=data/other_cpus; F=data/other_cpus/new_families; R=results/cross_family/source_subset/blind
RULE="where(width <= 1.0 and early_downsample == True)"
run() {  # $1: name, $2: ResNet rows, $3: new-family rows, rest: benchmark files
  local name=$1 nets=$2 fams=$3; shift 3
  echo "[source subset] $name $(date -u +%FT%TZ)"
  $PY scripts/source_subset_check.py "$nets" --targets "$name=$fams:0.3" --bench "$@" \
    --sources all "$RULE" --out "$R/$name" > "$R/$name.log" 2>&1
}
mkdir -p "$R"
run cpu_epyc_zen3_2c data/cpu_epyc_zen3_2c.parquet data/new_families/cpu_epyc_zen3_2c.parquet "$K/cpu_epyc_zen3_2c.parquet"
run cpu_xeon_gnr_2c "$N/cpu_xeon_gnr_2c.parquet" "$F/cpu_xeon_gnr_2c.parquet" "$K/cpu_xeon_gnr_2c.parquet" "$K/cpu_xeon_gnr_2c_sampler4.parquet"
run cpu_xeon_gnr_2c_rest "$N/cpu_xeon_gnr_2c.parquet" "$F/cpu_xeon_gnr_2c_rest.parquet" "$K/cpu_xeon_gnr_2c.parquet" "$K/cpu_xeon_gnr_2c_sampler4.parquet"
run cpu_xeon_emr_2c "$N/cpu_xeon_emr_2c.parquet" "$F/cpu_xeon_emr_2c.parquet" "$K/cpu_xeon_emr_2c.parquet"
$PY scripts/source_subset_score.py "$R"
