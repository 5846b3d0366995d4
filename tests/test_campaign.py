"""Campaign: crash-safe resume after SIGKILL, shards, caps, drift normalisation, merge, noise,
and the GPU script run on the CPU with a tiny budget. Rows in these tests are measured on this
CPU with shortened windows, or synthetic; nothing is written to data/."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from fast_protocol import FAST_SETTINGS

from carb_lib.dataset.schema import empty_row, read_dataset
from carb_lib.families.space import paper_grid
from carb_lib.measure import campaign as cp
from carb_lib.measure.profiling import Protocol

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[1]
FAST = Protocol(threads=1, **FAST_SETTINGS)  # short windows, detector off


@pytest.fixture(scope="module")
def small_configs() -> pd.DataFrame:
    """12 configs of at most 20 MFLOP (whole batch), a seeded stratified sample."""
    return cp.sample_configs(12, seed=3, max_gflops=0.02, sample_under_cap=True)


# the fast settings with 150 ms windows: a campaign slow enough to be killed mid-way
CHILD = f"""
import sys, torch
torch.set_num_threads(1)
from carb_lib.measure import campaign as cp
from carb_lib.measure.profiling import Protocol
cfg = cp.sample_configs(12, seed=3, max_gflops=0.02, sample_under_cap=True)
proto = Protocol(threads=1, **{ {**FAST_SETTINGS, "cpu_min_window_s": 0.15}!r})
cp.run_campaign(cfg, sys.argv[1], "cpu", proto, platform="synthetic_cpu", seed=1,
                ref_every=4, progress=False)
"""


def _results(folder) -> pd.DataFrame:
    return cp.read_parts(folder, cp.RESULTS_PREFIX)


def test_sigkill_then_resume_loses_nothing_and_duplicates_nothing(tmp_path, small_configs):
    out = tmp_path / "parts"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(out)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        t_end = time.time() + 60
        while time.time() < t_end and proc.poll() is None:
            if len(list(out.glob("results-*.parquet"))) >= 3:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "campaign finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    before = _results(out)
    n_before = len(before)
    assert 3 <= n_before < 12
    assert before["config_id"].is_unique
    stamps = dict(zip(before["config_id"], before["measured_at"], strict=True))

    res = cp.run_campaign(small_configs, out, "cpu", FAST, platform="synthetic_cpu", seed=1,
                          ref_every=4, progress=False)  # fmt: skip
    assert res.n_already_done == n_before and res.n_planned == 12 - n_before
    after = _results(out)
    assert len(after) == 12 and after["config_id"].is_unique
    assert set(after["config_id"]) == set(small_configs["config_id"])
    for cid, ts in stamps.items():  # rows written before the kill are untouched
        assert after.loc[after["config_id"] == cid, "measured_at"].iloc[0] == ts
    # a third run has nothing left to do
    res2 = cp.run_campaign(small_configs, out, "cpu", FAST, platform="synthetic_cpu",
                           ref_every=4, progress=False)  # fmt: skip
    assert res2.n_planned == 0 and len(_results(out)) == 12
    merged = cp.merge_parts(out, tmp_path / "synthetic_cpu.parquet")
    assert len(merged) == 12 and (merged["status"] == "ok").all()
    assert merged["latency_norm_ms"].notna().all() and (merged["flops"] > 0).all()
    assert len(read_dataset(tmp_path / "synthetic_cpu.parquet")) == 12
    assert len(cp.reference_rows(out)) >= 2  # start of each run + every 4 configs


def test_order_is_seeded_random_and_shards_partition(small_configs):
    ids = paper_grid()["config_id"]
    masks = [cp.shard_mask(ids, (i, 3)) for i in range(3)]
    assert (sum(m.astype(int) for m in masks) == 1).all()  # disjoint and complete
    assert np.array_equal(masks[1], cp.shard_mask(ids, cp.parse_shard("1/3")))
    assert all(abs(m.mean() - 1 / 3) < 0.02 for m in masks)
    with pytest.raises(ValueError, match="i/n"):
        cp.parse_shard("3")
    with pytest.raises(ValueError):
        cp.parse_shard("3/3")


def test_compute_cap_budget_and_shard_in_a_run(tmp_path, small_configs):
    cfg = pd.concat([small_configs, cp.sample_configs(4, seed=5)], ignore_index=True)
    out = tmp_path / "p"
    res = cp.run_campaign(cfg, out, "cpu", FAST, platform="synthetic_cpu", ref_every=0,
                          max_gflops=0.02, time_budget_s=0.0, progress=False)  # fmt: skip
    rows = _results(out)
    # nothing measured (budget 0), but every config above the cap got a skipped row
    assert res.stopped_by_budget and res.counts["ok"] == 0
    assert (rows["status"] == "skipped").all() and len(rows) == res.counts["skipped"] >= 1
    assert rows["error"].str.contains("compute cap").all()
    # shard 0/2 measures only its share
    out2 = tmp_path / "s"
    cp.run_campaign(small_configs, out2, "cpu", FAST, platform="synthetic_cpu", ref_every=0,
                    shard="0/2", progress=False)  # fmt: skip
    ids = set(_results(out2)["config_id"])
    assert ids == {c for c in small_configs["config_id"] if cp.shard_of(c, 2) == 0}


def _syn(cid: str, status: str, t: str, lat: float = 1.0, platform="synthetic_cpu") -> dict:
    r = empty_row()
    r.update(platform=platform, config_id=cid, status=status, measured_at=t, latency_ms=lat)
    return r


def test_dedupe_keeps_first_ok_else_last():
    df = pd.DataFrame([
        _syn("a" * 16, "error", "2026-01-01T00:00:01"),
        _syn("a" * 16, "ok", "2026-01-01T00:00:02", 2.0),
        _syn("a" * 16, "ok", "2026-01-01T00:00:03", 3.0),
        _syn("b" * 16, "error", "2026-01-01T00:00:01", 4.0),
        _syn("b" * 16, "oom", "2026-01-01T00:00:05", 5.0),
        _syn("b" * 16, "ok", "2026-01-01T00:00:01", 6.0, platform="synthetic_gpu"),
    ])  # fmt: skip
    d = cp.dedupe(df).set_index(["platform", "config_id"])
    assert len(d) == 3
    assert d.loc[("synthetic_cpu", "a" * 16), "latency_ms"] == 2.0  # first ok
    assert d.loc[("synthetic_cpu", "b" * 16), "status"] == "oom"  # no ok: last
    # existing rows count as earlier than new ones
    d2 = cp.dedupe(df.iloc[[2, 1]].reset_index(drop=True), n_existing=1)
    assert d2["latency_ms"].tolist() == [3.0]


def test_latency_normalised_by_interpolated_reference():
    ref = pd.DataFrame([
        {**_syn("r" * 16, "ok", "2026-01-01T00:00:00.000+00:00", 10.0), "energy_j": 1.0,
         "peak_mem_mib": 5.0},
        {**_syn("r" * 16, "ok", "2026-01-01T00:01:40.000+00:00", 12.0), "energy_j": 1.0,
         "peak_mem_mib": 5.0},
    ])  # fmt: skip
    res = pd.DataFrame([
        _syn("c" * 16, "ok", "2026-01-01T00:00:50.000+00:00", 11.0),  # factor 1.1
        _syn("d" * 16, "ok", "2026-01-01T00:05:00.000+00:00", 24.0),  # beyond: factor 1.2
        _syn("e" * 16, "ok", "2026-01-01T00:00:50.000+00:00", 5.0, platform="synthetic_gpu"),
    ])  # fmt: skip
    norm = cp.normalise_latency(res, ref)
    assert norm.iloc[0] == pytest.approx(10.0) and norm.iloc[1] == pytest.approx(20.0)
    assert np.isnan(norm.iloc[2])  # no reference for that platform
    s = cp.drift_summary(ref)
    assert s["n_reference"] == 2 and s["last_over_first"] == pytest.approx(1.2)
    assert s["max_abs_drift_pct"] == pytest.approx(20.0)


def test_noise_study_in_separate_processes(small_configs):
    rows, summary = cp.noise_study(small_configs.head(1), "cpu", FAST, repeats=2,
                                   modes=("back_to_back",), progress=False)  # fmt: skip
    assert len(rows) == 2 and (rows["status"] == "ok").all()
    assert rows["config_id"].nunique() == 1
    lat = summary.set_index("target").loc["latency_ms"]
    v = rows["latency_ms"].to_numpy(dtype=float)
    assert lat["n_configs"] == 1
    assert lat["median_cv"] == pytest.approx(np.std(v, ddof=1) / np.mean(v), rel=1e-12)
    assert lat["median_cv"] == lat["max_cv"] == lat["mean_cv"]  # one config
    # CPU peak memory is deterministic, also across processes: both rows identical, CV 0
    mem = summary.set_index("target").loc["peak_mem_mib"]
    assert rows["peak_mem_mib"].nunique() == 1 and mem["median_cv"] == 0.0
    energy_n = summary.set_index("target").loc["energy_j", "n_configs"]
    assert energy_n == int(rows["energy_j"].notna().all())  # 0 without a readable RAPL


def test_noise_summary_spread_order_and_cv():
    rows = pd.DataFrame([
        {"noise_mode": "spread", "config_id": c, "status": "ok", "latency_ms": v,
         "energy_j": np.nan, "peak_mem_mib": 3.0}
        for c, v in [("x", 1.0), ("y", 10.0), ("x", 3.0), ("y", 10.0)]
    ])  # fmt: skip
    s = cp.noise_summary(rows).set_index("target")
    assert s.loc["latency_ms", "max_cv"] == pytest.approx(np.std([1, 3], ddof=1) / 2)
    assert s.loc["latency_ms", "median_cv"] == pytest.approx(np.std([1, 3], ddof=1) / 4)
    assert s.loc["energy_j", "n_configs"] == 0


@pytest.mark.slow
def test_gpu_script_runs_on_cpu_with_tiny_budget(tmp_path, capsys):
    from carb_lib.measure import gpu_campaign

    out = tmp_path / "gpu_out"
    rc = gpu_campaign.main([
        "--out", str(out), "--device", "cpu", "--platform", "synthetic_cpu",
        "--time-budget-s", "30", "--reserve-s", "2", "--quick", "--noise-configs", "2",
        "--noise-repeats", "2", "--noise-max-gflops", "0.02", "--max-gflops", "1",
        "--families", "resnet,vgg", "--n-per-family", "1", "--selfcheck-s", "0.1",
        "--threads", "1", "--no-progress", "--ref-every", "0",
        "--data-dir", str(tmp_path / "nodata"),
    ])  # fmt: skip
    text = capsys.readouterr().out
    assert rc == 0
    assert "=== self-check ===" in text and "=== summary ===" in text
    assert text.rstrip().splitlines()[-1].strip().startswith("elapsed")  # summary is last
    assert "noise CV latency_ms" in text and "rows by status" in text
    df = read_dataset(out / "synthetic_cpu.parquet")
    assert (df["status"] == "ok").sum() >= 1
    assert set(df["status"]) <= {"ok", "skipped", "error", "oom"}
    assert (out / "selfcheck.json").exists() and (out / "noise_rows.parquet").exists()


def test_gpu_script_old_option_spellings():
    """The old spellings of the seconds options still parse into the new ones, are hidden from
    --help and are remembered for the deprecation warning."""
    from carb_lib.measure import gpu_campaign

    ap = gpu_campaign.build_parser()
    a = ap.parse_args(["--budget", "30", "--reserve", "3", "--timeout", "9", "--cooldown", "0.5",
                       "--selfcheck-seconds", "0.2"])  # fmt: skip
    assert (a.time_budget_s, a.reserve_s, a.timeout_s, a.cooldown_s, a.selfcheck_s) == (
        30.0, 3.0, 9.0, 0.5, 0.2)
    assert a.deprecated_used == ["--budget", "--reserve", "--timeout", "--cooldown",
                                 "--selfcheck-seconds"]
    new = ap.parse_args([])
    assert (new.time_budget_s, new.reserve_s, new.timeout_s) == (480.0, 60.0, 60.0)
    assert new.deprecated_used == []
    text = ap.format_help()
    assert "--time-budget-s" in text and "--budget " not in text and "--reserve " not in text


def test_noise_spread_one_process_per_round(small_configs):
    """Spread rounds in one fresh process each: every config measured once per round."""
    rows, summary = cp.noise_study(small_configs.head(2), "cpu", FAST, repeats=2,
                                   modes=("spread",), progress=False,
                                   spread_process_per_round=True)  # fmt: skip
    assert len(rows) == 4 and (rows["status"] == "ok").all()
    assert rows.groupby("config_id")["repeat"].apply(sorted).tolist() == [[0, 1], [0, 1]]
    assert list(rows["config_id"][:2]) == list(rows["config_id"][2:])  # same order per round
    assert summary.set_index("target").loc["latency_ms", "n_configs"] == 2


def test_audit_re_measures_rows_of_every_family():
    """`carb audit` on a file of several families: each row is rebuilt from its own family's
    config columns (not the ResNet ones) and re-measured in a fresh process."""
    from carb_lib.measure.audit import audit

    data = pd.read_parquet(ROOT / "data" / "cpu_epyc_zen3_2c" / "design" / "rows_new_families.parquet")
    small = data[data["flops"] < 3e7].groupby("family").head(1)  # one tiny row per family
    assert set(small["family"]) == {"efficientnet", "mobilenetv2", "vgg"}
    rows, ag = audit(small, 3, seed=0, protocol=FAST, progress=False)
    assert sorted(rows["family"]) == ["efficientnet", "mobilenetv2", "vgg"]
    assert (rows["status_new"] == "ok").all()
    for col in ("arch", "expansion", "kernel", "depth_mult", "batch_norm"):
        assert col in rows.columns  # the new families' config columns travel with the rows
    # peak memory is deterministic: on the Zen 3's kind of CPU (AVX2) the re-measurement equals
    # the stored row; on another, the allocator model of this CPU's variant
    from carb_lib.core.vocab import ALLOC_FEATURES
    from carb_lib.dataset.features import static_features
    from carb_lib.families import _alloc

    variant = _alloc.host_variant()
    expect = static_features(rows)[ALLOC_FEATURES[variant]].to_numpy() / 2**20
    np.testing.assert_allclose(rows["peak_mem_mib_new"], expect, rtol=0, atol=1e-6)
    assert ag.n == 3
    if variant == 8:
        np.testing.assert_array_equal(rows["peak_mem_mib_new"], rows["peak_mem_mib"])
        assert ag.memory_identical == 1.0
