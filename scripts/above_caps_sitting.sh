#!/usr/bin/env bash
# Pre-registration AF (session 32; results/measurement/PLATFORM_TAG/PREREGISTRATION.md): fresh
# new-family configs above the campaigns' FLOP caps (fp32 4-8 GFLOP, fp16 0.25-0.5 GFLOP), none
# measured on this CPU, in one sitting with the heap kept.
#
#   1. the host's noise; 2. scripts/above_caps_list.py (every measured new-family file of this
#   CPU excluded); 3. carb profile for BUDGET_S with the protocol plus cpu_keep_heap, a reference
#   config every 50, carb merge; 4. the host's noise again. No operators are timed: the test
#   reads pre-registration AC's benchmark. The judgement runs afterwards:
#   python scripts/above_caps_score.py PLATFORM --tag TAG
#
# Usage: scripts/above_caps_sitting.sh PLATFORM [BUDGET_S TAG LIST]   (defaults 2100,
# session32_above_caps, above_caps). LIST=off_grid takes scripts/off_grid_list.py's fresh configs
# at resolutions off the grid instead (pre-registration AI, session 34, list seed 34), judged by
# python scripts/off_grid_score.py PLATFORM --tag TAG; LIST=off_grid2 those at 36, 44, 72 and 88
# px, list seed 35 (pre-registration AJ), judged by python scripts/source_sitting_score.py.
# Run it from a clean checkout, `nice -n -15`, and run nothing else heavy.
set -euo pipefail
cd "$(dirname "$0")/.."
PLAT=${1:?platform name}
BUDGET=${2:-2100}; TAG=${3:-session32_above_caps}
case "${4:-above_caps}" in
  above_caps) LIST=scripts/above_caps_list.py; LIST_SEED=32; LIST_ARGS=() ;;
  off_grid) LIST=scripts/off_grid_list.py; LIST_SEED=34; LIST_ARGS=() ;;
  off_grid2) LIST=scripts/off_grid_list.py; LIST_SEED=35; LIST_ARGS=(--resolutions 36 44 72 88) ;;
  *) echo "above_caps_sitting: LIST must be above_caps, off_grid or off_grid2, not '$4'" >&2
     exit 2 ;;
esac
PY=${PYTHON:-.venv/bin/python}
CARB="$PY -m carb_lib.cli"
. scripts/campaign_lib.sh
ROWS="data/other_cpus/new_families/${PLAT}_${TAG}.parquet"
RES="results/measurement/${PLAT}_${TAG}"
RUN="runs/${PLAT}_${TAG}"
MEASURED=(data/other_cpus/new_families/"$PLAT"*.parquet)
for f in "${MEASURED[@]}"; do
  if [ ! -e "$f" ]; then echo "above_caps_sitting: no earlier new-family rows of $PLAT" >&2; exit 2; fi
done
campaign_refuse_existing above_caps_sitting "$ROWS" "${RUN}_parts" "$RUN/list.parquet"
$PY -c 'import carb_lib.heap' || { echo "above_caps_sitting: $PY cannot import carb_lib" >&2; exit 2; }
say() { echo "[above the caps] $1 $(date -u +%FT%TZ)"; }
mkdir -p "$RES" "$RUN"
say "host noise (before)"
campaign_canary "$RES/canary_before.txt"
say "the list ($LIST, fresh configs; excluded: ${MEASURED[*]})"
$PY "$LIST" "$RUN/list.parquet" "${MEASURED[@]}" --seed "$LIST_SEED" "${LIST_ARGS[@]}"
say "profile, heap kept"
$CARB profile --device cpu --platform "$PLAT" --threads 1 \
  --configs "$RUN/list.parquet" --seed 0 --ref-every 50 \
  --time-budget-s "$BUDGET" --out "${RUN}_parts" --no-progress --protocol '{"cpu_keep_heap": true}'
$CARB merge "${RUN}_parts" "$ROWS" --reference-out "$RES/reference.parquet"
cp "${RUN}_parts/protocol.json" "$RES/protocol.json"
say "host noise (after)"
campaign_canary "$RES/canary_after.txt"
say "done"
