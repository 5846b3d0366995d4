"""Every figure function of :mod:`carb_lib.plots` on small SYNTHETIC inputs: no title, axis label
or colour-bar label is a raw column or code name (``latency_ms``, ``r2_log_mean``,
``paper_style``); no panel is left empty for a target the platform did not measure."""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _screening_standin import StandInPredictor

from carb_lib import plots
from carb_lib import screening as scr
from carb_lib.characterize import scaling
from carb_lib.dataset.synthetic import make_synthetic_dataset

PLATFORMS = ("synthetic_gpu", "synthetic_cpu")
# CARB_FIGURE_WORDS_OUT=folder: also write a few of the figures there, to look at them
FIG_OUT = Path(os.environ["CARB_FIGURE_WORDS_OUT"]) if os.environ.get(
    "CARB_FIGURE_WORDS_OUT") else None


def _check(fig, name: str, seen: set[str]) -> None:
    bad = plots.raw_names(fig, allow=PLATFORMS)
    plots.plt.close(fig)
    assert not bad, f"{name}: raw column names in {bad}"
    seen.add(name)


def _keep(fig, name: str) -> None:
    if FIG_OUT is not None:
        fig.savefig(FIG_OUT / name)


def _panels(fig) -> list:
    return [a for a in fig.axes if a.get_label() != "<colorbar>"]


def test_raw_names_catches_column_names():
    fig, ax = plots.plt.subplots()
    ax.set_xlabel("latency_ms")
    ax.set_title("synthetic_gpu: latency per batch (ms)")
    assert plots.raw_names(fig, allow=PLATFORMS) == ["latency_ms"]
    fig.suptitle("model comparison, r2_log_mean")
    assert len(plots.raw_names(fig, allow=PLATFORMS)) == 2
    plots.plt.close(fig)
    assert plots.words("latency_ms") == "latency per batch (ms)"
    assert plots.words("some_new_column") == "some new column"
    assert len(set(plots.colours(range(8)).values())) == 8


@pytest.fixture(scope="module")
def data():
    gpu = make_synthetic_dataset(720, seed=0, platform="synthetic_gpu")
    cpu = make_synthetic_dataset(360, seed=1, platform="synthetic_cpu", with_energy=False,
                                 with_telemetry=False)
    return gpu, cpu


def test_every_figure_is_labelled_in_words(data):
    seen: set[str] = set()
    gpu, cpu = data
    both = pd.concat([gpu, cpu], ignore_index=True)
    fits = scaling.fit_scaling(both, x_cols=["flops"], by=(None, "precision"))
    seg = scaling.fit_segmented(both, "latency_ms", n_boot=0)
    div = scaling.divergence(both, n_boot=10)
    eff = scaling.paired_effects(both, n_boot=10)
    for plat, d in (("synthetic_gpu", gpu), ("synthetic_cpu", cpu)):
        fig = plots.plot_scaling(d, platform=plat, dataset_label="demo", fits=fits,
                                 segmented=seg)
        if plat == "synthetic_cpu":  # energy is not measured: no empty panel, a caption
            assert len(_panels(fig)) == 2
            assert any("not measured on this platform" in t.get_text() for t in fig.texts)
        else:  # fp16 and fp32: one power law each
            assert sum(line.get_label().startswith(("fp16:", "fp32:"))
                       for line in fig.axes[0].lines) == 2
        _keep(fig, f"scaling_{plat}.png")
        _check(fig, "plot_scaling", seen)
        fig = plots.plot_target_distributions(d, platform=plat, dataset_label="demo")
        assert len(_panels(fig)) == (2 if plat == "synthetic_cpu" else 3)
        _check(fig, "plot_target_distributions", seen)
        fig = plots.plot_divergence(div, platform=plat, dataset_label="demo",
                                    paper={"energy_j": 35.4})
        if plat == "synthetic_cpu":
            assert len(_panels(fig)) == 1
        _check(fig, "plot_divergence", seen)
        _check(plots.plot_effects(eff, platform=plat, dataset_label="demo"), "plot_effects", seen)
        _check(plots.plot_noise(d, platform=plat, dataset_label="demo"), "plot_noise", seen)
        _check(plots.plot_power_vs_utilisation(d, platform=plat, dataset_label="demo"),
               "plot_power_vs_utilisation", seen)
        ok = d[d["status"] == "ok"]
        _check(plots.plot_explorer(ok, "latency_ms", "flops", hue="precision", facet="precision",
                                   platform=plat, dataset_label="demo"), "plot_explorer", seen)

    rng = np.random.default_rng(0)
    cols = ("flops", "params", "activation_bytes", "arith_intensity_flop_per_byte")
    feats = pd.DataFrame({c: rng.uniform(1, 1e6, 40) for c in cols})
    feats["block"] = ["basic", "bottleneck"] * 20
    _check(plots.plot_static_feature_distributions(feats), "plot_static_feature_distributions",
           seen)
    cmp = pd.DataFrame([{"config_id": f"c{i}", "column": c, "measured": v, "analytic": v,
                         "match": True}
                        for i in range(3) for c, v in (("flops", 1e6 * (i + 1)),
                                                       ("params", 1e3 * (i + 1)),
                                                       ("activation_bytes", 1e4 * (i + 1)),
                                                       ("n_conv", 5 + i))])
    _check(plots.plot_feature_check(cmp), "plot_feature_check", seen)

    idx = pd.RangeIndex(30)
    y = pd.DataFrame({"latency_ms": np.geomspace(1, 100, 30)}, index=idx)
    iv = pd.DataFrame({"latency_ms_lo": y["latency_ms"] * 0.9,
                       "latency_ms_hi": y["latency_ms"] * 1.1}, index=idx)
    _check(plots.plot_carb_pred_vs_measured(y, y * 1.05, "latency_ms", platform="synthetic_gpu",
                                            intervals=iv, hue=pd.Series(range(1, 31),
                                                                        name="batch")),
           "plot_carb_pred_vs_measured", seen)
    abl = pd.DataFrame({"model": ["carb_default", "carb_default", "no_base_law", "no_base_law"],
                        "target": ["latency_ms", "peak_mem_mib"] * 2,
                        "r2_log_mean": [0.999, 0.9999, 0.99, 0.998],
                        "mape_pct_mean": [4.0, 1.0, 9.0, 2.0], "mape_pct_sd": 0.3})
    for metric in ("mape_pct_mean", "r2_log_mean"):
        _check(plots.plot_carb_model_comparison(abl, metric=metric, platform="synthetic_gpu"),
               "plot_carb_model_comparison", seen)

    names = ["help_a", "help_b", "help_c"]
    pair = pd.DataFrame([{"source": s, "target": t, "spearman": 0.9, "slope": 1.0}
                         for s in names for t in names])
    _check(plots.plot_transfer_matrix(pair), "plot_transfer_matrix", seen)
    _check(plots.plot_slope_matrix(pair), "plot_slope_matrix", seen)
    summ = pd.DataFrame([{"device_kind": kind, "method": m, "k": k, "target": "t",
                          "spearman_mean": 0.5 + 0.01 * k}
                         for kind in ("mobile", "desktop_gpu") for m in ("x", "y")
                         for k in (5, 10, 20)])
    _check(plots.plot_fewshot_curves(summ, help_reported={"mobile": 0.9}),
           "plot_fewshot_curves", seen)
    comp = pd.DataFrame({"group": ["g1", "g2"], "help_reported": [0.9, 0.8],
                         "ours": [0.85, np.nan]})
    _check(plots.plot_help_comparison(comp), "plot_help_comparison", seen)

    fams = ["mobilenetv2", "efficientnet"]
    rows = [(m, k) for m, k in (("zero_shot", 0), ("blend", 10), ("blend", 20), ("own_model", 0))]
    summary = pd.DataFrame([
        {"family": f, "model": m, "k": k, "target": t, "n_seeds": 3,
         "mape_pct_mean": 1e-13 if m == "own_model" else 12.0 / (i + 1), "mape_pct_sd": 1.0,
         "spearman_mean": 0.9, "spearman_sd": 0.02}
        for f in fams for i, (m, k) in enumerate(rows) for t in ("peak_mem_mib", "latency_ms")])
    fig = plots.plot_cross_family_summary(summary, platform="synthetic_gpu")
    assert fig.axes[0].get_xlim()[0] >= 0.05  # MAPE axis not stretched down to 1e-13 %
    _keep(fig, "summary.png")
    _check(fig, "plot_cross_family_summary", seen)
    pred = pd.DataFrame([{"family": f, "model": m, "k": k, "target": "latency_ms",
                          "measured": v, "predicted": v * 1.1}
                         for f in fams for m, k in rows for v in (1.0, 2.0, 4.0)])
    _check(plots.plot_cross_family_predictions(pred, "latency_ms", platform="synthetic_gpu"),
           "plot_cross_family_predictions", seen)

    g = __import__("carb_lib.families.space", fromlist=["paper_grid"]).paper_grid()
    grid = scr.prepare_candidates(g.iloc[np.random.default_rng(0).choice(len(g), 1500, False)])
    model = StandInPredictor(platform="synthetic_gpu")
    spec = scr.DeploymentSpec(budgets=["energy_j<=0.05", "peak_mem_mib<=512"],
                              objectives=["energy_j", "peak_mem_mib", "max:params"], k=8)
    res = scr.screen(model, grid, spec)
    far = res.table["energy_j"] > res.table["energy_j"].quantile(0.8)
    res.table["extrapolated"] = far & ~res.table["on_front"]
    fig = plots.plot_screening_front(res, title="paper_style on synthetic_gpu")
    title = fig.axes[0].get_title()
    assert "parameters (capacity proxy)" in title and "paper style" in title
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    n_far = int(res.table["extrapolated"].sum())
    assert any(t.startswith(f"extrapolated, outside the training range ({n_far:,}; ")
               for t in legend), legend
    assert fig.axes[0].get_xlim()[1] < float(res.table["energy_j"].max())  # in-range axes
    _keep(fig, "front.png")
    _check(fig, "plot_screening_front", seen)
    _check(plots.plot_screening_funnel(res, title="paper_style: screening funnel"),
           "plot_screening_funnel", seen)
    meas = grid.copy()
    for t, v in model.predict(grid).items():
        meas[t] = v.to_numpy()
    meas["status"] = "ok"
    v = scr.validate_against_measured(model, meas, spec)
    _check(plots.plot_screening_validation(v.shortlist_table, spec.budgets),
           "plot_screening_validation", seen)

    every = {n for n, f in inspect.getmembers(plots, inspect.isfunction)
             if n.startswith("plot_")}
    assert every <= seen, f"not rendered here: {sorted(every - seen)}"
