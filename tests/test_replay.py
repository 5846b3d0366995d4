"""A network from its own calls: distinct aten calls recorded on meta, timed once, cached;
design-space candidates screened from those times."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from carb_lib.kernels import calls as C
from carb_lib.kernels import replay as R
from carb_lib.kernels.composition import CompositionLaw, traffic_mib


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


# ------------------------------------------------------------------ memoized recording, screen
def _truth(module, shape, dtype) -> dict[str, int]:
    """The call keys of one forward pass with every meta kernel run (no memo of any kind)."""
    from carb_lib.kernels.inventory import record_on_meta

    def row(func, args, kwargs, out, torch_):
        return f"v{C.KEY_VERSION}|{func}|{C._text(args, torch_)}|{C._text(kwargs, torch_)}"

    counts: dict[str, int] = {}
    for k in record_on_meta(module, shape, dtype, row):
        counts[k] = counts.get(k, 0) + 1
    return counts


def _with_mutating_ops(counts: dict[str, int]) -> dict[str, int]:
    # the truth's keys are taken after each call: an op that changes its argument's strides in
    # place (as_strided_) is keyed there by the strides it made, by the recorder by those it
    # was given; no other key may differ
    return {k: v for k, v in counts.items() if "as_strided_" not in k}


@pytest.mark.parametrize("name", ["shufflenet_v2_x0_5", "googlenet", "convnext_tiny",
                                  "mobilenet_v3_small", "densenet121"])
def test_memoized_recording_equals_running_every_call_on_zoo_networks(name):
    from carb_lib.families._meta_build import parameters_on_meta
    from carb_lib.families._torchvision import import_torchvision

    with parameters_on_meta():
        net = import_torchvision().models.get_model(name).eval()
    for shape, dtype in [((1, 3, 224, 224), "fp32"), ((4, 3, 160, 160), "fp16")]:
        truth = _with_mutating_ops(_truth(net, shape, dtype))
        for _ in range(2):  # cold, then every block and call from memory
            got = _with_mutating_ops(C._record_keys(net, shape, dtype))
            assert list(got.items()) == list(truth.items())
    assert any(sig.startswith("torchvision") for _, sig in
               C._block_signatures(net.to(device="meta"), torch))


def test_memoized_recording_equals_running_every_call_on_every_design_family():
    import importlib

    from carb_lib.families._common import meta_model
    from carb_lib.families.resnet import paper_grid
    from carb_lib.families.space import config_from_row

    small = "resolution <= 64 and batch <= 2"
    rows = [*paper_grid().query(small).sample(3, random_state=0).to_dict("records")]
    for name in ("mobilenetv2", "efficientnet", "vgg"):
        module = importlib.import_module(f"carb_lib.families.{name}")
        grid = module.sample_configs(40, seed=1).query("resolution <= 64")
        rows += grid.assign(batch=2, precision="fp32").head(1).to_dict("records")
    assert len(rows) == 6
    for row in rows:
        config = config_from_row(row)
        net = meta_model(config)
        shape = (config.batch, 3, config.resolution, config.resolution)
        truth = _truth(net, shape, config.precision)
        for _ in range(2):
            assert list(C._record_keys(net, shape, config.precision).items()) == \
                list(truth.items()), row


class _Repeat(torch.nn.Module):
    """A block whose calls depend on a plain attribute (how often it applies its conv)."""

    def __init__(self, times: int):
        super().__init__()
        self.times = times
        self.conv = torch.nn.Conv2d(4, 4, 1)

    def forward(self, x):
        for _ in range(self.times):
            x = self.conv(x)
        return x


def test_blocks_differing_in_an_attribute_or_hooked_are_not_taken_for_each_other():
    with torch.device("meta"):
        two, three = _Repeat(2).eval(), _Repeat(3).eval()
    shape = (1, 4, 8, 8)
    assert sum(C._record_keys(two, shape, "fp32").values()) == \
        sum(_truth(two, shape, "fp32").values())
    assert sum(C._record_keys(three, shape, "fp32").values()) == \
        sum(_truth(three, shape, "fp32").values())
    # a module with an attribute whose value cannot be told is always run
    three.scale = lambda x: x
    assert C._signature(three, torch, {}) is None
    # a forward hook sees every run: a hooked block is never answered from memory
    seen = []
    two.conv.register_forward_hook(lambda *_: seen.append(1))
    C._record_keys(two, shape, "fp32")
    C._record_keys(two, shape, "fp32")
    assert len(seen) == 4
    # the modules given are left as they were (no forward of the memo left behind)
    assert "forward" not in two.__dict__ and "forward" not in two.conv.__dict__


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("channels_last", [False, True])
def test_the_batch_norm_shortcut_makes_what_the_meta_kernel_makes(dtype, channels_last):
    aten = torch.ops.aten
    for shape in ([2, 8, 5, 5], [3, 6]) if not channels_last else ([2, 8, 5, 5],):
        x = torch.empty(shape, device="meta", dtype=dtype)
        if channels_last:
            x = x.to(memory_format=torch.channels_last)
        w = torch.empty(shape[1], device="meta", dtype=dtype)
        for func, args in [(aten.native_batch_norm.default, (x, w, w, w, w, False, 0.1, 1e-5)),
                           (aten._native_batch_norm_legit_no_training.default,
                            (x, w, w, w, w, 0.1, 1e-5))]:
            fast = C._shortcut(func, args, {}, torch)
            assert fast is not None
            want, got = func(*args), fast(*args)
            assert [(t.shape, t.stride(), t.dtype) for t in got] == \
                [(t.shape, t.stride(), t.dtype) for t in want]
    # training mode is not shortcut
    assert C._shortcut(aten.native_batch_norm.default, (x, w, w, w, w, True, 0.1, 1e-5), {},
                       torch) is None


def _filled(folder, calls: pd.DataFrame, ms_per_mib: float = 1.0, drop: str | None = None):
    """A cache with a stand-in time for every call of ``calls`` (bytes / MiB x ms_per_mib),
    but ``drop``."""
    cache = _cache(folder, scale_by_anchors=False)
    real = calls[(calls["kind"] != "view") & (calls["key"] != drop)]
    cache._append(pd.DataFrame({
        "key": real["key"], "aten": real["aten"], "kind": real["kind"],
        "time_ms": real["bytes"] / 2**20 * ms_per_mib + 1e-3, "cv": 0.0, "n_iter": 1,
        "campaign": cache.campaign, **cache.protocol, "window_s": cache.window_s,
        "n_windows": cache.n_windows, "measured_at": pd.Timestamp.now(tz="UTC")},
        columns=list(R.CACHE_COLUMNS)))
    return cache


def _grid_rows(n: int) -> pd.DataFrame:
    from carb_lib.families.resnet import paper_grid

    grid = paper_grid()
    small = grid[(grid["resolution"] <= 64) & (grid["batch"] <= 4)
                 & grid["depth"].isin([10, 18])]
    return small.sample(n, random_state=0).set_index(pd.Index(range(100, 100 + n)))


def test_a_screen_sums_each_candidates_cached_calls_as_network_time_does(tmp_path):
    from carb_lib.families._common import meta_model
    from carb_lib.families.space import config_from_row

    cands = _grid_rows(8)
    counts, calls, weight_mib = R.screen_calls(cands)
    assert len(counts) == 8 and calls["key"].is_unique
    assert calls.loc[calls["kind"] != "view", "bytes"].gt(0).all()
    cache = _filled(tmp_path, calls)
    law = CompositionLaw((0.9, 0.004, 0.05, 0.02), 80)
    out = R.screen_times(cands, cache=cache, law=law)
    assert out.index.equals(cands.index) and (out["n_untimed"] == 0).all()
    assert (out["upper_ms"] == out["predicted_ms"]).all()
    for (i, row), got, w in zip(cands.iterrows(), out.itertuples(), weight_mib, strict=True):
        config = config_from_row(row.to_dict())
        shape = (config.batch, 3, config.resolution, config.resolution)
        net = meta_model(config)
        want = R.network_time(net, shape, config.precision, cache=cache, budget_s=0)
        assert got.predicted_ms == pytest.approx(want.predicted_ms, rel=1e-12), i
        assert (got.n_calls, got.n_distinct) == (want.n_calls, want.n_distinct)
        # the law's terms as the composition benchmark takes them, and the law on them
        weights, moved = traffic_mib(net, shape, config.precision)
        assert (got.weight_mib, w) == (pytest.approx(weights), pytest.approx(weights))
        assert got.call_mib == pytest.approx(moved, rel=1e-12)
        assert got.law_ms == pytest.approx(0.9 * want.predicted_ms + 0.004 * want.n_calls
                                           + 0.05 * weights + 0.02 * moved, rel=1e-12)
    assert out["cpu_id"].nunique() == 1 and (out["threads"] == 1).all()
    assert "law_ms" not in R.screen_times(cands, cache=cache).columns


def test_a_screen_flags_calls_missing_from_the_cache_and_widens_their_bound(tmp_path):
    cands = _grid_rows(6)
    calls = R.screen_calls(cands).calls
    conv = calls[calls["kind"] == "conv"].sort_values("count").iloc[0]
    cache = _filled(tmp_path, calls, drop=conv["key"])
    out = R.screen_times(cands, cache=cache)  # budget 0: nothing timed
    hit = out["n_untimed"] > 0
    assert hit.sum() >= 1 and (out.loc[hit, "n_untimed"] == 1).all()
    assert (out.loc[hit, "upper_ms"] > out.loc[hit, "predicted_ms"]).all()
    assert (out.loc[hit, "untimed_share"] > 0).all() and (out.loc[~hit, "untimed_share"] == 0).all()
    assert out["predicted_ms"].notna().all() and len(cache) == (calls["kind"] != "view").sum() - 1


def test_a_screen_on_two_processes_equals_one(tmp_path):
    cands = _grid_rows(6)
    calls = R.screen_calls(cands).calls
    cache = _filled(tmp_path, calls)
    one = R.screen_times(cands, cache=cache)
    two = R.screen_times(cands, cache=cache, processes=2, chunk=2)
    pd.testing.assert_frame_equal(one, two)


def test_a_screen_refuses_bad_candidates_and_options_in_one_line(tmp_path):
    from carb_lib.families import ConfigError

    bad = _grid_rows(3)
    bad.loc[bad.index[1], "width"] = -1.0
    with pytest.raises(ConfigError, match="candidates: row 1"):
        R.screen_calls(bad)
    with pytest.raises(ValueError, match="processes >= 1"):
        R.screen_calls(_grid_rows(2), processes=0)
    with pytest.raises(ValueError, match="budget_s >= 0"):
        R.screen_times(_grid_rows(2), cache=_cache(tmp_path), budget_s=-1)


def test_the_screen_benchmark_writes_one_row_per_run(tmp_path, monkeypatch):
    import importlib
    import sys as _sys

    monkeypatch.syspath_prepend(str(R.Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = importlib.import_module("replay_screen")
    monkeypatch.setattr(bench, "candidates", lambda n, seed: _grid_rows(n))
    out = tmp_path / "screen.csv"
    assert bench.main(["--n", "5", "--processes", "1", "--repeats", "2", "--platform", "here",
                       "--out", str(out)]) == 0
    rows = pd.read_csv(out)
    assert (rows["platform"] == "here").all()
    assert rows["step"].tolist() == ["record", "screen", "screen"]
    assert (rows["n_cached"] == rows["n_distinct_calls"]).all() and rows["n_calls"].gt(0).all()
    assert (rows["times"] == "placeholder (synthetic)").all()
    _sys.modules.pop("replay_screen", None)


def test_the_screen_block_quotes_the_median_run_and_the_target(tmp_path):
    from carb_lib.app.readme_zoo import replay_screen_block

    assert "no screen timings" in replay_screen_block(tmp_path)
    (tmp_path / "benchmarks").mkdir()
    rows = pd.DataFrame({"run": [0, 1, 2, 3], "step": ["record", "screen", "screen", "screen"],
                         "seconds": [70.0, 65.0, 59.0, 80.0], "platform": "cpu_x",
                         "n_candidates": 10_000, "processes": 2, "n_calls": 2_000_000,
                         "n_distinct_calls": 30_000})
    rows.to_csv(tmp_path / "benchmarks" / "replay_screen_cpu_x.csv", index=False)
    block = replay_screen_block(tmp_path)
    assert "| `cpu_x` | 10,000 | 2,000,000 (30,000) | 2 | 70.0 s | 65.0 s (59.0-80.0 s, 3) " \
           "| 6.5 ms | not met |" in block
    assert "results/benchmarks/replay_screen_cpu_x.csv" in block


def test_the_timing_protocol_sets_threads_and_flushing_and_puts_them_back():
    from carb_lib.kernels.law import timing_protocol

    tiny = torch.tensor([1e-39])  # a denormal float32
    before = torch.get_num_threads()
    with timing_protocol(1) as flushed:
        assert torch.get_num_threads() == 1
        if flushed:  # x86: denormals read as zero while flushing
            assert float(tiny * 1.0) == 0.0
    assert torch.get_num_threads() == before and float(tiny * 1.0) > 0
    with pytest.raises(RuntimeError), timing_protocol(1, flush_denormal=False) as flushed:
        assert flushed is False and float(tiny * 1.0) > 0
        raise RuntimeError("stop")
    assert torch.get_num_threads() == before


def test_carb_time_screens_candidates_from_their_calls_and_reads_them_back(tmp_path,
                                                                          monkeypatch):
    from typer.testing import CliRunner

    from carb_lib.app.cli import app

    _fixed_anchors(monkeypatch, [1.0, 1.0, 1.0])
    cands = tmp_path / "cands.csv"
    _grid_rows(4).to_csv(cands, index=False)
    args = ["time", "--candidates", str(cands), "--window-s", "0.001", "--n-windows", "1",
            "--default-heap", "--cache-dir", str(tmp_path / "cache")]
    first = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "t.csv")])
    assert first.exit_code == 0, first.output
    t = pd.read_csv(tmp_path / "t.csv")
    assert len(t) == 4 and t["config_id"].is_unique
    assert (t["predicted_ms"] > 0).all() and (t["n_untimed"] == 0).all()
    calls = R.screen_calls(_grid_rows(4)).calls
    assert f"4 candidates, {(calls['kind'] != 'view').sum()} distinct calls: 0 cached" in \
        first.output
    assert "4 candidates with every call timed" in first.output
    # again: every call read from the cache, nothing timed
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and " 0 timed now" in again.output, again.output
    # no budget and another cache: every candidate flagged, no number made up
    none = CliRunner().invoke(app, [*args[:-1], str(tmp_path / "empty"), "--budget-s", "0",
                                    "--out", str(tmp_path / "none.csv")])
    assert none.exit_code == 0, none.output
    assert "4 candidates have calls left untimed" in none.output
    assert pd.read_csv(tmp_path / "none.csv")["predicted_ms"].isna().all()
    # bad input: one line each; another table is not replaced without --force
    bad = CliRunner().invoke(app, [*args, "--processes", "0"])
    assert bad.exit_code != 0 and "--processes must be >= 1" in bad.output.replace("\n", " ")
    missing = CliRunner().invoke(app, ["time", "--candidates", str(tmp_path / "nope.csv")])
    assert missing.exit_code == 1 and "neither 'grid'" in missing.output
    kept = CliRunner().invoke(app, [*args, "--out", str(cands)])
    assert kept.exit_code != 0 and len(pd.read_csv(cands)) == 4


def test_the_field_benchmark_scores_the_sum_and_the_law_per_batch(monkeypatch):
    field = _benchmark("replay_field", monkeypatch)
    rows = pd.DataFrame({"batch": [1, 1, 1, 16, 16, 16],
                         "measured_now_ms": [10.0, 20.0, 40.0, 100.0, 200.0, 400.0]})
    rows["predicted_ms"] = rows["measured_now_ms"] * [0.7, 0.8, 0.75, 0.95, 0.9, 0.92]
    rows["law_ms"] = rows["measured_now_ms"] * [1.05, 0.97, 1.0, 1.02, 0.99, 1.2]
    table = field.score(rows).set_index(["method", "batch"])
    assert table.loc[("sum of calls", 1), "median_ape_pct"] == pytest.approx(25.0)
    assert table.loc[("composition law", 16), "within_10pct"] == pytest.approx(2 / 3)
    assert table.loc[("composition law", "all"), "n"] == 6
    assert table.loc[("sum of calls", 16), "spearman"] == pytest.approx(1.0)
    assert np.isnan(table.loc[("sum of calls", "all"), "spearman"])
    # fresh candidates: none of the architectures and resolutions the law was fitted on
    from carb_lib.families.resnet import paper_grid

    grid = paper_grid()  # the law fitted on every architecture but those of depth 10
    fitted = grid[grid["depth"] != 10].assign(family="resnet")
    fresh = field.fresh_candidates(10, 0, fitted)
    assert len(fresh) == 10 and sorted(fresh["batch"].unique()) == [1, 16]
    assert (fresh["depth"] == 10).all() and fresh["precision"].eq("fp32").all()
    assert (fresh["width"] <= 1.0).all()
