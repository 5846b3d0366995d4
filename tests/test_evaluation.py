"""carb_lib.evaluation: split, metrics, baselines, claims (SYNTHETIC data, no big fits)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from carb_synthetic import make_carb_synthetic

from carb_lib import evaluation as ev


@pytest.fixture(scope="module")
def df():
    return ev.prepare_dataset(make_carb_synthetic(1500, seed=5))


def test_prepare_dataset_filters_status_and_platform(df):
    raw = make_carb_synthetic(300, seed=1)
    raw.loc[raw.index[:3], "status"] = "error"
    out = ev.prepare_dataset(raw, "synthetic_gpu")
    assert (out["status"] == "ok").all() and len(out) <= 297
    with pytest.raises(ValueError, match="no status=='ok' rows for platform 'h200'"):
        ev.prepare_dataset(raw, "h200")


def test_stratified_split_fractions_and_strata(df):
    split = ev.stratified_split(df, random_state=0)
    frac = split.value_counts(normalize=True)
    assert frac["train"] == pytest.approx(0.70, abs=0.02)
    assert frac["val"] == pytest.approx(0.15, abs=0.02)
    assert frac["test"] == pytest.approx(0.15, abs=0.02)
    # every sizeable stratum is split close to 70/15/15 too
    strata = ev.batch_tier(df["batch"]) + "|" + ev.depth_tier(df) + "|" + ev.stress_flag(df).astype(str)
    for _, idx in split.groupby(strata).groups.items():
        if len(idx) >= 40:
            assert (split[idx] == "test").mean() == pytest.approx(0.15, abs=0.06)
    assert split.equals(ev.stratified_split(df, random_state=0))  # deterministic
    assert not split.equals(ev.stratified_split(df, random_state=1))


def test_tiers_and_stress_flag():
    d = pd.DataFrame({"batch": [1, 4, 5, 16, 17, 128, 256], "depth": [8, 18, 50, 101, 152, np.nan, 18],
                      "family": ["resnet"] * 5 + ["nb201", None],
                      "sm_util_pct": [10, 70, np.nan, 0, 0, 0, 0], "mem_util_pct": [0, 0, 80, 0, 0, 0, 0]})
    assert ev.batch_tier(d["batch"]).tolist() == ["b<=4", "b<=4", "b<=16", "b<=16", "b<=128",
                                                  "b<=128", "b>128"]
    # each family's depth_label: ResNet's tiers, NB201's family name; no family -> ResNet
    assert ev.depth_tier(d).tolist() == ["shallow", "medium", "deep", "deep", "very_deep", "nb201",
                                         "medium"]
    assert ev.depth_tier(d.drop(columns="family").iloc[[0, 4]]).tolist() == ["shallow", "very_deep"]
    with pytest.raises(ValueError, match="family 'vit' is not registered"):
        ev.depth_tier(d.assign(family="vit"))
    assert ev.ARCH_COLUMNS[:6] == ("family", "block", "depth", "width", "early_downsample", "arch")
    from carb_lib.families import FAMILIES
    later = [c for name, fam in FAMILIES.items() if not fam.always_in_matrix
             for c in fam.arch_columns if c not in ev.ARCH_COLUMNS[:6]]
    assert list(ev.ARCH_COLUMNS[6:]) == list(dict.fromkeys(later))
    assert ev.stress_flag(d).tolist() == [False, True, True, False, False, False, False]
    assert not ev.stress_flag(d.drop(columns=["sm_util_pct", "mem_util_pct"])).any()  # CPU


def test_regression_metrics():
    y = np.array([1.0, 2.0, 4.0, 8.0, np.nan])
    m = ev.regression_metrics(y, [1.05, 2.0, 4.8, 8.0, 3.0])
    assert m["n"] == 4
    assert m["within_10pct"] == 0.75
    assert m["mape_pct"] == pytest.approx(100 * (0.05 + 0.2) / 4)
    assert m["spearman"] == pytest.approx(1.0)
    assert ev.regression_metrics(y, y)["r2"] == 1.0
    from carb_lib.core import metrics

    assert ev.regression_metrics is metrics.regression_metrics  # one implementation


def test_metrics_equal_scikit_learn_and_scipy():
    """The shared metrics give the numbers sklearn / scipy gave the former local copy."""
    from scipy.stats import spearmanr
    from sklearn.metrics import mean_absolute_error, r2_score

    rng = np.random.default_rng(0)
    y = np.exp(rng.normal(3.0, 1.0, 500))
    p = y * np.exp(rng.normal(0.0, 0.2, 500))
    m = ev.regression_metrics(y, p)
    assert abs(m.r2 - r2_score(y, p)) < 1e-12
    assert abs(m.r2_log - r2_score(np.log1p(y), np.log1p(p))) < 1e-12
    assert abs(m.mae - mean_absolute_error(y, p)) < 1e-12
    assert abs(m.spearman - spearmanr(y, p).statistic) < 1e-12
    assert abs(m.mape_pct - 100 * np.mean(np.abs(p - y) / y)) < 1e-12


def test_baselines_recover_their_own_laws(df):
    split = ev.stratified_split(df)
    train, test = df[split == "train"].copy(), df[split == "test"].copy()
    for d in (train, test):
        d["raw_law"] = 2.0 + 3e-9 * d["flops"]
        d["loglog_law"] = np.expm1(0.5 + 0.8 * np.log1p(d["flops"]))
        d["energy_j"] = 1.0 + 0.25 * d["latency_ms"]
    for mode in ("loglog", "raw"):
        p = ev.flops_baseline(train, test, f"{mode}_law", mode)
        assert p.index.equals(test.index) and p.name == f"{mode}_law"
        np.testing.assert_allclose(p, test[f"{mode}_law"], rtol=1e-6)
    # the other mode cannot follow a law it does not model
    assert ev.regression_metrics(test["raw_law"],
                                 ev.flops_baseline(train, test, "raw_law", "loglog")).r2 < 0.999
    with pytest.raises(ValueError, match="mode must be"):
        ev.flops_baseline(train, test, "latency_ms", "cubic")


def test_remeasurement_noise_scores_the_second_measurement_as_a_prediction_of_the_stored():
    rows = pd.DataFrame({
        "latency_ms": [10.0, 20.0, 40.0, 80.0, 5.0],
        "latency_ms_new": [12.0, 19.0, 40.0, 60.0, 50.0],  # the last one failed: dropped
        "peak_mem_mib": [1.0, 2.0, 3.0, 4.0, 5.0],
        "peak_mem_mib_new": [1.0, 2.0, 3.0, 4.0, np.nan],
        "status_new": ["ok", "ok", "ok", "ok", "error"],
        "quality": ["clean", "clean", "retried", "clean", "clean"],
    })
    f = ev.remeasurement_noise(rows, platform="p").set_index(["target", "subset"])
    lat = f.loc[("latency_ms", "all")]
    assert lat["n"] == 4 and lat["model"] == "re-measurement" and lat["platform"] == "p"
    assert lat["mape_pct"] == pytest.approx(100 * (0.2 + 0.05 + 0 + 0.25) / 4)
    assert lat["within_10pct"] == pytest.approx(0.5)
    # every APE relative to the stored value (0.2, 0.05, 0, 0.25), as a model's error is
    assert lat["median_ape_pct"] == pytest.approx(100 * (0.05 + 0.2) / 2)
    clean = f.loc[("latency_ms", "clean")]
    assert clean["median_ape_pct"] == pytest.approx(100 * 0.2)
    assert clean["n"] == 3 and clean["mape_pct"] == pytest.approx(100 * 0.5 / 3)
    assert f.loc[("peak_mem_mib", "all"), "mape_pct"] == 0.0
    with pytest.raises(ValueError, match="stored and a re-measured column"):
        ev.remeasurement_noise(rows[["latency_ms", "quality"]])
    with pytest.warns(DeprecationWarning, match="remeasurement_noise"):
        old = ev.remeasurement_floor(rows, platform="p").set_index(["target", "subset"])
    pd.testing.assert_frame_equal(old, f)


def test_protocol_result_against_remeasurement_noise_puts_the_model_beside_the_re_measurement():
    runs = pd.DataFrame([
        {"kind": k, "seed": s, "held_out": None, "part": "test", "model": m,
         "target": "latency_ms", "subset": sub, "n": 50, "r2": 0.9, "r2_log": 0.9, "mae": 1.0,
         "mape_pct": mape + s, "within_10pct": 0.4, "spearman": 0.95}
        for k in ("random", "grouped") for s in (0, 1) for m, mape in (("carb", 12.0),
                                                                       ("b1_flops", 90.0))
        for sub in ("all", "clean")])
    res = ev.ProtocolResult(runs=runs, coverage=pd.DataFrame(), constants=pd.DataFrame(),
                            params={}, platform="p")
    audit = pd.DataFrame({"latency_ms": [10.0, 20.0], "latency_ms_new": [11.0, 18.0]})
    t = res.against_remeasurement_noise(audit)
    assert len(t) == 1  # no quality column: the "all" subset only
    r = t.iloc[0]
    assert (r["target"], r["subset"], r["n_audit"], r["runs"]) == ("latency_ms", "all", 2, 2)
    assert r["mape_pct_remeasure"] == pytest.approx(10.0)
    assert r["mape_pct_mean"] == pytest.approx(12.5) and r["mape_ratio"] == pytest.approx(1.25)
    assert res.against_remeasurement_noise(audit, model="b1_flops")["mape_ratio"].iloc[0] == \
        pytest.approx(9.05)
    with pytest.warns(DeprecationWarning, match="against_remeasurement_noise"):
        pd.testing.assert_frame_equal(res.against_noise_floor(audit), t)
