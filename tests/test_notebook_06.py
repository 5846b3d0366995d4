"""Notebook 06: the two latency targets on a steady re-measured campaign (the fifth CPU's
a measured test (docs/experiments.md)), through the reproduce runner with a small subsample."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from carb_lib.evaluation.kernel_law import LATENCY_TARGETS, KernelLawComparison

NOTEBOOK = "notebooks/06_steady_campaign.ipynb"


@pytest.mark.slow
def test_notebook_06_quick_judges_both_targets_from_the_comparison(run_notebook):
    rec, out = run_notebook(NOTEBOOK, {"quick": True, "splits": ["random", "batch_small"],
                                       "n_seeds": 2, "preset": "test", "max_rows": 500,
                                       "results_dir": "results"})
    assert rec["have_data"] is True and rec["platform"] == "cpu_xeon_gnr_2c"
    assert rec["n_rows"] == 500 and rec["n_operators"] == 3000 and rec["probe"] is True
    assert 0 < rec["reference_cv"] < 0.05
    d = out / "results" / "carb" / "steady_campaign"
    scores, targets = pd.read_csv(d / "scores.csv"), pd.read_csv(d / "targets.csv")
    assert set(scores["split"]) == {"random", "batch_small"}
    assert scores.groupby(["split", "law"]).size().eq(2).all()  # one row per seed
    assert targets[["split", "metric"]].apply(tuple, axis=1).tolist() == [
        (sp, m) for sp, m, _, _ in LATENCY_TARGETS]
    # the glued numbers are the seeds' means of the written scores
    for (split, metric), t in targets.set_index(["split", "metric"]).iterrows():
        v = scores[(scores["split"] == split) & (scores["law"] == "kernel")][metric]
        assert rec[f"{split}/{metric}"] == pytest.approx(v.mean(), rel=1e-12)
        assert rec[f"{split}/{metric}_sd"] == pytest.approx(v.std(ddof=1), rel=1e-12)
        assert rec[f"{split}/met"] == bool(t["met"]) == (v.mean() >= 0.95)
    assert rec["n_targets_met"] == int(targets["met"].sum())
    # even on 500 rows the kernel law ranks held-out small batches (a broken law would not)
    small = scores[(scores["split"] == "batch_small") & (scores["law"] == "kernel")]
    assert (small["spearman"] > 0.9).all()


def test_latency_targets_judge_the_mean_over_seeds_and_refuse_a_missing_split():
    sc = pd.DataFrame({"split": ["random"] * 3 + ["batch_small"] * 3, "law": "kernel",
                       "seed": [0, 1, 2] * 2, "within_10pct": [0.94, 0.96, 0.98, 0.2, 0.2, 0.2],
                       "r2": [0.99] * 3 + [0.95, 0.93, 0.94]})
    t = KernelLawComparison(scores=sc, n_rows=10, n_operators=10, preset="x").latency_targets()
    assert t["met"].tolist() == [True, False]
    assert t["mean"].tolist() == pytest.approx([0.96, 0.94])
    assert t["sd"].iloc[0] == pytest.approx(0.02) and t["n_seeds"].tolist() == [3, 3]
    # the roofline law was not run: NaN, not met
    r = KernelLawComparison(scores=sc, n_rows=10, n_operators=10, preset="x").latency_targets(
        "roofline")
    assert np.isnan(r["mean"]).all() and not r["met"].any()


def test_notebook_06_is_in_both_profiles_with_known_parameters(check_profiles):
    runs = check_profiles(NOTEBOOK, {"dataset", "kernel_bench", "cache_probe", "n_seeds",
                                     "quick", "results_dir"})
    assert runs["full"].parameters["n_seeds"] == 3 and "max_rows" not in runs["full"].parameters
