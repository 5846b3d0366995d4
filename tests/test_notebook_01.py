"""Run notebook 01 (characterization) on its SYNTHETIC demo through the reproduce runner."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

NOTEBOOK = "notebooks/01_characterization.ipynb"


@pytest.mark.slow
def test_notebook_01_quick_synthetic(run_notebook):
    rec, out = run_notebook(NOTEBOOK, {"quick": True, "n_boot": 30, "synthetic_demo": True,
                                       "synthetic_n": 720, "fig_dir": "figures",
                                       "results_dir": "results"})
    assert rec["synthetic"] is True
    assert rec["platforms"] == ["synthetic_cpu", "synthetic_gpu"]
    # known synthetic truth: fp32/fp16 latency 1/0.6, energy 1/0.8; breakpoint 1e10 FLOPs
    assert 1.5 < rec["synthetic_gpu/effect/precision/latency_ms"] < 1.85
    assert 1.15 < rec["synthetic_gpu/effect/precision/energy_j"] < 1.35
    assert 5e9 < rec["synthetic_gpu/breakpoint_flops/latency_ms"] < 2e10
    # computed here from the same SYNTHETIC rows (seed 0, 720 rows): the growth ratio of the
    # demand tiers (flops <= q0.10, >= q0.90) and the Spearman of power vs SM utilisation
    from scipy import stats

    from carb_lib.dataset.synthetic import make_synthetic_dataset

    gpu = make_synthetic_dataset(720, 0, platform="synthetic_gpu")
    gpu = gpu[(gpu["status"] == "ok") & (gpu["flops"] > 0)]
    d = gpu["flops"].to_numpy(float)
    lo, hi = np.quantile(d, [0.1, 0.9])

    def growth(col):
        v = gpu[col].to_numpy(float)
        return np.nanmedian(v[d >= hi]) / np.nanmedian(v[d <= lo])

    assert rec["synthetic_gpu/growth/energy_over_latency"] == pytest.approx(
        growth("energy_j") / growth("latency_ms"), rel=1e-9)
    assert rec["synthetic_gpu/growth/energy_over_latency"] > 1  # energy diverges upward
    pu = gpu[["sm_util_pct", "avg_power_w"]].astype(float).dropna()
    assert rec["synthetic_gpu/power_util_spearman"] == pytest.approx(
        stats.spearmanr(pu["sm_util_pct"], pu["avg_power_w"]).statistic, abs=1e-12)
    # the CPU-like platform has no energy: those numbers are not testable (None)
    assert rec["synthetic_cpu/growth/energy_j"] is None
    assert rec["synthetic_cpu/exponent_flops/energy_j"] is None
    assert rec["synthetic_cpu/growth/latency_ms"] > 1
    assert rec["n_claims"] == 14
    assert rec["n_claims_testable"] == {"synthetic_cpu": 2, "synthetic_gpu": 7}

    assert not (out / "results/claims.csv").exists()  # synthetic never reaches claims.csv
    claims = pd.read_csv(out / "results/claims_synthetic.csv")
    assert set(claims["platform"]) == {"synthetic_cpu", "synthetic_gpu"}
    for name in ("scaling", "segmented", "divergence", "paired_effects", "noise",
                 "power_vs_utilisation", "claims"):
        assert (out / f"results/characterization/{name}_synthetic.csv").exists(), name
    figs = sorted(p.name for p in (out / "figures").glob("*.png"))
    assert "01_scaling_synthetic_gpu_synthetic.png" in figs
    assert "01_divergence_synthetic_cpu_synthetic.png" in figs
    assert all(f.endswith("_synthetic.png") for f in figs)

    # the scaling explorer ran its static fallback on the default selection: fp32 rows of the
    # first platform (synthetic_cpu, seed + 1) with a positive latency and FLOPs
    from carb_lib.dataset.synthetic import make_synthetic_dataset

    cpu = make_synthetic_dataset(720, 1, platform="synthetic_cpu", with_energy=False,
                                 with_telemetry=False)
    cpu = cpu[(cpu["status"] == "ok") & (cpu["precision"] == "fp32")]
    assert rec["explore/n_shown"] == int(((cpu["latency_ms"] > 0) & (cpu["flops"] > 0)).sum())
    runs = out.parent / "runs"
    executed = (runs / "01_characterization.ipynb").read_text()
    assert "application/vnd.jupyter.widget-view+json" not in executed  # no widget in papermill
    # figures are images in the executed notebook (and its page), not "<Figure size ...>" text
    import nbformat

    nb = nbformat.reads(executed, as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 5
    assert not any(o.get("data", {}).get("text/plain", "").startswith("<Figure size")
                   and "image/png" not in o.get("data", {}) for o in outputs)
    page = (runs / "01_characterization.html").read_text()
    assert "rows shown" in page and "data:image/png;base64," in page
    assert "href='01_characterization.html'" in (runs / "index.html").read_text()


def test_notebook_01_is_in_both_profiles_with_known_parameters(check_profiles):
    check_profiles(NOTEBOOK, {"data_paths", "platform", "fig_dir", "results_dir", "quick",
                              "n_boot", "synthetic_demo"})
