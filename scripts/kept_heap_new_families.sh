#!/usr/bin/env bash
# Pre-registration Y (session 29; results/other_cpus/PLATFORM_TAG/PREREGISTRATION.md): session 19's
# fresh new-family configs (the list of scripts/fresh_rows_campaign.sh: scripts/new_families_continue.py
# --per-family 1500 --cap-gflop 4 --seed 0, its independent.parquet) timed again with the study's
# protocol and the heap kept, in the sitting of pre-registration X's ResNet rows
# (scripts/kept_heap_sitting.sh), so that issue 15's cross-family test has a kept source and kept
# targets of one sitting.
#
#   1. the host's noise; 2. the list; 3. carb profile for BUDGET_S with cpu_keep_heap; carb merge
#   into data/other_cpus/new_families/PLATFORM_TAG.parquet; 4. the host's noise again. No audit:
#   carb audit re-measures with the default heap. The test (notebook 05) runs afterwards, as the
#   pre-registration says.
#
# Usage: scripts/kept_heap_new_families.sh PLATFORM [BUDGET_S TAG]   (defaults 1320, session29_kept)
# Run it from a clean checkout, `nice -n -15`, and run nothing else heavy.
set -euo pipefail
cd "$(dirname "$0")/.."
PLAT=${1:?platform name}
BUDGET=${2:-1320}; TAG=${3:-session29_kept}
PY=${PYTHON:-.venv/bin/python}
CARB="$PY -m carb_lib.cli"
. scripts/campaign_lib.sh
OLD="data/other_cpus/new_families/$PLAT.parquet"
ROWS="data/other_cpus/new_families/${PLAT}_${TAG}.parquet"
RES="results/measurement/${PLAT}_${TAG}"
RUN="runs/${PLAT}_${TAG}_newfam"
if [ ! -e "$OLD" ]; then echo "kept_heap_new_families: no earlier rows $OLD" >&2; exit 2; fi
campaign_refuse_existing kept_heap_new_families "$ROWS" "${RUN}_plan" "${RUN}_parts"
say() { echo "[kept heap, new families] $1 $(date -u +%FT%TZ)"; }
mkdir -p "$RES"
say "host noise (before)"
campaign_canary "$RES/canary_newfam_before.txt"
say "the list (session 19's fresh draws)"
$PY scripts/new_families_continue.py "$OLD" "${RUN}_plan" --per-family 1500 --cap-gflop 4 --seed 0
say "profile, heap kept"
$CARB profile --device cpu --platform "$PLAT" --threads 1 \
  --configs "${RUN}_plan/independent.parquet" --seed 0 --ref-every 50 \
  --time-budget-s "$BUDGET" --out "${RUN}_parts" --no-progress --protocol '{"cpu_keep_heap": true}'
$CARB merge "${RUN}_parts" "$ROWS" --reference-out "$RES/newfam_reference.parquet"
cp "${RUN}_parts/protocol.json" "$RES/newfam_protocol.json"
say "host noise (after)"
campaign_canary "$RES/canary_newfam_after.txt"
say "done"
