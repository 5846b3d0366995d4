"""Figures do not mislead: legends lie outside the data, log ticks read as plain numbers that do
not overlap, bars start at 0, colours and lines are named in a legend, and values drawn at a
floor of a log axis are said to be there. Every figure here draws on small SYNTHETIC frames."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from carb_lib import plots
from carb_lib.plots._style import legend_overlaps, plain_number


def _close(fig):
    plots.plt.close(fig)


def _tick_texts(ax, axis: str = "x") -> list:
    """The visible, non-empty major tick labels of ``ax`` inside the view (after a draw)."""
    ax.figure.canvas.draw()
    a = ax.xaxis if axis == "x" else ax.yaxis
    lo, hi = sorted(ax.get_xlim() if axis == "x" else ax.get_ylim())
    return [t.label1 for t in a.get_major_ticks()
            if t.label1.get_visible() and t.label1.get_text()
            and lo * (1 - 1e-9) <= t.get_loc() <= hi * (1 + 1e-9)]


def _tick_clashes(ax, axis: str = "x") -> list[tuple[str, str]]:
    """Pairs of neighbouring tick labels whose boxes overlap."""
    boxes = sorted(((t.get_window_extent(), t.get_text()) for t in _tick_texts(ax, axis)),
                   key=lambda b: b[0].x0 if axis == "x" else b[0].y0)
    return [(a[1], b[1]) for a, b in zip(boxes, boxes[1:], strict=False)
            if (b[0].x0 < a[0].x1 - 0.5 if axis == "x" else b[0].y0 < a[0].y1 - 0.5)]


def _sci(texts) -> list[str]:
    """Tick labels of numbers a plain number writes shorter (10⁻³ .. 10⁴) but written as a
    power of ten (``6×10⁰``, ``10⁻¹``), and matplotlib's default labels."""
    import re

    return [t for t in texts if "mathdefault" in t or re.search(r"10\^\{-?[0-3]\}", t)]


@pytest.mark.parametrize("v, text", [(6, "6"), (20, "20"), (100, "100"), (0.5, "0.5"),
                                     (0.01, "0.01"), (5000, "5000"), (1e6, "$10^{6}$")])
def test_plain_number(v, text):
    assert plain_number(v) == text


def _explorer_rows(n=120, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"flops": rng.uniform(1e6, 8e6, n), "status": "ok",
                       "precision": rng.choice(["fp16", "fp32"], n),
                       "batch": rng.choice([1, 8], n)})
    df["latency_ms"] = df["flops"] / 1e6 * np.exp(rng.normal(0, 0.05, n))  # 1 to 8 ms
    return df


def test_explorer_legends_lie_outside_the_panels_and_log_ticks_are_plain():
    from carb_lib.characterize.scaling import fit_scaling

    df = _explorer_rows()
    fits = fit_scaling(df, targets=["latency_ms"], x_cols=["flops"], by=(None, "precision"))
    fig = plots.plot_explorer(df, "latency_ms", "flops", hue="batch", facet="precision",
                              fits=fits)
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert len(panels) == 2 and all(ax.get_legend() is not None for ax in panels)
    assert legend_overlaps(fig) == []
    for ax in panels:
        for axis in ("x", "y"):
            texts = [t.get_text() for t in _tick_texts(ax, axis)]
            assert _sci(texts) == [], texts
            assert _tick_clashes(ax, axis) == []
    # a span under one decade still gets plain labels: 1, 2, 3, 5
    ys = [t.get_text() for t in _tick_texts(panels[0], "y")]
    assert {"2", "5"} <= set(ys), ys
    _close(fig)


@pytest.mark.parametrize("lo, hi", [(0.4, 6.0), (0.13, 7.9), (0.05, 300.0)])
def test_pred_vs_measured_ticks_do_not_overlap(lo, hi):
    idx = pd.RangeIndex(40)
    y = pd.DataFrame({"energy_j": np.geomspace(lo, hi, 40)}, index=idx)
    p = y * 1.05
    iv = pd.DataFrame({"energy_j_lo": p["energy_j"] * 0.9, "energy_j_hi": p["energy_j"] * 1.1},
                      index=idx)
    fig = plots.plot_carb_pred_vs_measured(y, p, "energy_j", platform="synthetic",
                                           intervals=iv, hue=pd.Series(2 ** (idx % 8),
                                                                       index=idx, name="batch"))
    ax = fig.axes[0]
    for axis in ("x", "y"):
        texts = [t.get_text() for t in _tick_texts(ax, axis)]
        assert len(texts) >= 2 and _sci(texts) == [], texts
        assert _tick_clashes(ax, axis) == [], texts
    assert ax.get_legend() is not None and legend_overlaps(fig) == []
    _close(fig)


def test_help_comparison_bars_start_at_zero_and_the_legend_is_clear_of_them():
    comp = pd.DataFrame({"group": ["desktop GPU", "mobile", "mean over settings"],
                         "help_reported": [0.987, 0.802, np.nan], "ours": [0.99, 0.90, 0.96]})
    fig = plots.plot_help_comparison(comp)
    ax = fig.axes[0]
    assert ax.get_ylim()[0] == 0.0 and ax.get_ylim()[1] >= 1.0
    assert "from 0" in ax.get_ylabel()
    assert ax.get_legend() is not None and legend_overlaps(fig) == []
    assert any("not reported" in t.get_text() for t in ax.texts)  # the missing HELP bar
    _close(fig)


def test_validation_names_its_colours_and_its_budget_line():
    from carb_lib.screening.budgets import Budget

    n = 6
    tab = pd.DataFrame({"latency_ms_pred": np.linspace(1, 9, n)})
    tab["latency_ms_lo"] = tab["latency_ms_pred"] * 0.8
    tab["latency_ms_hi"] = tab["latency_ms_pred"] * 1.2
    tab["latency_ms_meas"] = tab["latency_ms_pred"] * [1.0, 1.1, 0.9, 1.5, 1.0, 1.05]
    fig = plots.plot_screening_validation(tab, [Budget.parse("latency_ms<=11")])
    ax = fig.axes[0]
    leg = ax.get_legend()
    assert leg is not None and legend_overlaps(fig) == []
    texts = [t.get_text() for t in leg.get_texts()]
    assert any("inside the interval (5)" in t for t in texts), texts
    assert any("outside the interval (1)" in t for t in texts), texts
    assert any(t.startswith("budget") and "11" in t for t in texts), texts
    budget_lines = [ln for ln in ax.get_lines() if ln.get_label().startswith("budget")]
    assert budget_lines and "11 ms" in budget_lines[0].get_label()
    # the point outside its interval differs from the others in colour and shape
    from matplotlib.collections import PathCollection

    marks = {tuple(np.round(c.get_facecolor()[0], 3)): c.get_offsets().shape[0]
             for c in ax.collections if isinstance(c, PathCollection) and len(c.get_offsets())}
    assert sorted(marks.values()) == [1, 5]
    _close(fig)


def _cross_family_summary(floor_hit: bool) -> pd.DataFrame:
    rows = []
    for fam in ("vgg", "mobilenetv2"):
        for t in ("peak_mem_mib", "latency_ms"):
            for model, k in (("zero_shot", 0), ("blend", 10), ("own_model", 0)):
                mape = 0.0 if floor_hit and t == "peak_mem_mib" and model != "blend" else 12.0
                rows.append({"family": fam, "target": t, "model": model, "k": k,
                             "mape_pct_mean": mape, "mape_pct_sd": 0.0, "spearman_mean": 0.9,
                             "spearman_sd": 0.01, "n_seeds": 3})
    return pd.DataFrame(rows)


def test_cross_family_summary_says_where_zero_errors_are_drawn():
    fig = plots.plot_cross_family_summary(_cross_family_summary(True), platform="synthetic")
    notes = [t.get_text() for t in fig.texts]
    assert any("4 MAPE values below 0.1 % (down to 0 %) drawn at 0.1 %" in t for t in notes), notes
    mem = fig.axes[0]
    assert "≤ 0.1" in [t.get_text() for t in _tick_texts(mem, "x")]
    assert any("below 0.1 %" in t.get_text() for t in fig.axes[1].get_legend().get_texts())
    assert legend_overlaps(fig) == []
    _close(fig)
    fig = plots.plot_cross_family_summary(_cross_family_summary(False), platform="synthetic")
    assert not any("below 0.1 %" in t.get_text() for t in fig.texts)
    assert "≤ 0.1" not in [t.get_text() for t in _tick_texts(fig.axes[0], "x")]
    _close(fig)


def test_scaling_and_cross_family_prediction_legends_lie_outside_the_data():
    from carb_lib.characterize.scaling import fit_scaling

    df = _explorer_rows()
    fits = fit_scaling(df, targets=["latency_ms"], x_cols=["flops"], by=(None, "precision"))
    fig = plots.plot_scaling(df, targets=("latency_ms",), hue="precision", fits=fits)
    assert fig.axes[0].get_legend() is not None and legend_overlaps(fig) == []
    assert _sci([t.get_text() for t in _tick_texts(fig.axes[0], "y")]) == []
    _close(fig)
    rng = np.random.default_rng(0)
    m = np.geomspace(1, 50, 30)
    pred = pd.DataFrame([{"family": f, "target": "latency_ms", "model": mo, "k": k,
                          "measured": v, "predicted": v * rng.uniform(0.8, 1.2)}
                         for f in ("vgg", "mobilenetv2") for mo, k in (("zero_shot", 0),
                                                                       ("blend", 10))
                         for v in m])
    fig = plots.plot_cross_family_predictions(pred, "latency_ms", platform="synthetic")
    assert all(ax.get_legend() is not None for ax in fig.axes) and legend_overlaps(fig) == []
    _close(fig)


def test_model_comparison_says_where_exact_errors_are_drawn():
    met = pd.DataFrame({"model": ["a", "a", "b", "b"],
                        "target": ["peak_mem_mib", "latency_ms"] * 2,
                        "mape_pct_mean": [1e-13, 12.0, 3.0, 15.0], "mape_pct_sd": 0.0})
    fig = plots.plot_carb_model_comparison(met)
    ax = fig.axes[0]
    assert any("1 value below 0.0001 (down to 1e-13, exact to rounding) drawn at 0.0001" in
               t.get_text() for t in fig.texts)
    assert "≤ 0.0001" in [t.get_text() for t in _tick_texts(ax, "x")]
    assert ax.get_legend() is not None and legend_overlaps(fig) == []
    _close(fig)
    met["mape_pct_mean"] = [2.0, 12.0, 3.0, 15.0]
    fig = plots.plot_carb_model_comparison(met)
    assert not fig.texts and "≤" not in "".join(t.get_text() for t in _tick_texts(fig.axes[0]))
    _close(fig)
