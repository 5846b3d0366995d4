"""Notebook 07: the measured torchvision zoo, through the reproduce runner with a small
subsample of the design-space rows."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

NOTEBOOK = "notebooks/07_zoo.ipynb"
ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.skipif(not (ROOT / "data" / "cpu_epyc_zen5_2c" / "zoo" / "rows.parquet").is_file(),
                    reason="no measured zoo rows")
def test_notebook_07_quick_scores_every_method_and_the_remeasurement_noise(run_notebook):
    rec, out = run_notebook(NOTEBOOK, {"quick": True, "n_folds": 2, "preset": "test",
                                       "kernel_trees": 50, "max_design_rows": 300,
                                       "max_networks": 3,
                                       "more_zoo_datasets": ["data/cpu_epyc_zen4_2c/zoo/rows.parquet"],
                                       "results_dir": "results"})
    assert rec["have_data"] is True and rec["platform"] == "cpu_epyc_zen5_2c"
    assert rec["n_networks"] == 3 and rec["n_design_rows"] == 300
    d = out / "results" / "zoo"
    pred = pd.read_csv(d / "predictions.csv")
    scores = pd.read_csv(d / "scores.csv")
    # every zoo row, every method, both targets (operators_summed: latency only)
    n = rec["n_zoo_rows"]
    counts = pred.groupby(["method", "target"]).size()
    assert counts.drop(("operators_summed", "latency_ms"), errors="ignore").eq(n).all()
    assert counts.get(("operators_summed", "latency_ms"), n) == n
    lno = scores[(scores["method"] == "leave_network_out") & (scores["kind"] == "all")]
    lat = lno.set_index("target").loc["latency_ms"]
    assert rec["leave_network_out/latency_ms/median_ape_pct"] == pytest.approx(
        lat["median_ape_pct"], rel=1e-12)
    assert rec["have_audit"] is True
    noise = pd.read_csv(d / "remeasurement_noise.csv").set_index("target")
    assert rec["latency/median_ape_over_noise"] == pytest.approx(
        lat["median_ape_pct"] / noise.loc["latency_ms", "median_ape_pct"], rel=1e-9)
    screening = pd.read_csv(d / "screening.csv")
    assert len(screening) == 2 and (screening["candidates"] > 0).all()
    # the second CPU (its own design rows and audit), side by side per batch size
    plats = pd.read_csv(d / "platforms.csv", dtype={"batch": str})
    assert rec["n_platforms"] == 2
    assert list(plats["platform"].unique()) == ["cpu_epyc_zen5_2c", "cpu_epyc_zen4_2c"]
    zen4 = plats[plats["platform"] == "cpu_epyc_zen4_2c"]
    assert {"1", "4", "16", "all"} <= set(zen4["batch"])
    assert set(zen4.loc[zen4["batch"] == "all", "method"]) == {
        "leave_network_out", "zero_zoo", "flops_only", "operators_summed", "remeasurement"}
    lno4 = zen4[(zen4["batch"] == "all") & (zen4["method"] == "leave_network_out")].iloc[0]
    assert rec["cpu_epyc_zen4_2c/leave_network_out/latency_ms/median_ape_pct"] == pytest.approx(
        lno4["latency_median_ape_pct"], rel=1e-12)
    zen5 = plats[(plats["platform"] == "cpu_epyc_zen5_2c") & (plats["batch"] == "all")]
    assert zen5.set_index("method").loc["leave_network_out", "latency_median_ape_pct"] == \
        pytest.approx(lat["median_ape_pct"], rel=1e-12)
    assert (out / "figures" / "07_zoo_latency_ms_cpu_epyc_zen4_2c.png").is_file()


def test_notebook_07_is_in_both_profiles_with_known_parameters(check_profiles):
    runs = check_profiles(NOTEBOOK, {"n_folds", "preset", "max_design_rows", "max_networks",
                                     "quick", "results_dir"})
    full = runs["full"].parameters
    assert full["n_folds"] == 8
    assert "max_design_rows" not in full and "max_networks" not in full
