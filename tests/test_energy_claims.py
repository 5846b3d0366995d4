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
H200 = [ROOT / "data" / "gpu_nvidia_h200.parquet",
        ROOT / "data" / "new_families" / "gpu_nvidia_h200.parquet"]
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
