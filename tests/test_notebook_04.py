"""Run notebook 04 (deployment screening) on its SYNTHETIC demo through the reproduce runner."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

NOTEBOOK = "notebooks/04_screening.ipynb"
SCENARIOS = ("paper_style", "edge_memory", "batch1_latency")


@pytest.mark.slow
def test_notebook_04_quick_synthetic(run_notebook):
    rec, out = run_notebook(NOTEBOOK, {"quick": True, "synthetic_demo": True, "synthetic_n": 1440,
                                       "k": 8, "fig_dir": "figures", "results_dir": "results"})
    assert rec["synthetic"] is True and rec["platform"] == "synthetic_gpu"
    assert rec["platform_a"] == "synthetic_gpu_b" and rec["has_energy"] is True
    assert rec["n_train"] > rec["n_test"] > 0
    scen = pd.read_csv(out / "results/screening/scenarios_synthetic.csv").set_index("scenario")
    val = pd.read_csv(out / "results/screening/validation_synthetic.csv")
    assert list(scen.index) == list(SCENARIOS)
    # every classification row: agreement, false accepts and false rejects partition the rows
    assert np.allclose(val["accuracy"] + val["false_accept_rate"] + val["false_reject_rate"], 1.0,
                       rtol=0, atol=1e-12)
    for col in ("accuracy", "false_accept_rate", "false_reject_rate"):
        k = val[col] * val["n"]
        assert np.allclose(k, k.round(), rtol=0, atol=1e-9), col  # shares of whole rows
    for s in SCENARIOS:
        c = {k: rec[f"{s}/{k}"] for k in ("candidates", "after_cross_platform",
                                          "eliminated_stage1", "survivors", "front", "shortlist")}
        # the funnel is consistent and every scenario yields a shortlist of k
        assert c["after_cross_platform"] == c["eliminated_stage1"] + c["survivors"]
        assert c["survivors"] >= c["front"] >= 1 and c["shortlist"] == 8
        assert rec[f"{s}/eliminated_fraction"] == pytest.approx(1 - c["front"] / c["candidates"])
        assert 0.9 < rec[f"{s}/eliminated_fraction"] < 1
        assert rec[f"{s}/quality_is_proxy"] is True  # params as the named capacity proxy
        # the glued numbers are the written ones
        for key in (*c, "budget_accuracy", "false_accept_rate", "front_recall",
                    "front_recall_screened", "hypervolume_ratio"):
            assert rec[f"{s}/{key}"] == pytest.approx(scen.at[s, key], rel=1e-12), (s, key)
        every = val[(val["scenario"] == s) & (val["budget"] == "all")]
        assert len(every) == 1
        assert rec[f"{s}/budget_accuracy"] == pytest.approx(every["accuracy"].iloc[0], rel=1e-12)
        assert 0 < every["n"].iloc[0] <= scen.at[s, "n_held_out"]
        # held-out validation: conservative bounds give few false accepts
        assert 0.5 < rec[f"{s}/budget_accuracy"] <= 1
        assert 0 <= rec[f"{s}/false_accept_rate"] < 0.1
        assert 0 < rec[f"{s}/front_recall"] <= 1 and 0 < rec[f"{s}/front_recall_screened"] <= 1
        assert 0 < rec[f"{s}/hypervolume_ratio"] <= 1 + 1e-9
        assert rec[f"{s}/time_s"] < 30
    # paper style: the cross-platform variant keeps the top 100 of the A-ranking
    assert rec["paper_style/candidates"] == 17_280
    assert rec["paper_style/after_cross_platform"] == 100
    assert rec["paper_style/budgets"][0].startswith("energy_j<=")
    assert rec["batch1_latency/candidates"] < rec["edge_memory/candidates"] < 17_280
    assert rec["n_claims"] == 6 and rec["n_claims_testable"] == 0  # synthetic: never testable

    assert not (out / "results/claims.csv").exists()  # synthetic never reaches claims.csv
    claims = pd.read_csv(out / "results/claims_synthetic.csv")
    assert set(claims.columns) >= {"claim_id", "claim", "paper_value", "our_value", "platform",
                                   "n", "testable", "reason"}
    assert claims["our_value"].isna().all() and not claims["testable"].any()
    for name in ("scenarios", "validation", "paper_style_shortlist"):
        assert (out / f"results/screening/{name}_synthetic.csv").exists(), name
    figs = sorted(p.name for p in (out / "figures").glob("*.png"))
    assert "04_front_paper_style_synthetic.png" in figs
    assert "04_funnel_edge_memory_synthetic.png" in figs
    assert all(f.endswith("_synthetic.png") for f in figs)


def test_notebook_04_is_in_both_profiles_with_known_parameters(check_profiles):
    check_profiles(NOTEBOOK, {"dataset", "budgets", "objectives", "k", "quick", "fig_dir",
                              "results_dir", "synthetic_demo"})
