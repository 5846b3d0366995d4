"""Leave-one-CPU-out transfer, cross-CPU slopes and host calibration, on SYNTHETIC rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from carb_lib.transfer import calibration as C
from carb_lib.transfer import cpus as TC


def synthetic_cpus(n_archs: int = 80, seed: int = 0) -> pd.DataFrame:
    """SYNTHETIC rows of four made-up CPUs: every CPU's summed operator time ``kernel_ms``
    differs (its own per-arch exponent), and its network latency is exactly 2x that."""
    from carb_lib.families.nb201 import all_archs, nb201_grid, nb201_static_features

    rng = np.random.default_rng(seed)
    g = nb201_grid(list(rng.choice(all_archs(), size=n_archs, replace=False)))
    f = nb201_static_features(g)
    base = np.log(f["flops"].to_numpy()) / 10
    parts = []
    for i, plat in enumerate(("synthetic_w", "synthetic_x", "synthetic_y", "synthetic_z")):
        d = pd.concat([g.reset_index(drop=True), f[["params"]].reset_index(drop=True)], axis=1)
        kernel = np.exp(0.3 * i + base * (1 + 0.1 * i) + rng.normal(0, 0.05, n_archs))
        parts.append(d.assign(platform=plat, kernel_ms=kernel, latency_ms=2.0 * kernel,
                              peak_mem_mib=1.0 + f["params"].to_numpy() / 1e6))
    return pd.concat(parts, ignore_index=True)


def test_leave_one_cpu_out_zero_shot_exact_and_scores():
    rows = synthetic_cpus()
    loco = TC.leave_one_cpu_out(rows, ks=(5, 10), seeds=2, targets=["synthetic_x"])
    z = loco[loco["method"] == "zero_shot"].iloc[0]
    assert z["median_ape_pct"] < 1e-6 and z["spearman"] == pytest.approx(1.0)
    assert z["pareto_recall"] == pytest.approx(1.0)
    assert set(loco["method"]) == {"zero_shot", "few_shot", "target_only", "naive_affine"}
    naive = loco[loco["method"] == "naive_affine"]
    assert set(naive["source"]) == {"synthetic_w", "synthetic_y", "synthetic_z"}
    assert (naive["n_query"] == 80 - 10).all()
    few = loco[(loco["method"] == "few_shot") & (loco["k"] == 5)]
    assert len(few) == 2 and (few["n_query"] == 75).all()
    noise = pd.DataFrame({"platform": ["synthetic_x"], "median_ape_pct": [2.0],
                          "within_10pct": [0.9], "spearman": [0.99]})
    summ = TC.summarise_loco(loco, noise)
    row = summ[(summ["method"] == "zero_shot")].iloc[0]
    assert row["noise_median_ape_pct"] == 2.0 and row["ape_over_noise"] < 1e-6
    claims = TC.transfer_claims(summ)
    assert set(claims["claim_id"]) == {f"cpu_transfer_{c}_synthetic_x" for c in (
        "zero_shot_ape_over_noise", "zero_shot_spearman", "few_shot_k10_ape_over_noise")}
    # our targets, never the paper's: the target sits in target_value
    assert claims["paper_value"].isna().all()
    assert sorted(claims["target_value"]) == [0.97, 1.3, 2.0]


def test_leave_one_cpu_out_bad_input():
    rows = synthetic_cpus(n_archs=30)
    with pytest.raises(ValueError, match="target platform 'cpu_nowhere' is not in the rows"):
        TC.leave_one_cpu_out(rows, targets=["cpu_nowhere"])
    with pytest.raises(ValueError, match="k=40 is not below the 30 rows of target"):
        TC.leave_one_cpu_out(rows, ks=(5, 40), seeds=1)
    with pytest.raises(ValueError, match="no 'kernel_ms' column"):
        TC.leave_one_cpu_out(rows.drop(columns="kernel_ms"))


def test_check_bench_cpu_names_both_ids():
    rows = pd.DataFrame({"cpu_id": ["GenuineIntel family 6 model 167 stepping 1"]})
    bench = pd.DataFrame({"cpu_id": ["AuthenticAMD family 26 model 2 stepping 1"]})
    with pytest.raises(ValueError, match="model 167.*|model 2 stepping") as e:
        TC.check_bench_cpu(rows, bench)
    assert "model 167" in str(e.value) and "family 26 model 2" in str(e.value)
    TC.check_bench_cpu(rows, rows)  # the same CPU passes
    TC.check_bench_cpu(pd.DataFrame({"cpu_id": ["AMD EPYC"]}), bench)  # a legacy id: no model


def test_cross_cpu_slopes_recover_a_known_slope():
    rows = synthetic_cpus(n_archs=60)
    w = rows["platform"] == "synthetic_w"
    z = rows["platform"] == "synthetic_z"
    rows.loc[z, "latency_ms"] = np.exp(0.5 + 1.3 * np.log(rows.loc[w, "latency_ms"].to_numpy()))
    sl = TC.cross_cpu_slopes(rows, targets=("latency_ms",), n_boot=200)
    assert len(sl) == 4 * 3
    r = sl[(sl["source"] == "synthetic_w") & (sl["target"] == "synthetic_w")]
    assert r.empty
    wz = sl[(sl["source"] == "synthetic_w") & (sl["target"] == "synthetic_z")].iloc[0]
    assert wz["slope_ci_low"] <= wz["slope"] <= wz["slope_ci_high"]
    assert wz["slope"] == pytest.approx(1.3) and wz["slope_ci_high"] - wz["slope_ci_low"] < 1e-9


def test_host_factor_applied_or_said():
    cal = C.host_factor([1.2, 1.25, 1.18, 1.22], [1.0, 1.0, 1.0, 1.0])
    assert cal.applied and cal.factor == pytest.approx(1.21, abs=0.01)
    pred = pd.DataFrame({"latency_ms_pred": [10.0], "latency_ms_pred_hi": [12.0],
                         "peak_mem_mib_pred": [5.0]})
    out = C.apply_calibration(pred, cal)
    assert out["latency_ms_pred"].iloc[0] == pytest.approx(10 * cal.factor)
    assert out["latency_ms_pred_hi"].iloc[0] == pytest.approx(12 * cal.factor)
    assert out["peak_mem_mib_pred"].iloc[0] == 5.0 and bool(out["host_calibration_applied"].iloc[0])
    noisy = C.host_factor([0.7, 1.5, 1.05, 0.9, 1.4], [1.0] * 5)
    assert not noisy.applied and "NOT applied" in noisy.reason
    out = C.apply_calibration(pred, noisy)
    assert out["latency_ms_pred"].iloc[0] == 10.0
    assert out["host_factor"].iloc[0] == pytest.approx(noisy.factor)
    with pytest.raises(ValueError, match="needs >= 3 timed configs"):
        C.host_factor([1.0, 1.0], [1.0, 1.0])


def test_calibrated_model_scales_latency_only():
    class Stub:
        platform_ = "p"

        def predict_interval(self, X, coverage=None):
            return pd.DataFrame({"latency_ms": [2.0], "latency_ms_lo": [1.0],
                                 "peak_mem_mib": [3.0]})

    m = C.CalibratedModel(Stub(), C.host_factor([2, 2.1, 1.9], [1, 1, 1]))
    got = m.predict_interval(None)
    assert got["latency_ms"].iloc[0] == pytest.approx(4.0)
    assert got["latency_ms_lo"].iloc[0] == pytest.approx(2.0)
    assert got["peak_mem_mib"].iloc[0] == 3.0 and m.platform_ == "p"


def test_calibration_configs_are_small_resnets():
    cfg = C.calibration_configs(5)
    assert len(cfg) == 5 and cfg["config_id"].is_unique
    assert cfg.iloc[0]["depth"] == 18 and cfg.iloc[0]["batch"] == 8
    with pytest.raises(ValueError, match="3 to 8 configs"):
        C.calibration_configs(20)


def test_cli_transfer_needs_samples_or_kernels(tmp_path):
    from cli_helpers import one_line_error
    from typer.testing import CliRunner

    from carb_lib.app.cli import app

    rows = synthetic_cpus(n_archs=20)
    rows.to_csv(tmp_path / "src.csv", index=False)
    res = CliRunner().invoke(app, ["transfer", "--source", str(tmp_path / "src.csv"),
                                   "--query", str(tmp_path / "src.csv"),
                                   "--out", str(tmp_path / "pred.csv")])
    one_line_error(res, "--target-samples", "--kernels")


def test_kernels_probe_goes_beside_the_benchmark(tmp_path, monkeypatch):
    from carb_lib.kernels import cache_probe
    from carb_lib.kernels.draw import cache_probe_path, probe_read_bandwidth

    sizes = [4, 16, 64, 256, 1024, 2048]
    fake = pd.DataFrame({"size_mib": sizes, "read_gb_per_s": [40, 40, 30, 12, 10, 10],
                         "cv": 0.01})
    calls = []
    monkeypatch.setattr(cache_probe, "read_bandwidth",
                        lambda **kw: calls.append(kw) or fake.copy())
    said = []
    path = probe_read_bandwidth(tmp_path / "my_cpu.parquet", echo=said.append)
    assert path == cache_probe_path(tmp_path / "my_cpu.parquet")
    assert path == tmp_path / "my_cpu_cache_probe.csv"
    got = pd.read_csv(path)
    assert got["read_gb_per_s"].tolist() == [40, 40, 30, 12, 10, 10] and "cpu_id" in got
    assert len(said) == 1 and "GB/s from memory" in said[0]
    probe_read_bandwidth(tmp_path / "my_cpu.parquet", echo=said.append)  # kept, not re-probed
    assert len(calls) == 1 and "kept the probe" in said[-1]


def test_cpu_remeasurement_noise_is_the_one_statistic_relative_to_the_stored_value(tmp_path):
    from carb_lib.evaluation.scoring import remeasurement_noise

    audit = pd.DataFrame({"latency_ms": [10.0, 20.0, 40.0, 80.0],
                          "latency_ms_new": [12.0, 19.0, 40.0, 60.0],
                          "status_new": ["ok"] * 4})
    path = tmp_path / "a.parquet"
    audit.to_parquet(path)
    files = {"cpu_x": ("rows", "bench", str(path)), "cpu_none": ("r", "b", str(tmp_path / "no"))}
    noise = TC.cpu_remeasurement_noise(files).set_index("platform")
    one = remeasurement_noise(audit).iloc[0]
    for col in ("median_ape_pct", "mape_pct", "within_10pct", "spearman"):
        assert noise.loc["cpu_x", col] == pytest.approx(one[col])
    assert noise.loc["cpu_x", "mape_pct"] == pytest.approx(100 * (0.2 + 0.05 + 0 + 0.25) / 4)
    assert noise.loc["cpu_x", "n"] == 4 and noise.loc["cpu_none", "n"] == 0
    with pytest.warns(DeprecationWarning, match="cpu_remeasurement_noise"):
        old = TC.remeasurement_ceiling(files)
    assert old["median_ape_pct"].iloc[0] == pytest.approx(noise.loc["cpu_x", "median_ape_pct"])
