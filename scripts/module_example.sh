#!/usr/bin/env bash
# README "Your own network": predict a user network with a `shared` model, then measure it.
#
#   1. carb fit --feature-set shared on a CPU's ResNet and new-family rows (one file, in runs/);
#   2. carb predict --module examples/my_cnn.py:my_cnn at 3x96x96, batches 1, 8, 32, fp32/fp16;
#   3. carb profile --module of the same six configs in SITTINGS sittings, one after the other;
#   4. results/module_example/comparison.csv: prediction and interval beside each sitting's
#      measurement, and the median over sittings.
#
# Usage: scripts/module_example.sh [PLATFORM SITTINGS]   (defaults cpu_epyc_zen5_2c 3)
# The model is fitted on data/other_cpus/PLATFORM.parquet and its new-family file; run it on
# that CPU (the profile's rows are named PLATFORM) and run nothing else heavy meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
PLAT=${1:-cpu_epyc_zen5_2c}; SITTINGS=${2:-3}
PY=${PYTHON:-.venv/bin/python}
CARB="$PY -m carb_lib.cli"
OUT=results/module_example
RUN=runs/module_example
NET=(--module examples/my_cnn.py:my_cnn --input-shape 3,96,96 --batches 1,8,32
     --precisions fp32,fp16)
rm -rf "$RUN" && mkdir -p "$RUN" "$OUT"
$PY - "$PLAT" "$RUN/train.parquet" <<'EOF'
import sys

import pandas as pd

plat, out = sys.argv[1:]
files = [f"data/other_cpus/{plat}.parquet", f"data/other_cpus/new_families/{plat}.parquet"]
pd.concat([pd.read_parquet(f) for f in files], ignore_index=True).to_parquet(out)
EOF
$CARB fit --data "$RUN/train.parquet" --feature-set shared --out "$RUN/shared.joblib"
$CARB predict --model "$RUN/shared.joblib" "${NET[@]}" --out "$OUT/predicted.csv"
for i in $(seq 1 "$SITTINGS"); do
  $CARB profile --device cpu --platform "$PLAT" --threads 1 "${NET[@]}" \
    --out "$RUN/sitting$i" --no-progress
  $CARB merge "$RUN/sitting$i" "$OUT/measured_sitting$i.parquet"
done
$PY - "$OUT" "$SITTINGS" <<'EOF'
import sys
from pathlib import Path

import pandas as pd

out, n = Path(sys.argv[1]), int(sys.argv[2])
pred = pd.read_csv(out / "predicted.csv")
cols = ["config_id", "batch", "precision", "flops", "extrapolated",
        "peak_mem_mib_pred", "latency_ms_pred", "latency_ms_pred_lo", "latency_ms_pred_hi"]
tab = pred[cols]
for i in range(1, n + 1):
    m = pd.read_parquet(out / f"measured_sitting{i}.parquet")[
        ["config_id", "peak_mem_mib", "latency_ms"]]
    tab = tab.merge(m.rename(columns={"peak_mem_mib": f"peak_mem_mib_{i}",
                                      "latency_ms": f"latency_ms_{i}"}), on="config_id")
lat = tab[[f"latency_ms_{i}" for i in range(1, n + 1)]]
mem = tab[[f"peak_mem_mib_{i}" for i in range(1, n + 1)]]
tab["latency_ms_median"] = lat.median(axis=1)
tab["latency_max_over_min"] = lat.max(axis=1) / lat.min(axis=1)
tab["memory_within_half_byte"] = (mem.sub(tab["peak_mem_mib_pred"], axis=0).abs() * 2**20
                                  < 0.5).all(axis=1)  # every sitting
tab["latency_pred_over_median"] = tab["latency_ms_pred"] / tab["latency_ms_median"]
tab.to_csv(out / "comparison.csv", index=False)
print(tab.drop(columns=["config_id"]).to_string(index=False))
EOF
