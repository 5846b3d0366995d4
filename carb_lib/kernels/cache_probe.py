"""What memory costs an operator in a network that it does not cost timed alone.

Two effects, both measured on 2026-12-02 on the ten networks the kernel law missed most (README,
*Weights evicted, then page faults*):

* **Weights past the cache.** A network whose weights do not fit in the cache a core can use
  reads them from memory on every call, while each of its operators timed alone
  (:func:`carb_lib.kernels.law.bench_kernels`) finds its weights in the cache.
  :func:`read_bandwidth` measures the two regimes on the machine itself (the nominal L3 of a
  lent VM says little: on the 2026-12-02 Xeon, 480 MiB nominal, one core's read bandwidth halves
  past ~75 MiB), :func:`cache_knee` reads from it the working set at which reading slows and
  the bandwidth from memory beyond it, and :class:`~carb_lib.kernels.law.KernelModel`'s ``cache``
  applies it to networks (``_weight_traffic``).
* **Buffers past glibc's mmap threshold.** A buffer larger than :data:`MMAP_MAX_BYTES` is a
  fresh mapping on every call, whose pages fault in as they are written (``_mmap_mib``: which
  buffers an operator allocates; ``KernelModel(faults=True)`` fits their cost per MiB).

Examples
--------
>>> from carb_lib.kernels.cache_probe import cache_knee, read_bandwidth
>>> probe = read_bandwidth()                       # doctest: +SKIP
>>> knee = cache_knee(probe)                       # doctest: +SKIP
>>> knee.cache_mib, knee.memory_gb_per_s           # doctest: +SKIP
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from carb_lib.core.vocab import DEFAULT_ALLOC_BLOCK
from carb_lib.families._alloc import parse_variant

__all__ = ["PROBE_SIZES_MIB", "CacheKnee", "bench_variant", "cache_knee", "read_bandwidth"]

logger = logging.getLogger(__name__)

#: Working sets timed by default (MiB): inside any L3, across the knee, well beyond it.
PROBE_SIZES_MIB: tuple[int, ...] = (4, 8, 16, 32, 48, 64, 80, 96, 128, 160, 192, 256, 384, 512,
                                    768, 1024, 2048)


def read_bandwidth(sizes_mib: tuple[int, ...] = PROBE_SIZES_MIB, *, window_s: float = 0.2,
                   n_windows: int = 5, threads: int = 1) -> pd.DataFrame:
    """Time a full read (``torch.sum``) of a float32 buffer of each size, on ``threads`` threads.

    Parameters
    ----------
    sizes_mib : tuple of int, default=PROBE_SIZES_MIB
    window_s : float, default=0.2
        Each window repeats the read for at least this long; the median window counts.
    n_windows : int, default=5
    threads : int, default=1

    Returns
    -------
    pandas.DataFrame
        ``size_mib``, ``read_gb_per_s`` (median window, 1e9 bytes per second), ``cv`` (the
        windows' coefficient of variation), one row per size in the order given.
    """
    import torch

    if not sizes_mib or min(sizes_mib) <= 0:
        raise ValueError(f"sizes_mib must be positive sizes, got {sizes_mib!r}")
    before = torch.get_num_threads()
    torch.set_num_threads(int(threads))
    rows = []
    try:
        for mib in sizes_mib:
            buf = torch.ones(int(mib) * 2**20 // 4)
            buf.sum()
            t0 = time.perf_counter()
            buf.sum()
            reps = max(1, int(window_s / max(time.perf_counter() - t0, 1e-7)))
            ws = np.empty(n_windows)
            for i in range(n_windows):
                t0 = time.perf_counter()
                for _ in range(reps):
                    buf.sum()
                ws[i] = (time.perf_counter() - t0) / reps
            rows.append({"size_mib": int(mib), "read_gb_per_s": mib * 2**20 / np.median(ws) / 1e9,
                         "cv": float(ws.std() / ws.mean())})
            del buf
    finally:
        torch.set_num_threads(before)
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class CacheKnee:
    """The two read regimes of a :func:`read_bandwidth` probe.

    Attributes
    ----------
    cache_gb_per_s : float
        Median read bandwidth of the working sets at most ``small_mib`` (in cache).
    memory_gb_per_s : float
        Median read bandwidth of the working sets at least ``large_mib`` (from memory).
    cache_mib : float
        The working set at which the bandwidth falls half way from the first to the second
        (linear interpolation between the two probed sizes around it).
    """

    cache_gb_per_s: float
    memory_gb_per_s: float
    cache_mib: float


def cache_knee(probe: pd.DataFrame, *, small_mib: float = 32, large_mib: float = 1024) -> CacheKnee:
    """Where a :func:`read_bandwidth` probe's bandwidth falls from the cache's to memory's.

    Raises ``ValueError`` when the probe has no size at most ``small_mib`` or none at least
    ``large_mib``, or when reading from beyond the knee is not slower (no knee to find).
    """
    for c in ("size_mib", "read_gb_per_s"):
        if c not in probe.columns:
            raise ValueError(f"the probe lacks column {c!r} (carb_lib.kernels.cache_probe.read_bandwidth)")
    p = probe.sort_values("size_mib")
    size = p["size_mib"].to_numpy(float)
    bw = p["read_gb_per_s"].to_numpy(float)
    if not (size <= small_mib).any() or not (size >= large_mib).any():
        raise ValueError(f"the probe needs sizes <= {small_mib} MiB and >= {large_mib} MiB, "
                         f"has {size.min():g}-{size.max():g}")
    hi, lo = float(np.median(bw[size <= small_mib])), float(np.median(bw[size >= large_mib]))
    if lo >= hi:
        raise ValueError(f"reading {large_mib:g} MiB and more ({lo:.1f} GB/s) is not slower than "
                         f"{small_mib:g} MiB and less ({hi:.1f} GB/s): no cache knee")
    mid = 0.5 * (hi + lo)
    j = int(np.argmax((bw < mid) & (size > small_mib)))  # first size past the knee
    x0, x1, y0, y1 = size[j - 1], size[j], bw[j - 1], bw[j]
    knee = x1 if y0 == y1 else x0 + (y0 - mid) / (y0 - y1) * (x1 - x0)
    logger.info("cache %.1f GB/s up to ~%.0f MiB, memory %.1f GB/s", hi, knee, lo)
    return CacheKnee(cache_gb_per_s=hi, memory_gb_per_s=lo, cache_mib=float(knee))


def bench_variant(bench: pd.DataFrame) -> int | str:
    """The allocator variant a kernel benchmark records (its ``alloc_variant`` column, since
    a campaign of 2026-12-02), else :data:`~carb_lib.core.vocab.DEFAULT_ALLOC_BLOCK`; ``ValueError`` for a mix."""
    seen = (bench["alloc_variant"].dropna().astype(str).unique()
            if "alloc_variant" in bench.columns else [])
    if len(seen) > 1:
        raise ValueError(f"the kernel benchmark mixes allocator variants {sorted(seen)}; "
                         "give KernelModel(faults=VARIANT)")
    return parse_variant(seen[0]) if len(seen) == 1 else DEFAULT_ALLOC_BLOCK
