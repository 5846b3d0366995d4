#!/usr/bin/env bash
# Pre-registration U (session 28; results/cross_family/sitting_source/PLATFORM/keep_heap/PREREGISTRATION.md):
# pre-registration M's 400 ResNet configs timed ALONE (a list of them only, as Q and R) with the
# heap kept (Protocol(cpu_keep_heap=True): glibc serves every buffer from its heap and never
# trims it, carb_lib.heap), so that no config's timed calls page-fault whatever the list:
#
#   1. the host's noise; 2. the alone list (scripts/sitting_source_list.py without targets);
#   3. carb profile --passes 4 with the passes campaigns' protocol and cpu_keep_heap; 4. merge
#   (fastest pass) into RES/resnet_rows.parquet; every pass's rows; the host's noise again.
#
# The test (scripts/alone_source_test.py --sitting keep_heap) and its judgement
# (scripts/keep_heap_score.py) run after it.
# Usage: scripts/keep_heap_campaign.sh PLATFORM [BUDGET_S [SITTING SEED]]  (1200, keep_heap, 6)
# Run it from a clean checkout, `nice -n -15`, and run nothing else heavy.
set -euo pipefail
cd "$(dirname "$0")/.."
PLAT=${1:?platform name}
BUDGET=${2:-1200}; SITTING=${3:-keep_heap}; SEED=${4:-6}
PY=${PYTHON:-.venv/bin/python}
CARB="$PY -m carb_lib.cli"
. scripts/campaign_lib.sh
FIRST="results/cross_family/sitting_source/$PLAT"
RES="$FIRST/$SITTING"
RUN="runs/${PLAT}_sitting_source_$SITTING"
[ -e "$FIRST/sitting3/resnet_rows.parquet" ] || { echo "keep_heap_campaign: no beside sitting $FIRST/sitting3/resnet_rows.parquet" >&2; exit 2; }
[ -e "$RES/resnet_rows.parquet" ] && { echo "keep_heap_campaign: $RES/resnet_rows.parquet exists" >&2; exit 2; }
say() { echo "[keep heap] $1 $(date -u +%FT%TZ)"; }
mkdir -p "$RES"
say "host noise (before)"
campaign_canary "$RES/canary_before.txt"
say "the list (alone)"
$PY scripts/sitting_source_list.py "data/other_cpus/$PLAT.parquet" --resnet 400 --seed 1 \
  --out "${RUN}_list"
say "alone, heap kept, 4 passes"
CAMPAIGN_PROTOCOL='{"n_windows": 1, "max_windows": 2, "cpu_keep_heap": true}' \
  campaign_profile "$PLAT" "${RUN}_list/list.parquet" "${RUN}_parts" 4 "$BUDGET" "$SEED"
say "merge"
campaign_merge "${RUN}_parts" "$RES/resnet_rows.parquet" "$RES/reference.parquet" "$RES/merge.txt"
campaign_save_passes "${RUN}_parts" "$RES/pass_rows.parquet"
cp "${RUN}_parts/protocol.json" "$RES/protocol.json"
say "host noise (after)"
campaign_canary "$RES/canary_after.txt"
say "done"
