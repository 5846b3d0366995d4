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
                      "sm_util_pct": [10, 70, np.nan, 0, 0, 0, 0], "mem_util_pct": [0, 0, 80, 0, 0, 0, 0]})
    assert ev.batch_tier(d["batch"]).tolist() == ["b<=4", "b<=4", "b<=16", "b<=16", "b<=128",
                                                  "b<=128", "b>128"]
    assert ev.depth_tier(d).tolist() == ["shallow", "medium", "deep", "deep", "very_deep", "nb201",
                                         "medium"]
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


def test_baselines(df):
    split = ev.stratified_split(df)
    train, test = df[split == "train"], df[split == "test"]
    for mode in ("loglog", "raw"):
        p = ev.flops_baseline(train, test, "latency_ms", mode)
        assert p.index.equals(test.index) and p.notna().all()
    b2 = ev.latency_proxy_baseline(train, test)
    assert ev.regression_metrics(test["energy_j"], b2)["spearman"] > 0.8
    t = ev.metrics_table(test, pd.DataFrame({"latency_ms": test["latency_ms"]}), "oracle",
                         "synthetic_gpu", noise_cv=0.02)
    assert t["r2"].iloc[0] == 1.0 and t["noise_floor_cv_pct"].iloc[0] == 2.0


def test_variant_specs():
    assert "carb_nnls_telemetry" not in ev.variant_specs(False)
    assert "carb_nnls_telemetry" in ev.variant_specs(True)
    assert "carb_nnls_static" in ev.variant_specs(True, "static+telemetry")
    assert ev.variant_specs(False)["xgb_alone"] == {"learners": ("xgb",), "cascade": False,
                                                     "regime_shrink": 0.0}


def test_merge_claims_keeps_other_rows(tmp_path):
    path = tmp_path / "claims.csv"
    ev.merge_claims(path, [{"claim_id": "a", "platform": "p1", "our_value": 1.0},
                           {"claim_id": "a", "platform": "p2", "our_value": 2.0}])
    merged = ev.merge_claims(path, [{"claim_id": "a", "platform": "p1", "our_value": 3.0}])
    assert list(merged.columns) == ev.CLAIM_COLUMNS
    got = merged.set_index(["claim_id", "platform"])["our_value"].to_dict()
    assert got == {("a", "p2"): 2.0, ("a", "p1"): 3.0}


def test_evaluate_platform_with_a_smaller_ablation_preset():
    d = ev.prepare_dataset(make_carb_synthetic(500, seed=7, energy=False, telemetry=False,
                                               platform="synthetic_cpu"))
    main = {"n_estimators_xgb": 12, "max_depth_xgb": 3, "n_estimators_lgbm": 12,
            "num_leaves_lgbm": 7, "n_estimators_et": 6, "n_estimators_regime": 8, "cv": 3,
            "n_jobs": 1}
    small = {**main, "n_estimators_xgb": 5, "n_estimators_lgbm": 5, "n_estimators_et": 3,
             "max_depth_et": 4}
    depth = int(d["depth"].dropna().iloc[0])
    r = ev.evaluate_platform(d, main, platform="synthetic_cpu", lodo_depths=[depth],
                             ablation_params=small, preset="big", ablation_preset="small")
    ref = ev.ablation_reference_name("small")
    assert ref == "carb_nnls_small" and ref in r["models"]
    preset = r["test_metrics"].drop_duplicates("model").set_index("model")["preset"]
    assert preset["carb_nnls"] == preset["carb_fixed"] == "big"
    assert preset["xgb_alone"] == preset["blend_no_cascade"] == preset[ref] == "small"
    assert preset[["b1_flops_raw", "b1_flops_loglog"]].isna().all()
    assert set(r["val_metrics"]["preset"].dropna()) == {"big", "small"}
    assert r["models"]["carb_nnls"].n_estimators_xgb == 12
    assert r["models"]["xgb_alone"].n_estimators_xgb == 5
    assert r["models"][ref].max_depth_et == 4
    assert set(r["lobto"]["preset"]) == {"big"} and set(r["lodo"]["preset"]) == {"small"}
    assert r["presets"] == {"main": "big", "ablation": "small"}
    # one size for everything: no reference model, one preset label
    same = ev.evaluate_platform(d, main, run_lodo=False, ablation_params=dict(main), preset="big",
                                ablation_preset="big")
    assert not any(m.startswith("carb_nnls_") for m in same["models"])
