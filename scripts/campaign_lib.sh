# Steps shared by the CPU measurement campaigns (scripts/*campaign*.sh). Sourced, not run:
#
#   PY=${PYTHON:-.venv/bin/python}; CARB="$PY -m carb_lib.cli"
#   . scripts/campaign_lib.sh
#
# Each function runs one step the campaigns used to spell out in full, with the same options.
# They need PY and CARB set, and run from the repository root.

# The host's noise (scripts/host_noise_canary.py) into FILE; a failed canary never stops a campaign.
# Usage: campaign_canary FILE [SECONDS]   (default 20)
campaign_canary() {
  timeout 60 $PY scripts/host_noise_canary.py --seconds "${2:-20}" > "$1" 2>&1 || true
}

# Stop the campaign NAME (exit 2, one line) if any PATH exists: a sitting is never overwritten.
# Usage: campaign_refuse_existing NAME PATH...
campaign_refuse_existing() {
  local name=$1 f
  shift
  for f in "$@"; do
    if [ -e "$f" ]; then echo "$name: $f exists (a sitting is never overwritten)" >&2; exit 2; fi
  done
}

# carb profile of a config list on one CPU thread, in passes (carb_lib.passes), one window per
# config and pass (at most two), a reference config every 50. CAMPAIGN_PROTOCOL in the
# environment replaces the protocol JSON (pre-registration U: the same with cpu_keep_heap).
# Usage: campaign_profile PLATFORM LIST PARTS PASSES BUDGET_S [SEED]   (seed 0)
CAMPAIGN_DEFAULT_PROTOCOL='{"n_windows": 1, "max_windows": 2}'
campaign_profile() {
  $CARB profile --device cpu --platform "$1" --threads 1 \
    --configs "$2" --seed "${6:-0}" --ref-every 50 \
    --passes "$4" --protocol "${CAMPAIGN_PROTOCOL:-$CAMPAIGN_DEFAULT_PROTOCOL}" \
    --time-budget-s "$5" --out "$3" --no-progress
}

# carb merge of a campaign folder (each config's fastest pass) into MERGED, overwriting it; the
# reference-config rows into REFERENCE (none written where REFERENCE is "") and the merge's
# summary into LOG (also printed).
# Usage: campaign_merge PARTS MERGED REFERENCE LOG
campaign_merge() {
  $CARB merge "$1" "$2" --force ${3:+--reference-out "$3"} 2>&1 | tee "$4"
}

# Split merged rows by family: the rows of FAMILY into MATCH, the others into REST.
# Usage: campaign_split_family MERGED FAMILY MATCH REST
campaign_split_family() {
  $PY - "$@" <<'PYEOF'
import sys
from carb_lib.dataset import read_dataset, write_dataset
merged, family, match, rest = sys.argv[1:]
rows = read_dataset(merged)
hit = rows["family"].astype(str) == family
write_dataset(rows[hit].reset_index(drop=True), match)
write_dataset(rows[~hit].reset_index(drop=True), rest)
print(f"{family} rows {int(hit.sum())} -> {match}; other rows {int((~hit).sum())} -> {rest}")
PYEOF
}

# Every pass's rows of a campaign folder in one table (carb_lib.passes.save_pass_rows).
# Usage: campaign_save_passes PARTS OUT
campaign_save_passes() {
  $PY -c 'import sys; from carb_lib.passes import save_pass_rows; save_pass_rows(*sys.argv[1:])' \
    "$1" "$2"
}
