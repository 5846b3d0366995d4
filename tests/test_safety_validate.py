"""One validator for every entry point: costs of ok rows, duplicated rows, one platform per
model, out-of-range configs, given config ids, outlier rows.

SYNTHETIC data and tiny models; every command runs in-process through typer's CliRunner.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from carb_synthetic import make_carb_synthetic
from cli_helpers import one_line_error
from typer.testing import CliRunner

from carb_lib.app.cli import app
from carb_lib.ensemble import PRESETS, CARBRegressor, save_model
from carb_lib.ensemble.conformal import calibration_mask
from carb_lib.ensemble.inputs import OutlierWarning

runner = CliRunner()
CONFIG = ["family", "block", "depth", "width", "early_downsample", "resolution", "batch",
          "precision", "num_classes"]


@pytest.fixture(scope="module")
def data():
    return make_carb_synthetic(300, seed=2, energy=False, telemetry=False,
                               platform="synthetic_cpu")  # fmt: skip


def _ok(data):
    return data[data["status"] == "ok"].reset_index(drop=True)


def _fit(df, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return CARBRegressor(**{**PRESETS["test"], **kw}).fit(df)


# --------------------------------------------------------------------------- costs
@pytest.mark.parametrize("value, fragment", [(np.nan, "is missing (NaN) in an ok row"),
                                             (np.inf, "is not finite"), (-np.inf, "is not finite")])
def test_fit_refuses_a_nan_or_infinite_cost_on_an_ok_row(tmp_path, data, value, fragment):
    df = _ok(data)
    df.loc[7, "latency_ms"] = value
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    one_line_error(runner.invoke(app, ["fit", "--data", str(path), "--out",
                                       str(tmp_path / "m.joblib"), "--quick"]),
                   str(path), "row 7", "'latency_ms'", fragment)  # fmt: skip
    assert not (tmp_path / "m.joblib").exists()


def test_a_cost_a_platform_never_measures_may_be_missing(tmp_path, data):
    from carb_lib.dataset.schema import validate_table

    df = _ok(data)
    assert df["energy_j"].isna().all()  # a CPU: no energy counter
    validate_table(df, complete=False)
    df.loc[3, "status"] = "error"
    df.loc[3, "latency_ms"] = np.nan  # a failed row may miss its costs
    validate_table(df, complete=False)


# ---------------------------------------------------------------------- duplicates
def test_fit_refuses_duplicated_rows_of_one_campaign(tmp_path, data):
    df = _ok(data)
    dup = pd.concat([df, df.iloc[[4, 9]]], ignore_index=True)
    path = tmp_path / "d.parquet"
    dup.to_parquet(path)
    one_line_error(runner.invoke(app, ["fit", "--data", str(path), "--out",
                                       str(tmp_path / "m.joblib"), "--quick"]),
                   str(path), "duplicated", "also row 4")  # fmt: skip


def test_library_fit_refuses_duplicated_rows(data):
    df = _ok(data)
    with pytest.raises(ValueError, match=r"training data: rows 4, \d+: config_id .* repeated.*counts twice"):
        _fit(pd.concat([df, df.iloc[[4]]], ignore_index=True))


def test_repeats_across_campaigns_are_allowed_and_calibrated_together(data):
    df = _ok(data)
    twice = pd.concat([df.assign(campaign="a"), df.assign(campaign="b")], ignore_index=True)
    m = _fit(twice)
    cal_ids = set(twice.loc[m.calibration_index_, "config_id"])
    fit_ids = set(twice.drop(index=m.calibration_index_)["config_id"])
    assert cal_ids and not cal_ids & fit_ids  # never one config on both sides


def test_calibration_mask_draws_whole_groups_and_is_unchanged_without_repeats():
    regime = np.arange(200) % 3 == 0
    plain = calibration_mask(regime, 0.2, 0)
    np.testing.assert_array_equal(plain, calibration_mask(regime, 0.2, 0, np.arange(200)))
    groups = np.repeat(np.arange(100), 2)
    cal = calibration_mask(np.repeat(np.arange(100) % 3 == 0, 2), 0.2, 0, groups)
    assert pd.Series(cal).groupby(groups).nunique().max() == 1 and cal.sum() == 40


# ------------------------------------------------------------------------ platforms
def test_library_fit_refuses_two_platforms_unless_asked(data):
    df = _ok(data)
    two = df.assign(platform=np.where(np.arange(len(df)) % 2, "a", "b"))
    with pytest.raises(ValueError, match=r"several platforms \['a', 'b'\]"):
        _fit(two)
    assert _fit(two, mixed_platforms=True).platform_ == "a+b"


# -------------------------------------------------------------------------- outliers
def test_a_unit_slip_is_a_warning_naming_the_rows():
    df = make_carb_synthetic(400, seed=5, energy=False, telemetry=False)
    df = df[df["status"] == "ok"].reset_index(drop=True)
    slipped = [11, 57, 123, 200, 301]
    df.loc[slipped, "latency_ms"] *= 1e6
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        CARBRegressor(**PRESETS["test"]).fit(df)
    out = [w for w in caught if issubclass(w.category, OutlierWarning)]
    assert len(out) == 1, [str(w.message) for w in caught]
    text = str(out[0].message)
    assert text.startswith("5 training row(s) are more than 10x off")
    for r in slipped:
        assert f"{r} (latency_ms)" in text


def test_clean_data_gives_no_outlier_warning(data):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        CARBRegressor(**PRESETS["test"]).fit(_ok(data))
    assert not [w for w in caught if issubclass(w.category, OutlierWarning)]


# ------------------------------------------------------------------ config ranges
@pytest.mark.parametrize("column, value, fragment", [
    ("width", -1.0, "width=-1.0"), ("batch", 10**9, "batch=1000000000"),
    ("resolution", 0, "resolution=0")])
def test_transfer_queries_out_of_range_are_one_line(tmp_path, data, column, value, fragment):
    q = data[CONFIG].head(30).reset_index(drop=True)
    q.loc[23, column] = value
    path = tmp_path / "q.csv"
    q.to_csv(path, index=False)
    src = tmp_path / "s.csv"
    _ok(data).to_csv(src, index=False)
    res = runner.invoke(app, ["transfer", "--source", str(src), "--target-samples", str(src),
                              "--query", str(path), "--out", str(tmp_path / "o.csv")])
    one_line_error(res, f"--query {path}", "row 23", fragment)


def test_predict_refuses_a_config_id_that_is_not_its_configs(tmp_path, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model = save_model(_fit(_ok(data)), tmp_path / "m.joblib")
    c = data[[*CONFIG, "config_id"]].head(6).reset_index(drop=True)
    c.loc[4, "config_id"] = c.loc[0, "config_id"]
    c.to_csv(tmp_path / "c.csv", index=False)
    one_line_error(runner.invoke(app, ["predict", "--model", str(model), "--configs",
                                       str(tmp_path / "c.csv"), "--out", str(tmp_path / "p.csv")]),
                   "row 4", "does not match its config")  # fmt: skip


def test_screen_measured_missing_names_measured(tmp_path, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model = save_model(_fit(_ok(data)), tmp_path / "m.joblib")
    data[CONFIG].head(20).to_csv(tmp_path / "c.csv", index=False)
    res = runner.invoke(app, ["screen", "--model", str(model), "--candidates",
                              str(tmp_path / "c.csv"), "--k", "2", "--out",
                              str(tmp_path / "s.csv"), "--measured",
                              str(tmp_path / "missing.parquet")])  # fmt: skip
    assert res.exit_code == 1 and "--measured" in res.output and "--candidates" not in res.output
