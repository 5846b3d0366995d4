"""Run notebook 02 (cross-platform transfer) with its quick profile and check what it records."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from carb_lib.app.record import read_glued
from carb_lib.app.reproduce import run_profile
from carb_lib.transfer import pairwise as T

SHIPPED = Path(__file__).resolve().parents[1] / "data/external/help_nb201.parquet"


@pytest.mark.slow
@pytest.mark.skipif(not SHIPPED.exists(), reason="HELP parquet not converted")
def test_notebook_02_quick(tmp_path):
    out = tmp_path / "out"
    (out / "results/claims").mkdir(parents=True)
    # another notebook's claim row survives in the rebuilt claims table
    pd.DataFrame([{"claim_id": "other_claim", "claim": "x", "paper_value": 1.0, "our_value": 1.0,
                   "platform": "h200", "n": 1, "testable": True, "reason": ""}]).to_csv(
        out / "results/claims/01_characterization.csv", index=False)
    # the quick profile's entry, on fewer draws, networks per setting, bootstrap resamples and
    # trees of the kernel model
    summary = run_profile("quick", only=["02_transfer"], run_dir=tmp_path / "runs",
                          out_root=out, overrides={"n_draws": 2, "quick_n_archs": 500,
                                                   "cpu_n_boot": 50, "kernel_trees": 50})
    rec = summary["02_transfer"]
    assert rec == read_glued(tmp_path / "runs/02_transfer.ipynb")
    import json

    (page,) = json.loads((tmp_path / "runs/pages.json").read_text())
    assert len(page["figures_saved"]) == 6 and page["images"] >= 6  # every figure on its page
    assert rec["n_platforms"] >= 11 and rec["n_settings"] >= 19
    # the recorded few-shot numbers are those of the written summary (primary settings, k=10)
    summ = pd.read_csv(out / "results/transfer/fewshot_summary.csv")
    settings = pd.read_csv(out / "results/transfer/settings.csv")
    prim = set(T.primary_settings(settings))
    k10 = summ[(summ["k"] == 10) & summ["target"].isin(prim)].set_index("method")
    assert rec["fewshot_method"] == T.DEFAULT_METHOD
    assert rec["fewshot_spearman_k10_mean"] == pytest.approx(
        k10.loc[[T.DEFAULT_METHOD], "spearman_mean"].mean(), rel=1e-9)
    assert rec["flops_spearman_mean"] == pytest.approx(
        k10.loc[["flops"], "spearman_mean"].mean(), rel=1e-9)
    assert rec["fewshot_spearman_k10_mean"] > rec["flops_spearman_mean"]
    help_mean = float(T.HELP_TABLE3.set_index("method").at["HELP", "mean"])
    assert rec["help_reported_spearman_k10_mean"] == help_mean
    assert set(rec["fewshot_spearman_k10_by_setting"]) >= {"help_titanx@b256", "help_pixel3@b1"}
    assert 0.8 < rec["pairwise_specific_spearman_mean"] <= 1.0
    # every ordered pair of the 19 HELP settings shares all 15,625 archs; settings of other
    # families (our measured rows) pair only where they share architectures
    assert 19 * 18 <= rec["slope_n_pairs"] <= rec["n_settings"] * (rec["n_settings"] - 1)
    for name in ("02_transfer_matrix_spearman", "02_transfer_slopes", "02_fewshot_spearman",
                 "02_fewshot_mape", "02_fewshot_vs_help"):
        assert (out / f"figures/{name}.png").exists() and (out / f"figures/{name}.pdf").exists()
    for name in ("pairwise", "slopes", "fewshot_summary", "help_comparison", "inventory"):
        assert (out / f"results/transfer/{name}.csv").exists()
    # part 2: each of the five CPUs predicted by the other four, beside its re-measurement noise
    from carb_lib.transfer import cpus as TC

    for key in ("cpu_zero_shot_median_ape_pct", "cpu_few_shot_k10_median_ape_pct",
                "cpu_noise_median_ape_pct"):
        assert set(rec[key]) == set(TC.CPU_FILES)
        assert all(0.5 < v < 60 for v in rec[key].values())
    loco = pd.read_csv(out / "results/transfer/cpu_loco_summary.csv")
    zero = loco[(loco["method"] == "zero_shot")].set_index("target")["median_ape_pct"]
    assert zero.to_dict() == pytest.approx(rec["cpu_zero_shot_median_ape_pct"], rel=1e-9)
    claims = pd.read_csv(out / "results/claims.csv")
    assert "other_claim" in set(claims["claim_id"])
    ours = claims[claims["claim_id"].str.startswith("help_")]
    assert len(ours) == 5 and ours["paper_value"].notna().all() and ours["our_value"].notna().all()
    mean_row = ours.set_index("claim_id").loc["help_fewshot_spearman_k10_mean"]
    assert mean_row["paper_value"] == help_mean
    assert mean_row["our_value"] == pytest.approx(rec["vs_help_mean_over_devices"]["ours"])
    paper = claims.set_index("claim_id")
    # the paper's transfer claims are all listed: latency testable on HELP GPUs, energy and
    # memory not testable (measured on at most one platform), never silently dropped
    for cid in ("transfer_slope_energy", "transfer_energy_rank_rho", "transfer_slope_memory"):
        assert not paper.at[cid, "testable"] and "platform" in paper.at[cid, "reason"]
    assert paper.at["transfer_slope_latency", "testable"]
    assert 0.2 < paper.at["transfer_slope_latency", "our_value"] < 5
    assert rec["claim/transfer_slope_latency"]["testable"] is True
    # part 3: host calibration on the four campaigns of one protocol, 12 ordered pairs
    cal = pd.read_csv(out / "results/transfer/host_calibration_summary.csv").set_index("calibration")
    assert set(cal.index) == {"none", "ladder", "reference", "configs"}
    assert (cal["n_pairs"] == 12).all()
    assert rec["host_calibration_ape_change_pp"]["ape_change_pp"] == pytest.approx(
        cal.at["ladder", "ape_change_pp"], rel=1e-9)
    row = paper.loc["host_calibration_ape_change_pp"]
    assert row["n"] == 12 and row["target_value"] == 0.0
    assert row["our_ci_low"] <= row["our_value"] <= row["our_ci_high"]
    assert (out / "results/transfer/host_calibration.csv").exists()
