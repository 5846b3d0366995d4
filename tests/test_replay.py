"""A network from its own calls: distinct aten calls recorded on meta, timed once, cached."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from carb_lib.kernels import replay as R


def _block() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Conv2d(8, 8, 3, padding=1, bias=False),
                               torch.nn.BatchNorm2d(8), torch.nn.ReLU())


def _net() -> torch.nn.Module:
    with torch.device("meta"):  # two identical blocks, then a head with views and a linear
        return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), _block(), _block(),
                                   torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                   torch.nn.Linear(8, 4)).eval()


def _cache(folder, **kw) -> R.CallCache:
    """A cache with short windows; the heap left as it is (keeping it is for good, per process)."""
    return R.CallCache(folder, **{"window_s": 0.001, "n_windows": 2, "keep_heap": False, **kw})


def _fixed_anchors(monkeypatch, seconds_per_campaign: list[float]):
    """time_anchors returning the same two anchors, each campaign at the next speed given."""
    from carb_lib.kernels import anchors

    speeds = iter(seconds_per_campaign)

    def fake(*, phase, threads=1, n_windows=3, **_):
        s = next(speeds)
        return pd.DataFrame({"anchor_id": [0, 1], "time_ms": [s, 2 * s], "anchor_version": 1,
                             "phase": phase, "sample_seed": -1,
                             "campaign": pd.Timestamp.now(tz="UTC")})

    monkeypatch.setattr(anchors, "time_anchors", fake)


def test_identical_calls_share_one_key_and_views_are_named():
    calls = R.network_calls(_net(), (2, 3, 8, 8))
    real = calls[calls["kind"] != "view"]
    # the two blocks' conv, bn and relu run the same kernels on the same sizes: one key each,
    # called twice
    block = real[real["kind"].isin(["bn", "relu"])]
    assert block["count"].tolist() == [2, 2]
    convs = real[real["kind"] == "conv"]
    assert sorted(convs["count"]) == [1, 2] and convs["key"].is_unique
    assert {"avgpool", "linear"} <= set(real["kind"])
    assert (calls["kind"] == "view").any() and (calls.loc[calls["kind"] == "view", "bytes"] == 0).all()
    # a batch of 2 and a batch of 4 are other calls
    other = R.network_calls(_net(), (4, 3, 8, 8))
    assert not set(other["key"]) & set(real["key"])
    # the network given stays on its device
    assert next(_net().parameters()).device.type == "meta"


def test_a_network_is_timed_once_then_read_from_the_cache(tmp_path, monkeypatch):
    _fixed_anchors(monkeypatch, [1.0, 1.0])
    net = _net()
    first = _cache(tmp_path)
    a = R.network_time(net, (2, 3, 8, 8), cache=first)
    assert a.n_untimed == 0 and a.untimed_share == 0.0 and a.upper_ms == a.predicted_ms
    assert a.n_timed_now == a.n_distinct > 0 and a.predicted_ms > 0
    assert a.n_calls > a.n_distinct and a.n_view_calls > 0
    # the file is named by the protocol's hash, in operator_calls/, with the anchors beside it
    assert first.path.parent == tmp_path / "operator_calls" and first.path.is_file()
    assert first.anchors_path.is_file()
    stored = pd.read_parquet(first.path)
    assert set(stored["threads"]) == {1} and stored["key"].is_unique
    assert len(stored) == a.n_distinct
    # a second cache (another campaign, same speed) times nothing and predicts the same
    second = _cache(tmp_path)
    b = R.network_time(net, (2, 3, 8, 8), cache=second)
    assert b.n_timed_now == 0 and b.timing_s < 0.1
    assert b.predicted_ms == pytest.approx(a.predicted_ms, rel=1e-12)
    # the sum is each distinct call's time times its count
    per_kind = a.by_kind["total_ms"].sum()
    assert per_kind == pytest.approx(a.predicted_ms, rel=1e-12)


def test_earlier_times_are_scaled_by_the_anchors_timed_now(tmp_path, monkeypatch):
    _fixed_anchors(monkeypatch, [1.0, 2.0])  # the host runs twice as slow in the second
    net = _net()
    a = R.network_time(net, (1, 3, 8, 8), cache=_cache(tmp_path))
    b = R.network_time(net, (1, 3, 8, 8), cache=_cache(tmp_path))
    assert b.n_timed_now == 0
    assert b.predicted_ms == pytest.approx(2 * a.predicted_ms, rel=1e-9)
    # without the anchors, the stored times as they are
    c = R.network_time(net, (1, 3, 8, 8), cache=_cache(tmp_path, scale_by_anchors=False))
    assert c.predicted_ms == pytest.approx(a.predicted_ms, rel=1e-12)


def test_calls_over_the_budget_are_flagged_and_widen_the_bound_never_zero(tmp_path, monkeypatch):
    _fixed_anchors(monkeypatch, [1.0, 1.0])
    small = _net()
    R.network_time(small, (1, 3, 8, 8), cache=_cache(tmp_path))
    with torch.device("meta"):  # the same network with a larger head: its linear is unseen
        larger = torch.nn.Sequential(*list(small.children())[:-1], torch.nn.Linear(8, 64)).eval()
    cache = _cache(tmp_path, budget_s=0)
    r = R.network_time(larger, (1, 3, 8, 8), cache=cache)
    assert r.n_timed_now == 0 and r.n_untimed == 1
    assert 0 < r.untimed_share < 1
    assert r.upper_ms > r.predicted_ms > 0


def test_a_cache_of_another_cpu_or_protocol_is_refused_with_both_named(tmp_path, monkeypatch):
    _fixed_anchors(monkeypatch, [1.0])
    cache = _cache(tmp_path)
    R.network_time(_net(), (1, 3, 8, 8), cache=cache)
    rows = pd.read_parquet(cache.path)
    other = tmp_path / "other.parquet"
    rows.assign(cpu_id="GenuineIntel family 6 model 1 | AVX2 | L3 1K").to_parquet(other)
    with pytest.raises(ValueError, match="cpu_id GenuineIntel family 6 model 1.*this host "
                                         "times with cpu_id"):
        R.CallCache(path=other, keep_heap=False)
    rows.assign(threads=2).to_parquet(other)
    with pytest.raises(ValueError, match="threads 2, this host times with threads 1"):
        R.CallCache(path=other, keep_heap=False)
    # another thread count is another file, not a refusal
    assert _cache(tmp_path, threads=2).path != cache.path
    (tmp_path / "junk.parquet").write_text("not parquet")
    with pytest.raises(ValueError, match="not a readable cache of call times"):
        R.CallCache(path=tmp_path / "junk.parquet", keep_heap=False)
    with pytest.raises(ValueError, match="threads=0"):
        _cache(tmp_path, threads=0)


def _benchmark(name: str, monkeypatch):
    """A script of benchmarks/, loaded as a module (its folder on the path, as when run)."""
    import importlib.util
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(folder))
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_zoo_benchmark_summarises_each_batch_against_the_network_and_the_baseline(
        monkeypatch):
    rz = _benchmark("replay_zoo", monkeypatch)
    rows = pd.DataFrame({
        "batch": [1, 1, 16, 16], "first_sight_s": [4.0, 20.0, 6.0, 8.0],
        "cached_s": [0.1, 0.2, 0.1, 0.3], "predicted_ms": [9.0, 5.0, 100.0, 210.0],
        "measured_now_ms": [10.0, 10.0, 100.0, 200.0], "stored_ms": [10.0, 10.0, 100.0, 100.0],
        "kernel_law_ms": [8.0, 10.0, 120.0, 200.0]})
    rows["ratio_now"] = rows["predicted_ms"] / rows["measured_now_ms"]
    rows["ratio_stored"] = rows["predicted_ms"] / rows["stored_ms"]
    s = rz.summary(rows).set_index("batch")
    assert list(s.index) == [1, 16, "all"] and s.loc["all", "networks"] == 4
    assert s.loc[1, "median_ape_now_pct"] == pytest.approx(30.0)  # 10 % and 50 %
    assert s.loc[16, "within_10pct_now"] == pytest.approx(1.0)  # 0 % and 5 %
    assert s.loc[1, "first_sight_s_max"] == 20.0 and s.loc[16, "cached_s_median"] == 0.2
    assert s.loc[1, "kernel_law_median_ape_now_pct"] == pytest.approx(10.0)  # 20 % and 0 %
    assert s.loc[16, "kernel_law_within_10pct_now"] == pytest.approx(0.5)
    assert s.loc[16, "network_now_over_stored_row"].startswith("1.500 (")


def test_carb_zoo_time_sums_each_networks_calls_and_reads_them_back(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from carb_lib.app.cli import app
    from carb_lib.families import _torchvision as TV

    try:
        TV.import_torchvision()
    except TV.TorchvisionUnavailable as exc:  # the zoo extra is not installed
        pytest.skip(f"torchvision unavailable: {exc}")
    _fixed_anchors(monkeypatch, [1.0, 1.0, 1.0])
    args = ["zoo", "time", "--networks", "squeezenet1_1", "--batches", "1,2",
            "--resolutions", "64", "--window-s", "0.001", "--n-windows", "1", "--default-heap",
            "--cache-dir", str(tmp_path / "cache")]
    first = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "t.csv")])
    assert first.exit_code == 0, first.output
    t = pd.read_csv(tmp_path / "t.csv")
    assert t[["network", "batch", "resolution"]].values.tolist() == [
        ["squeezenet1_1", 1, 64], ["squeezenet1_1", 2, 64]]
    assert (t["predicted_ms"] > 0).all() and (t["n_untimed"] == 0).all()
    assert (t["n_timed_now"] == t["n_distinct"]).all() and (t["threads"] == 1).all()
    assert "36 distinct calls, 36 timed now" in first.output
    # the same shapes again: read from the cache, nothing timed
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, again.output
    assert again.output.count("0 timed now") == 2
    # an unseen shape with no budget: said, not a number
    none = CliRunner().invoke(app, [*args[:6], "--resolutions", "96", *args[8:], "--budget-s",
                                    "0"])
    assert none.exit_code == 0 and "not timed (" in none.output and "nan" not in none.output
    # bad input: one line each; another table is not replaced without --force
    bad = CliRunner().invoke(app, [*args, "--window-s", "0"])
    assert bad.exit_code != 0 and "--window-s > 0" in bad.output
    other = tmp_path / "other.csv"
    pd.DataFrame({"x": [1]}).to_csv(other, index=False)
    kept = CliRunner().invoke(app, [*args, "--out", str(other)])
    assert kept.exit_code != 0 and pd.read_csv(other).columns.tolist() == ["x"]


def test_the_composition_law_recovers_its_terms_and_scores_out_of_family(monkeypatch):
    cl = _benchmark("composition_law", monkeypatch)
    rng = np.random.default_rng(0)
    n = 40
    rows = pd.DataFrame({"family": np.repeat(["a", "b", "c", "d"], n // 4),
                         "batch": np.tile([1, 16], n // 2),
                         "sum_ms": rng.uniform(1, 100, n), "n_calls": rng.integers(50, 500, n),
                         "weight_mib": rng.uniform(1, 200, n), "call_mib": rng.uniform(1, 500, n)})
    truth = np.array([1.1, 0.02, 0.01, 0.0])  # ms per ms, per call, per weight MiB, per MiB
    rows["measured_now_ms"] = rows[list(cl.TERMS)].to_numpy() @ truth
    assert cl.fit_law(rows) == pytest.approx(truth, abs=1e-9)
    monkeypatch.setattr(cl, "zoo_rows", lambda platform: pd.DataFrame())
    table, coef = cl.score(rows, "nowhere")
    law = table[(table["method"] == "composition law") & (table["batch"] == "all")].iloc[0]
    plain = table[(table["method"] == "sum of calls") & (table["batch"] == "all")].iloc[0]
    assert law["rows"] == "design, out of family" and law["n"] == n
    assert law["median_ape_pct"] == pytest.approx(0.0, abs=1e-6)  # exact law, out of family
    assert plain["median_ape_pct"] > 1.0  # the plain sum misses the other terms
    assert table["coef_n_calls"].iloc[0] == pytest.approx(0.02)
