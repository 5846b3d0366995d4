"""A model knows how its rows were timed, and every timing compared with them repeats it:
``carb fit`` records the rows' protocol and its transfer model, calibration spans the model's
size range under that protocol, ``carb check`` and ``screen --validate`` time under it, and
``carb profile`` / ``carb audit`` / ``carb kernels`` pass threads and heap explicitly.

Rows: a seeded subsample of the shipped Zen 3 campaign (ResNet) and of its new-family rows;
timings are stubbed (no test here measures anything), so every number asserted is the stub's."""

from __future__ import annotations

import json
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import one_line_error
from typer.testing import CliRunner

from carb_lib.app.cli import app
from carb_lib.measure import campaign_noise
from carb_lib.measure.protocol import (
    ASSUMED_PROTOCOL,
    Protocol,
    RowsProtocol,
    model_protocol,
    rows_protocol,
)
from carb_lib.transfer import calibration as C
from carb_lib.transfer.check import check_predictions, pick_within_budget

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("rows")
    src = pd.read_parquet(ROOT / "data" / "cpu_epyc_zen3_2c" / "design" / "rows.parquet")
    src = src[src["status"].eq("ok")].sample(n=300, random_state=3)
    new = pd.read_parquet(ROOT / "data" / "cpu_epyc_zen3_2c" / "design" / "rows_new_families.parquet")
    new = new[new["status"].eq("ok")]
    new = pd.concat([g.sample(n=4, random_state=3) for _, g in new.groupby("family")])
    src.to_parquet(d / "resnet.parquet")
    new.to_parquet(d / "new.parquet")
    model = d / "m.skops"
    res = runner.invoke(app, ["fit", "--data", str(d / "resnet.parquet"), "--out", str(model),
                              "--preset", "test", "--latency-law", "roofline"])
    assert res.exit_code == 0, res.output
    return d, model, src, new


def test_rows_protocol_reads_threads_heap_and_device_and_refuses_a_mix():
    rows = pd.DataFrame({"platform": ["cpu_x"] * 3, "threads": [1, 1, 1],
                         "torch_version": ["2.13.0+cpu"] * 3})
    rp = rows_protocol(rows)
    assert (rp.device, rp.threads, rp.heap_kept) == ("cpu", 1, False)  # no heap_kept: default
    assert rp.describe() == "1 thread, default heap (cpu)"
    assert rows_protocol(rows.assign(heap_kept=True)).describe() == "1 thread, heap kept (cpu)"
    assert rows_protocol(pd.DataFrame({"platform": ["gpu_h"]})).device == "cuda"
    with pytest.raises(ValueError, match="column 'threads' holds \\[1, 2\\]"):
        rows_protocol(rows.assign(threads=[1, 2, 1]))
    with pytest.raises(ValueError, match="'heap_kept'"):
        rows_protocol(rows.assign(heap_kept=[True, False, True]))
    assert rp.protocol() == Protocol(threads=1, cpu_keep_heap=False)
    assert Protocol(threads=1).describe() == ("1 thread, heap kept, 3 windows of >= 2 "
                                              "inferences and >= 0.1 s")
    assert model_protocol(object()) is ASSUMED_PROTOCOL and not ASSUMED_PROTOCOL.recorded


def test_fit_records_the_protocol_and_the_cross_validated_error(files):
    d, model, src, _ = files
    meta = json.loads(Path(f"{model}.json").read_text())
    assert meta["protocol"]["threads"] == 1 and meta["protocol"]["heap_kept"] is False
    assert meta["protocol_text"] == "1 thread, default heap (cpu)"
    assert meta["transfer_model"]["feature_set"] == "shared"
    res = runner.invoke(app, ["fit", "--data", str(d / "resnet.parquet"), "--out",
                              str(d / "again.skops"), "--preset", "test", "--latency-law",
                              "roofline"])
    assert "protocol: the rows were timed with 1 thread, default heap (cpu)" in res.output
    assert "latency_ms: RMSE of log latency_ms" in res.output


def test_fit_refuses_rows_that_mix_thread_counts_in_one_line(files, tmp_path):
    d, _, src, _ = files
    mixed = src.copy()
    mixed.loc[mixed.index[5], "threads"] = 2
    mixed.to_parquet(tmp_path / "mixed.parquet")
    res = runner.invoke(app, ["fit", "--data", str(tmp_path / "mixed.parquet"), "--out",
                              str(tmp_path / "m.skops"), "--preset", "test"])
    one_line_error(res, "mixes timing protocols", "'threads'")
    assert not (tmp_path / "m.skops").exists()


def test_predict_routes_families_the_fit_did_not_hold_to_the_transfer_model(files, tmp_path):
    d, model, src, new = files
    from carb_lib.families import all_config_columns

    cols = ["family", *all_config_columns()]
    q = pd.concat([src.head(3), new], ignore_index=True)
    q[list(dict.fromkeys(c for c in cols if c in q.columns))].to_parquet(tmp_path / "q.parquet")
    res = runner.invoke(app, ["predict", "--model", str(model), "--configs",
                              str(tmp_path / "q.parquet"), "--out", str(tmp_path / "p.csv")])
    assert res.exit_code == 0, res.output
    assert f"3 row(s) by the fitted model (families ['resnet']), {len(new)} by its transfer" \
        in res.output
    p = pd.read_csv(tmp_path / "p.csv")
    assert p["predicted_by"].tolist() == ["fitted model"] * 3 + ["transfer model"] * len(new)
    assert (p["protocol"] == "1 thread, default heap (cpu)").all()
    assert (p["latency_ms_pred"] > 0).all()


def test_a_query_for_another_thread_count_is_one_line(files, tmp_path):
    d, model, src, _ = files
    q = src.head(2)[["family", "block", "depth", "width", "early_downsample", "resolution",
                     "batch", "precision", "num_classes"]].assign(threads=2)
    q.to_csv(tmp_path / "q.csv", index=False)
    res = runner.invoke(app, ["predict", "--model", str(model), "--configs",
                              str(tmp_path / "q.csv"), "--out", str(tmp_path / "p.csv")])
    one_line_error(res, "asks for 2 thread(s)", "1 thread, default heap")


def _stub_subprocess(monkeypatch, factor_by_id=None, factor=1.4, seen=None):
    """``measure_many_in_subprocess`` replaced: each config's stored latency (by config_id, from
    the rows given) times ``factor``; the device and protocol it was asked for recorded."""
    def fake(configs, device="cpu", protocol=None, platform=None, timeout_s=900.0):
        if seen is not None:
            seen.append((device, protocol, len(configs)))
        from carb_lib.families.space import add_config_ids

        ids = add_config_ids(pd.DataFrame(configs))["config_id"]
        return [{"config_id": i, "status": "ok", "peak_mem_mib": 1.0,
                 "latency_ms": factor_by_id[i] * factor} for i in ids]
    monkeypatch.setattr(campaign_noise, "measure_many_in_subprocess", fake)


def test_calibration_times_the_models_ladder_under_its_rows_protocol(files, monkeypatch):
    from carb_lib.ensemble import load_model

    d, model_path, src, _ = files
    m = load_model(model_path)
    ladder = m.reference_rows_
    assert ladder["latency_ms"].max() == pytest.approx(src["latency_ms"].max())
    configs = C.calibration_configs(m, budget_s=600)
    picked = ladder.set_index("config_id").loc[configs["config_id"], "latency_ms"]
    assert picked.max() == pytest.approx(src["latency_ms"].max())  # up to the largest row
    assert picked.min() < np.quantile(src["latency_ms"], 0.1)      # and from the small ones
    pred = dict(zip(configs["config_id"], m.predict(configs)["latency_ms"], strict=True))
    seen: list = []
    _stub_subprocess(monkeypatch, pred, 1.4, seen)
    cal = C.calibrate_model(m, budget_s=600)
    device, proto, n = seen[0]
    assert device == "cpu" and proto.threads == 1 and proto.cpu_keep_heap is False
    assert cal.applied and cal.factor == pytest.approx(1.4) and not cal.per_band
    assert cal.protocol == "1 thread, default heap (cpu)" and cal.n == n


def test_a_small_budget_gives_up_the_largest_configs(files):
    from carb_lib.ensemble import load_model

    m = load_model(files[1])
    big = C.calibration_configs(m, budget_s=600)
    small = C.calibration_configs(m, budget_s=8)
    lat = m.reference_rows_.set_index("config_id")["latency_ms"]
    est = C.estimate_seconds(lat.loc[small["config_id"]].to_numpy())
    assert est.sum() <= 8 - C.PROCESS_START_S
    assert lat.loc[small["config_id"]].max() < lat.loc[big["config_id"]].max()


def test_band_factors_only_where_every_band_differs_beyond_its_spread():
    edges = [10.0, 100.0]
    pred = np.array([1, 2, 3, 20, 30, 40, 200, 300, 400], float)
    same = C.host_factor(pred * 1.3, pred, edges_ms=edges)
    assert same.applied and not same.per_band and same.factor == pytest.approx(1.3)
    wobble = np.array([1.0, 1.02, 0.98] * 3)
    split = C.host_factor(pred * np.repeat([1.0, 1.5, 2.0], 3) * wobble, pred, edges_ms=edges)
    assert split.per_band and [round(b["factor"], 2) for b in split.bands] == [1.0, 1.5, 2.0]
    np.testing.assert_allclose(split.factors_for([5, 50, 500]), [1.0, 1.5, 2.0], rtol=0.03)
    few = C.host_factor(pred[:5] * np.array([1, 1, 1, 2, 2.0]), pred[:5], edges_ms=edges)
    assert not few.per_band  # a band with fewer than 3 timings: one factor


def test_a_calibration_that_cannot_time_applies_nothing_and_says_why(files, tmp_path,
                                                                      monkeypatch):
    d, model, src, _ = files

    def slow(*a, **k):
        raise subprocess.TimeoutExpired(cmd="python", timeout=1)
    monkeypatch.setattr(campaign_noise, "measure_many_in_subprocess", slow)
    q = src.head(2)[["family", "block", "depth", "width", "early_downsample", "resolution",
                     "batch", "precision", "num_classes"]]
    q.to_csv(tmp_path / "q.csv", index=False)
    res = runner.invoke(app, ["predict", "--model", str(model), "--configs", str(tmp_path / "q.csv"),
                              "--out", str(tmp_path / "p.csv"), "--calibrate",
                              "--calibrate-budget-s", "5"])
    assert res.exit_code == 0, res.output
    assert "no host factor: the timing of" in res.output and "ran past its budget of 5 s" in res.output
    p = pd.read_csv(tmp_path / "p.csv")
    assert not p["host_calibration_applied"].any()


def test_a_gpu_model_is_refused_calibration_where_there_is_no_cuda(monkeypatch):
    import torch

    class GpuModel:
        rows_protocol_ = RowsProtocol("cuda", None, False, "2.11").to_dict()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="timed on cuda and this machine has no CUDA device"):
        C.calibrate_model(GpuModel())


def test_calibrate_on_query_adds_queried_configs(files, tmp_path, monkeypatch):
    from carb_lib.ensemble import load_model
    from carb_lib.ensemble.routing import routed

    d, model_path, src, new = files
    m = routed(load_model(model_path))
    q = new.reset_index(drop=True)
    configs = C.calibration_configs(m, budget_s=600)
    allc = pd.concat([configs, q], ignore_index=True)
    pred = dict(zip(allc["config_id"], m.predict(allc)["latency_ms"], strict=True))
    _stub_subprocess(monkeypatch, pred, 1.25)
    cal = C.calibrate_model(m, budget_s=600, query=q, k_query=3)
    assert cal.n_query == 3 and cal.n == len(configs) + 3
    with pytest.raises(ValueError, match="holds only"):
        C.calibrate_model(m, budget_s=600, query=q.head(2), k_query=3)


def test_check_compares_k_configs_beside_the_noise_of_the_same_run(files):
    from carb_lib.ensemble import load_model
    from carb_lib.ensemble.routing import routed

    d, model_path, src, new = files
    m = routed(load_model(model_path))
    q = pd.concat([src.head(6), new], ignore_index=True)
    calls = []

    def timer(c, rp):
        calls.append((len(c), rp.describe()))
        p = m.predict(c)["latency_ms"].to_numpy(float)
        f = 1.05 if len(calls) == 1 else 1.05 * 1.02
        return pd.DataFrame({"config_id": c["config_id"].to_numpy(), "status": "ok",
                             "latency_ms": p * f, "peak_mem_mib": 1.0})
    res = check_predictions(m, q, k=5, budget_s=600, repeat=2, timer=timer)
    assert calls == [(5, "1 thread, default heap (cpu)"), (2, "1 thread, default heap (cpu)")]
    assert res.n == 5 and res.median_abs_log_ratio == pytest.approx(np.log(1.05))
    assert res.within_10pct == 1.0 and res.n_repeat == 2
    assert res.noise_median_abs_log_ratio == pytest.approx(np.log(1.02))
    assert any("re-measurement noise" in line for line in res.lines())
    with pytest.raises(ValueError, match="larger than the query"):
        check_predictions(m, q.head(3), k=4, timer=timer)


def test_pick_within_budget_spans_the_predictions_and_fits_the_budget():
    p = np.array([1, 5, 10, 50, 100, 500, 1000, 5000.0])
    every = pick_within_budget(p, 4, 1e6)
    assert p[every].min() == 1 and p[every].max() == 5000
    tight = pick_within_budget(p, 4, 10, repeat=1)
    est = C.estimate_seconds(p[tight])
    assert est.sum() + np.sort(est)[:1].sum() <= 10 - 2 * C.PROCESS_START_S
    assert len(tight) >= 1


def test_carb_check_refuses_k_larger_than_the_query(files, tmp_path):
    d, model, src, _ = files
    src.head(2)[["family", "block", "depth", "width", "early_downsample", "resolution", "batch",
                 "precision", "num_classes"]].to_csv(tmp_path / "q.csv", index=False)
    res = runner.invoke(app, ["check", "--model", str(model), "--configs", str(tmp_path / "q.csv"),
                              "--k", "5"])
    one_line_error(res, "--k 5 is larger than the query (2 config(s))")


def test_screen_validate_times_the_shortlist_under_the_models_protocol(files, tmp_path,
                                                                       monkeypatch):
    from carb_lib.transfer import check as K

    d, model, src, _ = files
    seen = []

    def fake(configs, rp, *, platform=None, budget_s=600.0):
        seen.append(rp)
        return pd.DataFrame({"config_id": configs["config_id"].to_numpy(), "status": "ok",
                             "latency_ms": 1.0, "peak_mem_mib": 1.0})
    monkeypatch.setattr(K, "measure_now", fake)
    src.head(30)[["family", "block", "depth", "width", "early_downsample", "resolution", "batch",
                  "precision", "num_classes"]].to_csv(tmp_path / "c.csv", index=False)
    res = runner.invoke(app, ["screen", "--model", str(model), "--candidates",
                              str(tmp_path / "c.csv"), "--out", str(tmp_path / "s.csv"), "--k", "2",
                              "--validate"])
    assert res.exit_code == 0, res.output
    assert seen and seen[0].describe() == "1 thread, default heap (cpu)"
    assert "under the rows' protocol: 1 thread, default heap (cpu)" in res.output
    summary = json.loads((tmp_path / "s_summary.json").read_text())
    assert summary["protocol"] == "1 thread, default heap (cpu)"
    res = runner.invoke(app, ["screen", "--model", str(model), "--candidates",
                              str(tmp_path / "c.csv"), "--out", str(tmp_path / "t.csv"), "--k", "2",
                              "--validate", "--device", "cuda"])
    one_line_error(res, "--device cuda", "timed on cpu")
    assert not (tmp_path / "t.csv").exists()


def test_audit_re_measures_with_the_rows_threads_and_heap(monkeypatch):
    from carb_lib.measure import audit as A
    from carb_lib.measure import campaign

    rows = pd.read_parquet(ROOT / "data" / "cpu_epyc_zen4_2c" / "zoo" / "rows.parquet")
    rows = rows[rows["status"].eq("ok")].head(3)
    seen = []

    def fake(configs, device="cpu", protocol=None, platform=None, timeout_s=900.0):
        seen.append(protocol)
        return [{"config_id": c, "status": "ok", "latency_ms": 1.0, "peak_mem_mib": 1.0,
                 "measured_at": "now"} for c in rows["config_id"].head(len(configs))]
    monkeypatch.setattr(campaign, "measure_many_in_subprocess", fake)
    A.audit(rows, 3, progress=False, assume_same_cpu=True, device="cuda")
    assert seen[0].threads == 1 and seen[0].cpu_keep_heap is True  # the zoo rows: heap kept


def test_profile_and_kernels_time_one_thread_unless_told(monkeypatch, tmp_path):
    import carb_lib.kernels.draw as draw
    import carb_lib.measure.campaign as camp

    got = {}

    class Res:
        counts, n_reference, drift = {}, 0, {}

    def fake_campaign(df, out, device, protocol, **kw):
        got["profile"] = protocol
        return Res()
    monkeypatch.setattr(camp, "run_campaign", fake_campaign)
    src = pd.read_parquet(ROOT / "data" / "cpu_epyc_zen3_2c" / "design" / "rows.parquet").head(1)
    src[["family", "block", "depth", "width", "early_downsample", "resolution", "batch",
         "precision", "num_classes"]].to_csv(tmp_path / "c.csv", index=False)
    res = runner.invoke(app, ["profile", "--configs", str(tmp_path / "c.csv"), "--out",
                              str(tmp_path / "camp"), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert got["profile"].threads == 1

    def fake_draw(out, **kw):
        got["kernels"] = kw["threads"]
    monkeypatch.setattr(draw, "time_draw", fake_draw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = runner.invoke(app, ["kernels", "--out", str(tmp_path / "k.parquet"),
                                  "--no-cache-probe"])
    assert res.exit_code == 0, res.output
    assert got["kernels"] == 1
