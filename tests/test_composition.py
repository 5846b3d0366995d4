"""The composition law: fitted on design networks timed on this host, kept beside the call
cache, read back under the same protocol only, applied by a screen and by ``carb time``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from carb_lib.kernels import composition as CO
from carb_lib.kernels.replay import CallCache


def _tiny_designs(per_family: int = 10, seed: int = 0) -> pd.DataFrame:
    """Five small ResNets of the paper grid (the test's stand-in for the design sample)."""
    from carb_lib.families.resnet import paper_grid

    g = paper_grid()
    g = g[(g["resolution"] == 32) & g["precision"].eq("fp32") & g["batch"].eq(1)
          & g["depth"].isin([10, 14, 18]) & (g["width"] <= 0.5)]
    return g.drop_duplicates(["depth", "width", "block", "early_downsample"]).head(5)


def _cache(folder) -> CallCache:
    return CallCache(folder, window_s=0.001, n_windows=1, keep_heap=False,
                     scale_by_anchors=False)


def test_the_law_is_fitted_by_nonnegative_least_squares_on_relative_errors():
    rng = np.random.default_rng(0)
    rows = pd.DataFrame({"sum_ms": rng.uniform(1, 50, 40), "n_calls": rng.integers(20, 400, 40),
                         "weight_mib": rng.uniform(1, 100, 40), "call_mib": rng.uniform(5, 500, 40)})
    rows["measured_ms"] = 1.1 * rows["sum_ms"] + 0.006 * rows["n_calls"] + 0.02 * rows["call_mib"]
    law = CO.fit_law(rows)
    assert law.coef == pytest.approx((1.1, 0.006, 0.0, 0.02), abs=1e-9)
    assert law.predict(rows) == pytest.approx(rows["measured_ms"].to_numpy())
    assert "6.0 µs x calls" in law.describe()
    with pytest.raises(ValueError, match="at least 4 networks"):
        CO.fit_law(rows.head(3))
    with pytest.raises(ValueError, match="positive"):
        CO.fit_law(rows.assign(measured_ms=0.0))
    with pytest.raises(ValueError, match="needs column"):
        law.predict(rows.drop(columns="call_mib"))


def test_calibrate_times_design_networks_keeps_the_law_and_reads_it_back(tmp_path, monkeypatch):
    monkeypatch.setattr(CO, "design_networks", _tiny_designs)
    cache = _cache(tmp_path)
    assert CO.load_law(cache) is None
    law, rows = CO.calibrate(cache, batches=(1, 2), window_s=0.005)
    assert len(rows) == 10 and (rows["measured_ms"] > 0).all() and (rows["n_untimed"] == 0).all()
    assert (rows["sum_ms"] > 0).all() and (rows["weight_mib"] > 0).all()
    assert law.n_networks == 10 and all(c >= 0 for c in law.coef)
    assert law.protocol["cpu_id"] == cache.protocol["cpu_id"]
    # kept beside the cache, rows too; a new cache object of the protocol reads it back
    path = CO.law_path(cache)
    assert path.parent == cache.path.parent and path.with_suffix(".parquet").is_file()
    again = CO.load_law(_cache(tmp_path))
    assert again.coef == pytest.approx(law.coef) and again.n_networks == 10
    # a law of another protocol, or no law at all, is refused in one line
    saved = json.loads(path.read_text())
    path.write_text(json.dumps({**saved, "protocol": {**saved["protocol"], "threads": 4}}))
    with pytest.raises(ValueError, match="another protocol"):
        CO.load_law(cache)
    path.write_text("not json")
    with pytest.raises(ValueError, match="not a composition law"):
        CO.load_law(cache)
    with pytest.raises(ValueError, match="per_family >= 1"):
        CO.calibrate(cache, per_family=0)


def test_carb_time_fits_the_law_then_prints_it_beside_the_sum(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from carb_lib.app.cli import app
    from carb_lib.families.resnet import paper_grid

    monkeypatch.setattr(CO, "design_networks", _tiny_designs)
    real = CO.calibrate  # short windows, one batch: the test's time
    monkeypatch.setattr(CO, "calibrate", lambda cache, **kw: real(
        cache, **{**kw, "window_s": 0.005, "batches": (1,)}))
    cands = tmp_path / "cands.csv"
    paper_grid().query("resolution == 32 and batch == 1 and depth == 10").head(3).to_csv(
        cands, index=False)
    args = ["time", "--candidates", str(cands), "--window-s", "0.001", "--n-windows", "1",
            "--default-heap", "--cache-dir", str(tmp_path / "cache")]
    plain = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "plain.csv")])
    assert plain.exit_code == 0, plain.output
    assert "no composition law fitted" in plain.output
    assert "law_ms" not in pd.read_csv(tmp_path / "plain.csv").columns
    fit = CliRunner().invoke(app, [*args, "--fit-law", "--out", str(tmp_path / "law.csv")])
    assert fit.exit_code == 0, fit.output
    assert "composition law (law_ms)" in fit.output and "design networks" in fit.output
    t = pd.read_csv(tmp_path / "law.csv")
    assert t["law_ms"].notna().all() and (t["law_ms"] > 0).all()
    # the law kept is used by the next run, unless --no-law
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and "composition law (law_ms)" in again.output
    off = CliRunner().invoke(app, [*args, "--no-law"])
    assert off.exit_code == 0 and "composition law" not in off.output
    # carb zoo time reads the same law beside the same cache
    zoo = CliRunner().invoke(app, ["zoo", "time", "--networks", "squeezenet1_1",
                                   "--resolutions", "64", *args[3:],
                                   "--out", str(tmp_path / "zoo.csv")])
    assert zoo.exit_code == 0, zoo.output
    assert "law: network ms = " in zoo.output and " law " in zoo.output
    z = pd.read_csv(tmp_path / "zoo.csv")
    assert (z["law_ms"] > 0).all() and (z["weight_mib"] > 0).all()


def test_a_network_time_carries_the_laws_terms(tmp_path):
    import torch

    from carb_lib.kernels.replay import network_time

    with torch.device("meta"):
        net = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3), torch.nn.ReLU(),
                                  torch.nn.Flatten(), torch.nn.Linear(16 * 30 * 30, 10)).eval()
    t = network_time(net, (2, 3, 32, 32), "fp16", cache=_cache(tmp_path), budget_s=30)
    weights, moved = CO.traffic_mib(net, (2, 3, 32, 32), "fp16")
    assert t.weight_mib == pytest.approx((16 * 3 * 9 + 16 + 16 * 900 * 10 + 10) * 2 / 2**20)
    assert (t.call_mib, t.weight_mib) == (pytest.approx(moved), pytest.approx(weights))
    assert t.n_untimed == 0
    law = CO.CompositionLaw((1.0, 0.01, 0.1, 0.2), 40)
    assert t.law_ms(law) == pytest.approx(t.predicted_ms + 0.01 * t.n_calls
                                          + 0.1 * t.weight_mib + 0.2 * t.call_mib)


def test_the_field_block_shows_each_method_per_batch_and_the_law(tmp_path):
    from carb_lib.app.readme_zoo import replay_field_block

    assert "no field check" in replay_field_block(tmp_path)
    (tmp_path / "benchmarks").mkdir()
    rows = []
    for method, ape in (("sum of calls", 20.0), ("composition law", 8.0)):
        for batch, rho in (("1", 0.99), ("16", 0.97), ("all", np.nan)):
            rows.append({"method": method, "batch": batch, "n": 30 if batch == "all" else 15,
                         "median_ape_pct": ape, "within_10pct": 0.5, "spearman": rho,
                         "median_pred_over_measured": 0.9, "platform": "cpu_x"})
    pd.DataFrame(rows).to_csv(tmp_path / "benchmarks" / "replay_field_cpu_x_summary.csv",
                              index=False)
    pd.DataFrame({"law": ["network ms = 1.000 x sum of calls"]}).to_csv(
        tmp_path / "benchmarks" / "replay_field_cpu_x.csv", index=False)
    block = replay_field_block(tmp_path)
    assert ("| `cpu_x` | 30 | composition law | 8.0 % (50.0 %) | 8.0 % (50.0 %) | 8.0 % (50.0 %) "
            "| 0.990, 0.970 | 0.900 |") in block
    assert "`cpu_x`: network ms = 1.000 x sum of calls." in block
    assert "results/benchmarks/replay_field_cpu_x_summary.csv" in block
