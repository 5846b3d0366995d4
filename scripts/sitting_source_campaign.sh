#!/usr/bin/env bash
# Pre-registration N (session 26; results/cross_family/sitting_source/PREREGISTRATION.md): a ResNet
# source and depthwise target rows measured in ONE sitting, against session 12's quiet source.
#
#   1. the host's noise; 2. the list (scripts/sitting_source_list.py): pre-registration M's 400
#   ResNet configs and every config of session 23's new-family passes rows; 3. carb profile
#   --passes PASSES; carb merge (fastest pass); the two parts into results/ (not data/); every
#   pass's rows; the host's noise again; 4. the test (scripts/sitting_source_test.py) and its
#   judgement (scripts/sitting_source_score.py).
#
# Usage: scripts/sitting_source_campaign.sh PLATFORM [PASSES BUDGET_S SITTING SEED]
#        (defaults 4 2100, no SITTING, seed 0). With SITTING (pre-registration P, a replication)
#        the rows go to RES/SITTING, the test adds the first sitting (RES) as `--other`, and the
#        judgement is `--replication`'s. SEED: the profile order. With NO_TEST=1 in the
#        environment it stops after the rows (pre-registration Q's campaign runs its own test);
#        with TARGET_FAMILIES=vgg only those target families join the list (pre-registration S).
# Run it from a clean checkout, `nice -n -15`, and run nothing else heavy.
set -euo pipefail
cd "$(dirname "$0")/.."
PLAT=${1:?platform name}
PASSES=${2:-4}; BUDGET=${3:-2100}; SITTING=${4:-}; SEED=${5:-0}
PY=${PYTHON:-.venv/bin/python}
CARB="$PY -m carb_lib.cli"
. scripts/campaign_lib.sh
TARGETS="data/other_cpus/new_families/${PLAT}_passes.parquet"
FIRST="results/cross_family/sitting_source/$PLAT"
RES="$FIRST${SITTING:+/$SITTING}"
RUN="runs/${PLAT}_sitting_source${SITTING:+_$SITTING}"
[ -n "$SITTING" ] && [ ! -e "$FIRST/target_rows.parquet" ] && { echo "sitting_source_campaign: no first sitting $FIRST/target_rows.parquet" >&2; exit 2; }
[ -e "$TARGETS" ] || { echo "sitting_source_campaign: no target rows $TARGETS" >&2; exit 2; }
[ -e "$RES/target_rows.parquet" ] && { echo "sitting_source_campaign: $RES/target_rows.parquet exists" >&2; exit 2; }
say() { echo "[sitting source] $1 $(date -u +%FT%TZ)"; }
mkdir -p "$RES"
say "host noise (before)"
campaign_canary "$RES/canary_before.txt"
say "the list"
$PY scripts/sitting_source_list.py "data/other_cpus/$PLAT.parquet" "$TARGETS" --resnet 400 --seed 1 \
  ${TARGET_FAMILIES:+--families "$TARGET_FAMILIES"} --out "${RUN}_list"
say "profile, $PASSES passes"
campaign_profile "$PLAT" "${RUN}_list/list.parquet" "${RUN}_parts" "$PASSES" "$BUDGET" "$SEED"
say "merge"
campaign_merge "${RUN}_parts" "${RUN}_all.parquet" "$RES/reference.parquet" "$RES/merge.txt"
campaign_split_family "${RUN}_all.parquet" resnet "$RES/resnet_rows.parquet" "$RES/target_rows.parquet"
campaign_save_passes "${RUN}_parts" "$RES/pass_rows.parquet"
say "host noise (after)"
campaign_canary "$RES/canary_after.txt"
[ -n "${NO_TEST:-}" ] && { say "done (rows only: NO_TEST)"; exit 0; }
say "the test"
$PY scripts/sitting_source_test.py "$PLAT" --out "$RES" ${SITTING:+--other "$FIRST"} > "$RES/test_log.txt" 2>&1
$PY scripts/sitting_source_score.py "$RES" ${SITTING:+--replication}
say "done"
