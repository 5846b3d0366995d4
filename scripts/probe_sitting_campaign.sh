#!/usr/bin/env bash
# Pre-registration M (session 25; results/cross_family/probe/PLATFORM/sitting2/PREREGISTRATION.md):
# ResNet configs and probe networks measured in ONE sitting, so that a source of both shares one
# host speed (pre-registration L's probe rows were 1.47x slower than its ResNet rows' sitting).
#
#   1. the host's noise; 2. the list (scripts/probe_list.py --reuse): the first N_PROBE networks
#   of the platform's probe rows (same batch and resolution) and N_RESNET seeded configs of its
#   quiet ResNet rows; 3. carb profile --passes PASSES; carb merge (fastest pass); the two parts
#   into results/ (not data/); every pass's rows; the host's noise again;
#   4. the test (scripts/probe_sitting_test.py) and its judgement (scripts/probe_sitting_score.py).
#
# Usage: scripts/probe_sitting_campaign.sh PLATFORM [N_PROBE N_RESNET PASSES BUDGET_S]
#        (defaults 400 400 4 1800). Run it from a clean checkout, `nice -n -15`, nothing else heavy.
set -euo pipefail
cd "$(dirname "$0")/.."
PLAT=${1:?platform name}
NP=${2:-400}; NR=${3:-400}; PASSES=${4:-4}; BUDGET=${5:-1800}
PY=${PYTHON:-.venv/bin/python}
CARB="$PY -m carb_lib.cli"
. scripts/campaign_lib.sh
OLD="data/other_cpus/probe_nets/$PLAT.parquet"
RES="results/cross_family/probe/$PLAT/sitting2"
[ -e "$OLD" ] || { echo "probe_sitting_campaign: no earlier probe rows $OLD" >&2; exit 2; }
[ -e "$RES/probe_rows.parquet" ] && { echo "probe_sitting_campaign: $RES/probe_rows.parquet exists" >&2; exit 2; }
say() { echo "[probe sitting] $1 $(date -u +%FT%TZ)"; }
mkdir -p "$RES"
say "host noise (before)"
campaign_canary "$RES/canary_before.txt"
say "the list"
$PY scripts/probe_list.py "data/other_cpus/$PLAT.parquet" --reuse "$OLD" --n "$NP" \
  --resnet "$NR" --seed 1 --out "runs/${PLAT}_probe_sitting_list"
say "profile, $PASSES passes"
campaign_profile "$PLAT" "runs/${PLAT}_probe_sitting_list/list.parquet" \
  "runs/${PLAT}_probe_sitting_parts" "$PASSES" "$BUDGET"
say "merge"
campaign_merge "runs/${PLAT}_probe_sitting_parts" "runs/${PLAT}_probe_sitting_all.parquet" \
  "$RES/reference.parquet" "$RES/merge.txt"
campaign_split_family "runs/${PLAT}_probe_sitting_all.parquet" module "$RES/probe_rows.parquet" \
  "$RES/resnet_rows.parquet"
campaign_save_passes "runs/${PLAT}_probe_sitting_parts" "$RES/pass_rows.parquet"
say "host noise (after)"
campaign_canary "$RES/canary_after.txt"
say "the test"
$PY scripts/probe_sitting_test.py "$PLAT" --out "$RES" > "$RES/test_log.txt" 2>&1
$PY scripts/probe_sitting_score.py "$RES"
say "done"
