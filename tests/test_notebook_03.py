"""Run notebook 03 (CARB) on its SYNTHETIC demo through the reproduce runner (quick profile)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from carb_lib.ensemble import PRESETS, CARBRegressor

NOTEBOOK = "notebooks/03_carb.ipynb"


def _check_coverage(recorded, runs_csv, target):
    """The recorded random-split coverage is the mean of the written runs and lies within 3
    standard deviations of the nominal level: binomial noise of the test rows plus the spread of
    split-conformal coverage over a calibration fold of ``n_cal`` rows (Beta, variance
    ``p (1 - p) / (n_cal + 2)``), averaged over the seeds."""
    runs = pd.read_csv(runs_csv)
    r = runs[(runs.kind == "random") & (runs.regime == "all") & (runs.target == target)]
    nominal, seeds, n_test = float(r["nominal"].iloc[0]), len(r), int(r["n"].sum())
    assert nominal == pytest.approx(0.9) and seeds >= 2
    assert recorded == pytest.approx(r["coverage"].mean(), abs=1e-12)
    # calibration fold: calibration_size of the training part (70 % of rows; test is 15 %)
    size = PRESETS["quick"].get("calibration_size", CARBRegressor().calibration_size)
    n_cal = size * (0.70 / 0.15) * n_test / seeds
    sd = math.sqrt(nominal * (1 - nominal) * (1 / n_test + 1 / (seeds * (n_cal + 2))))
    assert abs(recorded - nominal) <= 3 * sd, (target, recorded, nominal, sd)


@pytest.mark.slow
def test_notebook_03_quick_synthetic(tmp_path, run_notebook):
    out = tmp_path / "out"
    (out / "results/claims_synthetic").mkdir(parents=True)
    # rows of other notebooks survive; every row of this notebook's last run is replaced
    pd.DataFrame([
        {"claim_id": "divergence_energy_latency", "claim": "other notebook", "paper_value": 3.0,
         "our_value": 2.0, "platform": "synthetic_gpu", "n": 10, "testable": True, "reason": "x"},
    ]).to_csv(out / "results/claims_synthetic/01_characterization.csv", index=False)
    pd.DataFrame([
        {"claim_id": "carb_r2_latency_ms", "claim": "stale", "paper_value": 0.992,
         "our_value": -1.0, "platform": "synthetic_cpu", "n": 1, "testable": True, "reason": "old"},
        {"claim_id": "carb_r2_latency_ms", "claim": "stale", "paper_value": 0.992,
         "our_value": -1.0, "platform": "old_platform", "n": 1, "testable": True, "reason": "old"},
    ]).to_csv(out / "results/claims_synthetic/03_carb.csv", index=False)
    # an audit of one platform (re-measured 5 % slower, one row 20 %): its noise floor is known
    (tmp_path / "audit").mkdir()
    pd.DataFrame({"latency_ms": [10.0, 20.0, 40.0, 80.0], "latency_ms_new": [10.5, 21.0, 42.0, 96.0],
                  "status_new": "ok"}).to_parquet(tmp_path / "audit/synthetic_cpu.parquet")
    params = {"quick": True, "dataset": str(tmp_path / "absent.parquet"), "synthetic_demo": True,
              "synthetic_n": 720, "fig_dir": "figures", "results_dir": "results",
              "audit": str(tmp_path / "audit"),
              # one extrapolation kind and no preset comparison: the records checked below
              "extrapolation": ["batch_small"], "compare": []}
    rec, out = run_notebook(NOTEBOOK, params)
    assert rec["synthetic"] is True  # asked for: the dataset is not read
    assert rec["preset"] == "quick"
    assert rec["platforms"] == ["synthetic_cpu", "synthetic_gpu"]
    assert rec["synthetic_cpu/targets"] == ["peak_mem_mib", "latency_ms"]  # no energy on CPU
    assert rec["synthetic_gpu/targets"] == ["peak_mem_mib", "energy_j", "latency_ms"]
    assert rec["synthetic_cpu/random/r2/energy_j"] is None
    assert rec["synthetic_cpu/coverage/energy_j"] is None
    for p in rec["platforms"]:
        for t in rec[f"{p}/targets"]:
            r2, sd = rec[f"{p}/random/r2/{t}"]
            assert r2 > rec[f"{p}/b1_r2/{t}"], (p, t)  # beats FLOPs-only
            assert math.isfinite(sd) and sd > 0, (p, t)  # two seeds, two different fits
            assert rec[f"{p}/random/mape_pct/{t}"][0] < 25, (p, t)
            assert rec[f"{p}/grouped/r2/{t}"] is not None
            cov = rec[f"{p}/coverage/{t}"]
            assert set(cov) == {"all", "small_batch", "large_batch"}
            _check_coverage(cov["all"], out / f"results/carb/{p}/coverage_runs_synthetic.csv", t)
            ex = rec[f"{p}/extrapolation/batch_small/{t}"]
            assert ex["mape_max"] > 0
    floor = rec["synthetic_cpu/remeasurement_noise/latency_ms"]
    assert floor["mape_pct_remeasure"] == pytest.approx(8.75)  # (5 + 5 + 5 + 20) / 4
    assert floor["within_10pct_remeasure"] == pytest.approx(0.75)
    assert floor["mape_pct_mean"] == pytest.approx(rec["synthetic_cpu/random/mape_pct/latency_ms"][0])
    assert floor["mape_ratio"] == pytest.approx(floor["mape_pct_mean"] / 8.75)
    assert rec["synthetic_cpu/remeasurement_noise/energy_j"] is None  # no energy on the CPU
    assert rec["synthetic_gpu/remeasurement_noise/latency_ms"] is None  # no audit of that platform
    written = pd.read_csv(out / "results/carb/synthetic_cpu/remeasurement_noise_synthetic.csv")
    assert set(written["target"]) == {"latency_ms"} and list(written["subset"]) == ["all"]
    assert not (out / "results/carb/synthetic_gpu/remeasurement_noise_synthetic.csv").exists()
    # 13 claims per platform, less B2 on the GPU (energy measured: judged on every family's
    # rows by notebook 05, carb_lib.screening.energy_claims)
    assert rec["n_claims"] == 25
    assert rec["cpu_platforms"] is None  # the SYNTHETIC demo reads no measured CPU file
    assert rec["n_claims_testable"]["synthetic_cpu"] < rec["n_claims_testable"]["synthetic_gpu"]

    assert not (out / "results/claims.csv").exists()  # synthetic never reaches claims.csv
    claims = pd.read_csv(out / "results/claims_synthetic.csv")
    assert "divergence_energy_latency" in set(claims["claim_id"])
    assert "old_platform" not in set(claims["platform"])  # no stale row of this notebook
    assert "SYNTHETIC" in (out / "results/claims_vs_paper_synthetic.md").read_text()
    mine = claims[(claims.claim_id == "carb_r2_latency_ms") & (claims.platform == "synthetic_cpu")]
    assert len(mine) == 1 and mine["our_value"].iloc[0] > 0.5
    assert mine["reason"].iloc[0].startswith("SYNTHETIC")
    e_cpu = claims[(claims.claim_id == "carb_r2_energy_j") & (claims.platform == "synthetic_cpu")]
    assert not e_cpu["testable"].iloc[0]
    for name in ("summary", "extrapolation_summary", "coverage_summary", "base_constants",
                 "claims"):
        assert (out / f"results/carb/{name}_synthetic.csv").exists(), name
    for name in ("protocol_runs", "ablation_test", "ablation_val", "default_choice"):
        assert (out / f"results/carb/synthetic_cpu/{name}_synthetic.csv").exists(), name
    figs = {p.name for p in (out / "figures").glob("*.png")}
    assert "03_pred_vs_measured_synthetic_gpu_energy_j_synthetic.png" in figs
    assert all(f.endswith("_synthetic.png") for f in figs)


def test_notebook_03_is_in_both_profiles_with_known_parameters(check_profiles):
    runs = check_profiles(NOTEBOOK, {"dataset", "platform", "feature_set", "fig_dir",
                                     "results_dir", "quick", "synthetic_demo"})
    for profile, run in runs.items():
        assert run.parameters["quick"] is (profile == "quick")
