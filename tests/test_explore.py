"""carb_lib.app.explore: the scaling explorer and "what does my network cost?" on SYNTHETIC data
(the pure core, the static fallback and the widgets without a browser)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from carb_synthetic import make_carb_synthetic

from carb_lib.app import explore
from carb_lib.characterize.scaling import fit_scaling, ok_rows
from carb_lib.dataset.synthetic import make_synthetic_dataset
from carb_lib.ensemble import PRESETS


@pytest.fixture(scope="module")
def ok():
    return ok_rows(make_synthetic_dataset(720, 1, platform="synthetic_cpu", with_energy=False,
                                          with_telemetry=False))


def _positive(df, cols):
    v = df[list(cols)].apply(pd.to_numeric, errors="coerce").astype(float)
    return int(((v > 0) & np.isfinite(v)).all(axis=1).sum())


def test_view_counts_and_fits_exactly_the_selected_rows(ok):
    s = explore.Selection(platform="synthetic_cpu", target="latency_ms", x="flops",
                          precisions=("fp32",), batch_range=(2, 64))
    view = explore.scaling_view(ok, s)
    sel = ok[(ok["precision"] == "fp32") & ok["batch"].between(2, 64)]
    assert len(view.rows) == len(sel)
    assert view.n_shown == _positive(sel, ["latency_ms", "flops"])
    assert 0 < view.n_shown < len(ok) // 2
    ref = fit_scaling(sel, targets=["latency_ms"], x_cols=["flops"], by=(None,)).iloc[0]
    fit = view.overall_fit()
    assert fit["n"] == ref["n"] == view.n_shown
    assert fit["exponent"] == pytest.approx(ref["exponent"])
    assert fit["ci_low"] < fit["exponent"] < fit["ci_high"]
    assert f"{view.n_shown:,} rows shown (of {len(ok):,}" in view.summary()
    assert f"b = {ref['exponent']:.3f}" in view.summary()


def test_view_recovers_a_known_exponent_and_fits_each_facet():
    rng = np.random.default_rng(0)
    n = 400
    flops = 10 ** rng.uniform(6, 10, n)
    block = np.where(np.arange(n) % 2 == 0, "basic", "bottleneck")
    b = np.where(block == "basic", 0.5, 0.9)
    df = pd.DataFrame({"platform": "p", "status": "ok", "flops": flops, "block": block,
                       "precision": "fp32", "batch": 1, "resolution": 64,
                       "latency_ms": 1e-3 * flops ** b * np.exp(rng.normal(0, 0.02, n))})
    view = explore.scaling_view(df, explore.Selection(target="latency_ms", facet="block"))
    per = view.fits.set_index("group")
    assert per.loc["basic", "exponent"] == pytest.approx(0.5, abs=0.01)
    assert per.loc["bottleneck", "exponent"] == pytest.approx(0.9, abs=0.01)
    only = explore.scaling_view(df, explore.Selection(target="latency_ms", blocks=("basic",)))
    assert only.overall_fit()["exponent"] == pytest.approx(0.5, abs=0.01)
    assert only.n_shown == n // 2


def test_linear_axes_keep_non_positive_values_and_log_axes_drop_them(ok):
    df = ok.copy()
    df.loc[df.index[:5], "latency_ms"] = 0.0
    s = explore.Selection(platform="synthetic_cpu", fit=False)
    assert explore.scaling_view(df, s).n_shown == explore.scaling_view(ok, s).n_shown - 5
    lin = explore.Selection(platform="synthetic_cpu", fit=False, logy=False)
    assert explore.scaling_view(df, lin).n_shown == explore.scaling_view(ok, lin).n_shown


def test_unknown_column_is_a_clear_error(ok):
    with pytest.raises(KeyError, match="nope"):
        explore.scaling_view(ok, explore.Selection(x="nope"))


def test_static_fallback_shows_count_figure_and_table(ok, monkeypatch):
    shown = []
    monkeypatch.setattr(explore, "_show", shown.append)
    monkeypatch.setenv(explore.STATIC_ENV, "1")
    assert explore.interactive_default() is False
    view = explore.scaling_explorer(ok, precisions=("fp16",))
    assert isinstance(view, explore.ScalingView)
    assert view.n_shown == _positive(ok[ok["precision"] == "fp16"], ["latency_ms", "flops"])
    kinds = [type(o).__name__ for o in shown]
    assert kinds == ["HTML", "Figure", "DataFrame"]
    assert f"{view.n_shown:,} rows shown" in shown[0].data
    assert explore.COUNT_CLASS in shown[0].data


def test_not_interactive_outside_a_kernel(monkeypatch):
    monkeypatch.delenv(explore.STATIC_ENV, raising=False)
    assert explore.interactive_default() is False  # pytest is no Jupyter kernel


def test_widget_explorer_updates_count_and_figure_on_change(ok, monkeypatch):
    pytest.importorskip("ipywidgets")
    monkeypatch.setattr(explore, "_show", lambda obj: None)
    ex = explore.scaling_explorer(ok, interactive=True, precisions=("fp32",))
    assert isinstance(ex, explore.ScalingExplorer)
    n32 = ex.view.n_shown
    assert f"{n32:,} rows shown" in ex.count.value
    ex.filters["precision"].value = ("fp16", "fp32")
    assert ex.view.n_shown == _positive(ok, ["latency_ms", "flops"]) > n32
    assert f"{ex.view.n_shown:,} rows shown" in ex.count.value
    ex.target.value = "peak_mem_mib"
    assert ex.view.selection.target == "peak_mem_mib"
    assert "peak memory ~ FLOPs per batch^b" in ex.count.value
    lo, hi = ex.batch.options[1], ex.batch.options[-2]
    ex.batch.value = (lo, hi)
    assert ex.view.rows["batch"].between(lo, hi).all()
    assert ex.view.rows["batch"].nunique() == len(ex.batch.options) - 2


def test_widget_explorer_shows_none_choices_by_label(ok, monkeypatch):
    # ipywidgets shows a Dropdown built with value=None as an empty box
    pytest.importorskip("ipywidgets")
    monkeypatch.setattr(explore, "_show", lambda obj: None)
    ex = explore.scaling_explorer(ok, interactive=True, hue=None)
    assert (ex.facet.label, ex.facet.value) == ("none", None)
    assert (ex.hue.label, ex.hue.value) == ("none", None)
    assert ex.selection().facet is None and ex.selection().hue is None
    ex.facet.value = "block"
    assert ex.view.selection.facet == "block"


# ------------------------------------------------------------------------ network cost
TINY = PRESETS["test"]


@pytest.fixture(scope="module")
def cpu_model():
    from carb_lib.ensemble import CARBRegressor

    df = make_carb_synthetic(600, seed=5, energy=False, telemetry=False, platform="synthetic_cpu")
    df = df[df["status"] == "ok"]
    train = df[df["resolution"] <= 96]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return CARBRegressor(**TINY).fit(train), train, df


def test_cost_report_matches_predict_interval_and_flags_extrapolation(cpu_model):
    model, train, measured = cpu_model
    row = train.iloc[0]
    cfg = explore.make_config(row["block"], row["depth"], row["width"],
                              bool(row["early_downsample"]), row["resolution"], row["batch"],
                              row["precision"])
    rep = explore.cost_report(model, cfg, train, measured, coverage=0.8, k=3)
    iv = model.predict_interval(cfg, coverage=0.8)
    pred = rep.prediction.set_index("target")
    assert list(pred.index) == model.targets_ == ["peak_mem_mib", "latency_ms"]
    for t in model.targets_:
        assert pred.loc[t, "predicted"] == pytest.approx(iv[t].iloc[0])
        assert pred.loc[t, "lo"] <= pred.loc[t, "predicted"] <= pred.loc[t, "hi"]
    assert "energy_j" in rep.not_predicted
    assert rep.nearest["distance"].iloc[0] == 0.0  # the config itself was measured
    assert rep.nearest["distance"].is_monotonic_increasing and len(rep.nearest) == 3
    assert not rep.is_extrapolation and "inside" in rep.summary()

    big = explore.make_config(row["block"], row["depth"], row["width"],
                              bool(row["early_downsample"]), 224, row["batch"], row["precision"])
    rep = explore.cost_report(model, big, train, measured)
    outside = set(rep.ranges.loc[rep.ranges["outside"], "column"])
    assert "resolution" in outside and "depth" not in outside
    assert rep.is_extrapolation and "EXTRAPOLATION" in rep.summary()
    assert rep.nearest["distance"].iloc[0] > 0


def test_invalid_config_names_the_valid_values():
    with pytest.raises(ValueError, match="depth"):
        explore.make_config("basic", 50)


def test_cost_widgets_update_the_report(cpu_model, monkeypatch):
    pytest.importorskip("ipywidgets")
    monkeypatch.setattr(explore, "_show", lambda obj: None)
    model, train, measured = cpu_model
    ex = explore.network_cost(model, train, measured, interactive=True, resolution=64)
    assert isinstance(ex, explore.CostExplorer)
    assert not ex.report.is_extrapolation or "resolution" not in set(
        ex.report.ranges.loc[ex.report.ranges["outside"], "column"])
    ex.resolution.value = 224
    assert "resolution" in set(ex.report.ranges.loc[ex.report.ranges["outside"], "column"])
    assert int(ex.report.config["resolution"].iloc[0]) == 224
    ex.block.value = "bottleneck"  # depth options follow the block
    assert ex.depth.value in (50, 101, 152, 200)
    assert ex.report.config["block"].iloc[0] == "bottleneck"


def test_static_cost_report(cpu_model, monkeypatch):
    monkeypatch.setattr(explore, "_show", lambda obj: None)
    monkeypatch.setattr(explore, "_display_report", lambda rep: None)
    model, train, measured = cpu_model
    rep = explore.network_cost(model, train, interactive=False, block="basic", depth=18)
    assert isinstance(rep, explore.CostReport)
    assert rep.config["depth"].iloc[0] == 18


def test_module_cost_reports_a_user_network(cpu_model, monkeypatch):
    """``module_cost``: a user network's predicted cost with intervals (those of
    ``predict_interval``), its depthwise convs outside the ResNet training rows' range
    (computed for rows that lack the column), nearest rows by FLOPs, parameters, resolution
    and batch; a factory that does not exist is one line."""
    from pathlib import Path

    from carb_lib.families import ConfigError

    monkeypatch.setattr(explore, "_display_report", lambda rep: None)
    model, train, measured = cpu_model
    nets = Path(__file__).parent / "fixtures" / "user_module" / "nets.py"
    assert "n_dwconv" not in train.columns
    rep = explore.module_cost(model, train, f"{nets}:tiny", "3,64,64", batch=8, coverage=0.8,
                              k=4)
    cfg = explore.module_config(f"{nets}:tiny", "3,64,64", 8)
    iv = model.predict_interval(cfg, coverage=0.8)
    pred = rep.prediction.set_index("target")
    for t in model.targets_:
        assert pred.loc[t, "predicted"] == pytest.approx(iv[t].iloc[0])
        assert pred.loc[t, "lo"] <= pred.loc[t, "predicted"] <= pred.loc[t, "hi"]
    ranges = rep.ranges.set_index("column")
    assert ranges.loc["n_dwconv", "value"] == 2 and ranges.loc["n_dwconv", "train_max"] == 0
    assert rep.is_extrapolation and "depthwise convolutions" in rep.summary()
    assert not ranges.loc["resolution", "outside"] and not ranges.loc["batch", "outside"]
    assert len(rep.nearest) == 4 and rep.nearest["distance"].is_monotonic_increasing
    with pytest.raises(ConfigError, match="no_such_pkg"):
        explore.module_config("no_such_pkg.nets:f", "3,32,32")
