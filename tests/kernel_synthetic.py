"""SYNTHETIC kernel benchmarks with a known law, for the kernel model's tests (not a
measurement; never write them to ``data/``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from carb_lib.kernels import law as kernels


def synthetic_bench(n: int = 400, seed: int = 0) -> pd.DataFrame:
    """SYNTHETIC timings with a known law: 20 µs per call + 1 ns per FLOP (2 in fp16)."""
    ops = kernels.sample_kernels(n, seed=seed)
    flops = kernels._flops(ops)
    per = np.where(ops["precision"] == "fp16", 2e-6, 1e-6)
    return ops.assign(time_ms=0.02 + flops * per * 1e-3, cv=0.0, n_iter=1)


def two_draws(slow: float = 1.5, n: int = 600) -> pd.DataFrame:
    """SYNTHETIC: two draws of ``n`` operators of the known law, the second timed on a host
    ``slow`` x slower."""
    a = synthetic_bench(n, seed=0).assign(sample_seed=0)
    b = synthetic_bench(n, seed=1).assign(sample_seed=1)
    return pd.concat([a, b.assign(time_ms=b["time_ms"] * slow)], ignore_index=True)
