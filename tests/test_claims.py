"""carb_lib.core.claims: one set of claim columns for every notebook."""

from __future__ import annotations

from carb_lib import evaluation as ev
from carb_lib.characterize import scaling
from carb_lib.core import claims


def test_one_implementation_everywhere():
    assert ev.CLAIM_COLUMNS == claims.CLAIM_COLUMNS
    assert scaling.CLAIM_COLUMNS == claims.COLUMN_ORDER
    assert set(claims.COLUMN_ORDER) == set(claims.CLAIM_COLUMNS + claims.OPTIONAL_CLAIM_COLUMNS)


def _result(targets):
    import pandas as pd

    test = pd.DataFrame([{"model": m, "target": t, "r2": 0.9, "n": 12, "r2_ci_low": 0.8,
                          "r2_ci_high": 0.95}
                         for m in ("carb_nnls", "b1_flops_raw") for t in targets])
    lobto = pd.DataFrame([{"model": "carb_nnls", "target": t, "r2": 0.8, "n": 5}
                          for t in targets])
    return {"test_metrics": test, "lobto": lobto}


def test_b2_is_left_to_the_all_family_claims_where_energy_is_measured():
    rows = ev.claim_rows(_result(["latency_ms", "peak_mem_mib", "energy_j"]), "gpu_x")
    assert not rows["claim_id"].str.startswith("b2_").any()
    assert rows.set_index("claim_id").loc["carb_r2_energy_j", "testable"]


def test_b2_says_energy_is_not_measured_where_no_row_holds_it():
    rows = ev.claim_rows(_result(["latency_ms", "peak_mem_mib"]), "cpu_x").set_index("claim_id")
    assert not rows.loc["b2_latency_proxy_r2_energy_j", "testable"]
    assert rows.loc["b2_latency_proxy_r2_energy_j", "reason"] == "energy_j not measured on this platform"
