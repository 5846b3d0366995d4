#!/usr/bin/env bash
# Pre-registration K (session 24; results/cross_family/siblings/fresh_cpu_epyc_zen5_2c/sitting2/
# PREREGISTRATION.md): the fresh depthwise configs of scripts/fresh_depthwise_campaign.sh measured
# again, later the same day, the same way (PASSES passes, one window each), into the results
# folder (not data/). Then: the agreement with the first sitting (scripts/passes_check.py, the
# first sitting's rows as reference) and the sibling test on the second sitting's rows.
# Usage: scripts/fresh_depthwise_sitting2.sh PLATFORM [PASSES BUDGET_S]   (defaults 6 2400)
# Run it from a clean checkout, `nice -n -15`, and run nothing else heavy.
set -euo pipefail
cd "$(dirname "$0")/.."
PLAT=${1:?platform name}
PASSES=${2:-6}; BUDGET=${3:-2400}
PY=${PYTHON:-.venv/bin/python}
CARB="$PY -m carb_lib.cli"
. scripts/campaign_lib.sh
FIRST="data/other_cpus/new_families/${PLAT}_fresh_depthwise.parquet"
RES="results/cross_family/siblings/fresh_$PLAT/sitting2"
[ -e "$FIRST" ] || { echo "fresh_depthwise_sitting2: no first sitting at $FIRST" >&2; exit 2; }
[ -e "$RES/rows.parquet" ] && { echo "fresh_depthwise_sitting2: $RES/rows.parquet exists" >&2; exit 2; }
say() { echo "[sitting 2] $1 $(date -u +%FT%TZ)"; }
mkdir -p "$RES" runs
say "host noise (before)"
campaign_canary "$RES/canary_before.txt"
say "profile, $PASSES passes"
# the first sitting's file is the config list (carb profile reads its config columns only)
campaign_profile "$PLAT" "$FIRST" "runs/${PLAT}_fresh_depthwise_sitting2_parts" "$PASSES" "$BUDGET" 100
say "merge"
campaign_merge "runs/${PLAT}_fresh_depthwise_sitting2_parts" "$RES/rows.parquet" "" "$RES/merge.txt"
campaign_save_passes "runs/${PLAT}_fresh_depthwise_sitting2_parts" "$RES/pass_rows.parquet"
say "host noise (after)"
campaign_canary "$RES/canary_after.txt"
say "against the first sitting"
$PY scripts/passes_check.py "$RES/pass_rows.parquet" --quiet "$FIRST" --out "$RES/check_vs_first_sitting.txt"
say "the sibling test on these rows"
$PY scripts/fresh_sibling_test.py "data/other_cpus/$PLAT.parquet" \
  "data/other_cpus/new_families/$PLAT.parquet" "$RES/rows.parquet" \
  "data/kernels/${PLAT}_session21.parquet" "data/kernels/${PLAT}_sampler4.parquet" --out "$RES" > /dev/null
$PY scripts/fresh_sibling_score.py "$RES"
say "done"
