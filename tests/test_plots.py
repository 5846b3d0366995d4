"""carb_lib.plots: the package keeps its flat names, applies its style once, labels axes from the
vocabulary, and every figure function draws on small SYNTHETIC frames."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from carb_lib import plots
from carb_lib.core.vocab import TARGETS, label


def _close(fig):
    plots.plt.close(fig)


def test_flat_names_and_style_applied_once_at_import():
    import matplotlib as mpl

    for name in plots.__all__:
        assert hasattr(plots, name), name
    assert plots.plot_screening_front.__module__ == "carb_lib.plots.screening"
    assert mpl.rcParams["savefig.dpi"] == plots.DPI and mpl.rcParams["savefig.bbox"] == "tight"


def test_save_figure_names(tmp_path):
    fig, _ = plots.plt.subplots()
    paths = plots.save_figure(fig, "00_demo", tmp_path / "figs")
    assert [p.name for p in paths] == ["00_demo.png", "00_demo.pdf"]
    assert all(p.stat().st_size > 0 for p in paths)
    for bad in ("", "a/b", "x.png"):
        with pytest.raises(ValueError, match="bare stem"):
            plots.save_figure(fig, bad, tmp_path)
    _close(fig)


def test_design_space_figures_label_from_vocabulary():
    rng = np.random.default_rng(0)
    cols = ("flops", "params", "activation_bytes", "arith_intensity_flop_per_byte")
    feats = pd.DataFrame({c: rng.uniform(1, 1e6, 40) for c in cols})
    feats["block"] = ["basic", "bottleneck"] * 20
    fig = plots.plot_static_feature_distributions(feats)
    assert [ax.get_xlabel() for ax in fig.axes[:4]] == [label(c) for c in cols]
    _close(fig)
    cmp = pd.DataFrame([{"config_id": f"c{i}", "column": c, "measured": v, "analytic": v,
                         "match": True}
                        for i in range(3) for c, v in (("flops", 1e6 * (i + 1)),
                                                       ("params", 1e3 * (i + 1)),
                                                       ("activation_bytes", 1e4 * (i + 1)),
                                                       ("n_conv", 5 + i))])
    fig = plots.plot_feature_check(cmp)
    assert fig.axes[0].get_xlabel() == f"measured {label('flops')}"
    assert fig.axes[0].get_title() == "FLOPs per batch: 3/3 exact"
    _close(fig)


def test_carb_figures():
    idx = pd.RangeIndex(30)
    y = pd.DataFrame({"latency_ms": np.geomspace(1, 100, 30)}, index=idx)
    p = y * 1.05  # every prediction 5 % high
    iv = pd.DataFrame({"latency_ms_lo": p["latency_ms"] * 0.9,
                       "latency_ms_hi": p["latency_ms"] * 1.1}, index=idx)
    fig = plots.plot_carb_pred_vs_measured(y, p, "latency_ms", platform="synthetic",
                                           intervals=iv, hue=pd.Series(range(1, 31), name="batch"))
    ax = fig.axes[0]
    assert ax.get_xlabel() == f"measured {label('latency_ms')}"
    assert ax.get_ylabel() == f"predicted {label('latency_ms')}"
    text = ax.texts[0].get_text()
    assert "MAPE = 5.0 %" in text and "within ±10 %: 100 %" in text and "n = 30" in text
    _close(fig)
    met = pd.DataFrame({"model": ["a", "a", "b", "b"], "target": list(TARGETS[:2]) * 2,
                        "r2_log": [0.9, 0.8, 0.7, 0.6]})
    fig = plots.plot_carb_model_comparison(met)
    # R² near 1 hides the differences: drawn as the unexplained share 1 - R², log axis
    ax = fig.axes[0]
    assert ax.get_xlabel().startswith("1 - R² of log values") and ax.get_xscale() == "log"
    assert sorted(round(float(v), 3) for c in ax.containers for v in c.lines[0].get_xdata()) \
        == [0.1, 0.2, 0.3, 0.4]
    _close(fig)
    met["mape_pct_mean"], met["mape_pct_sd"] = [5.0, 8.0, 2.0, 3.0], 0.5
    fig = plots.plot_carb_model_comparison(met)  # the error, when the table has it
    assert fig.axes[0].get_xlabel().startswith("mean absolute percentage error")
    _close(fig)
    with pytest.raises(ValueError, match="'nope' is not a column"):
        plots.plot_carb_model_comparison(met, metric="nope")


def test_transfer_figures():
    names = ["help_a", "help_b", "help_c"]
    pair = pd.DataFrame([{"source": s, "target": t, "spearman": 0.9, "slope": 1.0}
                         for s in names for t in names])
    fig = plots.plot_transfer_matrix(pair)
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["a", "b", "c"]
    _close(fig)
    _close(plots.plot_slope_matrix(pair))
    summ = pd.DataFrame([{"device_kind": kind, "method": m, "k": k, "target": "t",
                          "spearman_mean": 0.5 + 0.01 * k}
                         for kind in ("mobile", "desktop_gpu") for m in ("x", "y")
                         for k in (5, 10, 20)])
    fig = plots.plot_fewshot_curves(summ, help_reported={"mobile": 0.9})
    # the known device kinds come first, in their fixed order
    assert [ax.get_title().split(" (")[0] for ax in fig.axes] == ["desktop gpu", "mobile"]
    _close(fig)
    comp = pd.DataFrame({"group": ["g1", "g2"], "help_reported": [0.9, 0.8],
                         "ours": [0.85, np.nan]})
    _close(plots.plot_help_comparison(comp))


def test_explorer_and_characterization_labels():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"flops": rng.uniform(1e6, 1e9, 60), "batch": rng.choice([1, 8, 64], 60),
                       "status": "ok", "latency_p90_p10_rel": rng.uniform(0.01, 0.1, 60)})
    df["latency_ms"] = df["flops"] / 1e7
    fig = plots.plot_explorer(df, "latency_ms", "flops", hue="batch", facet="batch")
    assert fig.axes[0].get_xlabel() == label("flops")
    assert fig.axes[0].get_ylabel() == label("latency_ms")
    _close(fig)
    # a label appended to the vocabulary for the characterization figures
    assert label("latency_p90_p10_rel") == "(p90 - p10) / median latency"
