"""What memory costs an operator in a network that it does not cost timed alone.

Two effects, both measured in session 20 on the ten networks the kernel law missed most (README,
*Weights evicted, then page faults*):

* **Weights past the cache.** A network whose weights do not fit in the cache a core can use
  reads them from memory on every call, while each of its operators timed alone
  (:func:`carb_lib.kernels.bench_kernels`) finds its weights in the cache.
  :func:`read_bandwidth` measures the two regimes on the machine itself (the nominal L3 of a
  lent VM says little: on session 20's Xeon, 480 MiB nominal, one core's read bandwidth halves
  past ~75 MiB), :func:`cache_knee` reads from it the working set at which reading slows and
  the bandwidth from memory beyond it, and :class:`~carb_lib.kernels.KernelModel`'s ``cache``
  applies it to networks (``_weight_traffic``).
* **Buffers past glibc's mmap threshold.** A buffer larger than :data:`MMAP_MAX_BYTES` is a
  fresh mapping on every call, whose pages fault in as they are written (``_mmap_mib``: which
  buffers an operator allocates; ``KernelModel(faults=True)`` fits their cost per MiB).

Examples
--------
>>> from carb_lib.cache_probe import cache_knee, read_bandwidth
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

from carb_lib.operators import _byte_parts
from carb_lib.vocab import DEFAULT_ALLOC_BLOCK

__all__ = ["PROBE_SIZES_MIB", "CacheKnee", "bench_variant", "cache_knee", "network_mmap_mib",
           "read_bandwidth"]

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
            raise ValueError(f"the probe lacks column {c!r} (carb_lib.cache_probe.read_bandwidth)")
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


#: glibc's largest ``mmap`` threshold on 64-bit Linux (``DEFAULT_MMAP_THRESHOLD_MAX``): a buffer
#: larger than this is a fresh mapping on every call, its pages faulted in as they are first
#: written (9,217 minor faults for a 36 MiB reordered weight; session 20, README *Weights
#: evicted, then page faults*), unless the top of the heap happens to hold it.
MMAP_MAX_BYTES = 32 * 2**20
_INPLACE = ("relu", "relu6", "silu")  # the families' activations write their input


def bench_variant(bench: pd.DataFrame) -> int | str:
    """The allocator variant a kernel benchmark records (its ``alloc_variant`` column, since
    session 20), else :data:`~carb_lib.vocab.DEFAULT_ALLOC_BLOCK`; ``ValueError`` for a mix."""
    from carb_lib.families._alloc import parse_variant

    seen = (bench["alloc_variant"].dropna().astype(str).unique()
            if "alloc_variant" in bench.columns else [])
    if len(seen) > 1:
        raise ValueError(f"the kernel benchmark mixes allocator variants {sorted(seen)}; "
                         "give KernelModel(faults=VARIANT)")
    return parse_variant(seen[0]) if len(seen) == 1 else DEFAULT_ALLOC_BLOCK


def _mmap_mib(ops: pd.DataFrame, variant: int | str = DEFAULT_ALLOC_BLOCK, *,
              inclusive: bool = False) -> np.ndarray:
    """MiB an operator allocates per call in buffers past :data:`MMAP_MAX_BYTES`, by the
    allocator model's events (:mod:`carb_lib.families._alloc`, exact to the byte for peak
    memory) on a CPU of allocator ``variant``: outputs, oneDNN's reordered inputs, weights and
    outputs, column buffers, max-pool indices (in-place activations allocate nothing).

    ``inclusive``: count buffers of exactly 32 MiB too. glibc maps them afresh in a new
    process (8,193 faults per call; session 22, ``scripts/mmap_boundary.py``), but in a long
    benchmark process the heap often serves them, and the fault check agrees no better with
    them counted; the default (and every fitted fault cost) leaves them out."""
    from carb_lib.families import _alloc

    block, fp16_dnn = _alloc.variant_parts(variant)
    cols = ("kind", "cin", "cout", "k", "stride", "pad", "groups", "h_in", "h_out", "batch",
            "precision")
    keys = list(zip(*(ops[c].tolist() for c in cols), strict=True))
    memo: dict[tuple, float] = {}
    out = np.empty(len(keys))
    for i, key in enumerate(keys):
        if key not in memo:
            memo[key] = _mapped_bytes(key, block, fp16_dnn, _alloc, inclusive) / 2**20
        out[i] = memo[key]
    return out


def network_mmap_mib(rows: pd.DataFrame, variant: int | str = DEFAULT_ALLOC_BLOCK) -> np.ndarray:
    """MiB each row's network maps past 32 MiB per call (:func:`_mmap_mib` summed over its
    operators, :func:`carb_lib.kernels.network_ops`, at the row's batch and precision): what a
    call pays in minor page faults with the default heap, where the heap does not happen to
    hold a free block that size (session 28), and nothing with ``cpu_keep_heap`` (session 29).

    Examples
    --------
    >>> import pandas as pd
    >>> from carb_lib.cache_probe import network_mmap_mib
    >>> row = dict(family="resnet", block="basic", depth=18, width=1.0, early_downsample=True,
    ...            resolution=224, num_classes=1000, precision="fp32")
    >>> network_mmap_mib(pd.DataFrame([{**row, "batch": 1}, {**row, "batch": 64}]), 16).round(1)
    array([   0., 1715.])
    """
    from carb_lib.kernels import network_ops

    ops, arch = network_ops(rows)
    per = pd.DataFrame({"arch_id": arch, "batch": rows["batch"].to_numpy(),
                        "precision": rows["precision"].astype(str).to_numpy(),
                        "row": np.arange(len(rows))})
    calls = ops.merge(per, on="arch_id")
    calls["mib"] = _mmap_mib(calls, variant)
    return calls.groupby("row")["mib"].sum().reindex(range(len(rows)), fill_value=0.0).to_numpy()


#: 4 KiB pages per MiB (one minor fault per page written in a fresh mapping).
PAGES_PER_MIB = 256


@dataclass(frozen=True)
class FaultAgreement:
    """Which operators of a kernel benchmark fault where the allocator model says they map
    buffers past 32 MiB (:func:`fault_agreement`; arrays index the benchmark's rows)."""

    mib: np.ndarray  #: MiB each operator is expected to map per call (``_mmap_mib``)
    mapped: np.ndarray  #: expected to map at least one buffer
    hit: np.ndarray  #: faults at least 0.9x the expected pages
    quiet: np.ndarray  #: fewer than 100 faults per call

    @property
    def disagreeing(self) -> np.ndarray:
        """Expected to map but faulting less, or not expected to and faulting."""
        return (self.mapped & ~self.hit) | (~self.mapped & ~self.quiet)


def fault_agreement(bench: pd.DataFrame, variant: int | str, *,
                    inclusive: bool = False) -> FaultAgreement:
    """The allocator model's mapped buffers against a benchmark's ``faults_per_call``
    (``scripts/kernel_faults_check.py``; ``inclusive`` as in ``_mmap_mib``)."""
    mib = _mmap_mib(bench, variant, inclusive=inclusive)
    faults = bench["faults_per_call"].to_numpy(dtype=float)
    return FaultAgreement(mib=mib, mapped=mib > 0, hit=faults >= 0.9 * mib * PAGES_PER_MIB,
                          quiet=faults < 100)


def _mapped_bytes(op: tuple, block: int, fp16_dnn: bool, _alloc,
                  inclusive: bool = False) -> float:
    kind, cin, cout, k, stride, pad, groups, h_in, h_out, n, prec = op
    n, hw_in, hw_out = int(n), int(h_in) ** 2, int(h_out) ** 2
    if kind in ("conv", "dwconv"):
        ev = _alloc.conv_events(prec, n, int(cin), int(cout), (int(k), int(k)),
                                (int(stride), int(stride)), (int(pad), int(pad)), int(groups),
                                hw_in, hw_out, block=block, fp16_onednn=fp16_dnn)
    elif kind == "bn":
        ev = _alloc.bn_events(prec, int(cin), int(cin) * hw_in)
    elif kind == "maxpool":
        ev = _alloc.maxpool_events(prec, int(cout) * hw_out)
    elif kind == "avgpool":
        ev = _alloc.global_pool_events(prec, int(cout), int(cin) * hw_in)
    elif kind in _INPLACE:
        ev = []
    else:  # add, mul, sigmoid, linear: a new output
        ev = _alloc._new_events(prec, int(cout) * hw_out)
    sizes = (e[0] * n + e[1] for e in ev)
    if inclusive:
        return float(sum(b for b in sizes if b >= MMAP_MAX_BYTES))
    return float(sum(b for b in sizes if b > MMAP_MAX_BYTES))


def _weight_traffic(o: pd.DataFrame, cache: CacheKnee, traffic: str) -> np.ndarray:
    """Operator times ``o["t"]`` (ms, one row per call of a network ``uid``) with each weighted
    operator's weights read from memory where its network's weights exceed ``cache.cache_mib``
    (:class:`KernelModel`'s ``cache`` and ``traffic``)."""
    w = _byte_parts(o)[2]
    over = (pd.Series(w).groupby(o["uid"].to_numpy()).transform("sum").to_numpy()
            > cache.cache_mib * 2**20)
    read_ms = w / (cache.memory_gb_per_s * 1e9) * 1e3
    t = o["t"].to_numpy(dtype=float)
    slow = np.maximum(t, read_ms) if traffic == "max" else t + read_ms
    return np.where(over, slow, t)
