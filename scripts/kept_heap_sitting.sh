#!/usr/bin/env bash
# Pre-registration X (session 29; results/measurement/PLATFORM_TAG/PREREGISTRATION.md): the
# operators and ResNet rows of session 20's one sitting (pre-registration E) timed again in one
# sitting, now with the heap kept (carb_lib.heap.keep_heap: no buffer mapped afresh per call).
#
#   1. the host's noise; 2. carb kernels --keep-heap: sampler v3 seed 0's 3,000 operators (session
#   18's and 20's draw) with their anchor sittings; 3. scripts/cpu_campaign_v2.sh with the study's
#   protocol plus cpu_keep_heap (the seeded plan of sessions 19-20, BUDGET_S); carb merge; 4. the
#   host's noise again. The replication and the judgement run afterwards:
#   python scripts/kernel_law_replication.py ROWS OPS --seeds 3 --out results/carb/replication_PLATFORM_TAG
#   python scripts/kept_heap_sitting_score.py PLATFORM --tag TAG
#
# Usage: scripts/kept_heap_sitting.sh PLATFORM [BUDGET_S TAG HEAP]   (defaults 1200, session29_kept,
# kept). HEAP=default times the same sitting with the default heap (pre-registration Z, session
# 30: the same-day control). Run it from a clean checkout, `nice -n -15`, and run nothing else heavy.
set -euo pipefail
cd "$(dirname "$0")/.."
PLAT=${1:?platform name}
BUDGET=${2:-1200}; TAG=${3:-session29_kept}; HEAP=${4:-kept}
case "$HEAP" in
  # both spelled out (kept is the protocol's default since session 30)
  kept) KEEP=--keep-heap; PROTO='{"cpu_keep_heap": true}' ;;
  default) KEEP=--default-heap; PROTO='{"cpu_keep_heap": false}' ;;
  *) echo "kept_heap_sitting: HEAP must be kept or default, not '$HEAP'" >&2; exit 2 ;;
esac
PY=${PYTHON:-.venv/bin/python}
CARB="$PY -m carb_lib.cli"
. scripts/campaign_lib.sh
OPS="data/kernels/${PLAT}_${TAG}.parquet"
ROWS="data/other_cpus/${PLAT}_${TAG}.parquet"
RES="results/measurement/${PLAT}_${TAG}"
campaign_refuse_existing kept_heap_sitting "$OPS" "$ROWS" "runs/${PLAT}_parts" "runs/${PLAT}_plan"
$PY -c 'import carb_lib.heap' || { echo "kept_heap_sitting: $PY cannot import carb_lib" >&2; exit 2; }
say() { echo "[kept heap] $1 $(date -u +%FT%TZ)"; }
mkdir -p "$RES"
say "host noise (before)"
campaign_canary "$RES/canary_before.txt"
say "operators, heap $HEAP"
$CARB kernels --n 3000 --seed 0 --sampler 3 --platform "$PLAT" "$KEEP" --out "$OPS" --no-progress
say "ResNet rows, heap $HEAP"
CAMPAIGN_PROTOCOL="$PROTO" PYTHON="$PY" bash scripts/cpu_campaign_v2.sh "$PLAT" "$BUDGET"
$CARB merge "runs/${PLAT}_parts" "$ROWS" --reference-out "$RES/reference.parquet"
cp "runs/${PLAT}_parts/protocol.json" "$RES/protocol.json"  # both heaps pass a --protocol
say "host noise (after)"
campaign_canary "$RES/canary_after.txt"
say "done"
