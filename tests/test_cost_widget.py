"""The cost widget of notebook 03 (:func:`carb_lib.app.explore.network_cost`) as a student sees it, on
SYNTHETIC data: numbers to three significant digits, long times in minutes and seconds,
intervals no tighter than the training rows' measurement noise, nearest rows of the query's
precision first, and no warning in the cell (the browser test drives notebook 01's explorer)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

from carb_lib import evaluation as ev
from carb_lib.app import explore
from carb_lib.app.explore_format import (
    cost_text,
    nearest_table,
    noise_floor,
    prediction_table,
    sig,
)
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
    for cell in table.drop(columns="target").to_numpy().ravel():
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
