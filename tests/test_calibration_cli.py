"""carb predict / screen --calibrate, with the timing stubbed (SYNTHETIC data, a tiny model)."""

from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest
from carb_synthetic import make_carb_synthetic
from typer.testing import CliRunner

from carb_lib.app.cli import app
from carb_lib.ensemble import PRESETS, CARBRegressor, load_model, save_model
from carb_lib.transfer import calibration as C

runner = CliRunner()


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    data = make_carb_synthetic(240, seed=2, energy=False, telemetry=False,
                               platform="synthetic_cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        m = CARBRegressor(**PRESETS["test"]).fit(data)
    path = save_model(m, tmp_path_factory.mktemp("model") / "m.joblib")
    return path, data


def _stub_timing(monkeypatch, model, ratios):
    """time_configs returns the model's own predictions times ``ratios``."""
    def timed(configs, **kw):
        p = model.predict(configs)["latency_ms"].to_numpy()
        return pd.DataFrame({"config_id": configs["config_id"], "status": "ok",
                             "latency_ms": p * ratios[: len(p)]})
    monkeypatch.setattr(C, "time_configs", timed)


def test_predict_calibrate_applies_and_records(tmp_path, model_file, monkeypatch):
    path, data = model_file
    model = load_model(path)
    cfg = tmp_path / "c.csv"
    data[["family", "block", "depth", "width", "early_downsample", "resolution", "batch",
          "precision", "num_classes"]].head(5).to_csv(cfg, index=False)
    args = ["predict", "--model", str(path), "--configs", str(cfg)]
    assert runner.invoke(app, [*args, "--out", str(tmp_path / "raw.csv")]).exit_code == 0
    _stub_timing(monkeypatch, model, [1.2, 1.22, 1.18, 1.21, 1.19])
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "cal.csv"), "--calibrate"])
    assert res.exit_code == 0, res.output
    assert "host factor 1.200" in res.output and "applied" in res.output
    raw, cal = pd.read_csv(tmp_path / "raw.csv"), pd.read_csv(tmp_path / "cal.csv")
    assert (cal["latency_ms_pred"] / raw["latency_ms_pred"]).round(6).eq(1.2).all()
    assert cal["peak_mem_mib_pred"].equals(raw["peak_mem_mib_pred"])
    assert cal["host_calibration_applied"].all() and (cal["host_factor"] == 1.2).all()
    # a spread larger than the correction: said, and the predictions left as they are
    _stub_timing(monkeypatch, model, [0.7, 1.5, 1.05, 0.9, 1.4])
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "noisy.csv"), "--calibrate"])
    assert res.exit_code == 0 and "NOT applied" in res.output
    noisy = pd.read_csv(tmp_path / "noisy.csv")
    assert noisy["latency_ms_pred"].equals(raw["latency_ms_pred"])
    assert not noisy["host_calibration_applied"].any()


def test_screen_calibrate_records_the_factor(tmp_path, model_file, monkeypatch):
    path, data = model_file
    _stub_timing(monkeypatch, load_model(path), [1.3] * 5)
    cands = tmp_path / "cands.csv"
    data[["family", "block", "depth", "width", "early_downsample", "resolution", "batch",
          "precision", "num_classes"]].head(20).to_csv(cands, index=False)
    out = tmp_path / "short.csv"
    res = runner.invoke(app, ["screen", "--model", str(path), "--candidates", str(cands),
                              "--out", str(out), "--k", "2", "--calibrate"])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "short_summary.json").read_text())
    assert summary["host_calibration"]["factor"] == pytest.approx(1.3)
    assert summary["host_calibration"]["applied"] is True
