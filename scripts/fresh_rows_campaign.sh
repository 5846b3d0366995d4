#!/usr/bin/env bash
# Fresh new-family rows on a CPU measured before: a blind test set for a choice made on its
# earlier rows (session 19: the fifth CPU's v3 + v4 operators, chosen post hoc in session 18).
#
#   1. anchor sittings beside data/kernels/PLATFORM.parquet (this sitting's host speed, against
#      the sittings of the first campaign);
#   2. scripts/new_families_continue.py: fresh seeded independent draws of each family's
#      sampler, none of them measured yet (its phase 2, independent.parquet), under the first
#      campaign's caps; the sweep completions (phase 1) are not measured;
#   3. carb profile of that list for BUDGET_S, merged into
#      data/other_cpus/new_families/PLATFORM_rest.parquet (its own file: another sitting);
#   4. carb audit of AUDIT_N of those rows, and anchor sittings again.
#
# Usage: scripts/fresh_rows_campaign.sh PLATFORM [BUDGET_S AUDIT_N]   (defaults 1320 150)
# Run it from a clean checkout (rows record the commit and git_dirty) on a quiet machine, e.g.
# `nice -n -15 scripts/fresh_rows_campaign.sh cpu_xeon_gnr_2c`, and run nothing else heavy.
set -euo pipefail
cd "$(dirname "$0")/.."
PLAT=${1:?platform name}
BUDGET=${2:-1320}; AUDIT_N=${3:-150}
PY=${PYTHON:-.venv/bin/python}
CARB="$PY -m carb_lib.cli"
OLD="data/other_cpus/new_families/$PLAT.parquet"
NEW="data/other_cpus/new_families/${PLAT}_rest.parquet"
[ -e "$OLD" ] || { echo "fresh_rows_campaign: no earlier rows $OLD" >&2; exit 2; }
[ -e "data/kernels/$PLAT.parquet" ] || {
  echo "fresh_rows_campaign: no operator file data/kernels/$PLAT.parquet for the anchors" >&2
  exit 2; }
if [ -e "$NEW" ]; then
  echo "fresh_rows_campaign: $NEW exists: fresh rows go to a new file" >&2
  exit 2
fi
say() { echo "[fresh_rows] $1 $(date -u +%FT%TZ)"; }
say "anchors (before)"
$CARB kernels --anchors-only --out "data/kernels/$PLAT.parquet"
say "the list: fresh independent draws, none measured"
$PY scripts/new_families_continue.py "$OLD" "runs/${PLAT}_rest_plan" --per-family 1500 \
  --cap-gflop 4 --seed 0
say "profile"
$CARB profile --device cpu --platform "$PLAT" --threads 1 \
  --configs "runs/${PLAT}_rest_plan/independent.parquet" --seed 0 --ref-every 50 \
  --time-budget-s "$BUDGET" --out "runs/${PLAT}_rest_parts" --no-progress
say "merge"
$CARB merge "runs/${PLAT}_rest_parts" "$NEW" \
  --reference-out "results/measurement/${PLAT}_newfam_rest_reference.parquet"
say "audit"
mkdir -p results/measurement/other_cpus/new_families_rest
$CARB audit "$NEW" --n "$AUDIT_N" --seed 0 --out results/measurement/other_cpus/new_families_rest \
  --no-progress
say "anchors (after)"
$CARB kernels --anchors-only --out "data/kernels/$PLAT.parquet"
say "done"
