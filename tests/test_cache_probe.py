"""One core's read bandwidth by working set (carb_lib.kernels.cache_probe) and the kernel law's weights
read from memory (KernelModel(cache=...))."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from kernel_synthetic import synthetic_bench

from carb_lib.core.vocab import KERNEL_FEATURE
from carb_lib.families import resnet
from carb_lib.kernels import law as kernels
from carb_lib.kernels.cache_probe import CacheKnee, cache_knee, read_bandwidth


def _probe(knee_at: float) -> pd.DataFrame:
    sizes = np.array([4, 8, 16, 32, 64, 96, 128, 256, 1024, 2048], dtype=float)
    return pd.DataFrame({"size_mib": sizes,
                         "read_gb_per_s": np.where(sizes < knee_at, 30.0, 12.0)})


def test_cache_knee_finds_both_regimes_and_the_size_between():
    k = cache_knee(_probe(80))  # 64 MiB at 30 GB/s, 96 MiB at 12: 21 GB/s half way between
    assert (k.cache_gb_per_s, k.memory_gb_per_s) == (30.0, 12.0)
    assert k.cache_mib == pytest.approx(80.0)
    assert cache_knee(_probe(200)).cache_mib == pytest.approx(192.0)
    # a gradual fall is interpolated where it crosses the midpoint (21 GB/s)
    p = pd.DataFrame({"size_mib": [8, 32, 64, 128, 1024], "read_gb_per_s": [30, 30, 25, 15, 12]})
    assert cache_knee(p).cache_mib == pytest.approx(64 + 4 / 10 * 64)


def test_cache_knee_refuses_a_probe_without_a_knee_or_the_sizes():
    flat = _probe(80).assign(read_gb_per_s=20.0)
    with pytest.raises(ValueError, match="is not slower than .* no cache knee"):
        cache_knee(flat)
    with pytest.raises(ValueError, match=r"needs sizes <= 32 MiB and >= 1024 MiB, has 64-256"):
        cache_knee(_probe(80).query("64 <= size_mib <= 256"))
    with pytest.raises(ValueError, match="lacks column 'read_gb_per_s'"):
        cache_knee(_probe(80).drop(columns="read_gb_per_s"))


def test_read_bandwidth_times_each_size_and_restores_threads():
    import torch

    before = torch.get_num_threads()
    p = read_bandwidth((1, 2), window_s=0.001, n_windows=2)
    assert p["size_mib"].tolist() == [1, 2] and list(p.columns) == ["size_mib", "read_gb_per_s", "cv"]
    assert (p["read_gb_per_s"] > 0.1).all() and torch.get_num_threads() == before
    with pytest.raises(ValueError, match="positive sizes"):
        read_bandwidth((0, 4))


def test_weights_past_the_cache_are_read_from_memory_in_networks_only():
    bench = synthetic_bench(400)
    plain = kernels.KernelModel(n_estimators=50).fit(bench)
    df = resnet.sample_configs(12, seed=4).assign(batch=1)
    ops, arch = kernels.network_ops(df)
    per_row = [ops[ops["arch_id"] == a].assign(batch=1, precision=prec)
               for a, prec in zip(arch, df["precision"], strict=True)]
    w_net = np.array([kernels._byte_parts(o)[2].sum() for o in per_row])
    cut = float(np.median(w_net)) / 2**20
    over = w_net > cut * 2**20
    assert over.any() and not over.all()
    knee = CacheKnee(cache_gb_per_s=30.0, memory_gb_per_s=0.5, cache_mib=cut)
    base = kernels.with_kernel_column(df, plain)[KERNEL_FEATURE].to_numpy()
    for traffic in ("max", "sum"):
        m = kernels.KernelModel(n_estimators=50, cache=knee, traffic=traffic).fit(bench)
        np.testing.assert_array_equal(m.predict(per_row[0]), plain.predict(per_row[0]))
        got = kernels.with_kernel_column(df, m)[KERNEL_FEATURE].to_numpy()
        np.testing.assert_allclose(got[~over], base[~over])  # weights in cache: unchanged
        for i in np.flatnonzero(over):
            t, read = plain.predict(per_row[i]), kernels._byte_parts(per_row[i])[2] / 0.5e9 * 1e3
            expect = (np.maximum(t, read) if traffic == "max" else t + read).sum()
            assert got[i] == pytest.approx(expect, rel=1e-9) and got[i] > base[i]
    with pytest.raises(Exception, match="traffic"):
        kernels.KernelModel(cache=knee, traffic="min").fit(bench)


def _op(**kw) -> dict:
    return {"kind": "conv", "cin": 1024, "cout": 1024, "k": 3, "stride": 1, "pad": 1,
            "groups": 1, "h_in": 1, "h_out": 1, "batch": 2, "precision": "fp32", **kw}


def test_mmap_mib_lists_the_buffers_past_glibcs_threshold():
    """The MiB that a campaign of 2026-12-02 counted in minor faults per call (4 KiB each) on the Xeon."""
    from carb_lib.kernels._memory import _mmap_mib

    big = 16 * 64 * 112**2 * 4 / 2**20  # 49 MiB
    ops = pd.DataFrame([
        _op(),                               # oneDNN reorders its 36 MiB of weights per call
        _op(batch=1),                        # batch 1 on a 1 x 1 map: PyTorch's own kernel
        _op(cout=512),                       # 18 MiB of weights: under the threshold
        _op(precision="fp16", cout=2048, batch=1),  # 36 MiB of float16 weights
        _op(kind="bn", k=1, pad=0, cin=64, cout=64, h_in=112, h_out=112, batch=16),
        _op(kind="relu", k=1, pad=0, cin=64, cout=64, h_in=112, h_out=112, batch=16),  # in place
        _op(cin=64, cout=64, h_in=112, h_out=112, batch=16),  # input, output, blocked output
        _op(kind="maxpool", cin=64, cout=64, stride=2, h_in=224, h_out=112, batch=16),  # + indices
    ])
    np.testing.assert_allclose(_mmap_mib(ops, 16), [36, 0, 0, 0, big, 0, 3 * big, 3 * big])
    # where oneDNN runs float16 convolutions, their weights are reordered too
    np.testing.assert_allclose(_mmap_mib(ops, "16+fp16")[3], 36)
    with pytest.raises(ValueError, match="block=12 is not modelled"):
        _mmap_mib(ops, 12)
    # a buffer of exactly 32 MiB: left out by default, counted with inclusive=True
    edge = pd.DataFrame([_op(kind="add", k=1, pad=0, cin=16, cout=16, h_in=128, h_out=128,
                             batch=32)])  # 16 x 128 x 128 float32 x 32 images = 32 MiB
    assert _mmap_mib(edge, 16).tolist() == [0.0]
    assert _mmap_mib(edge, 16, inclusive=True).tolist() == [32.0]
    np.testing.assert_allclose(_mmap_mib(ops, 16, inclusive=True), _mmap_mib(ops, 16))


def test_fault_term_learns_a_known_cost_per_mapped_mib():
    from carb_lib.kernels._memory import _mmap_mib

    ops = kernels.sample_kernels(1500, seed=3)
    mib = _mmap_mib(ops, 8)
    assert (mib > 0).sum() >= 40
    flops = kernels._flops(ops)
    t = 0.02 + flops * np.where(ops["precision"] == "fp16", 2e-9, 1e-9) + 0.4 * mib  # SYNTHETIC
    bench = ops.assign(time_ms=t, cv=0.0, n_iter=1)
    test = ops.index % 5 == 0
    with_f = kernels.KernelModel(n_estimators=300, faults=True).fit(bench[~test])
    without = kernels.KernelModel(n_estimators=300).fit(bench[~test])
    assert with_f.fault_ms_per_mib_ == pytest.approx(0.4, rel=0.15)
    assert without.fault_ms_per_mib_ == 0.0
    mapped = test & (mib > 0)
    err = {name: np.median(np.abs(m.predict(bench[mapped]) / t[mapped] - 1))
           for name, m in (("with", with_f), ("without", without))}
    assert err["with"] < 0.10 and err["with"] < err["without"]
    # too few mapping operators: no fault term
    few = bench[mib == 0].iloc[:200]
    assert kernels.KernelModel(n_estimators=20, faults=True).fit(few).fault_ms_per_mib_ == 0.0


def test_faults_per_call_counts_fresh_mappings_only():
    import torch

    def fresh():  # 40 MiB past glibc's mmap threshold, written: faulted in on every call
        torch.empty(10 * 2**20).fill_(1.0)

    kept = torch.empty(10 * 2**20)
    assert kernels.faults_per_call(fresh) > 0.9 * 40 * 2**20 / 4096
    assert kernels.faults_per_call(lambda: kept.fill_(1.0)) < 50


def test_fault_variant_comes_from_the_benchmark_or_the_parameter():
    bench = synthetic_bench(300)
    assert kernels.KernelModel(n_estimators=5, faults=True).fit(bench).fault_variant_ == 8
    tagged = bench.assign(alloc_variant="16+fp16")
    assert kernels.KernelModel(n_estimators=5, faults=True).fit(tagged).fault_variant_ == "16+fp16"
    assert kernels.KernelModel(n_estimators=5, faults=16).fit(tagged).fault_variant_ == 16
    assert kernels.KernelModel(n_estimators=5).fit(tagged).fault_variant_ is None
    as_text = bench.assign(alloc_variant="16")  # a file column holds text: read as the block 16
    assert kernels.KernelModel(n_estimators=5, faults=True).fit(as_text).fault_variant_ == 16
    with pytest.raises(ValueError, match="block=12 is not modelled"):
        kernels.KernelModel(n_estimators=5, faults=True).fit(bench.assign(alloc_variant="12"))
    mixed = tagged.assign(alloc_variant=np.where(np.arange(300) % 2, "8", "16"))
    with pytest.raises(ValueError, match=r"mixes allocator variants \['16', '8'\]"):
        kernels.KernelModel(n_estimators=5, faults=True).fit(mixed)


def _kernel_frame():
    """SYNTHETIC ResNet rows whose latency is 0.3 ms plus 1.2x their summed operator times."""
    from carb_lib.dataset.synthetic import make_synthetic_dataset

    df = make_synthetic_dataset(216, seed=3, platform="synthetic_cpu", with_energy=False,
                                with_telemetry=False, error_rate=0.0)
    k = kernels.with_kernel_column(df, kernels.KernelModel(n_estimators=50).fit(
        synthetic_bench(600)))[KERNEL_FEATURE].to_numpy()
    return df.assign(latency_ms=0.3 + 1.2 * k)


def test_the_estimator_learns_the_probes_knee_and_the_model_reads_weights_from_memory(tmp_path):
    from carb_lib.ensemble import CARBRegressor, load_model, preset, save_model

    df, bench, probe = _kernel_frame(), synthetic_bench(600), _probe(80)
    params = preset("test", targets=("peak_mem_mib", "latency_ms"), latency_law="kernel",
                    kernel_bench=bench)
    plain = CARBRegressor(**params).fit(df)
    probed = CARBRegressor(**params, kernel_cache_probe=probe).fit(df)
    assert plain.kernel_model_.cache is None
    assert probed.kernel_model_.cache == cache_knee(probe) and probed.kernel_model_.traffic == "sum"
    a = kernels.with_kernel_column(df, plain.kernel_model_)[KERNEL_FEATURE].to_numpy()
    b = kernels.with_kernel_column(df, probed.kernel_model_)[KERNEL_FEATURE].to_numpy()
    # networks past 80 MiB of weights read them at 12 GB/s on top; the others are unchanged
    assert (b >= a - 1e-12).all() and (b > a).any() and (np.isclose(a, b)).any()
    path = save_model(probed, tmp_path / "m.joblib")
    meta = (tmp_path / "m.joblib.json").read_text()
    assert '"traffic": "sum"' in meta and "<10 rows>" in meta and "<600 timed operators>" in meta
    np.testing.assert_allclose(load_model(path).predict(df).to_numpy(),
                               probed.predict(df).to_numpy())
    from_file = tmp_path / "probe.csv"
    probe.to_csv(from_file, index=False)
    assert CARBRegressor(**params, kernel_cache_probe=str(from_file)).fit(df).kernel_model_.cache \
        == cache_knee(probe)
    with pytest.raises(ValueError, match="kernel_cache_probe is read with kernel_bench only"):
        CARBRegressor(**{**params, "kernel_bench": None}, kernel_cache_probe=probe).fit(df)


def test_cli_fit_reads_a_cache_probe_with_the_kernel_bench_only(tmp_path):
    from typer.testing import CliRunner

    from carb_lib.app.cli import app

    data, bench, probe = tmp_path / "d.parquet", tmp_path / "k.parquet", tmp_path / "p.csv"
    _kernel_frame().drop(columns="config_id").to_parquet(data)
    synthetic_bench(600).assign(platform="synthetic_cpu").to_parquet(bench)
    _probe(80).to_csv(probe, index=False)
    fit = ["fit", "--data", str(data), "--out", str(tmp_path / "m.joblib"), "--preset", "test"]
    r = CliRunner().invoke(app, [*fit, "--cache-probe", str(probe)])
    assert r.exit_code == 1 and not (tmp_path / "m.joblib").exists()
    assert "--cache-probe FILE needs --latency-law kernel and --kernel-bench FILE" in r.output
    r = CliRunner().invoke(app, [*fit, "--latency-law", "kernel", "--kernel-bench", str(bench),
                                 "--cache-probe", str(probe)])
    assert r.exit_code == 0, r.output
    assert '"cache_mib": 80.0' in (tmp_path / "m.joblib.json").read_text()
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"size_mib": [4, 8]}).to_csv(bad, index=False)
    r = CliRunner().invoke(app, [*fit, "--latency-law", "kernel", "--kernel-bench", str(bench),
                                 "--cache-probe", str(bad)])
    assert r.exit_code == 1 and "the probe lacks column 'read_gb_per_s'" in r.output
    assert len(r.output.strip().splitlines()) == 1
