"""Host calibration evaluated on stored campaigns of one CPU (carb_lib.transfer.calibration_eval
and campaign_calibration)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from carb_lib.core.claims import verdict
from carb_lib.transfer import calibration_eval as HC
from carb_lib.transfer.calibration import band_edges, campaign_calibration, host_factor

DATA = Path(__file__).resolve().parents[1] / "data"
FIRST = DATA / "cpu_xeon_gnr_2c" / "design" / "rows.parquet"
needs_data = pytest.mark.skipif(not FIRST.exists(), reason="Xeon 167 campaigns not shipped")


@pytest.fixture(scope="module")
def rows():
    (r, _), = HC.load_campaigns(DATA, names=["cpu_xeon_gnr_2c"]).values()
    return r.sample(400, random_state=1).reset_index(drop=True)


@needs_data
def test_a_campaign_timed_uniformly_slower_is_calibrated_by_the_ladder_factor(rows):
    slower = rows.assign(latency_ms=rows["latency_ms"] * 1.3)
    res = campaign_calibration(rows, slower, seeds=1).set_index("calibration")
    assert res.at["ladder", "applied"] and res.at["ladder", "factor"] == pytest.approx(1.3, rel=0.05)
    assert res.at["ladder", "median_ape_pct"] < res.at["none", "median_ape_pct"] - 10
    assert res.at["ladder", "coverage"] > res.at["none", "coverage"]
    # every calibration of a seed is scored on the same rows
    assert res["n_scored"].nunique() == 1 and res["n_scored"].iloc[0] < len(rows)


@needs_data
def test_a_factor_not_applied_leaves_the_scores_of_no_calibration(rows):
    res = campaign_calibration(rows, rows, seeds=2)
    for _, g in res.groupby("seed"):
        g = g.set_index("calibration")
        for cal in g.index[~g["applied"].astype(bool)]:
            assert g.at[cal, "median_ape_pct"] == g.at["none", "median_ape_pct"]
            assert g.at[cal, "coverage"] == g.at["none", "coverage"]


@needs_data
def test_the_ladder_factor_is_host_factor_of_the_ladder_timings_with_the_rows_bands(rows):
    from carb_lib.transfer.calibration import _ladder_calibration_rows, _light_model

    other = rows.assign(latency_ms=rows["latency_ms"] * np.where(rows["batch"] > 8, 1.5, 1.0))
    res = campaign_calibration(rows, other, seeds=1).set_index("calibration")
    ids = set(_ladder_calibration_rows(rows, 60.0)["config_id"])
    lad = other[other["config_id"].isin(ids)]
    predict, _ = _light_model(rows, 0.9, 0)
    want = host_factor(lad["latency_ms"], np.exp(predict(lad)),
                       edges_ms=band_edges(rows["latency_ms"]))
    assert res.at["ladder", "factor"] == pytest.approx(want.factor)
    assert bool(res.at["ladder", "applied"]) == want.applied
    assert bool(res.at["ladder", "per_band"]) == want.per_band


@needs_data
def test_campaigns_of_another_heap_are_refused():
    with pytest.raises(ValueError, match="different protocols"):
        HC.load_campaigns(DATA, names=["cpu_xeon_gnr_2c", "cpu_xeon_gnr_2c_kept_heap"])


def _pairs(deltas):
    out = []
    for i, d in enumerate(deltas):
        for cal, ape in (("none", 20.0), ("ladder", 20.0 + d)):
            out.append({"model_campaign": f"a{i}", "other_campaign": "b", "seed": 0,
                        "calibration": cal, "median_ape_pct": ape, "within_10pct": 0.5,
                        "coverage": 0.8, "nominal": 0.9, "applied": cal != "none",
                        "factor": 1.0})
    return pd.DataFrame(out)


def test_the_claim_is_supported_when_every_pair_improves_and_inconclusive_when_they_split():
    good = HC.calibration_claims(HC.summarise_pairs(_pairs([-5, -8, -3, -6, -9, -4]))).iloc[0]
    assert good["our_value"] == pytest.approx(-35 / 6)
    assert good["our_ci_high"] < 0 and verdict(good) == "supported"
    mixed = HC.calibration_claims(HC.summarise_pairs(_pairs([-5, 6, -3, 4, -6, 5]))).iloc[0]
    assert mixed["our_ci_low"] < 0 < mixed["our_ci_high"] and verdict(mixed) == "inconclusive"
    worse = HC.calibration_claims(HC.summarise_pairs(_pairs([5, 8, 3, 6, 9, 4]))).iloc[0]
    assert verdict(worse) == "contradicted"
