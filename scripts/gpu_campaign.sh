#!/usr/bin/env bash
# CARB measurement run for a CUDA machine without network access.
#
#   bash scripts/gpu_campaign.sh [OUT_DIR] [extra args for python3 -m carb_lib.measure.gpu_campaign]
#
# OUT_DIR defaults to $OUT (the device runner's output folder), else ./gpu_out.
# Needs python3 with torch (CUDA), numpy, pandas, pyarrow, tqdm, nvidia-ml-py; NOT xgboost,
# lightgbm or matplotlib. Self-check (versions, energy counter resolution, idle power, noise of
# 10 configs x 3), then a seeded stratified sample of the paper grid not yet in
# the platform's catalogued design rows within --time-budget-s seconds (default 480, 60 kept for writing), then a
# summary table. With --pytest the gpu-marked tests run first (log: OUT/gpu_pytest.log); on CUDA
# the ResNet-50 224 px b256 fp16 anchor is measured and printed beside public references, and the
# energy counter is compared with the integral of sampled power on the noise configs. Examples:
#   bash scripts/gpu_campaign.sh "$OUT" --platform h200 --pytest
#   bash scripts/gpu_campaign.sh gpu_smoke --device cpu --time-budget-s 20 --quick   # CPU smoke test
set -euo pipefail
cd "$(dirname "$0")/.."
OUT_DIR="${1:-${OUT:-gpu_out}}"
shift || true
PY="${PYTHON:-python3}"
mkdir -p "$OUT_DIR"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
"$PY" -m carb_lib.measure.gpu_campaign --out "$OUT_DIR" "$@" 2>&1 | tee "$OUT_DIR/gpu_campaign.log"
exit "${PIPESTATUS[0]}"
