"""The two shell scripts of a new CPU (scripts/new_cpu_campaign.sh, scripts/new_cpu_analyses.sh):
valid bash, and the campaign refuses, before measuring anything, a platform whose files exist."""

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = [ROOT / "scripts" / "new_cpu_campaign.sh", ROOT / "scripts" / "new_cpu_analyses.sh"]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_is_valid_bash_and_needs_a_platform(script):
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    r = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "platform name" in r.stderr


def test_campaign_refuses_a_measured_platform_and_writes_nothing():
    before = sorted(p.name for p in (ROOT / "data" / "kernels").iterdir())
    r = subprocess.run(["bash", str(SCRIPTS[0]), "cpu_xeon_gnr_2c"], capture_output=True,
                       text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "PYTHON": "false"})
    assert r.returncode == 2
    assert r.stderr.strip() == ("new_cpu_campaign: data/kernels/cpu_xeon_gnr_2c.parquet exists: "
                                "a new CPU writes new files (another platform name?)")
    assert r.stdout == ""
    assert sorted(p.name for p in (ROOT / "data" / "kernels").iterdir()) == before
