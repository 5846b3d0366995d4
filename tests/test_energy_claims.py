"""The paper's energy claims on every H200 row: scores over repeated splits, claim rows with
intervals judged by the claims rules, and energy above idle at or below zero kept on the raw
scale."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from carb_lib.core.claims import interval_method, verdict
from carb_lib.evaluation import prepare_dataset
from carb_lib.screening import energy_claims as ec

ROOT = Path(__file__).resolve().parents[1]
H200 = [ROOT / "data" / "gpu_nvidia_h200" / "design" / "rows.parquet",
        ROOT / "data" / "gpu_nvidia_h200" / "design" / "rows_new_families.parquet"]
pytestmark = pytest.mark.skipif(not all(p.is_file() for p in H200),
                                reason="the shipped H200 rows are not in this checkout")


@pytest.fixture(scope="module")
def h200():
    rows = prepare_dataset(pd.concat([pd.read_parquet(p) for p in H200], ignore_index=True))
    budgets = [float(rows["energy_j"].quantile(q)) for q in (0.25, 0.5, 0.75)]
    scores = ec.energy_scores(rows, budgets, n_splits=3, preset="quick")
    return rows, budgets, scores


def test_energy_rows_keep_and_flag_energy_above_idle_at_or_below_zero(h200):
    rows = ec.energy_rows(h200[0])
    assert len(rows) == 132
    flagged = rows["dynamic_nonpositive"]
    assert flagged.sum() == (rows["energy_dynamic_j"] <= 0).sum() > 0


def test_scores_cover_every_measure_on_every_split_with_test_rows(h200):
    _, budgets, scores = h200
    assert set(scores["split"]) == {0, 1, 2}
    measures = set(scores["measure"])
    for m in ("carb_r2_energy_j", "carb_mape_energy_j", "b1_flops_r2_energy_j",
              "b2_latency_proxy_r2_energy_j", "b1_flops_r2_energy_dynamic_j",
              "b2_latency_proxy_r2_energy_dynamic_j", "lobto_r2_energy_j",
              "power_x_latency_r2_energy_j", "power_x_latency_mape_energy_j",
              *(f"screening_budget_accuracy@{b:g}" for b in budgets)):
        assert m in measures, m
    assert (scores["n"] > 0).all()
    assert np.isfinite(scores.loc[scores["measure"] == "carb_r2_energy_j", "value"]).all()


def test_claim_rows_have_intervals_and_a_verdict_by_the_rules(h200):
    rows, budgets, scores = h200
    claims = ec.energy_claim_rows(scores, rows, "gpu_nvidia_h200")
    assert claims["claim_id"].is_unique and (claims["platform"] == "gpu_nvidia_h200").all()
    assert len(claims) == 6 + 2 * len(budgets)  # R2, B1 and B2 on two energies, LOBTO, budgets
    assert (claims["our_ci_low"] <= claims["our_value"]).all()
    assert (claims["our_value"] <= claims["our_ci_high"]).all()
    for r in claims.to_dict("records"):
        assert verdict(r).split(" (")[0] in ("supported", "contradicted", "inconclusive"), r
        assert interval_method(r).startswith("t interval"), r["claim_id"]
    dyn = claims[claims["claim_id"].str.contains("energy_dynamic_j")]
    assert len(dyn) == 2 and dyn["reason"].str.contains("<= 0").all()


def test_energy_scores_refuse_a_single_split(h200):
    with pytest.raises(ValueError, match="n_splits must be >= 2"):
        ec.energy_scores(h200[0], [1.0], n_splits=1)


def test_energy_noise_scores_every_ordered_pair_of_a_config_per_window_policy():
    noise = pd.DataFrame({
        "config_id": ["a", "a", "b", "b", "c", "c"], "status": "ok",
        "energy_j": [1.0, 1.1, 2.0, 2.0, 3.0, 3.3],
        "window_s": [0.5, 0.52, 0.51, 0.6, 3.0, 3.1],
        "campaign": ["short"] * 4 + ["long"] * 2})
    out = ec.energy_noise([noise], n_boot=200).set_index("window_policy_s")
    assert list(out.index) == [0.5, 3.0]
    # a: |1.1 - 1| / 1 and / 1.1; b: 0
    assert out.loc[0.5, "remeasurement_mape_pct"] == pytest.approx((10 + 100 / 11) / 2 / 2)
    assert out.loc[3.0, "remeasurement_mape_pct"] == pytest.approx((10 + 30 / 3.3) / 2)
    assert (out["n_configs"].to_dict(), out["n_rows"].to_dict()) == ({0.5: 2, 3.0: 1},
                                                                     {0.5: 4, 3.0: 2})
    assert out.loc[0.5, "ci_low"] <= out.loc[0.5, "remeasurement_mape_pct"] \
        <= out.loc[0.5, "ci_high"]


def test_noise_comparison_pairs_the_model_error_with_the_noise_of_the_same_window():
    scores = pd.DataFrame({
        "split": [0, 1, 0, 1, 0],
        "measure": ["carb_mape_energy_j@window0.5s"] * 2 + ["carb_mape_energy_j@window3s"] * 2
        + ["carb_r2_energy_j"],
        "value": [20.0, 22.0, 12.0, 14.0, 0.9], "n": [30, 32, 5, 7, 40]})
    noise = pd.DataFrame({"window_policy_s": [0.5], "n_configs": [10], "n_rows": [30],
                          "energy_cv_pct": [17.8], "remeasurement_mape_pct": [25.0],
                          "ci_low": [16.0], "ci_high": [38.0]})
    out = ec.noise_comparison(scores, noise).set_index("window_policy_s")
    assert out.loc[0.5, "model_mape_pct"] == pytest.approx(21.0)
    assert out.loc[0.5, "model_over_noise"] == pytest.approx(21.0 / 25.0)
    assert out.loc[0.5, "model_ci_low"] < 21.0 < out.loc[0.5, "model_ci_high"]
    assert out.loc[3.0, "model_n_test"] == 6 and np.isnan(out.loc[3.0, "noise_mape_pct"])


def test_the_h200_energy_error_is_split_by_the_rows_window_policy(h200):
    policies = ec.energy_rows(h200[0])["window_policy_s"].value_counts().to_dict()
    assert policies == {0.5: 112, 3.0: 20}  # the first campaign and the paired one
    measures = set(h200[2]["measure"])
    assert "carb_mape_energy_j@window0.5s" in measures


def test_power_x_latency_needs_ten_power_readings_and_otherwise_predicts_joules(h200):
    rows = ec.energy_rows(h200[0])
    train, test = rows.iloc[:100], rows.iloc[100:]
    few = train.assign(avg_power_w=np.where(np.arange(len(train)) < 9, 200.0, np.nan))
    assert np.isnan(ec._power_x_latency(few, test, "quick", 0)).all()
    pred = ec._power_x_latency(train, test, "quick", 0)
    ratio = pred / test["energy_j"].to_numpy(float)
    assert np.isfinite(pred).all() and 0.2 < np.median(ratio) < 5  # joules, not mJ or kJ


def test_the_gpu_energy_model_block_reads_the_claims_scores_and_noise_it_names(h200, tmp_path):
    from carb_lib.app.readme_energy import GPU_PLATFORM, gpu_energy_model
    from carb_lib.core.claims import CLAIM_COLUMNS

    rows, _, scores = h200
    claims = ec.energy_claim_rows(scores, rows, GPU_PLATFORM)
    claims.reindex(columns=[*CLAIM_COLUMNS, "our_ci_low", "our_ci_high"]).to_csv(
        tmp_path / "claims.csv", index=False)
    out = tmp_path / GPU_PLATFORM / "cross_family"
    out.mkdir(parents=True)
    scores.to_csv(out / "energy_scores.csv", index=False)
    block = gpu_energy_model(tmp_path)
    assert "energy_vs_noise" not in block  # no noise table without its file
    assert block.count("_all_families") == 0  # claims shown by their words, not their ids
    assert "| predicted latency x predicted power | **" in block
    assert sum(line.startswith("| ") for line in block.splitlines()) == 1 + len(claims) + 1 + 3  # headers and rows
    noise = pd.DataFrame({"window_policy_s": [0.5], "n_configs": [10], "n_rows": [30],
                          "energy_cv_pct": [17.8], "remeasurement_mape_pct": [25.0],
                          "ci_low": [16.0], "ci_high": [38.0]})
    ec.noise_comparison(scores, noise).to_csv(out / "energy_vs_noise.csv", index=False)
    block = gpu_energy_model(tmp_path)
    assert "| 0.5 s | **" in block and "**25.0** [16.0, 38.0] (10)" in block
    assert "energy_vs_noise.csv" in block


def test_gpu_memory_gap_per_family_and_precision_on_the_h200_rows(h200):
    from carb_lib.evaluation.gpu_memory import gpu_memory_gap

    rows = h200[0][h200[0]["status"].astype(str).eq("ok")]
    gap = gpu_memory_gap(rows)
    assert len(gap) == 8 and gap["n"].sum() == len(rows)  # 4 families x 2 precisions
    assert (gap["measured_over_model_p10"] <= gap["measured_over_model_median"]).all()
    assert (gap["measured_over_model_median"] <= gap["measured_over_model_p90"]).all()
    assert (gap["reserved_over_allocated_median"] >= 1).all()  # reserved covers allocated
    with pytest.raises(ValueError, match="no column alloc_peak_bytes"):
        gpu_memory_gap(rows.drop(columns="alloc_peak_bytes"))
