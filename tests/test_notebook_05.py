"""Run notebook 05 (cross-family evaluation and one front across families) on small seeded
subsamples of the shipped measurements through the reproduce runner."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from carb_lib.kernels import law as kernels

ROOT = Path(__file__).resolve().parents[1]

NOTEBOOK = "notebooks/05_cross_family.ipynb"
NEW = ("efficientnet", "mobilenetv2", "vgg")
PARAMS = {"quick": True, "ks": [10], "n_seeds": 1, "preset": "test", "kernel_trees": 50,
          "max_source_rows": 500, "max_rows_per_family": 200, "n_candidates_per_family": 200,
          "fig_dir": "figures", "results_dir": "results"}


@pytest.mark.slow
def test_notebook_05_quick(run_notebook):
    rec, out = run_notebook(NOTEBOOK, PARAMS)
    assert rec["have_data"] is True and rec["platform"] == "cpu_epyc_zen3_2c"
    assert rec["n_source"] == 500
    assert {rec[f"n_rows/{f}"] for f in NEW} == {200}
    summary = pd.read_csv(out / "results/cross_family/summary.csv")
    s = summary.set_index(["family", "target", "model", "k"])
    for fam in NEW:
        for t in ("peak_mem_mib", "latency_ms"):
            # the glued numbers are the written ones
            assert rec[f"{fam}/{t}/zero_shot@0/mape_pct"] == pytest.approx(
                s.loc[(fam, t, "zero_shot", 0), "mape_pct_mean"], rel=1e-12)
            assert rec[f"{fam}/{t}/blend@10/spearman"] == pytest.approx(
                s.loc[(fam, t, "blend", 10), "spearman_mean"], rel=1e-12)
            assert rec[f"{fam}/{t}/offset@10/mape_pct"] == pytest.approx(
                s.loc[(fam, t, "offset", 10), "mape_pct_mean"], rel=1e-12)
            # one scale factor: the zero-shot ranking, unchanged
            assert s.loc[(fam, t, "offset", 10), "spearman_mean"] == pytest.approx(
                s.loc[(fam, t, "zero_shot", 0), "spearman_mean"], abs=1e-12)
            own = f"{fam}/{t}/own_model/mape_pct"  # absent only with a note (too few rows)
            assert rec[own] > 0 if own in rec else rec["n_notes"] > 0
    checks = pd.read_csv(out / "results/cross_family/issue_targets.csv")
    assert len(checks) == 3 * len(NEW) == rec["n_targets"]
    # the few-shot cells judged are the notebook's few_shot_method (offset), at k = 10
    few = checks[checks["k"] > 0]
    assert set(few["model"]) == {"offset"} and set(few["k"]) == {10} and len(few) == 2 * len(NEW)
    lat = few[few["metric"] == "mape_pct"].set_index("family")["mean"]
    for fam in NEW:
        assert lat[fam] == pytest.approx(s.loc[(fam, "latency_ms", "offset", 10), "mape_pct_mean"])
    assert rec["n_targets_met"] == int(checks["met"].sum())
    # the drift-normalised variant sits beside the plain numbers, never in their place
    assert rec["have_refs"] is True
    plain = pd.read_csv(out / "results/cross_family/summary.csv")
    norm = pd.read_csv(out / "results/cross_family/summary_drift_normalised.csv")
    for fam in NEW:
        key = (fam, "latency_ms", "zero_shot", 0)
        n = norm.set_index(["family", "target", "model", "k"])
        assert rec[f"drift/{fam}/zero_shot@0/mape_pct"] == pytest.approx(
            n.loc[key, "mape_pct_mean"], rel=1e-12)
        # memory is not touched by the normalisation
        m = ("peak_mem_mib", "zero_shot", 0)
        assert n.loc[(fam, *m), "mape_pct_mean"] == pytest.approx(
            plain.set_index(["family", "target", "model", "k"]).loc[(fam, *m), "mape_pct_mean"])
    # the data's own re-measurement noise, from the committed audit of the new-family rows
    assert rec["have_audit"] is True
    from carb_lib.evaluation import remeasurement_noise

    audit = pd.read_parquet("data/cpu_epyc_zen3_2c/design/audit_new_families.parquet")
    written = pd.read_csv(out / "results/cross_family/remeasurement_noise.csv")
    assert set(written["family"]) == set(NEW)
    for fam in NEW:
        want = remeasurement_noise(audit[audit["family"] == fam]).set_index(["target", "subset"])
        assert rec[f"{fam}/latency_ms/remeasure/mape_pct"] == pytest.approx(
            want.loc[("latency_ms", "all"), "mape_pct"], rel=1e-12)
        assert rec[f"{fam}/peak_mem_mib/remeasure/mape_pct"] == 0.0  # memory re-measures exactly
    # the kernel latency law beside the roofline law, from the committed operator benchmark
    bench = kernels.read_bench(ROOT / "data/cpu_epyc_zen3_2c/design/kernels.parquet")
    assert rec["have_kernels"] is True and rec["kernels/n_ops"] == len(bench)
    assert 0 < rec["kernels/holdout_mape_pct"] < 100 and rec["kernels/holdout_spearman"] > 0.9
    k = pd.read_csv(out / "results/cross_family/summary_kernel_law.csv").set_index(
        ["family", "target", "model", "k"])
    laws = pd.read_csv(out / "results/cross_family/law_comparison.csv")
    assert set(laws["family"]) == set(NEW)
    for fam in NEW:
        key = (fam, "latency_ms", "zero_shot", 0)
        assert rec[f"kernel/{fam}/zero_shot@0/spearman"] == pytest.approx(
            k.loc[key, "spearman_mean"], rel=1e-12)
        row = laws[(laws["family"] == fam) & (laws["model"] == "zero_shot")].iloc[0]
        assert row["kernel_spearman"] == pytest.approx(k.loc[key, "spearman_mean"])
        assert row["roofline_spearman"] == pytest.approx(s.loc[key, "spearman_mean"])
    checks_k = pd.read_csv(out / "results/cross_family/issue_targets_kernel_law.csv")
    assert rec["kernel/n_targets_met"] == int(checks_k["met"].sum()) and len(checks_k) == 9
    # the sibling source beside the ResNet-only one, on the same split and k rows
    assert rec["have_siblings"] is True
    sib = pd.read_csv(out / "results/cross_family/summary_kernel_law_siblings.csv").set_index(
        ["family", "target", "model", "k"])
    assert set(sib.index.get_level_values("model")) >= {"zero_shot", "offset"}
    assert "own_model" not in set(sib.index.get_level_values("model"))
    side = pd.read_csv(out / "results/cross_family/siblings_comparison.csv")
    for fam in NEW:
        key = (fam, "latency_ms", "offset", 10)
        assert rec[f"siblings/{fam}/offset@10/mape_pct"] == pytest.approx(
            sib.loc[key, "mape_pct_mean"], rel=1e-12)
        row = side[(side["family"] == fam) & (side["model"] == "offset")].iloc[0]
        assert row["with_siblings_mape_pct"] == pytest.approx(sib.loc[key, "mape_pct_mean"])
        assert row["resnet_only_mape_pct"] == pytest.approx(k.loc[key, "mape_pct_mean"])
        assert sib.loc[key, "n_test"] == k.loc[key, "n_test"]
    checks_s = pd.read_csv(out / "results/cross_family/issue_targets_kernel_law_siblings.csv")
    assert rec["siblings/n_targets_met"] == int(checks_s["met"].sum()) and len(checks_s) == 9
    # one front across the four families
    by_fam = pd.read_csv(out / "results/cross_family/screening_by_family.csv", index_col=0)
    assert set(by_fam.index) == {"resnet", *NEW}
    assert (by_fam["candidates"] >= by_fam["within budget"]).all()
    assert (by_fam["within budget"] >= by_fam["on the front"]).all()
    assert by_fam["in the shortlist"].sum() == 10
    assert rec["screen/front_families"] == int((by_fam["on the front"] > 0).sum()) >= 1
    figs = {p.name for p in (out / "figures").glob("*.png")}
    assert {"05_cross_family_summary.png", "05_cross_family_latency_ms.png",
            "05_cross_family_peak_mem_mib.png", "05_cross_family_front.png",
            "05_cross_family_summary_drift_normalised.png",
            "05_cross_family_summary_kernel_law.png"} <= figs


def test_notebook_05_is_in_both_profiles_with_known_parameters(check_profiles):
    check_profiles(NOTEBOOK, {"source_dataset", "target_dataset", "ks", "n_seeds", "preset",
                              "quick", "fig_dir", "results_dir"})
