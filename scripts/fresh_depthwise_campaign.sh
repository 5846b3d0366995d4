#!/usr/bin/env bash
# Pre-registration J (session 24; results/cross_family/siblings/fresh_PREREGISTRATION.md):
# fresh efficientnet and mobilenetv2 configs at batch >= 16, measured in passes on a CPU measured
# before, then scored with the sibling source (scripts/fresh_sibling_test.py).
#
#   1. the host's noise (scripts/host_noise_canary.py, 20 s);
#   2. the list (scripts/fresh_depthwise_list.py): 100 fp32 configs per family, batch >= 16,
#      none measured on this CPU;
#   3. carb profile --passes PASSES, one window per pass (a second only when the detector flags
#      the first), BUDGET_S in all; carb merge (fastest pass per config, halves check) into
#      data/other_cpus/new_families/PLATFORM_fresh_depthwise.parquet;
#   4. every pass's rows (pass_rows.parquet); the host's noise again; 5. the test and its
#      judgement (scripts/fresh_sibling_score.py; added after session 24's run, which wrote
#      pass_rows.parquet by hand with the same code).
#
# Usage: scripts/fresh_depthwise_campaign.sh PLATFORM [PASSES BUDGET_S]   (defaults 6 2400)
# Run it from a clean checkout, `nice -n -15`, and run nothing else heavy.
set -euo pipefail
cd "$(dirname "$0")/.."
PLAT=${1:?platform name}
PASSES=${2:-6}; BUDGET=${3:-2400}
PY=${PYTHON:-.venv/bin/python}
CARB="$PY -m carb_lib.cli"
. scripts/campaign_lib.sh
NEW="data/other_cpus/new_families/${PLAT}_fresh_depthwise.parquet"
RES="results/cross_family/siblings/fresh_$PLAT"
[ -e "$NEW" ] && { echo "fresh_depthwise_campaign: $NEW exists" >&2; exit 2; }
say() { echo "[fresh depthwise] $1 $(date -u +%FT%TZ)"; }
mkdir -p "$RES"
say "host noise (before)"
campaign_canary "$RES/canary_before.txt"
say "the list"
# shellcheck disable=SC2086  # the glob names every earlier file of this CPU
$PY scripts/fresh_depthwise_list.py --measured data/other_cpus/new_families/${PLAT}*.parquet \
  --out "runs/${PLAT}_fresh_depthwise_list"
say "profile, $PASSES passes"
campaign_profile "$PLAT" "runs/${PLAT}_fresh_depthwise_list/list.parquet" \
  "runs/${PLAT}_fresh_depthwise_parts" "$PASSES" "$BUDGET"
say "merge"
campaign_merge "runs/${PLAT}_fresh_depthwise_parts" "$NEW" \
  "results/measurement/${PLAT}_fresh_depthwise_reference.parquet" "$RES/merge.txt"
campaign_save_passes "runs/${PLAT}_fresh_depthwise_parts" "$RES/pass_rows.parquet"
say "host noise (after)"
campaign_canary "$RES/canary_after.txt"
say "the test"
$PY scripts/fresh_sibling_test.py "data/other_cpus/$PLAT.parquet" \
  "data/other_cpus/new_families/$PLAT.parquet" "$NEW" \
  "data/kernels/${PLAT}_session21.parquet" "data/kernels/${PLAT}_sampler4.parquet" --out "$RES" > /dev/null
$PY scripts/fresh_sibling_score.py "$RES"
say "done"
