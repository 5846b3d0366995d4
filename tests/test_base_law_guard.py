"""CARB keeps its base law alone for a target whose learners are worse than it out of fold
(:func:`carb_lib.ensemble.fitting.fit_target`, ``base_law_only``): the H200 ResNet rows (43)
switch, a CPU's hundreds of rows do not."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from carb_lib.ensemble import PRESETS, CARBRegressor
from carb_lib.evaluation import prepare_dataset

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "data" / "gpu_nvidia_h200" / "design" / "rows.parquet"
ZEN3 = ROOT / "data" / "cpu_epyc_zen3_2c" / "design" / "rows.parquet"


def _fit(df, **kw):
    params = {**PRESETS["test"], "targets": ("latency_ms",), **kw}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return CARBRegressor(**params).fit(df)


@pytest.mark.skipif(not H200.is_file(), reason="the shipped H200 rows are not in this checkout")
def test_few_gpu_rows_keep_the_base_law_alone_and_predict_exactly_it():
    df = prepare_dataset(pd.read_parquet(H200))
    model = _fit(df)
    m = model.oof_metrics_.loc["latency_ms"]
    assert bool(m["base_law_only"]) and m["rmse_final"] == pytest.approx(m["rmse_base"])
    assert model.correction_floor_["latency_ms"] == np.inf
    base = _fit(df, learners=(), regime_shrink=0.0)  # the base law, no learner, no corrector
    pd.testing.assert_series_equal(model.predict(df)["latency_ms"], base.predict(df)["latency_ms"])


@pytest.mark.skipif(not ZEN3.is_file(), reason="the shipped Zen 3 rows are not in this checkout")
def test_hundreds_of_cpu_rows_keep_their_learners():
    df = prepare_dataset(pd.read_parquet(ZEN3)).sample(300, random_state=0)
    model = _fit(df)
    m = model.oof_metrics_.loc["latency_ms"]
    assert not bool(m["base_law_only"]) and m["rmse_final"] < m["rmse_base"]
    assert model.correction_floor_["latency_ms"] == 0
