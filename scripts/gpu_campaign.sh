#!/usr/bin/env bash
# CARB measurement run for a CUDA machine without network access.
#
#   bash scripts/gpu_campaign.sh [OUT_DIR] [extra args for python3 -m carb_lib.gpu_campaign]
#
# OUT_DIR defaults to $OUT (the device runner's output folder), else ./gpu_out.
# Needs python3 with torch (CUDA), numpy, pandas, pyarrow, tqdm, nvidia-ml-py; NOT xgboost,
# lightgbm or matplotlib. Self-check (versions, energy counter resolution, idle power, noise of
# 10 configs x 3), then a seeded stratified sample of the paper grid not yet in
# data/<platform>.parquet within --budget seconds (default 480, 60 kept for writing), then a
# summary table. Examples:
#   bash scripts/gpu_campaign.sh "$OUT" --platform h200
#   bash scripts/gpu_campaign.sh /tmp/t --device cpu --budget 20 --quick   # CPU smoke test
set -euo pipefail
cd "$(dirname "$0")/.."
OUT_DIR="${1:-${OUT:-gpu_out}}"
shift || true
PY="${PYTHON:-python3}"
mkdir -p "$OUT_DIR"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
"$PY" -m carb_lib.gpu_campaign --out "$OUT_DIR" "$@" 2>&1 | tee "$OUT_DIR/gpu_campaign.log"
exit "${PIPESTATUS[0]}"
