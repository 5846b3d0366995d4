#!/usr/bin/env bash
# Pre-registration I (results/cross_family/siblings/PREREGISTRATION.md): the sibling-source check
# (scripts/sibling_source_check.py) on the six new-family data sets of the other CPUs, each with
# its platform's ResNet rows and its judged operator benchmark (v3 + v4 where a v4 draw exists).
# Usage: scripts/sibling_source_blind.sh      (~8 min on 2 cores; reads data only, times nothing)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
K=data/kernels; N=data/other_cpus; F=data/other_cpus/new_families; R=results/cross_family/siblings
run() {  # $1: name, $2: ResNet rows, $3: new-family rows, rest: benchmark files
  local name=$1 nets=$2 fams=$3; shift 3
  echo "[siblings] $name $(date -u +%FT%TZ)"
  $PY scripts/sibling_source_check.py "$nets" "$fams" "$@" --out "$R/$name" > /dev/null
}
Z5="$K/cpu_epyc_zen5_2c_session21.parquet $K/cpu_epyc_zen5_2c_sampler4.parquet"
GN="$K/cpu_xeon_gnr_2c.parquet $K/cpu_xeon_gnr_2c_sampler4.parquet"
# shellcheck disable=SC2086  # the benchmark lists split into files on purpose
{
run cpu_epyc_zen5_2c "$N/cpu_epyc_zen5_2c.parquet" "$F/cpu_epyc_zen5_2c.parquet" $Z5
run cpu_epyc_zen5_2c_rest "$N/cpu_epyc_zen5_2c.parquet" "$F/cpu_epyc_zen5_2c_rest.parquet" $Z5
run cpu_epyc_zen5_2c_passes "$N/cpu_epyc_zen5_2c.parquet" "$F/cpu_epyc_zen5_2c_passes.parquet" $Z5
run cpu_xeon_gnr_2c "$N/cpu_xeon_gnr_2c.parquet" "$F/cpu_xeon_gnr_2c.parquet" $GN
run cpu_xeon_gnr_2c_rest "$N/cpu_xeon_gnr_2c.parquet" "$F/cpu_xeon_gnr_2c_rest.parquet" $GN
run cpu_xeon_emr_2c "$N/cpu_xeon_emr_2c.parquet" "$F/cpu_xeon_emr_2c.parquet" "$K/cpu_xeon_emr_2c.parquet"
}
$PY scripts/sibling_source_score.py "$R"
