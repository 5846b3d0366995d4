#!/usr/bin/env bash
# Pre-registrations U and V (session 28; results/cross_family/sitting_source/PLATFORM/keep_heap/
# PREREGISTRATION.md, .../keep_heap2/PREREGISTRATION.md): pre-registration M's 400 ResNet configs
# timed ALONE (a list of them only, as Q and R) with the heap kept (Protocol(cpu_keep_heap=True):
# glibc serves every buffer from its heap and never trims it, carb_lib.heap), so that no
# config's timed calls page-fault whatever the list. It is R's alone sitting
# (scripts/alone_source_campaign.sh PLATFORM 2100 SITTING SEED: the host's noise, the alone
# list, carb profile --passes 4 with the passes campaigns' protocol, the merge into
# RES/SITTING/resnet_rows.parquet, every pass's rows, the protocol, the host's noise again) with
# cpu_keep_heap added to the protocol and BUDGET_S for the 4 passes.
#
# The test (scripts/alone_source_test.py --sitting SITTING) and its judgement
# (scripts/alone_source_score.py RES/SITTING --keep-heap [--replication]) run after it.
# Usage: scripts/keep_heap_campaign.sh PLATFORM [BUDGET_S [SITTING SEED]]  (1200, keep_heap, 6)
# Run it from a clean checkout, `nice -n -15`, and run nothing else heavy.
set -euo pipefail
cd "$(dirname "$0")/.."
PLAT=${1:?platform name}
BUDGET=${2:-1200}; SITTING=${3:-keep_heap}; SEED=${4:-6}
FIRST="results/cross_family/sitting_source/$PLAT"
[ -e "$FIRST/sitting3/resnet_rows.parquet" ] || { echo "keep_heap_campaign: no beside sitting $FIRST/sitting3/resnet_rows.parquet" >&2; exit 2; }
CAMPAIGN_PROTOCOL='{"n_windows": 1, "max_windows": 2, "cpu_keep_heap": true}' ALONE_BUDGET="$BUDGET" \
  exec bash scripts/alone_source_campaign.sh "$PLAT" 2100 "$SITTING" "$SEED"
