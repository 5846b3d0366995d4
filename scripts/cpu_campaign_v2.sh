#!/usr/bin/env bash
# The version-2 CPU campaign (data/README.md): interference-checked protocol, batch sweeps first,
# then a seeded random fill of the grid under the compute caps until the time budget is spent.
# Usage: scripts/cpu_campaign_v2.sh PLATFORM TOTAL_BUDGET_S [N_SWEEPS SWEEP_CAP N_SWEEPS_FP16]
# CAMPAIGN_PROTOCOL in the environment (JSON, carb profile --protocol) changes the protocol, e.g.
# '{"cpu_keep_heap": false}' to time with the default heap as every campaign before 2026-12-03;
# unset, the study's protocol (the heap kept since 2026-12-03).
# Run it on a quiet machine: the detector flags disturbed windows, it is not a licence to share.
set -euo pipefail
cd "$(dirname "$0")/.."
PLAT=${1:?platform name}
BUDGET=${2:?total time budget in seconds}
NSW=${3:-107}; CAP=${4:-8}; NSW16=${5:-15}
PY=${PYTHON:-.venv/bin/python}
PARTS=runs/${PLAT}_parts
mkdir -p runs
$PY scripts/cpu_campaign_v2.py runs/${PLAT}_plan --n-sweeps "$NSW" --sweep-cap "$CAP" \
  --n-sweeps-fp16 "$NSW16" --cap-fp32 2 --cap-fp16 0.5
start=$(date +%s)
for phase in sweeps_fp32 sweeps_fp16 fill; do
  left=$(( BUDGET - ($(date +%s) - start) ))
  if [ "$left" -le 30 ]; then echo "[v2] no time left for $phase"; break; fi
  echo "[v2] phase $phase, budget ${left}s"
  $PY -m carb_lib.app.cli profile --device cpu --platform "$PLAT" --threads 1 \
    --configs "runs/${PLAT}_plan/${phase}.parquet" --seed 0 --ref-every 50 \
    --time-budget-s "$left" --out "$PARTS" --no-progress \
    ${CAMPAIGN_PROTOCOL:+--protocol "$CAMPAIGN_PROTOCOL"}
done
echo "[v2] merge with: carb merge $PARTS data/${PLAT}/design/rows.parquet --reference-out data/${PLAT}/design/reference.parquet"
