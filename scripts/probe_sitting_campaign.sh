#!/usr/bin/env bash
# Pre-registration M (session 25; results/cross_family/probe/PLATFORM/sitting2/PREREGISTRATION.md):
# ResNet configs and probe networks measured in ONE sitting, so that a source of both shares one
# host speed (pre-registration L's probe rows were 1.47x slower than its ResNet rows' sitting).
#
#   1. the host's noise; 2. the list (scripts/probe_list.py --reuse): the first N_PROBE networks
#   of the platform's probe rows (same batch and resolution) and N_RESNET seeded configs of its
#   quiet ResNet rows; 3. carb profile --passes PASSES; carb merge (fastest pass); the two parts
#   into results/ (not data/); every pass's rows; the host's noise again;
#   4. the test (scripts/probe_sitting_test.py) and its judgement (scripts/probe_sitting_score.py).
#
# Usage: scripts/probe_sitting_campaign.sh PLATFORM [N_PROBE N_RESNET PASSES BUDGET_S]
#        (defaults 400 400 4 1800). Run it from a clean checkout, `nice -n -15`, nothing else heavy.
set -euo pipefail
cd "$(dirname "$0")/.."
PLAT=${1:?platform name}
NP=${2:-400}; NR=${3:-400}; PASSES=${4:-4}; BUDGET=${5:-1800}
PY=${PYTHON:-.venv/bin/python}
CARB="$PY -m carb_lib.cli"
OLD="data/other_cpus/probe_nets/$PLAT.parquet"
RES="results/cross_family/probe/$PLAT/sitting2"
[ -e "$OLD" ] || { echo "probe_sitting_campaign: no earlier probe rows $OLD" >&2; exit 2; }
[ -e "$RES/probe_rows.parquet" ] && { echo "probe_sitting_campaign: $RES/probe_rows.parquet exists" >&2; exit 2; }
say() { echo "[probe sitting] $1 $(date -u +%FT%TZ)"; }
mkdir -p "$RES"
say "host noise (before)"
timeout 60 $PY scripts/host_noise_canary.py --seconds 20 > "$RES/canary_before.txt" 2>&1 || true
say "the list"
$PY scripts/probe_list.py "data/other_cpus/$PLAT.parquet" --reuse "$OLD" --n "$NP" \
  --resnet "$NR" --seed 1 --out "runs/${PLAT}_probe_sitting_list"
say "profile, $PASSES passes"
$CARB profile --device cpu --platform "$PLAT" --threads 1 \
  --configs "runs/${PLAT}_probe_sitting_list/list.parquet" --seed 0 --ref-every 50 \
  --passes "$PASSES" --protocol '{"n_windows": 1, "max_windows": 2}' --time-budget-s "$BUDGET" \
  --out "runs/${PLAT}_probe_sitting_parts" --no-progress
say "merge"
$CARB merge "runs/${PLAT}_probe_sitting_parts" "runs/${PLAT}_probe_sitting_all.parquet" --force \
  --reference-out "$RES/reference.parquet" 2>&1 | tee "$RES/merge.txt"
$PY - "$PLAT" "$RES" <<'PYEOF'
import sys
from carb_lib.dataset import read_dataset, write_dataset
plat, res = sys.argv[1:]
rows = read_dataset(f"runs/{plat}_probe_sitting_all.parquet")
probe = rows["family"].astype(str) == "module"
write_dataset(rows[probe].reset_index(drop=True), f"{res}/probe_rows.parquet")
write_dataset(rows[~probe].reset_index(drop=True), f"{res}/resnet_rows.parquet")
print(f"probe rows {int(probe.sum())}, ResNet rows {int((~probe).sum())} -> {res}")
PYEOF
$PY -c 'import sys; from carb_lib.passes import save_pass_rows; save_pass_rows(*sys.argv[1:])' \
  "runs/${PLAT}_probe_sitting_parts" "$RES/pass_rows.parquet"
say "host noise (after)"
timeout 60 $PY scripts/host_noise_canary.py --seconds 20 > "$RES/canary_after.txt" 2>&1 || true
say "the test"
$PY scripts/probe_sitting_test.py "$PLAT" --out "$RES" > "$RES/test_log.txt" 2>&1
$PY scripts/probe_sitting_score.py "$RES"
say "done"
