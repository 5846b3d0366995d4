#!/usr/bin/env bash
# Pre-registration Q (session 27; results/cross_family/sitting_source/PLATFORM/alone/PREREGISTRATION.md):
# pre-registration M's 400 ResNet configs timed ALONE against the same configs timed BESIDE the
# depthwise target configs, in one session, with the alone passes on both sides of the beside
# sitting so that the host's drift falls on both alike:
#
#   1. the host's noise; the alone list (scripts/sitting_source_list.py without targets);
#   2. alone, passes 1-2 (carb profile --passes 2, seed 3);
#   3. beside: scripts/sitting_source_campaign.sh PLATFORM 4 BUDGET sitting3 2 with NO_TEST=1
#      (the 837 configs of pre-registrations N and P, a third sitting, rows only);
#   4. alone, passes 3-4 (the same folder with --passes 4: carb_lib.passes resumes passes 1-2
#      and measures passes 3-4);
#   5. merge the alone passes (fastest of 4) into RES/resnet_rows.parquet; every pass's rows; the
#      host's noise again.
#
# The test (scripts/alone_source_test.py) and its judgement (scripts/alone_source_score.py) run
# after it. Usage: scripts/alone_source_campaign.sh PLATFORM [BUDGET_S [SITTING SEED]]
# (default 2100, the beside sitting's; each alone half gets 1200 s). With SITTING
# (pre-registration R, a replication of the alone sitting) it times the alone list only, in 4
# passes back to back (seed SEED, ALONE_BUDGET s from the environment, default 1200), into
# RES/../SITTING; no beside sitting. CAMPAIGN_PROTOCOL in the environment replaces the passes'
# protocol JSON (scripts/campaign_lib.sh; scripts/keep_heap_campaign.sh keeps the heap so).
# The protocol the profile ran with is copied beside the rows (protocol.json).
# Run it from a clean checkout, `nice -n -15`, and run nothing else heavy.
set -euo pipefail
cd "$(dirname "$0")/.."
PLAT=${1:?platform name}
BUDGET=${2:-2100}; SITTING=${3:-}; SEED=${4:-4}
PY=${PYTHON:-.venv/bin/python}
CARB="$PY -m carb_lib.cli"
. scripts/campaign_lib.sh
FIRST="results/cross_family/sitting_source/$PLAT"
RES="$FIRST/alone"
RUN="runs/${PLAT}_sitting_source_alone"
[ -e "$FIRST/target_rows.parquet" ] || { echo "alone_source_campaign: no first sitting $FIRST/target_rows.parquet" >&2; exit 2; }
say() { echo "[alone source] $1 $(date -u +%FT%TZ)"; }
if [ -n "$SITTING" ]; then
  RES="$FIRST/$SITTING"; RUN="runs/${PLAT}_sitting_source_$SITTING"
  [ -e "$FIRST/alone/resnet_rows.parquet" ] || { echo "alone_source_campaign: no first alone sitting $FIRST/alone/resnet_rows.parquet" >&2; exit 2; }
fi
[ -e "$RES/resnet_rows.parquet" ] && { echo "alone_source_campaign: $RES/resnet_rows.parquet exists" >&2; exit 2; }
[ -z "$SITTING" ] && [ -e "$FIRST/sitting3/target_rows.parquet" ] && { echo "alone_source_campaign: $FIRST/sitting3/target_rows.parquet exists" >&2; exit 2; }
mkdir -p "$RES"
say "host noise (before)"
campaign_canary "$RES/canary_before.txt"
say "the list (alone)"
$PY scripts/sitting_source_list.py "data/other_cpus/$PLAT.parquet" --resnet 400 --seed 1 \
  --out "${RUN}_list"
if [ -n "$SITTING" ]; then
  say "alone ($SITTING), 4 passes"
  campaign_profile "$PLAT" "${RUN}_list/list.parquet" "${RUN}_parts" 4 "${ALONE_BUDGET:-1200}" "$SEED"
else
  say "alone, passes 1-2"
  campaign_profile "$PLAT" "${RUN}_list/list.parquet" "${RUN}_parts" 2 1200 3
  say "beside (sitting 3)"
  NO_TEST=1 bash scripts/sitting_source_campaign.sh "$PLAT" 4 "$BUDGET" sitting3 2
  say "alone, passes 3-4"
  campaign_profile "$PLAT" "${RUN}_list/list.parquet" "${RUN}_parts" 4 1200 3
fi
say "merge (alone)"
campaign_merge "${RUN}_parts" "$RES/resnet_rows.parquet" "$RES/reference.parquet" "$RES/merge.txt"
campaign_save_passes "${RUN}_parts" "$RES/pass_rows.parquet"
cp "${RUN}_parts/protocol.json" "$RES/protocol.json"
say "host noise (after)"
campaign_canary "$RES/canary_after.txt"
say "done"
