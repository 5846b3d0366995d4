#!/usr/bin/env bash
# A new CPU in one command: its operators first, then its networks, merged and audited.
#
# The protocol of the Zen 4, Zen 5 and both Xeons (data/README.md), in the order a campaign of 2026-12-01
# proposed for the next CPU: every operator draw is timed *before* any network, so that a
# prediction written down before the run can name the operators it will read.
#   1. operators: sampler v3 seed 0 (the draw of every CPU so far) into
#      DATA/PLATFORM/design/kernels.parquet, sampler v4 seed 3 into DATA/PLATFORM/sampler4/;
#   2. ResNet: scripts/cpu_campaign_v2.sh (all sweeps, then fill) for RESNET_BUDGET_S;
#   3. new families: the Zen 3 campaign-1 list for NEWFAM_BUDGET_S;
#   4. carb merge into DATA/PLATFORM/design/rows[_new_families].parquet (reference-config rows
#      into reference[_new_families].parquet beside them), carb audit of AUDIT_N rows of each
#      (audit[_new_families].parquet), anchors.
# DATA (default data) is the data folder; with CARB_CATALOG naming a catalog in it, carb merge and
# carb kernels register the files there (the project's data/catalog.yaml is edited by hand).
# Then `carb fit --platform`/`carb reproduce` compare the CPU with the others.
#
# Usage: scripts/new_cpu_campaign.sh PLATFORM [RESNET_BUDGET_S NEWFAM_BUDGET_S N_OPS AUDIT_N]
#        (defaults 1500 1200 3000 150: about 60 min on the 2026-12-01 Xeon)
# Run it from a clean checkout (rows record the commit and git_dirty) on a quiet machine, e.g.
# `nice -n -15 scripts/new_cpu_campaign.sh cpu_x`, and run nothing else heavy meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
PLAT=${1:?platform name}
RB=${2:-1500}; NB=${3:-1200}; NOPS=${4:-3000}; AUDIT_N=${5:-150}
PY=${PYTHON:-.venv/bin/python}
CARB="$PY -m carb_lib.app.cli"
D="${DATA:-data}/$PLAT/design"
for f in "$D/kernels.parquet" "${DATA:-data}/$PLAT/sampler4/kernels.parquet" \
         "$D/rows.parquet" "$D/rows_new_families.parquet"; do
  if [ -e "$f" ]; then
    echo "new_cpu_campaign: $f exists: a new CPU writes new files (another platform name?)" >&2
    exit 2
  fi
done
say() { echo "[new_cpu] $1 $(date -u +%FT%TZ)"; }
mkdir -p "$D" "${DATA:-data}/$PLAT/sampler4" runs/audit
say "operators (sampler v3, seed 0)"
$CARB kernels --n "$NOPS" --seed 0 --sampler 3 --platform "$PLAT" \
  --out "$D/kernels.parquet" --no-progress
say "operators (sampler v4, seed 3)"
$CARB kernels --n "$NOPS" --seed 3 --sampler 4 --platform "$PLAT" --campaign sampler4 \
  --out "${DATA:-data}/$PLAT/sampler4/kernels.parquet" --no-progress
say "ResNet"
PYTHON="$PY" bash scripts/cpu_campaign_v2.sh "$PLAT" "$RB"
say "new families"
$PY scripts/new_families_campaign.py runs/newfam_plan --per-family 1500 --cap-gflop 4 --seed 0 \
  --fp16-cap-gflop 0.25 --interleave-seed 2026
$CARB profile --device cpu --platform "$PLAT" --threads 1 --configs runs/newfam_plan/all.parquet \
  --seed 0 --ref-every 50 --time-budget-s "$NB" --out "runs/${PLAT}_newfam_parts" --no-progress
say "merge"
$CARB merge "runs/${PLAT}_parts" "$D/rows.parquet" --reference-out "$D/reference.parquet"
$CARB merge "runs/${PLAT}_newfam_parts" "$D/rows_new_families.parquet" \
  --reference-out "$D/reference_new_families.parquet"
say "audits"
$CARB audit "$D/rows.parquet" --n "$AUDIT_N" --seed 0 --out runs/audit/design --no-progress
$CARB audit "$D/rows_new_families.parquet" --n "$AUDIT_N" --seed 0 \
  --out runs/audit/new_families --no-progress
cp "runs/audit/design/${PLAT}_audit_rows.parquet" "$D/audit.parquet"
cp "runs/audit/new_families/${PLAT}_audit_rows.parquet" "$D/audit_new_families.parquet"
say "anchors"
$CARB kernels --anchors-only --out "$D/kernels.parquet"
say "done"
