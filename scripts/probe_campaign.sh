#!/usr/bin/env bash
# Pre-registration L (session 25; results/cross_family/probe/PREREGISTRATION.md): probe networks
# (carb_lib.probe_nets: generic CNNs of no family) measured on a CPU whose families were
# measured before, then the test of a ResNet + probe source (scripts/probe_source_test.py).
#
#   1. the host's noise (scripts/host_noise_canary.py, 20 s);
#   2. the list (scripts/probe_list.py): N probe networks and 100 of the quiet ResNet configs;
#   3. carb profile --passes PASSES, one window per pass (a second only when the detector flags
#      the first), BUDGET_S in all; carb merge (fastest pass per config); the probe rows into
#      data/other_cpus/probe_nets/PLATFORM.parquet, the re-measured ResNet rows into results/;
#   4. every pass's rows (pass_rows.parquet); the host's noise again;
#   5. the test (scripts/probe_source_test.py) and its judgement (scripts/probe_source_score.py).
#
# Usage: scripts/probe_campaign.sh PLATFORM [N PASSES BUDGET_S]   (defaults 1200 2 2100)
# Run it from a clean checkout, `nice -n -15`, and run nothing else heavy.
set -euo pipefail
cd "$(dirname "$0")/.."
PLAT=${1:?platform name}
N=${2:-1200}; PASSES=${3:-2}; BUDGET=${4:-2100}
PY=${PYTHON:-.venv/bin/python}
CARB="$PY -m carb_lib.cli"
. scripts/campaign_lib.sh
NEW="data/other_cpus/probe_nets/$PLAT.parquet"
RES="results/cross_family/probe/$PLAT"
[ -e "$NEW" ] && { echo "probe_campaign: $NEW exists" >&2; exit 2; }
say() { echo "[probe] $1 $(date -u +%FT%TZ)"; }
mkdir -p "$RES" "$(dirname "$NEW")"
say "host noise (before)"
campaign_canary "$RES/canary_before.txt"
say "the list"
$PY scripts/probe_list.py "data/other_cpus/$PLAT.parquet" --n "$N" --out "runs/${PLAT}_probe_list"
say "profile, $PASSES passes"
campaign_profile "$PLAT" "runs/${PLAT}_probe_list/list.parquet" "runs/${PLAT}_probe_parts" \
  "$PASSES" "$BUDGET"
say "merge"
campaign_merge "runs/${PLAT}_probe_parts" "runs/${PLAT}_probe_all.parquet" \
  "results/measurement/${PLAT}_probe_reference.parquet" "$RES/merge.txt"
campaign_split_family "runs/${PLAT}_probe_all.parquet" module "$NEW" "$RES/remeasured_resnet.parquet"
campaign_save_passes "runs/${PLAT}_probe_parts" "$RES/pass_rows.parquet"
say "host noise (after)"
campaign_canary "$RES/canary_after.txt"
say "the test"
$PY scripts/probe_source_test.py "$PLAT" --out "$RES" > "$RES/test_log.txt" 2>&1
$PY scripts/probe_source_score.py "$RES"
say "done"
