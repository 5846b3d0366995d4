"""Pre-registration Z (session 30): ``scripts/paired_heap_score.py`` judges a kept-heap sitting
against a same-day default-heap sitting. Run here on synthetic sittings built from session 20's
operators and rows, in both directions."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from script_loader import verdicts

from carb_lib import kernels
from carb_lib.cache_probe import _mmap_mib, network_mmap_mib
from carb_lib.dataset import read_dataset, write_dataset

ROOT = Path(__file__).resolve().parents[1]
BEFORE_OPS = ROOT / "data" / "kernels" / "cpu_xeon_gnr_2c_session20.parquet"
BEFORE_ROWS = ROOT / "data" / "other_cpus" / "cpu_xeon_gnr_2c_session20.parquet"
needs_session20 = pytest.mark.skipif(not BEFORE_OPS.exists() or not BEFORE_ROWS.exists(),
                                     reason="session 20's files are not in this checkout")


def _write(tmp_path: Path, tag: str, ops: pd.DataFrame, rows: pd.DataFrame, ref_cv: float,
           ref_ms: float, law: tuple[float, float]) -> None:
    (tmp_path / "data/kernels").mkdir(parents=True, exist_ok=True)
    (tmp_path / "data/other_cpus").mkdir(parents=True, exist_ok=True)
    ops.to_parquet(tmp_path / f"data/kernels/P_{tag}.parquet")
    write_dataset(rows, tmp_path / f"data/other_cpus/P_{tag}.parquet")
    res = tmp_path / f"results/measurement/P_{tag}"
    res.mkdir(parents=True, exist_ok=True)
    z = np.random.default_rng(0).standard_normal(40)
    lat = ref_ms * (1 + ref_cv * (z - z.mean()) / z.std(ddof=1))
    pd.DataFrame({"latency_ms": lat, "status": ["ok"] * 39 + ["noisy"]}).to_parquet(
        res / "reference.parquet")
    rep = tmp_path / f"results/carb/replication_P_{tag}"
    rep.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"split": ["random (test part)", "batch_small (batch<=8 held out)"],
                  "law": ["kernel", "kernel"], "r2": [0.99, law[0]], "r2_sd": [0.0, 0.002],
                  "within_10pct": [law[1], 0.8], "within_10pct_sd": [0.01, 0.0]}
                 ).to_csv(rep / "replication_summary.csv", index=False)


def _sittings(tmp_path: Path, *, kept_works: bool) -> None:
    """A default sitting (session 20's faulting operators and rows, with some that map
    nothing) and a kept one 2 % slower. ``kept_works``: faults and their time gone, a steady
    host, a law as good; else: faults and all, an unsteady host, a worse law."""
    d_ops = kernels.read_bench(BEFORE_OPS)
    mapped = _mmap_mib(d_ops, "16+fp16") > 0
    d_ops = pd.concat([d_ops[mapped], d_ops[~mapped].iloc[:400]], ignore_index=True)
    d_rows = read_dataset(BEFORE_ROWS)
    mib = network_mmap_mib(d_rows, "16+fp16")
    d_rows = pd.concat([d_rows[mib > 0], d_rows[mib == 0].iloc[:80]]).reset_index(drop=True)
    cost = kernels.KernelModel(faults="16+fp16").fit(d_ops).fault_ms_per_mib_
    fault_ms = cost * network_mmap_mib(d_rows, "16+fp16")
    k_ops, k_rows = d_ops.copy(), d_rows.copy()
    k_rows["minor_faults_per_call"] = 0.0 if kept_works else 9_000.0
    if kept_works:
        faulted = d_ops["faults_per_call"] >= 1000
        k_ops.loc[faulted, "time_ms"] = np.maximum(
            d_ops["time_ms"] - cost * _mmap_mib(d_ops, "16+fp16"), 0.3 * d_ops["time_ms"]
        )[faulted]
        k_ops["faults_per_call"] = 0.0
        k_rows["latency_ms"] = np.maximum(d_rows["latency_ms"] - fault_ms,
                                          0.3 * d_rows["latency_ms"])
    k_ops["time_ms"] *= 1.02
    k_rows["latency_ms"] *= 1.02
    _write(tmp_path, "d", d_ops, d_rows, 0.02, 11.0, (0.962, 0.94))
    _write(tmp_path, "k", k_ops, k_rows, 0.02 if kept_works else 0.12,
           11.2 if kept_works else 9.5, (0.958, 0.951) if kept_works else (0.90, 0.70))


def _score(tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "paired_heap_score.py"), "P",
                           "--kept", "k", "--default", "d"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})


@needs_session20
def test_the_paired_score_holds_where_the_kept_heap_removes_faults_on_a_steady_host(tmp_path):
    _sittings(tmp_path, kept_works=True)
    r = _score(tmp_path)
    assert r.returncode == 0, r.stderr
    v = verdicts(r.stdout, "Z")
    assert v == {f"Z{i}": "HELD" for i in range(10)}
    assert "kept / default median 1.018" in r.stdout  # 11.2 / 11.0
    assert "median kept / default 1.020 (the host)" in r.stdout
    assert "kept minus default small-batch R²: -0.004" in r.stdout
    assert "kept minus default share within +-10 %: +1.1 points" in r.stdout
    assert r.stdout.rstrip().endswith("10 of 10 held")
    out = tmp_path / "results/measurement/P_k"
    assert (out / "score.txt").read_text() == r.stdout
    pr = pd.read_csv(out / "paired_rows.csv")
    assert {"none", "large"} <= set(pr["group"]) and len(pr) == len(read_dataset(
        tmp_path / "data/other_cpus/P_d.parquet"))


@needs_session20
def test_the_paired_score_misses_an_unsteady_faulting_sitting_with_a_worse_law(tmp_path):
    _sittings(tmp_path, kept_works=False)
    r = _score(tmp_path)
    assert r.returncode == 0, r.stderr
    v = verdicts(r.stdout, "Z")
    assert {z for z, s in v.items() if s == "MISSED"} == {"Z0", "Z1", "Z3", "Z4", "Z5", "Z6",
                                                           "Z7", "Z8"}
    assert v["Z2"] == v["Z9"] == "HELD"
    assert "kept minus default small-batch R²: -0.062" in r.stdout
    assert r.stdout.rstrip().endswith("2 of 10 held")


def test_the_paired_score_names_a_missing_file_in_one_line(tmp_path):
    r = _score(tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == "paired_heap_score: no kept operators file " \
                               "data/kernels/P_k.parquet"
    assert not (tmp_path / "results").exists()
