"""Pre-registration AB (session 30): the default heap and the kept heap timed interleaved, slice by
slice. The list (``scripts/heap_interleaved_list.py``), the campaign
(``scripts/heap_interleaved.sh``, stub-traced) and the judgement
(``scripts/heap_interleaved_score.py``, on synthetic arms in both directions)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from script_loader import load_script, stub_campaign, verdicts

from carb_lib.cache_probe import network_mmap_mib
from carb_lib.dataset import read_dataset, write_dataset

ROOT = Path(__file__).resolve().parents[1]
ROWS = ROOT / "data" / "other_cpus" / "cpu_xeon_gnr_2c_session20.parquet"
OPS = ROOT / "data" / "kernels" / "cpu_xeon_gnr_2c_session20.parquet"
needs_rows = pytest.mark.skipif(not ROWS.exists() or not OPS.exists(),
                                reason="session 20's files are not in this checkout")


@needs_rows
def test_the_list_takes_every_mapping_config_and_a_seeded_sample_of_the_rest_in_slices(tmp_path):
    lst_mod = load_script("heap_interleaved_list")
    rows = read_dataset(ROWS)
    ok = rows[rows["status"].astype(str) == "ok"]
    mapped = set(ok.loc[network_mmap_mib(ok.reset_index(drop=True), "16+fp16") > 0, "config_id"])
    lst = lst_mod.interleaved_list(rows, n_none=50, slices=4, variant="16+fp16", seed=0)
    assert mapped and set(lst.loc[lst["mapped_mib"] > 0, "config_id"]) == mapped
    assert (lst["mapped_mib"] == 0).sum() == 50 and lst["config_id"].is_unique
    assert sorted(lst["slice"].unique()) == [0, 1, 2, 3]
    assert lst["slice"].value_counts().max() - lst["slice"].value_counts().min() <= 1
    again = lst_mod.interleaved_list(rows, n_none=50, slices=4, variant="16+fp16", seed=0)
    pd.testing.assert_frame_equal(lst, again)
    other = lst_mod.interleaved_list(rows, n_none=50, slices=4, variant="16+fp16", seed=1)
    assert set(other["config_id"]) != set(lst["config_id"])
    assert lst_mod.main([str(ROWS), str(tmp_path / "l"), "--n-none", "50", "--slices", "4"]) == 0
    s0 = pd.read_parquet(tmp_path / "l" / "slice0.parquet")
    assert "slice" not in s0.columns and "latency_ms" not in s0.columns
    assert list(s0["config_id"]) == list(lst.loc[lst["slice"] == 0, "config_id"])


def test_the_list_refuses_no_slices_in_one_line(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "heap_interleaved_list.py"),
                        str(ROWS), str(tmp_path / "l"), "--slices", "0"], capture_output=True,
                       text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if not ROWS.exists():
        assert r.stderr.strip() == f"heap_interleaved_list: no rows file {ROWS}"
    else:
        assert r.stderr.strip() == ("heap_interleaved_list: slices must be >= 1 and n_none >= 0, "
                                    "got 0 and 400")
    assert r.returncode == 2 and not (tmp_path / "l").exists()


def _stub(tmp_path: Path) -> tuple[Path, Path]:
    return stub_campaign(tmp_path, 'case "$1" in scripts/heap_interleaved_list.py) '
                                   'mkdir -p "$3"; : > "$3/list.parquet";; esac\n')


def _run(tmp_path: Path, stub: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "scripts/heap_interleaved.sh", *args], capture_output=True,
                          text=True, cwd=tmp_path, timeout=60,
                          env={**os.environ, "PYTHON": str(stub)})


def test_the_campaign_times_each_slice_by_both_arms_alternating_which_goes_first(tmp_path):
    log, stub = _stub(tmp_path)
    r = _run(tmp_path, stub, "P", "rows.parquet", "t", "30", "3")
    assert r.returncode == 0, r.stderr
    calls = log.read_text().splitlines()
    assert calls[0] == calls[-1] == "scripts/host_noise_canary.py --seconds 20"
    assert calls[1] == ("scripts/heap_interleaved_list.py rows.parquet runs/P_t_list --n-none 30 "
                        "--slices 3")
    profiles = [c for c in calls if " profile " in f" {c} "]
    arms = [(c.split("--configs runs/P_t_list/")[1].split(".parquet")[0],
             c.split("--out runs/P_t_")[1].split()[0]) for c in profiles]
    assert arms == [("slice0", "default"), ("slice0", "kept"), ("slice1", "kept"),
                    ("slice1", "default"), ("slice2", "default"), ("slice2", "kept")]
    for c, (_, arm) in zip(profiles, arms, strict=True):
        assert c.endswith(f'--protocol {{"cpu_keep_heap": {str(arm == "kept").lower()}}}')
        assert "--threads 1 " in c and "--ref-every 50 " in c
    assert [c.split("--seed ")[1].split()[0] for c in profiles] == ["0", "0", "1", "1", "2", "2"]
    assert calls[-3:-1] == [
        "-m carb_lib.cli merge runs/P_t_default results/measurement/P_t/default.parquet "
        "--reference-out results/measurement/P_t/default_reference.parquet",
        "-m carb_lib.cli merge runs/P_t_kept results/measurement/P_t/kept.parquet "
        "--reference-out results/measurement/P_t/kept_reference.parquet"]
    assert (tmp_path / "results/measurement/P_t/list.parquet").exists()


def test_the_campaign_never_overwrites_a_sitting(tmp_path):
    log, stub = _stub(tmp_path)
    (tmp_path / "runs" / "P_t_kept").mkdir(parents=True)
    r = _run(tmp_path, stub, "P", "rows.parquet", "t")
    assert r.returncode == 2 and not log.exists()
    assert r.stderr.strip() == ("heap_interleaved: runs/P_t_kept exists (a sitting is never "
                                "overwritten)")


# --------------------------------------------------------------------------- the judgement
def _arms(tmp_path: Path, *, kept_works: bool) -> None:
    """Two arms built from session 20's rows: the default arm as measured; the kept arm with
    the faults and their time gone (``kept_works``), or 8 % slower on the small batches and
    faulting as before."""
    from carb_lib.kernels import KernelModel, read_bench

    rows = read_dataset(ROWS)
    rows = rows[rows["status"].astype(str) == "ok"].reset_index(drop=True)
    mib = network_mmap_mib(rows, "16+fp16")
    rows = pd.concat([rows[mib > 0], rows[mib == 0].iloc[:300]]).reset_index(drop=True)
    cost = KernelModel(faults="16+fp16").fit(read_bench(OPS)).fault_ms_per_mib_
    fault_ms = cost * network_mmap_mib(rows, "16+fp16")
    d = rows.copy()
    d["minor_faults_per_call"] = np.where(fault_ms > 0, 5_000.0, 0.0)
    k = d.copy()
    if kept_works:
        k["latency_ms"] = np.maximum(d["latency_ms"] - fault_ms, 0.3 * d["latency_ms"]) * 1.01
        k["minor_faults_per_call"] = 0.0
    else:
        k["latency_ms"] = d["latency_ms"] * np.where(d["batch"] <= 4, 1.08, 1.0)
    res = tmp_path / "results/measurement/P_t"
    res.mkdir(parents=True)
    write_dataset(d, res / "default.parquet")
    write_dataset(k, res / "kept.parquet")
    pd.DataFrame({"config_id": d["config_id"], "slice": np.arange(len(d)) % 5}).to_parquet(
        res / "list.parquet")
    for arm, ms in (("default", 9.0), ("kept", 9.1)):
        pd.DataFrame({"latency_ms": [ms, ms * 1.02, ms * 0.98], "status": ["ok"] * 3}
                     ).to_parquet(res / f"{arm}_reference.parquet")


def _score(tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "heap_interleaved_score.py"),
                           "P", "--tag", "t", "--ops", str(OPS)], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


@needs_rows
def test_the_interleaved_score_holds_where_only_the_faulting_configs_change(tmp_path):
    _arms(tmp_path, kept_works=True)
    r = _score(tmp_path)
    assert r.returncode == 0, r.stderr
    assert verdicts(r.stdout, "AB") == {f"AB{i}": "HELD" for i in range(1, 6)}
    assert "median kept / default 1.010" in r.stdout
    assert "reference config, kept arm: median 9.10 ms, CV 2.0% (3 timings)" in r.stdout
    assert r.stdout.rstrip().endswith("5 of 5 held")
    pr = pd.read_csv(tmp_path / "results/measurement/P_t/paired.csv")
    assert set(pr["slice"]) == {0, 1, 2, 3, 4} and {"none", "large"} <= set(pr["group"])


@needs_rows
def test_the_interleaved_score_misses_a_kept_heap_that_slows_small_batches(tmp_path):
    _arms(tmp_path, kept_works=False)
    r = _score(tmp_path)
    assert r.returncode == 0, r.stderr
    v = verdicts(r.stdout, "AB")
    assert v["AB2"] == v["AB3"] == v["AB4"] == "MISSED"
    assert v["AB5"] == "HELD"
    assert "b<=4 1.080" in r.stdout


def test_the_interleaved_score_names_a_missing_file_in_one_line(tmp_path):
    r = _score(tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == ("heap_interleaved_score: no default rows file "
                                "results/measurement/P_t/default.parquet")
