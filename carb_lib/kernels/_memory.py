"""Private helpers of the kernel characterization (:mod:`carb_lib.kernels.law`,
:mod:`carb_lib.kernels.cache_probe`): which buffers an operator maps past glibc's mmap threshold, and
the weight traffic of a network whose weights do not fit in the cache. Both public modules
import them from here, so neither imports the other's private names.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.vocab import DEFAULT_ALLOC_BLOCK
from carb_lib.families import _alloc
from carb_lib.kernels.operators import _byte_parts

#: glibc's largest ``mmap`` threshold on 64-bit Linux (``DEFAULT_MMAP_THRESHOLD_MAX``): a buffer
#: larger than this is a fresh mapping on every call, its pages faulted in as they are first
#: written (9,217 minor faults for a 36 MiB reordered weight; docs/measuring.md), unless the top of the heap happens to hold it.
MMAP_MAX_BYTES = 32 * 2**20
_INPLACE = ("relu", "relu6", "silu")  # the families' activations write their input


def _mmap_mib(ops: pd.DataFrame, variant: int | str = DEFAULT_ALLOC_BLOCK, *,
              inclusive: bool = False) -> np.ndarray:
    """MiB an operator allocates per call in buffers past :data:`MMAP_MAX_BYTES`, by the
    allocator model's events (:mod:`carb_lib.families._alloc`, exact to the byte for peak
    memory) on a CPU of allocator ``variant``: outputs, oneDNN's reordered inputs, weights and
    outputs, column buffers, max-pool indices (in-place activations allocate nothing).

    ``inclusive``: count buffers of exactly 32 MiB too. glibc maps them afresh in a new
    process (8,193 faults per call; a campaign of 2026-12-02), but in a long
    benchmark process the heap often serves them, and the fault check agrees no better with
    them counted; the default (and every fitted fault cost) leaves them out."""
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


def _weight_traffic(o: pd.DataFrame, cache: Any, traffic: str) -> np.ndarray:
    """Operator times ``o["t"]`` (ms, one row per call of a network ``uid``) with each weighted
    operator's weights read from memory where its network's weights exceed ``cache.cache_mib``
    (a :class:`~carb_lib.kernels.cache_probe.CacheKnee`; :class:`~carb_lib.kernels.law.KernelModel`'s ``cache``
    and ``traffic``)."""
    w = _byte_parts(o)[2]
    over = (pd.Series(w).groupby(o["uid"].to_numpy()).transform("sum").to_numpy()
            > cache.cache_mib * 2**20)
    read_ms = w / (cache.memory_gb_per_s * 1e9) * 1e3
    t = o["t"].to_numpy(dtype=float)
    slow = np.maximum(t, read_ms) if traffic == "max" else t + read_ms
    return np.where(over, slow, t)
