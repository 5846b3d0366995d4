#!/usr/bin/env bash
# The CPU campaign that produced data/cpu_epyc_2c/design/rows.parquet (see data/README.md).
# fp32 configs up to 2 GFLOP per batch and fp16 configs up to 0.5 GFLOP per batch: fp16 runs
# ~20x slower than fp32 on this CPU (no native fp16 arithmetic), so its compute cap is lower.
# Configs are measured in a seeded random order with 1 intra-op thread; a rerun resumes.
# Usage: scripts/cpu_campaign.sh [TIME_BUDGET_S]   then   carb merge (printed at the end)
set -euo pipefail
cd "$(dirname "$0")/.."
BUDGET=${1:-4500}
PARTS=runs/cpu_epyc_2c_parts
mkdir -p runs
.venv/bin/python - <<'PY'
from carb_lib.dataset.features import with_static_features
from carb_lib.families.space import paper_grid
g = with_static_features(paper_grid())
sel = g[((g.precision == "fp32") & (g.flops <= 2e9)) | ((g.precision == "fp16") & (g.flops <= 5e8))]
sel[["config_id", "family", "block", "depth", "width", "early_downsample", "resolution",
     "batch", "precision", "num_classes"]].to_parquet("runs/cpu_campaign_configs.parquet")
print(f"{len(sel)} configs: {sel.precision.value_counts().to_dict()}")
PY
.venv/bin/carb profile --device cpu --platform cpu_epyc_2c --threads 1 \
  --configs runs/cpu_campaign_configs.parquet --seed 0 --max-gflops 2 --ref-every 50 \
  --time-budget-s "$BUDGET" --out "$PARTS"
echo "merge with: .venv/bin/carb merge $PARTS data/cpu_epyc_2c/design/rows.parquet --reference-out data/cpu_epyc_2c/design/reference.parquet"
