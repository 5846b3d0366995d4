#!/usr/bin/env bash
# Pre-registration AC (session 31; results/measurement/PLATFORM_TAG/PREREGISTRATION.md): the
# operators timed with denormals flushed (bench_kernels(flush_denormal=True), carb kernels'
# default since session 31), their silu operators timed again in both arms, paired, and fresh
# new-family rows, in one sitting with the heap kept.
#
#   1. the host's noise; 2. carb kernels: sampler v3 seed 0 and sampler v4 seed 3 (3,000 each, the
#   draws of pre-registration Y's benchmark), anchors timed; 3. scripts/silu_denormal_retime.py
#   on both; 4. scripts/denormal_sitting_list.py (fresh configs, none measured on this CPU) and
#   carb profile for BUDGET_S with the protocol plus cpu_keep_heap, carb merge; 5.
#   scripts/kernel_op_breakdown.py on the 94 networks of this morning's breakdown, with the
#   flushed benchmark; 6. the host's noise again. The judgement runs afterwards:
#   python scripts/denormal_sitting_score.py PLATFORM --tag TAG
#
# Usage: scripts/denormal_sitting.sh PLATFORM [BUDGET_S TAG]   (defaults 1500, session31_flushed)
# Run it from a clean checkout, `nice -n -15`, and run nothing else heavy.
set -euo pipefail
cd "$(dirname "$0")/.."
PLAT=${1:?platform name}
BUDGET=${2:-1500}; TAG=${3:-session31_flushed}
PY=${PYTHON:-.venv/bin/python}
CARB="$PY -m carb_lib.cli"
. scripts/campaign_lib.sh
OPS="data/kernels/${PLAT}_${TAG}.parquet"
OPS4="data/kernels/${PLAT}_${TAG}_sampler4.parquet"
ROWS="data/other_cpus/new_families/${PLAT}_${TAG}.parquet"
RES="results/measurement/${PLAT}_${TAG}"
RUN="runs/${PLAT}_${TAG}"
OLD=(data/other_cpus/new_families/"$PLAT".parquet data/other_cpus/new_families/"$PLAT"_rest.parquet
     data/other_cpus/new_families/"$PLAT"_session29_kept.parquet)
for f in "${OLD[@]}"; do
  if [ ! -e "$f" ]; then echo "denormal_sitting: no earlier new-family rows $f" >&2; exit 2; fi
done
campaign_refuse_existing denormal_sitting "$OPS" "$OPS4" "$ROWS" "${RUN}_parts" "$RES/silu_retime.parquet"
$PY -c 'import carb_lib.kernels' || { echo "denormal_sitting: $PY cannot import carb_lib" >&2; exit 2; }
say() { echo "[denormals flushed] $1 $(date -u +%FT%TZ)"; }
mkdir -p "$RES" "$RUN"
say "host noise (before)"
campaign_canary "$RES/canary_before.txt"
say "operators: sampler v3 seed 0, flushed, heap kept"
$CARB kernels --n 3000 --seed 0 --sampler 3 --platform "$PLAT" --keep-heap --out "$OPS" --no-progress
say "operators: sampler v4 seed 3, flushed, heap kept"
$CARB kernels --n 3000 --seed 3 --sampler 4 --platform "$PLAT" --keep-heap --out "$OPS4" --no-progress
say "silu operators in both arms, paired"
$PY scripts/silu_denormal_retime.py "$OPS" "$OPS4" --out "$RES/silu_retime.parquet"
say "the list (fresh configs)"
$PY scripts/denormal_sitting_list.py "$RUN/list.parquet" "${OLD[@]}" --per-family 900 --seed 31 \
  --fp16-share 0.25
say "profile, heap kept"
$CARB profile --device cpu --platform "$PLAT" --threads 1 \
  --configs "$RUN/list.parquet" --seed 0 --ref-every 50 \
  --time-budget-s "$BUDGET" --out "${RUN}_parts" --no-progress --protocol '{"cpu_keep_heap": true}'
$CARB merge "${RUN}_parts" "$ROWS" --reference-out "$RES/newfam_reference.parquet"
cp "${RUN}_parts/protocol.json" "$RES/newfam_protocol.json"
say "operator breakdown with the flushed benchmark (described, not judged)"
$PY scripts/kernel_op_breakdown.py data/other_cpus/new_families/"$PLAT"_session29_kept.parquet \
  data/other_cpus/"$PLAT"_session29_kept.parquet --bench "$OPS" "$OPS4" \
  --families efficientnet mobilenetv2 resnet --per-group 8 --out "results/carb/op_breakdown_${PLAT}_${TAG}" \
  > "$RES/op_breakdown.log" 2>&1 || echo "breakdown failed (see $RES/op_breakdown.log)"
say "host noise (after)"
campaign_canary "$RES/canary_after.txt"
say "done"
