"""The shell scripts of a new CPU (scripts/new_cpu_campaign.sh, scripts/new_cpu_analyses.sh) and
of fresh rows on a known one (scripts/fresh_rows_campaign.sh, and in passes:
scripts/passes_campaign.sh, scripts/passes_analyses.sh): valid bash, and the campaigns
refuse, before measuring anything, to overwrite measured files; the diagnostic scripts of the
worst small-batch rows write and read their timing list."""

import subprocess
from pathlib import Path

import pytest
from script_loader import load_script

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = [ROOT / "scripts" / "new_cpu_campaign.sh", ROOT / "scripts" / "new_cpu_analyses.sh",
           ROOT / "scripts" / "fresh_rows_campaign.sh", ROOT / "scripts" / "passes_campaign.sh",
           ROOT / "scripts" / "passes_analyses.sh", ROOT / "scripts" / "fresh_depthwise_campaign.sh",
           ROOT / "scripts" / "fresh_depthwise_sitting2.sh", ROOT / "scripts" / "probe_campaign.sh",
           ROOT / "scripts" / "probe_sitting_campaign.sh",
           ROOT / "scripts" / "sitting_source_campaign.sh"]


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


def test_fresh_rows_campaign_refuses_existing_or_missing_files_and_writes_nothing():
    env = {"PATH": "/usr/bin:/bin", "PYTHON": "false"}
    before = sorted(p.name for p in (ROOT / "data" / "kernels").iterdir())
    r = subprocess.run(["bash", str(SCRIPTS[2]), "cpu_xeon_gnr_2c"], capture_output=True,
                       text=True, timeout=60, env=env)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == ("fresh_rows_campaign: data/other_cpus/new_families/"
                                "cpu_xeon_gnr_2c_rest.parquet exists: fresh rows go to a new file")
    r = subprocess.run(["bash", str(SCRIPTS[2]), "cpu_never_measured"], capture_output=True,
                       text=True, timeout=60, env=env)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == ("fresh_rows_campaign: no earlier rows "
                                "data/other_cpus/new_families/cpu_never_measured.parquet")
    assert sorted(p.name for p in (ROOT / "data" / "kernels").iterdir()) == before


def test_passes_campaign_refuses_existing_rows_and_writes_nothing():
    before = sorted(p.name for p in (ROOT / "results" / "measurement").iterdir())
    r = subprocess.run(["bash", str(SCRIPTS[3]), "cpu_epyc_zen5_2c"], capture_output=True,
                       text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "PYTHON": "false"})
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == ("passes_campaign: data/other_cpus/new_families/"
                                "cpu_epyc_zen5_2c_passes.parquet exists: fresh rows go to a new file")
    assert sorted(p.name for p in (ROOT / "results" / "measurement").iterdir()) == before


def test_additivity_config_ids_name_the_rows_or_refuse(tmp_path):
    """``kernel_additivity.py --config-ids``: the list's rows in its order with its groups; an
    id that is not an ok row, or a list without config_id, is one line and no output."""
    import sys

    import pandas as pd

    sys.path.insert(0, str(ROOT / "scripts"))
    from kernel_additivity import _chosen_rows

    df = pd.DataFrame({"config_id": ["a", "b", "c"], "latency_ms": [1.0, 2.0, 3.0]})
    ids = tmp_path / "ids.csv"
    pd.DataFrame({"config_id": ["c", "a"], "group": ["worst", "small"]}).to_csv(ids, index=False)
    rows = _chosen_rows(df, ids)
    assert rows["config_id"].tolist() == ["c", "a"] and rows["group"].tolist() == ["worst", "small"]
    assert rows["latency_ms"].tolist() == [3.0, 1.0]
    pd.DataFrame({"config_id": ["a", "zz"]}).to_csv(ids, index=False)
    with pytest.raises(SystemExit, match="1 config_id.*not ok rows.*zz"):
        _chosen_rows(df, ids)
    pd.DataFrame({"id": ["a"]}).to_csv(ids, index=False)
    with pytest.raises(SystemExit, match="has no config_id column"):
        _chosen_rows(df, ids)
    with pytest.raises(SystemExit, match="no such file"):
        _chosen_rows(df, tmp_path / "missing.csv")


def test_the_committed_timing_list_is_what_the_worst_rows_script_writes():
    """The pre-registered list (session 19) is the worst-rows script's: 10 + 10 + 10 rows, the
    groups ordered by weight bytes, the worst ten first."""
    import pandas as pd

    t = pd.read_csv(ROOT / "results" / "carb" / "replication_cpu_xeon_gnr_2c" /
                    "additivity_list.csv")
    assert t["group"].value_counts().to_dict() == {"worst": 10, "small": 10, "middle": 10}
    mib = t["param_bytes"] / 2**20
    assert mib[t["group"] == "small"].max() <= 16 < mib[t["group"] == "middle"].min()
    assert mib[t["group"] == "middle"].max() <= 128 < mib[t["group"] == "worst"].min()
    assert (t["group"].iloc[:10] == "worst").all() and t["config_id"].is_unique


def test_faults_check_compares_counted_faults_with_the_allocator_model(tmp_path):
    """``kernel_faults_check.py``: operators that fault as the allocator model expects are
    counted as agreeing, the rest are listed by kind; a benchmark without fault counts is one
    line."""
    import sys

    import numpy as np

    sys.path.insert(0, str(ROOT / "tests"))
    from kernel_synthetic import synthetic_bench

    from carb_lib.cache_probe import _mmap_mib

    bench = synthetic_bench(600, seed=2)
    mib = _mmap_mib(bench, 16)
    faults = mib * 256.0
    wrong = np.flatnonzero(mib > 0)[:2]  # two mapping operators that did not fault (heap)
    faults[wrong] = 0.0
    path = tmp_path / "bench.parquet"
    bench.assign(faults_per_call=faults, platform="t").to_parquet(path)
    out = tmp_path / "check.txt"
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "kernel_faults_check.py"), str(path),
                        "--variant", "16", "--out", str(out)], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    n = int((mib > 0).sum())
    text = out.read_text()
    assert f"{n} expected to map" in text
    assert f"{100 * (n - 2) / n:.1f} % fault >= 0.9x" in text and "100.00 % fault < 100" in text
    assert "operators that disagree" in text
    bench.to_parquet(path)
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "kernel_faults_check.py"), str(path),
                        "--variant", "16", "--out", str(out)], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert r.returncode == 1 and "has no faults_per_call column" in r.stderr


def test_kernel_sittings_pairs_one_draw_and_refuses_another(tmp_path):
    """``kernel_sittings.py``: one draw timed twice is paired row by row; a host 1.2x slower
    with one operator 2x slower on top gives median 1.2 and that one operator outside ±10 %;
    two different draws are one line naming the first row that differs, and no report."""
    import sys

    import numpy as np

    sys.path.insert(0, str(ROOT / "tests"))
    from kernel_synthetic import synthetic_bench

    old = synthetic_bench(200, seed=4)
    new = old.assign(time_ms=old["time_ms"] * 1.2)
    new.loc[7, "time_ms"] *= 2.0
    paths = {}
    for name, df in (("old", old), ("new", new), ("other", synthetic_bench(200, seed=5))):
        paths[name] = tmp_path / f"{name}.parquet"
        df.to_parquet(paths[name])
    out = tmp_path / "sittings.txt"
    script = str(ROOT / "scripts" / "kernel_sittings.py")
    r = subprocess.run([sys.executable, script, str(paths["old"]), str(paths["new"]), "--out",
                        str(out)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert "200 operators paired; time new / old: median 1.200" in text
    assert f"{100 * 199 / 200:.1f} % within ±10 %" in text
    assert np.isfinite(float(text.split("log old time: ")[1].split()[0]))
    out.unlink()
    r = subprocess.run([sys.executable, script, str(paths["old"]), str(paths["other"]), "--out",
                        str(out)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 1 and not out.exists()
    assert r.stderr.strip().startswith("kernel_sittings: row ") and ": operator (" in r.stderr
    assert r.stderr.strip().endswith("not the same draw")


def test_mmap_boundary_finds_the_operators_with_a_buffer_of_exactly_32_mib():
    """``mmap_boundary.py`` picks the operators whose events hold a buffer of exactly 32 MiB
    (those the two fault rules disagree on) and refuses to run without ``--out``."""
    import sys

    import pandas as pd

    mod = load_script("mmap_boundary")
    base = dict(kind="add", cin=16, cout=16, k=1, stride=1, pad=0, groups=1, h_in=128,
                h_out=128, precision="fp32")
    ops = pd.DataFrame([{**base, "batch": 32},    # 32 MiB exactly
                        {**base, "batch": 33},    # 33 MiB: past it under both rules
                        {**base, "batch": 31}])   # 31 MiB: under it under both
    assert mod._exactly_edge(ops, 16).tolist() == [True, False, False]
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "mmap_boundary.py")],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2 and "--out is required" in r.stderr


_SIBLINGS = ROOT / "results" / "cross_family" / "siblings"


@pytest.mark.parametrize("script, folder, message", [
    ("fresh_depthwise_campaign.sh", _SIBLINGS,
     "fresh_depthwise_campaign: data/other_cpus/new_families/"
     "cpu_epyc_zen5_2c_fresh_depthwise.parquet exists"),
    ("fresh_depthwise_sitting2.sh", _SIBLINGS / "fresh_cpu_epyc_zen5_2c" / "sitting2",
     "fresh_depthwise_sitting2: results/cross_family/siblings/"
     "fresh_cpu_epyc_zen5_2c/sitting2/rows.parquet exists"),
])
def test_fresh_depthwise_scripts_refuse_a_measured_file_and_write_nothing(script, folder,
                                                                          message):
    before = sorted(p.name for p in folder.iterdir())
    r = subprocess.run(["bash", str(ROOT / "scripts" / script), "cpu_epyc_zen5_2c"],
                       capture_output=True, text=True, timeout=60,
                       env={"PATH": "/usr/bin:/bin", "PYTHON": "false"})
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == message
    assert sorted(p.name for p in folder.iterdir()) == before


def test_sibling_blind_script_is_valid_bash():
    assert subprocess.run(["bash", "-n", str(ROOT / "scripts" / "sibling_source_blind.sh")]
                          ).returncode == 0
