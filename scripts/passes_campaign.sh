#!/usr/bin/env bash
# A passes campaign on a CPU measured before, on a host whose speed swings (session 23, the
# Zen 5; README, *Measuring on a host whose speed swings: passes*):
#
#   1. the host's noise now (scripts/host_noise_canary.py, 20 s);
#   2. the list (scripts/passes_list.py): the fresh-rows list's configs never measured on this
#      CPU, and 90 rows measured before on a quiet host (20 per new family, 30 ResNet);
#   3. carb profile --passes PASSES of that list, one window per pass (a second only when the
#      detector flags the first), for BUDGET_S in all;
#   4. carb merge (fastest pass per config), split into the fresh rows
#      (data/other_cpus/new_families/PLATFORM_passes.parquet) and the re-measured ones
#      (results/measurement/passes_PLATFORM/remeasured_rows.parquet); every pass's rows in
#      results/measurement/passes_PLATFORM/pass_rows.parquet;
#   5. the host's noise again.
#
# Usage: scripts/passes_campaign.sh PLATFORM [PASSES BUDGET_S]   (defaults 8 3600)
# Run it from a clean checkout, `nice -n -15`, and run nothing else heavy.
set -euo pipefail
cd "$(dirname "$0")/.."
PLAT=${1:?platform name}
PASSES=${2:-8}; BUDGET=${3:-3600}
PY=${PYTHON:-.venv/bin/python}
CARB="$PY -m carb_lib.cli"
. scripts/campaign_lib.sh
NEW="data/other_cpus/new_families/${PLAT}_passes.parquet"
RES="results/measurement/passes_$PLAT"
[ -e "$NEW" ] && { echo "passes_campaign: $NEW exists: fresh rows go to a new file" >&2; exit 2; }
say() { echo "[passes] $1 $(date -u +%FT%TZ)"; }
mkdir -p "$RES"
say "host noise (before)"
campaign_canary "$RES/canary_before.txt"
say "the list"
$PY scripts/new_families_continue.py "data/other_cpus/new_families/$PLAT.parquet" \
  "runs/${PLAT}_rest_plan" --per-family 1500 --cap-gflop 4 --seed 0
$PY scripts/passes_list.py "runs/${PLAT}_rest_plan/independent.parquet" \
  --done "data/other_cpus/new_families/${PLAT}_rest.parquet" \
  --quiet "data/other_cpus/new_families/$PLAT.parquet" \
  --quiet-resnet "data/other_cpus/$PLAT.parquet" --out "runs/${PLAT}_passes_list"
say "profile, $PASSES passes"
campaign_profile "$PLAT" "runs/${PLAT}_passes_list/list.parquet" "runs/${PLAT}_passes_parts" \
  "$PASSES" "$BUDGET"
say "merge"
campaign_merge "runs/${PLAT}_passes_parts" "runs/${PLAT}_passes_all.parquet" \
  "results/measurement/${PLAT}_passes_reference.parquet" "$RES/merge.txt"
$PY - "$PLAT" "$NEW" "$RES" <<'EOF'
import sys
import pandas as pd
from carb_lib.dataset import read_dataset, write_dataset
plat, new, res = sys.argv[1:]
rows = read_dataset(f"runs/{plat}_passes_all.parquet")
fresh = set(pd.read_parquet(f"runs/{plat}_passes_list/fresh.parquet")["config_id"])
is_fresh = rows["config_id"].isin(fresh)
write_dataset(rows[is_fresh].reset_index(drop=True), new)
write_dataset(rows[~is_fresh].reset_index(drop=True), f"{res}/remeasured_rows.parquet")
print(f"fresh rows {int(is_fresh.sum())} -> {new}; re-measured {int((~is_fresh).sum())}")
EOF
campaign_save_passes "runs/${PLAT}_passes_parts" "$RES/pass_rows.parquet"
say "host noise (after)"
campaign_canary "$RES/canary_after.txt"
say "done"
