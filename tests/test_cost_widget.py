"""The cost widget of notebook 03 (:func:`carb_lib.app.explore.network_cost`) as a student sees it, on
SYNTHETIC data: numbers to three significant digits, long times in minutes and seconds,
intervals no tighter than the training rows' measurement noise, nearest rows of the query's
precision first, and no warning in the cell (the browser test drives notebook 01's explorer).
Its controls and text, and those of the scaling explorer, are in words: no code name of the
vocabulary (:func:`carb_lib.core.vocab.code_names`); the shipped H200 rows predict energy."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

from carb_lib import evaluation as ev
from carb_lib.app import explore
from carb_lib.app.cost_platforms import PlatformModels, platform_files
from carb_lib.app.explore_format import (
    cost_text,
    interval_text,
    nearest_table,
    noise_floor,
    prediction_table,
    sig,
)
from carb_lib.core.vocab import code_names
from carb_lib.dataset.synthetic import make_synthetic_dataset
from carb_lib.ensemble import PRESETS


def test_rounding_and_long_times():
    assert sig(1183.1192) == "1,180" and sig(1183.1216) == "1,180"
    assert sig(8.0) == "8" and sig(226596) == "227,000" and sig(200.0) == "200" and sig(8.5) == "8.50" and sig(0.012345) == "0.0123"
    assert sig(float("nan")) == "-" and sig("fp16") == "fp16" and sig(3e-7) == "3.00e-07"
    assert cost_text(312839.336, "ms") == "5 min 13 s"
    assert cost_text(4321.0, "ms") == "4.32 s" and cost_text(12.345, "ms") == "12.3 ms"
    assert cost_text(1183.1192, "MiB") == "1,180 MiB"
    assert cost_text(7.5e6, "ms") == "2 h 5 min"


def test_no_interval_is_shown_as_certain():
    # narrower than the rounding: the prediction and its half-width, never "x to x"
    assert interval_text(1180.2, 1180.0, 1180.5, "MiB") == "1,180 MiB ± 0.03 %"
    assert interval_text(1180.0, 1180.0, 1180.0, "MiB") == "1,180 MiB ± under 0.01 %"
    assert interval_text(18.1, 13.2, 24.9, "ms") == "13.2 ms to 24.9 ms"
    # outside the training range none is given, however narrow the model's
    assert interval_text(1180.0, 1179.0, 1181.0, "MiB", extrapolated=True) == \
        "none outside the training range"


@pytest.fixture(scope="module")
def fitted():
    raw = make_synthetic_dataset(720, 3, platform="synthetic_gpu")
    data = ev.prepare_dataset(raw, "synthetic_gpu")
    train = data[pd.to_numeric(data["batch"]) <= 64]  # batch 256 lies outside: extrapolation
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ev.fit_quiet({**PRESETS["test"], "coverage": 0.9}, train)
    return model, train, data


def _numbers(text: str) -> list[str]:
    return re.findall(r"\d[\d,]*\.?\d*", text)


def test_extrapolated_fp16_query_is_rounded_and_shows_no_warning(fitted, monkeypatch, capsys):
    pytest.importorskip("ipywidgets")
    model, train, data = fitted
    monkeypatch.setattr(explore, "_show", lambda obj: None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ex = explore.network_cost(model, train, measured=data, coverage=0.9, interactive=True)
        ex.precision.value = "fp16"
        ex.batch.value = 256
    assert not caught, [str(w.message) for w in caught]
    rep = ex.report
    assert rep.is_extrapolation and "batch" in set(rep.ranges.loc[rep.ranges["outside"],
                                                                   "column"])
    # nearest measured rows: the query's precision first
    assert (rep.nearest["precision"].astype(str) == "fp16").all()
    # intervals never tighter than the training rows' noise (latency CV of fp16 rows)
    floor = noise_floor(train, "fp16")
    assert floor["latency_ms"] > 0
    lat = rep.prediction.set_index("target").loc["latency_ms"]
    assert lat["hi"] - lat["predicted"] >= lat["predicted"] * floor["latency_ms"] * (1 - 1e-9)
    assert lat["predicted"] - lat["lo"] >= lat["predicted"] * floor["latency_ms"] * (1 - 1e-9)
    # every number shown has at most three significant digits
    table = prediction_table(rep.prediction)
    for cell in table.drop(columns="cost").to_numpy().ravel():
        for num in _numbers(str(cell)):
            digits = num.replace(",", "").replace(".", "").lstrip("0")
            assert len(digits.rstrip("0") if "." not in num else digits) <= 3, (cell, num)
    out = capsys.readouterr()
    assert "Warning" not in out.out + out.err
    shown = " ".join(map(str, nearest_table(rep.nearest).to_numpy().ravel()))
    assert "e+" not in shown and "NaN" not in shown and "nan" not in shown


def test_nearest_rows_same_precision_first():
    measured = pd.DataFrame({"block": "basic", "depth": [18, 18, 34], "width": 1.0,
                             "early_downsample": True, "resolution": 64,
                             "batch": [256, 128, 256], "precision": ["fp32", "fp16", "fp16"]})
    cfg = measured.iloc[[0]].assign(precision="fp16")
    near = explore.nearest_measured(cfg, measured, k=3)
    assert list(near["precision"]) == ["fp16", "fp16", "fp32"]
    assert near["distance"].iloc[2] == pytest.approx(1.0)  # exact config, other precision


def test_explorer_opens_on_main_platform_with_measured_targets_only():
    ok = pd.DataFrame({"platform": ["cpu_epyc_2c"] * 3 + [explore.MAIN_PLATFORM] * 2,
                       "latency_ms": 1.0, "peak_mem_mib": 2.0, "energy_j": np.nan})
    assert explore.main_platform(ok) == explore.MAIN_PLATFORM
    assert explore.main_platform(ok[ok.platform == "cpu_epyc_2c"]) == "cpu_epyc_2c"
    other = ok.assign(platform=["b_gpu"] * 3 + ["a_cpu"] * 2)
    assert explore.main_platform(other) == "a_cpu"  # otherwise the first by name
    assert explore.measured_targets(ok) == ["latency_ms", "peak_mem_mib"]


# ------------------------------------------------------------------------ words and platforms
# a code name where words belong: a vocabulary name (latency_ms, flops, cpu_epyc_2c) or a raw
# Python value
RAW = re.compile(r"(?<![\w-])(" + "|".join(sorted(map(re.escape, code_names()), key=len,
                                                   reverse=True))
                 + r"|None|True|False|nan|NaN)(?![\w-])")


def _raw(text: str) -> list[str]:
    return sorted(set(RAW.findall(text)))


def _control_text(*controls) -> str:
    out = []
    for c in controls:
        out.append(str(getattr(c, "description", "")))
        labels = getattr(c, "_options_labels", None)
        if labels:
            out.extend(map(str, labels))
    return "\n".join(out)


def test_raw_name_check_catches_the_code_names_a_student_saw():
    seen = ("latency_ms ~ flops^b; group_by testable reason None; energy_j; cpu_epyc_2c; "
            "arith_intensity_flop_per_byte, param_bytes, early_downsample; seen: False, True")
    assert {"latency_ms", "flops", "group_by", "testable", "None", "energy_j", "cpu_epyc_2c",
            "arith_intensity_flop_per_byte", "param_bytes", "early_downsample", "False",
            "True"} <= set(_raw(seen))
    assert _raw("peak memory (MiB) ~ FLOPs per batch, batch size 8, AMD EPYC Zen 3") == []


H200 = platform_files().get("gpu_nvidia_h200")


@pytest.mark.skipif(H200 is None, reason="data/gpu_nvidia_h200/design/rows.parquet absent")
def test_widget_offers_platforms_in_words_and_the_h200_predicts_energy(fitted, monkeypatch):
    pytest.importorskip("ipywidgets")
    import time

    model, train, data = fitted
    cpu = ev.prepare_dataset(make_synthetic_dataset(360, 4, platform="synthetic_cpu",
                                                    with_energy=False, with_telemetry=False),
                             "synthetic_cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cpu_model = ev.fit_quiet({**PRESETS["test"], "coverage": 0.9}, cpu)
    monkeypatch.setattr(explore, "_show", lambda obj: None)
    monkeypatch.setattr(explore, "_display_report", lambda rep: None)
    models = PlatformModels(files={"gpu_nvidia_h200": H200}, coverage=0.9)
    ex = explore.network_cost(model, train, measured=data, coverage=0.9, interactive=True,
                              platforms=models)
    assert [v for _, v in ex.platform.options] == ["synthetic_gpu", "gpu_nvidia_h200"]
    assert "NVIDIA H200 GPU" in ex.platform.options[1][0]
    texts = [explore.report_text(ex.report)]
    ex.precision.value = "fp16"
    ex.batch.value = 256  # outside the training rows (batch <= 64): extrapolation
    extra = explore.report_text(ex.report)
    texts.append(extra)
    assert "EXTRAPOLATION" in extra and "batch size" in extra
    assert "none outside the training range" in extra  # no interval presented as certain
    ex.batch.value = 8
    ex.precision.value = "fp32"
    t0 = time.monotonic()
    ex.platform.value = "gpu_nvidia_h200"  # fitted now, on first choice
    assert time.monotonic() - t0 < 60
    rep = ex.report
    assert rep.platform == "gpu_nvidia_h200" and not rep.is_extrapolation
    pred = rep.prediction.set_index("target")
    assert "energy_j" in pred.index and "energy_j" not in rep.not_predicted
    e = pred.loc["energy_j"]
    assert np.isfinite([e["predicted"], e["lo"], e["hi"]]).all()
    assert 0 < e["lo"] < e["predicted"] < e["hi"]
    gpu = explore.report_text(rep)
    texts.append(gpu)
    assert "Predicted for NVIDIA H200 GPU (protocol: one GPU" in gpu
    assert re.search(r"energy per batch +[\d.]+ J +[\d.]+ J to [\d.]+ J", gpu), gpu
    assert models.get("gpu_nvidia_h200") is models.get("gpu_nvidia_h200")  # fitted once
    ex.platform.value = "synthetic_gpu"  # back: the first model, not refitted
    assert ex.model is model
    # the static report asks a platform too; a bad choice is one line
    static = explore.network_cost(model, train, coverage=0.9, interactive=False,
                                  platforms=models, platform="gpu_nvidia_h200")
    assert static.platform == "gpu_nvidia_h200" and "energy_j" in set(static.prediction.target)
    for bad in (dict(platforms="all"), dict(platforms=models, platform="cpu_nowhere")):
        with pytest.raises(ValueError) as err:
            explore.network_cost(model, train, interactive=False, **bad)
        assert "\n" not in str(err.value)

    # a platform without energy: said plainly, no sysfs path
    cex = explore.network_cost(cpu_model, cpu, coverage=0.9, interactive=True)
    cpu_text = explore.report_text(cex.report)
    texts.append(cpu_text)
    assert "energy per batch: not measured on this platform (no energy counter)" in cpu_text
    assert "powercap" not in cpu_text
    # every interval shown has width: never "x to x"
    for text in texts:
        for a, b in re.findall(r"([\d.,]+ \w+) to ([\d.,]+ \w+)", text):
            assert a != b, text

    controls = _control_text(ex.platform, ex.block, ex.depth, ex.width, ex.early,
                             ex.resolution, ex.batch, ex.precision)
    assert "early downsampling" in controls and "batch size" in controls
    bad = _raw(controls + "\n" + "\n".join(texts))
    assert not bad, bad


def test_scaling_explorer_controls_and_text_in_words(fitted, monkeypatch):
    pytest.importorskip("ipywidgets")
    _, _, data = fitted
    monkeypatch.setattr(explore, "_show", lambda obj: None)
    ok = data[data["status"] == "ok"]
    ex = explore.scaling_explorer(ok, interactive=True, facet="precision")
    controls = _control_text(ex.platform, ex.target, ex.x, ex.hue, ex.facet,
                             *ex.filters.values(), ex.batch)
    assert "peak memory (MiB)" in controls and "arithmetic intensity (FLOP/B)" in controls
    table = explore._fit_columns(ex.view.fits)
    text = ex.count.value + "\n" + table.to_string(index=False) + "\n" + " ".join(table.columns)
    assert "latency per batch ~ FLOPs per batch^b" in text
    for cell in table["exponent b"]:  # three significant digits, not six decimals
        assert cell == "-" or len(cell.replace(".", "").replace("-", "").lstrip("0")) <= 3
    # a target the platform did not measure: said in words, not the counter's sysfs path
    cpu = make_synthetic_dataset(240, 2, platform="synthetic_cpu", with_energy=False,
                                 with_telemetry=False)
    both = pd.concat([ok, cpu[cpu["status"] == "ok"]], ignore_index=True)
    ex2 = explore.scaling_explorer(both, interactive=True, platform="synthetic_cpu",
                                   target="energy_j")
    assert "no power law: energy not measured on this platform" in ex2.count.value
    text += "\n" + ex2.count.value + "\n" + explore._fit_columns(ex2.view.fits).to_string()
    bad = _raw(controls + "\n" + text)
    assert not bad, bad
