#!/usr/bin/env bash
# A new CPU in one command: its operators first, then its networks, merged and audited.
#
# The protocol of the Zen 4, Zen 5 and both Xeons (data/README.md), in the order a campaign of 2026-12-01
# proposed for the next CPU: every operator draw is timed *before* any network, so that a
# prediction written down before the run can name the operators it will read.
#   1. operators: sampler v3 seed 0 (the draw of every CPU so far) into
#      data/kernels/PLATFORM.parquet, sampler v4 seed 3 into data/kernels/PLATFORM_sampler4.parquet;
#   2. ResNet: scripts/cpu_campaign_v2.sh (all sweeps, then fill) for RESNET_BUDGET_S;
#   3. new families: the Zen 3 campaign-1 list for NEWFAM_BUDGET_S;
#   4. carb merge into data/other_cpus[/new_families]/PLATFORM.parquet (reference-config rows
#      into data/reference/...), carb audit of AUDIT_N rows of each (into data/audit/...), anchors.
# Then `carb fit`/`carb reproduce` on the new files compare the CPU with the others.
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
for f in "data/kernels/$PLAT.parquet" "data/kernels/${PLAT}_sampler4.parquet" \
         "data/other_cpus/$PLAT.parquet" "data/other_cpus/new_families/$PLAT.parquet"; do
  if [ -e "$f" ]; then
    echo "new_cpu_campaign: $f exists: a new CPU writes new files (another platform name?)" >&2
    exit 2
  fi
done
say() { echo "[new_cpu] $1 $(date -u +%FT%TZ)"; }
say "operators (sampler v3, seed 0)"
$CARB kernels --n "$NOPS" --seed 0 --sampler 3 --platform "$PLAT" \
  --out "data/kernels/$PLAT.parquet" --no-progress
say "operators (sampler v4, seed 3)"
$CARB kernels --n "$NOPS" --seed 3 --sampler 4 --platform "$PLAT" \
  --out "data/kernels/${PLAT}_sampler4.parquet" --no-progress
say "ResNet"
PYTHON="$PY" bash scripts/cpu_campaign_v2.sh "$PLAT" "$RB"
say "new families"
$PY scripts/new_families_campaign.py runs/newfam_plan --per-family 1500 --cap-gflop 4 --seed 0 \
  --fp16-cap-gflop 0.25 --interleave-seed 2026
$CARB profile --device cpu --platform "$PLAT" --threads 1 --configs runs/newfam_plan/all.parquet \
  --seed 0 --ref-every 50 --time-budget-s "$NB" --out "runs/${PLAT}_newfam_parts" --no-progress
say "merge"
mkdir -p data/other_cpus/new_families data/reference/other_cpus/new_families runs/audit
$CARB merge "runs/${PLAT}_parts" "data/other_cpus/$PLAT.parquet" \
  --reference-out "data/reference/other_cpus/$PLAT.parquet"
$CARB merge "runs/${PLAT}_newfam_parts" "data/other_cpus/new_families/$PLAT.parquet" \
  --reference-out "data/reference/other_cpus/new_families/$PLAT.parquet"
say "audits"
$CARB audit "data/other_cpus/$PLAT.parquet" --n "$AUDIT_N" --seed 0 \
  --out runs/audit/other_cpus --no-progress
$CARB audit "data/other_cpus/new_families/$PLAT.parquet" --n "$AUDIT_N" --seed 0 \
  --out runs/audit/other_cpus/new_families --no-progress
mkdir -p data/audit/other_cpus/new_families
cp "runs/audit/other_cpus/${PLAT}_audit_rows.parquet" "data/audit/other_cpus/$PLAT.parquet"
cp "runs/audit/other_cpus/new_families/${PLAT}_audit_rows.parquet" \
  "data/audit/other_cpus/new_families/$PLAT.parquet"
say "anchors"
$CARB kernels --anchors-only --out "data/kernels/$PLAT.parquet"
say "done"
