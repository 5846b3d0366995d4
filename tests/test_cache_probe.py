"""One core's read bandwidth by working set (carb_lib.cache_probe) and the kernel law's weights
read from memory (KernelModel(cache=...))."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from kernel_synthetic import synthetic_bench

from carb_lib import kernels
from carb_lib.cache_probe import CacheKnee, cache_knee, read_bandwidth
from carb_lib.families import resnet
from carb_lib.vocab import KERNEL_FEATURE


def _probe(knee_at: float) -> pd.DataFrame:
    sizes = np.array([4, 8, 16, 32, 64, 96, 128, 256, 1024, 2048], dtype=float)
    return pd.DataFrame({"size_mib": sizes,
                         "read_gb_per_s": np.where(sizes < knee_at, 30.0, 12.0)})


def test_cache_knee_finds_both_regimes_and_the_size_between():
    k = cache_knee(_probe(80))  # 64 MiB at 30 GB/s, 96 MiB at 12: half way at 64 + 15/18 * 32
    assert (k.cache_gb_per_s, k.memory_gb_per_s) == (30.0, 12.0)
    assert k.cache_mib == pytest.approx(64 + 15 / 18 * 32)
    assert cache_knee(_probe(200)).cache_mib == pytest.approx(128 + 15 / 18 * 128)
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
