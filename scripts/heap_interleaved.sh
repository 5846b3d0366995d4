#!/usr/bin/env bash
# Pre-registration AB (session 30; results/measurement/PLATFORM_TAG/PREREGISTRATION.md): the same
# ResNet configs timed with the default heap and with the heap kept, INTERLEAVED, so that the
# host's drift falls on both arms alike. Two sittings one after the other (pre-registration Z)
# compare heaps only through a host that moves by 5-15 % over twenty minutes.
#
#   1. the host's noise; 2. the list (scripts/heap_interleaved_list.py: every config of ROWS whose
#   network maps past 32 MiB, and N_NONE of the others, in N_SLICES shuffled slices); 3. for each
#   slice, carb profile of its configs by both arms back to back, default first in even slices
#   and kept first in odd ones, each arm into its own campaign folder (the study's protocol with
#   cpu_keep_heap false or true, spelled out in each arm); 4. carb merge of each arm into
#   RES/default.parquet and RES/kept.parquet; 5. the host's noise again. Then:
#   python scripts/heap_interleaved_score.py PLATFORM --tag TAG
#
# Usage: scripts/heap_interleaved.sh PLATFORM ROWS TAG [N_NONE N_SLICES]   (defaults 400, 10)
# Run it from a clean checkout, `nice -n -15`, and run nothing else heavy.
set -euo pipefail
cd "$(dirname "$0")/.."
PLAT=${1:?platform name}; ROWS=${2:?measured rows of this CPU}; TAG=${3:?file tag}
NNONE=${4:-400}; NSL=${5:-10}
PY=${PYTHON:-.venv/bin/python}
CARB="$PY -m carb_lib.cli"
. scripts/campaign_lib.sh
RES="results/measurement/${PLAT}_${TAG}"
RUN="runs/${PLAT}_${TAG}"
campaign_refuse_existing heap_interleaved "$RES/default.parquet" "$RES/kept.parquet" "${RUN}_list" \
  "${RUN}_default" "${RUN}_kept"
say() { echo "[heap interleaved] $1 $(date -u +%FT%TZ)"; }
mkdir -p "$RES"
say "host noise (before)"
campaign_canary "$RES/canary_before.txt"
$PY scripts/heap_interleaved_list.py "$ROWS" "${RUN}_list" --n-none "$NNONE" --slices "$NSL"
cp "${RUN}_list/list.parquet" "$RES/list.parquet"
arm() {  # arm NAME SLICE
  say "slice $2, heap $1"
  local keep=false
  if [ "$1" = kept ]; then keep=true; fi
  $CARB profile --device cpu --platform "$PLAT" --threads 1 --configs "${RUN}_list/slice$2.parquet" \
    --seed "$2" --ref-every 50 --out "${RUN}_$1" --no-progress --protocol "{\"cpu_keep_heap\": $keep}"
}
for ((i = 0; i < NSL; i++)); do
  if (( i % 2 == 0 )); then arm default "$i"; arm kept "$i"; else arm kept "$i"; arm default "$i"; fi
done
for a in default kept; do
  $CARB merge "${RUN}_$a" "$RES/$a.parquet" --reference-out "$RES/${a}_reference.parquet"
done
say "host noise (after)"
campaign_canary "$RES/canary_after.txt"
say "done"
