"""Tests of carb_lib.characterize.scaling (and the characterization plots) on SYNTHETIC data.

Every dataset here is synthetic: made in the test or by carb_lib.dataset.synthetic, with known truth.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from carb_lib.characterize import scaling
from carb_lib.dataset.catalog import dataset_name
from carb_lib.dataset.synthetic import SYNTHETIC_TRUTH, make_synthetic_dataset

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def synth_gpu() -> pd.DataFrame:
    return make_synthetic_dataset(720, seed=0, platform="synthetic_gpu")


@pytest.fixture(scope="module")
def synth_cpu() -> pd.DataFrame:
    return make_synthetic_dataset(360, seed=1, platform="synthetic_cpu", with_energy=False,
                                  with_telemetry=False)


def _power_law_frame(n=300, exponent=1.3, sigma=0.1, seed=0) -> pd.DataFrame:
    """SYNTHETIC y = 3 x**exponent * lognormal noise, x log-uniform over six decades."""
    rng = np.random.default_rng(seed)
    x = 10 ** rng.uniform(6, 12, n)
    y = 3.0 * x**exponent * np.exp(rng.normal(0, sigma, n))
    return pd.DataFrame({"flops": x, "latency_ms": y, "status": "ok",
                         "platform": "synthetic_test",
                         "precision": rng.choice(["fp32", "fp16"], n)})


# --------------------------------------------------------------------------- fit_scaling


def test_fit_scaling_recovers_known_exponent():
    df = _power_law_frame()
    res = scaling.fit_scaling(df, targets=["latency_ms"], x_cols=["flops"],
                              by=(None, "precision"))
    assert set(res["group"]) == {"all", "fp16", "fp32"}
    for _, r in res.iterrows():
        assert r["testable"]
        assert r["ci_low"] < 1.3 < r["ci_high"], r.to_dict()
        assert r["r2"] > 0.95
    overall = res[res["group"] == "all"].iloc[0]
    assert overall["n"] == 300 and overall["platform"] == "synthetic_test"
    assert abs(overall["intercept"] - math.log(3.0)) < 0.5


def test_fit_scaling_ignores_rows_that_are_not_ok():
    df = _power_law_frame(seed=1)
    bad = df.sample(30, random_state=0).index
    polluted = df.copy()
    polluted.loc[bad, "status"] = "error"
    polluted.loc[bad, "latency_ms"] = 1e30
    a = scaling.fit_scaling(polluted, targets=["latency_ms"], x_cols=["flops"], by=(None,))
    b = scaling.fit_scaling(df.drop(index=bad), targets=["latency_ms"], x_cols=["flops"],
                            by=(None,))
    assert a["exponent"].iloc[0] == pytest.approx(b["exponent"].iloc[0])
    assert a["n"].iloc[0] == 270


def test_fit_scaling_on_synthetic_dataset_above_breakpoint(synth_gpu):
    """Above the hinge the synthetic laws are pure power laws in flops (no batch effect)."""
    above = synth_gpu[synth_gpu["flops"].astype(float) > 3e10]
    uni = scaling.fit_scaling(above, targets=["energy_j", "latency_ms"], x_cols=["flops"],
                              by=("precision",), alpha=0.01)
    for _, r in uni.iterrows():
        truth = SYNTHETIC_TRUTH[r["target"]]["slope_above"]
        assert r["ci_low"] < truth < r["ci_high"], r.to_dict()
    joint = scaling.fit_scaling(above, targets=["latency_ms"], x_cols=["flops", "batch"],
                                by=("precision",), joint=True, alpha=0.01)
    assert set(joint["model"]) == {"joint"}
    for _, r in joint.iterrows():
        truth = SYNTHETIC_TRUTH["latency_ms"]["slope_above"] if r["x"] == "flops" else 0.0
        assert r["ci_low"] < truth < r["ci_high"], r.to_dict()


def test_fit_scaling_energy_all_nan_is_not_testable(synth_cpu):
    res = scaling.fit_scaling(synth_cpu, x_cols=["flops", "batch"], by=(None, "block"))
    energy = res[res["target"] == "energy_j"]
    assert len(energy) == 2 and not energy["testable"].any()
    assert energy["reason"].str.contains("no energy counter").all()
    assert res[res["target"] == "latency_ms"]["testable"].all()


def test_fit_scaling_unknown_column_is_a_clear_error(synth_cpu):
    with pytest.raises(KeyError, match="nope"):
        scaling.fit_scaling(synth_cpu, x_cols=["nope"])


# --------------------------------------------------------------------------- fit_segmented


def test_fit_segmented_recovers_known_breakpoint():
    rng = np.random.default_rng(2)
    u = rng.uniform(6, 14, 400)
    v = 1.0 + 0.2 * (u - 10) + 0.9 * np.maximum(0, u - 10) + rng.normal(0, 0.03, 400)
    df = pd.DataFrame({"flops": 10**u, "latency_ms": 10**v, "status": "ok"})
    r = scaling.fit_segmented(df, "latency_ms", n_boot=40, seed=0).iloc[0]
    assert r["testable"]
    assert r["log10_breakpoint_ci_low"] < 10 < r["log10_breakpoint_ci_high"]
    assert abs(r["log10_breakpoint"] - 10) < 0.1
    assert r["slope_below"] == pytest.approx(0.2, abs=0.02)
    assert r["slope_above"] == pytest.approx(1.1, abs=0.02)
    assert r["delta_bic"] > 10


def test_fit_segmented_on_synthetic_dataset(synth_gpu, synth_cpu):
    res = scaling.fit_segmented(pd.concat([synth_gpu, synth_cpu]), "energy_j", n_boot=30)
    gpu = res[res["platform"] == "synthetic_gpu"].iloc[0]
    truth = SYNTHETIC_TRUTH["energy_j"]
    assert gpu["breakpoint_ci_low"] < truth["breakpoint_flops"] < gpu["breakpoint_ci_high"]
    assert gpu["slope_below_ci_low"] < truth["slope_below"] < gpu["slope_below_ci_high"]
    assert gpu["slope_above_ci_low"] < truth["slope_above"] < gpu["slope_above_ci_high"]
    cpu = res[res["platform"] == "synthetic_cpu"].iloc[0]
    assert not cpu["testable"] and "energy" in cpu["reason"]


# --------------------------------------------------------------------------- divergence


def _tiered_frame(seed=0, sigma=0.05) -> pd.DataFrame:
    """SYNTHETIC: 100 low-demand rows (1e6 FLOPs), 800 middle, 100 high (1e12 FLOPs).

    Energy: 1 J (low) and 35 J (high); latency: 1 ms and 10 ms -> energy/latency = 3.5.
    """
    rng = np.random.default_rng(seed)
    flops = np.r_[np.full(100, 1e6), 10 ** rng.uniform(7, 11, 800), np.full(100, 1e12)]
    energy = np.r_[np.full(100, 1.0), np.full(800, 5.0), np.full(100, 35.0)]
    latency = np.r_[np.full(100, 1.0), np.full(800, 3.0), np.full(100, 10.0)]
    noise = lambda: np.exp(rng.normal(0, sigma, 1000))  # noqa: E731
    return pd.DataFrame({"flops": flops, "energy_j": energy * noise(),
                         "latency_ms": latency * noise(), "peak_mem_mib": 100.0,
                         "status": "ok", "platform": "synthetic_test"})


def test_divergence_recovers_known_ratio():
    res = scaling.divergence(_tiered_frame(), n_boot=200, seed=0).set_index("quantity")
    assert res.loc["energy_j", "n_low"] == 100 and res.loc["energy_j", "n_high"] == 100
    assert res.loc["energy_j", "growth"] == pytest.approx(35, rel=0.03)
    assert res.loc["latency_ms", "growth"] == pytest.approx(10, rel=0.03)
    assert res.loc["peak_mem_mib", "growth"] == pytest.approx(1.0)
    ratio = res.loc["energy_over_latency"]
    assert ratio["testable"] and ratio["ci_low"] < 3.5 < ratio["ci_high"]
    exact = scaling.divergence(_tiered_frame(sigma=0.0), n_boot=20).set_index("quantity")
    assert exact.loc["energy_over_latency", "growth"] == pytest.approx(3.5)


def test_divergence_tiers_are_parameters():
    with pytest.raises(ValueError, match="q_low"):
        scaling.divergence(_tiered_frame(), q_low=0.9, q_high=0.1)
    wide = scaling.divergence(_tiered_frame(), q_low=0.3, q_high=0.7, n_boot=10)
    assert (wide["n_low"].dropna() > 100).all()


def test_divergence_without_energy_is_not_testable(synth_cpu):
    res = scaling.divergence(synth_cpu, n_boot=20).set_index("quantity")
    assert not res.loc["energy_j", "testable"]
    assert not res.loc["energy_over_latency", "testable"]
    assert "energy" in res.loc["energy_over_latency", "reason"]
    assert res.loc["latency_ms", "testable"] and res.loc["latency_ms", "growth"] > 1


# --------------------------------------------------------------------------- paired effects


def _paired_frame() -> pd.DataFrame:
    """SYNTHETIC hand-made pairs with exact ratios."""
    rows = []
    for depth in (18, 34):
        for ed in (False, True):
            for prec in ("fp32", "fp16"):
                for batch in (1, 8):
                    gflop = depth * batch * (1 if ed else 4)
                    j_per_gflop = 0.59 if batch == 1 else 0.1  # small / large = 5.9
                    energy = j_per_gflop * gflop / (1.25 if prec == "fp16" else 1.0)
                    rows.append(dict(family="resnet", block="basic", depth=depth, width=1.0,
                                     early_downsample=ed, resolution=32, batch=batch,
                                     precision=prec, num_classes=1000, flops=gflop * 1e9,
                                     energy_j=energy, latency_ms=2.0 * gflop,
                                     peak_mem_mib=170.0 if prec == "fp32" else 100.0,
                                     status="ok", platform="synthetic_test"))
    df = pd.DataFrame(rows)
    unpaired = dict(rows[0], depth=50, precision="fp16")  # no fp32 partner
    failed = dict(rows[0], depth=101, status="oom", energy_j=np.nan)  # not ok
    failed_partner = dict(failed, precision="fp16", status="ok", energy_j=1.0)
    return pd.concat([df, pd.DataFrame([unpaired, failed, failed_partner])], ignore_index=True)


def test_paired_effects_pairing_logic():
    res = scaling.paired_effects(_paired_frame(), n_boot=50).set_index(["effect", "metric"])
    prec_e = res.loc[("precision", "energy_j")]
    assert prec_e["n_pairs"] == 8  # 2 depths x 2 stems x 2 batches; unpaired/failed dropped
    assert prec_e["median_ratio"] == pytest.approx(1.25)
    assert res.loc[("precision", "peak_mem_mib"), "median_ratio"] == pytest.approx(1.7)
    assert res.loc[("precision", "latency_ms"), "median_ratio"] == pytest.approx(1.0)
    batch = res.loc[("batch", "energy_j_per_gflop")]
    assert batch["comparison"] == "batch 1 / batch 8"
    assert batch["n_pairs"] == 8 and batch["median_ratio"] == pytest.approx(5.9)
    assert res.loc[("batch", "latency_ms_per_gflop"), "median_ratio"] == pytest.approx(1.0)
    ed = res.loc[("early_downsample", "latency_ms")]
    assert ed["n_pairs"] == 8 and ed["median_ratio"] == pytest.approx(4.0)
    assert res["testable"].all()


def test_paired_effects_on_synthetic_dataset(synth_gpu, synth_cpu):
    res = scaling.paired_effects(pd.concat([synth_gpu, synth_cpu]), n_boot=100)
    gpu = res[res["platform"] == "synthetic_gpu"].set_index(["effect", "metric"])
    for target in ("energy_j", "latency_ms"):
        truth = 1 / SYNTHETIC_TRUTH[target]["fp16_factor"]
        r = gpu.loc[("precision", target)]
        assert r["ci_low"] < truth < r["ci_high"], (target, r.to_dict())
    assert gpu.loc[("batch", "energy_j_per_gflop"), "median_ratio"] > 1
    cpu = res[res["platform"] == "synthetic_cpu"].set_index(["effect", "metric"])
    assert not cpu.loc[("precision", "energy_j"), "testable"]
    assert cpu.loc[("precision", "energy_j"), "n_pairs"] == 0
    assert cpu.loc[("batch", "latency_ms_per_gflop"), "testable"]


# --------------------------------------------------------------------------- telemetry, noise


def test_power_vs_utilisation_and_noise(synth_gpu, synth_cpu):
    both = pd.concat([synth_gpu, synth_cpu])
    pu = scaling.power_vs_utilisation(both).set_index("platform")
    # the statistics of exactly the GPU's ok rows with both columns, computed here
    from scipy import stats

    ok = synth_gpu[synth_gpu["status"] == "ok"][["sm_util_pct", "avg_power_w"]].astype(float)
    ok = ok.dropna()
    g = pu.loc["synthetic_gpu"]
    assert g["testable"] and g["n"] == len(ok)
    rho = stats.spearmanr(ok["sm_util_pct"], ok["avg_power_w"]).statistic
    assert g["spearman_rho"] == pytest.approx(rho, abs=1e-12)
    assert g["pearson_r"] == pytest.approx(np.corrcoef(ok["sm_util_pct"], ok["avg_power_w"])[0, 1])
    slope, intercept = np.polyfit(ok["sm_util_pct"], ok["avg_power_w"], 1)
    assert g["slope_w_per_pct"] == pytest.approx(slope, rel=1e-9)
    assert g["intercept_w"] == pytest.approx(intercept, rel=1e-9)
    assert g["slope_ci_low"] < slope < g["slope_ci_high"]
    assert g["power_median_w"] == pytest.approx(ok["avg_power_w"].median())
    assert not pu.loc["synthetic_cpu", "testable"] and pu.loc["synthetic_cpu", "reason"]
    noise = scaling.noise_summary(both)
    cv = noise[(noise["measure"] == "latency_cv") & (noise["platform"] == "synthetic_gpu")]
    lat_cv = synth_gpu.loc[synth_gpu["status"] == "ok", "latency_cv"].astype(float)
    ok_cv = lat_cv[np.isfinite(lat_cv)].to_numpy()
    assert cv["available"].all() and cv["n"].iloc[0] == len(ok_cv)
    assert cv["median"].iloc[0] == pytest.approx(np.median(ok_cv))
    assert cv["p90"].iloc[0] == pytest.approx(np.quantile(ok_cv, 0.9))
    assert cv["max"].iloc[0] == ok_cv.max()
    energy = noise[(noise["target"] == "energy_j") & (noise["platform"] == "synthetic_cpu")]
    assert not energy["available"].any()


# --------------------------------------------------------------------------- claims


def _results(df, n_boot=30):
    return {"divergence": scaling.divergence(df, n_boot=n_boot),
            "paired_effects": scaling.paired_effects(df, n_boot=n_boot),
            "scaling": scaling.fit_scaling(df, x_cols=["flops"], by=(None,))}


def test_claims_not_testable_without_energy(synth_cpu):
    claims = scaling.claims_table(_results(synth_cpu), "synthetic_cpu", n=len(synth_cpu),
                                  dataset="synthetic")
    assert list(claims.columns) == scaling.CLAIM_COLUMNS
    assert list(claims["claim_id"]) == list(scaling.PAPER_CLAIMS)
    c = claims.set_index("claim_id")
    for cid in ("divergence_energy_growth", "divergence_energy_vs_latency",
                "fp16_energy_ratio", "small_batch_j_per_gflop", "distinct_scaling"):
        assert not c.loc[cid, "testable"], cid
        assert "energy" in c.loc[cid, "reason"], cid
    assert c.loc["divergence_latency_growth", "testable"]
    assert c.loc["fp16_memory_ratio", "testable"]
    assert c.loc["fp16_memory_ratio", "paper_value"] == 1.7
    assert (claims["platform"] == "synthetic_cpu").all()


def test_claims_testable_with_energy(synth_gpu):
    claims = scaling.claims_table(_results(synth_gpu), "synthetic_gpu", n=len(synth_gpu))
    assert claims["testable"].all()
    c = claims.set_index("claim_id")
    truth = 1 / SYNTHETIC_TRUTH["energy_j"]["fp16_factor"]
    assert c.loc["fp16_energy_ratio", "our_ci_low"] < truth < c.loc["fp16_energy_ratio",
                                                                      "our_ci_high"]
    assert c.loc["divergence_energy_vs_latency", "our_value"] > 1


# --------------------------------------------------------------------------- io, synthetic


def test_synthetic_dataset_follows_schema(synth_gpu):
    from carb_lib.dataset.schema import validate

    validate(synth_gpu)
    assert synth_gpu["platform"].str.startswith("synthetic").all()
    assert (synth_gpu["device_name"] == "SYNTHETIC (not measured)").all()
    assert len(synth_gpu) % 36 == 0
    with pytest.raises(ValueError, match="synthetic"):
        make_synthetic_dataset(36, platform="h200")


def test_load_measured_names_each_file(tmp_path, synth_cpu):
    synth_cpu.to_parquet(tmp_path / "synthetic_cpu.parquet", index=False)
    df = scaling.load_measured([tmp_path / "synthetic_cpu.parquet"])
    assert (df["dataset"] == "synthetic_cpu").all() and len(df) == len(synth_cpu)
    # a catalogued file goes by its platform (and campaign), never by its role's file name
    shipped = ROOT / "data" / "cpu_epyc_zen3_2c"
    assert dataset_name(shipped / "design" / "rows.parquet") == "cpu_epyc_zen3_2c"
    assert dataset_name(shipped / "zoo" / "rows.parquet") == "cpu_epyc_zen3_2c/zoo"
    with pytest.raises(FileNotFoundError, match="missing"):
        scaling.load_measured([tmp_path / "missing.parquet"])


# --------------------------------------------------------------------------- plots


def test_characterization_plots_name_the_synthetic_data(tmp_path, synth_gpu, synth_cpu):
    import matplotlib.pyplot as plt

    from carb_lib import plots

    both = pd.concat([synth_gpu, synth_cpu])
    res = _results(both, n_boot=10)
    seg = scaling.fit_segmented(both, "latency_ms", n_boot=0)
    for plat, d in (("synthetic_gpu", synth_gpu), ("synthetic_cpu", synth_cpu)):
        figs = [
            plots.plot_scaling(d, platform=plat, dataset_label="demo", fits=res["scaling"],
                               segmented=seg),
            plots.plot_divergence(res["divergence"], platform=plat, dataset_label="demo",
                                  paper={"energy_j": 35.4}),
            plots.plot_effects(res["paired_effects"], platform=plat, dataset_label="demo"),
            plots.plot_target_distributions(d, platform=plat, dataset_label="demo"),
            plots.plot_noise(d, platform=plat, dataset_label="demo"),
            plots.plot_power_vs_utilisation(d, platform=plat, dataset_label="demo"),
        ]
        for fig in figs:
            title = fig._suptitle.get_text() if fig._suptitle else fig.axes[0].get_title()
            assert "SYNTHETIC" in title and plat in title, title
            plt.close(fig)
        plots.save_figure(figs[0], f"scaling_{plat}_synthetic", tmp_path)
    assert (tmp_path / "scaling_synthetic_cpu_synthetic.png").exists()


def test_an_effect_outside_its_interval_is_drawn_with_its_own_interval():
    """A bootstrap of few resamples can leave the median ratio outside its percentile interval
    (notebook 01 at n_boot=5 on one CPU file stopped on matplotlib's "'xerr' must not contain
    negative values"): each interval is drawn from its ends and the point where it is."""
    import matplotlib.pyplot as plt

    from carb_lib import plots

    eff = pd.DataFrame({
        "effect": ["precision", "batch"], "comparison": ["fp16 / fp32", "b2 / b1"],
        "metric": ["latency_ms", "latency_ms"], "median_ratio": [0.8, 1.9],
        "ci_low": [0.85, float("nan")], "ci_high": [0.95, float("nan")], "n_pairs": [12, 3],
        "testable": [True, True], "reason": ["", ""], "platform": ["p", "p"]})
    fig = plots.plot_effects(eff, platform="p", dataset_label="demo")
    lines = [ln for ln in fig.axes[0].get_lines() if ln.get_linestyle() == "-"]
    assert [list(ln.get_xdata()) for ln in lines][0] == [0.85, 0.95]  # the CI, not the point
    points = [ln.get_xdata()[0] for ln in fig.axes[0].get_lines() if ln.get_marker() == "o"]
    assert points == [0.8, 1.9]
    plt.close(fig)


def test_a_two_segment_law_keeps_min_segment_n_rows_on_each_side():
    # a straight line with its two largest points far above it: the best break would leave
    # two points above it; with min_segment_n = 10 the break stays among the rows
    rng = np.random.default_rng(0)
    x = np.logspace(0, 4, 40)
    y = 2.0 * x ** 0.8 * np.exp(rng.normal(0, 0.01, 40))
    y[-2:] *= 30
    df = pd.DataFrame({"platform": "p", "status": "ok", "flops": x, "latency_ms": y})
    r = scaling.fit_segmented(df, "latency_ms", n_boot=0).iloc[0]
    assert r["testable"]
    below = int((x <= r["breakpoint_x"]).sum())
    assert 10 <= below <= 30
    few = scaling.fit_segmented(df.head(19), "latency_ms", n_boot=0, min_n=10).iloc[0]
    assert not few["testable"] and "a single law is fitted" in few["reason"]
    loose = scaling.fit_segmented(df, "latency_ms", n_boot=0, min_segment_n=1).iloc[0]
    assert int((x <= loose["breakpoint_x"]).sum()) > 30  # the break the rule prevents
