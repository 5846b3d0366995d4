"""Kernel characterization: every operator a network runs, timed alone, predicted, summed.

The roofline law (:mod:`carb_lib.ensemble.base_models`) reads a network through four numbers (FLOPs,
bytes, layers, batch) whose constants are fitted on measured networks. It cannot know what a
family it never saw costs per FLOP (on this project's CPU, one thread, a depthwise 3x3
convolution runs at a median 5.7 GFLOP/s in float32, a dense 3x3 at 52) nor the kernel regime of a batch it never saw (PyTorch
sends a one-image 3x3 convolution to a different kernel than a batch of two). This module
characterizes the platform at the level where those differences live, the operator:

1. :func:`sample_kernels` (:mod:`carb_lib.kernels.operators`) draws operators from a *generic* grid
   (dense, depthwise and pointwise convolutions, linear layers, batch norm, activations,
   residual adds, SE scaling, pooling; channels, spatial sizes, strides, batch sizes and
   precisions) — from no network family's configs;
2. :func:`bench_kernels` times each alone on the platform (the profiler's thread count,
   ``torch.inference_mode()``, warm-up, median of timed windows): ``carb kernels``;
3. :class:`KernelModel` learns, from the operator's shape, its log time relative to a nominal
   roofline time (LightGBM);
4. :func:`network_ops` lists the operators of any family's network (the family's analytic pass,
   ``Family.op_list``, else a dispatch mode on the ``meta`` device; once per architecture and
   resolution) and :func:`with_kernel_column` adds their predicted times, summed, as
   :data:`~carb_lib.core.vocab.KERNEL_FEATURE`.

The ``kernel`` latency law (``CARBRegressor(latency_law="kernel")``) then fits ``network time
~ a * kernel_ms + ...`` per precision: the per-operator costs come from the characterization,
not from the measured networks, so they carry to families and batch sizes those never showed.

Examples
--------
>>> from carb_lib import kernels
>>> ops = kernels.sample_kernels(20, seed=0)
>>> bench = kernels.bench_kernels(ops, progress=False)            # doctest: +SKIP
>>> model = kernels.KernelModel().fit(bench)                       # doctest: +SKIP
>>> rows = kernels.with_kernel_column(rows, model)                 # doctest: +SKIP
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.utils._param_validation import Interval, Options, StrOptions
from sklearn.utils.validation import check_is_fitted

from carb_lib.core.metrics import regression_metrics
from carb_lib.core.vocab import FP16_ONEDNN_VARIANT, KERNEL_FEATURE
from carb_lib.families._alloc import host_variant, uses_onednn_array
from carb_lib.kernels._memory import _mmap_mib, _weight_traffic
from carb_lib.kernels.cache_probe import CacheKnee, bench_variant
from carb_lib.kernels.op_lists import network_ops, recorded_ops  # re-exported
from carb_lib.kernels.operators import (  # the operator vocabulary, sampler and file, re-exported
    _ELTWISE,
    BENCH_COLUMNS,
    DRAW_COLUMN,
    KERNEL_KINDS,
    OP_COLUMNS,
    SAMPLER_VERSION,
    _byte_parts,
    _check_ops,
    _op_flops,
    _weighted,
    check_append,
    read_bench,
    sample_kernels,
)
from carb_lib.measure import heap
from carb_lib.measure.devices import CpuDevice, cpu_identity
from carb_lib.measure.interference import code_version

__all__ = [
    "BENCH_COLUMNS", "DRAW_COLUMN", "KERNEL_GROUPS", "KERNEL_KINDS", "OP_COLUMNS", "SAMPLER_VERSION",
    "TAPS_FEATURE", "KernelCheck", "KernelModel", "bench_kernels", "check_append", "faults_per_call",
    "fit_kernel_model", "holdout_check", "kernel_features", "network_ops", "read_bench", "recorded_ops",
    "sample_kernels", "with_kernel_column"]  # fmt: skip

logger = logging.getLogger(__name__)

#: ``KernelModel(draws="aligned")``: rounds of leave-one-draw-out fits, and their trees.
_ALIGN_ROUNDS, _ALIGN_TREES = 3, 200
#: ``KernelModel(faults=True)``: fewest operators mapping buffers to fit a fault cost on, and
#: the least share of an operator's time left to the trees once its fault term is taken out.
_MIN_FAULT_OPS, _MIN_LEFT = 5, 0.1


def _flops(ops: pd.DataFrame) -> np.ndarray:
    """:func:`_op_flops` of every operator of ``ops``."""
    f = {c: ops[c].to_numpy(dtype=float) for c in ("cin", "cout", "k", "groups", "h_out", "batch")}
    return _op_flops(_weighted(ops), f["batch"], f["cin"], f["cout"], f["k"], f["groups"],
                     f["h_out"])


def _twos(values: pd.Series) -> np.ndarray:
    """How many times each positive integer divides by 2 (its trailing zero bits, <= 16)."""
    v = values.to_numpy(dtype=np.int64)
    return np.log2(np.minimum(v & -v, 1 << 16)).astype(float)


#: Prefixes of the :func:`kernel_features` that ``KernelModel(features="shape")`` leaves out.
_REGIME_FEATURES = ("log_gemm_", "log_cols_bytes", "align_")
#: Nominal rates of :func:`_roofline_ms` (FLOP/s of convolutions and linear layers, bytes/s):
#: the kernel model learns each operator's time *relative* to them, so they only decide where
#: an operator larger than any timed one switches from compute- to memory-bound.
NOMINAL_FLOPS, NOMINAL_BYTES = 5e10, 1e10


def _roofline_ms(ops: pd.DataFrame) -> np.ndarray:
    """An operator's nominal roofline time (ms), the unit of the kernel model's target: the
    larger of its FLOPs at :data:`NOMINAL_FLOPS` and its bytes at :data:`NOMINAL_BYTES`."""
    compute = np.where(_weighted(ops), _flops(ops) / NOMINAL_FLOPS, 0.0)
    return 1e3 * np.maximum(compute, sum(_byte_parts(ops)) / NOMINAL_BYTES)


# --------------------------------------------------------------------------- timing
def _layer(r: pd.Series | dict, nn: Any) -> Any:
    """The ``torch.nn`` module of operator ``r`` (``nn`` is ``torch.nn``); None for ``add`` and
    ``mul``, which are arithmetic on two tensors."""
    kind, cin, cout = str(r["kind"]), int(r["cin"]), int(r["cout"])
    if kind in ("add", "mul"):
        return None
    k, s, p = int(r["k"]), int(r["stride"]), int(r["pad"])
    make = {
        "linear": lambda: nn.Linear(cin, cout),
        "conv": lambda: nn.Conv2d(cin, cout, k, s, p, bias=False),
        "dwconv": lambda: nn.Conv2d(cin, cout, k, s, p, groups=int(r["groups"]), bias=False),
        "bn": lambda: nn.BatchNorm2d(cin),
        "relu": lambda: nn.ReLU(inplace=True),
        "relu6": lambda: nn.ReLU6(inplace=True),
        "silu": lambda: nn.SiLU(inplace=True),
        "sigmoid": lambda: nn.Sigmoid(),
        "maxpool": lambda: nn.MaxPool2d(k, s, p),
        "avgpool": lambda: nn.AdaptiveAvgPool2d(1),
    }.get(kind)
    if make is None:
        raise ValueError(f"unknown kernel kind {kind!r}; valid: {list(KERNEL_KINDS)}")
    return make()


def _module(r: pd.Series | dict, dtype: Any) -> Callable[[], Any]:
    """A no-argument call running operator ``r`` on random input."""
    import torch

    kind, b, cin, h = str(r["kind"]), int(r["batch"]), int(r["cin"]), int(r["h_in"])
    m = _layer(r, torch.nn)
    x = (torch.randn(b, cin) if kind == "linear" else torch.randn(b, cin, h, h)).to(dtype)
    if kind == "add":
        y = torch.randn_like(x)
        return lambda: x + y
    if kind == "mul":
        scale = torch.rand(b, cin, 1, 1).to(dtype)
        return lambda: x * scale
    m = m.to(dtype).eval()
    return lambda: m(x)


@contextmanager
def timing_protocol(threads: int, *, flush_denormal: bool = True) -> Iterator[bool]:
    """Within the block, torch runs on ``threads`` intra-op threads and, with
    ``flush_denormal``, flushes denormals to zero; both are put back after it (denormal
    flushing off: torch cannot say whether it was on). Yields whether denormals are flushed
    (False where the CPU cannot). The one protocol of every operator timing: the benchmark
    (:func:`bench_kernels`), chains (:func:`carb_lib.kernels.chains.time_chains`) and a
    network's own calls (:meth:`carb_lib.kernels.replay.CallCache.time_calls`)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(int(threads))
    flushed = bool(flush_denormal) and torch.set_flush_denormal(True)  # False: not supported
    try:
        yield flushed
    finally:
        torch.set_num_threads(before)
        if flushed:
            torch.set_flush_denormal(False)


def _time_call(call: Callable[[], Any], window_s: float, n_windows: int) -> tuple[float, float, int]:
    """Median seconds per call over ``n_windows`` windows of >= ``window_s`` each (after two
    warm-up calls), the windows' CV, and the calls per window."""
    import torch

    with torch.inference_mode():
        t0 = time.perf_counter()
        call()
        first = time.perf_counter() - t0
        call()
        n = max(1, int(window_s / max(first, 1e-7)))
        ws = np.empty(n_windows)
        for i in range(n_windows):
            t0 = time.perf_counter()
            for _ in range(n):
                call()
            ws[i] = (time.perf_counter() - t0) / n
    return float(np.median(ws)), float(ws.std() / ws.mean()), n


def faults_per_call(call: Callable[[], Any], n: int = 3) -> float:
    """Minor page faults per call of ``call`` (this process's, over ``n`` calls after one)."""
    import resource

    import torch

    with torch.inference_mode():
        call()
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(n):
            call()
        return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / n


def bench_kernels(ops: pd.DataFrame, *, threads: int = 1, window_s: float = 0.02,
                  n_windows: int = 5, platform: str | None = None, progress: bool = True,
                  on_chunk: Callable[[pd.DataFrame], None] | None = None,
                  chunk: int = 200, keep_heap: bool = False,
                  flush_denormal: bool = True) -> pd.DataFrame:
    """Time every operator of ``ops`` alone on this CPU.

    Parameters
    ----------
    ops : pandas.DataFrame
        :data:`OP_COLUMNS`, ``batch`` and ``precision`` (e.g. :func:`sample_kernels`).
    threads : int, default=1
        Intra-op threads (the profiler's protocol uses 1).
    window_s : float, default=0.02
        Least duration of one timed window (calls are repeated to fill it).
    n_windows : int, default=5
        Timed windows; ``time_ms`` is their median, ``cv`` their coefficient of variation.
    platform : str, optional
        Platform name of the rows (default: the CPU device's).
    progress : bool, default=True
        A tqdm bar.
    on_chunk : callable, optional
        Called with the rows measured so far every ``chunk`` operators and on Ctrl-C (save
        them: an interrupted benchmark keeps every operator it measured).
    keep_heap : bool, default=False
        Keep this process's heap first (:func:`carb_lib.measure.heap.keep_heap`, for good): no
        operator then maps its buffers afresh per call, as ``Protocol(cpu_keep_heap=True)``
        does for networks (since 2026-12-03).
    flush_denormal : bool, default=True
        Flush denormals to zero while timing (``torch.set_flush_denormal``): an in-place ``silu``
        called again and again halves its values into the denormal range, up to ~50x slower on
        x86, as a network's SiLU on fresh values never is (rows record ``denormals_flushed``).

    Returns
    -------
    pandas.DataFrame
        :data:`BENCH_COLUMNS`, ``faults_per_call`` (minor page faults per call over 3 calls
        after the timing: buffers past glibc's mmap threshold, :func:`faults_per_call`) and
        provenance (``platform``, ``cpu_id``, ``threads``, ``alloc_variant`` (the allocator
        variant, :func:`carb_lib.families._alloc.host_variant`; since 2026-12-02),
        ``torch_version``, ``measured_at``, ``carb_version``, ``git_commit``, ``heap_kept``,
        ``denormals_flushed``).
    """
    import torch
    from tqdm.auto import tqdm

    _check_ops(ops, need=("batch", "precision"))
    if keep_heap:
        heap.keep_heap()
    with timing_protocol(threads, flush_denormal=flush_denormal) as flushed:
        plat = platform or CpuDevice().platform
        prov = {"platform": plat, "cpu_id": cpu_identity(), "threads": int(threads),
                "alloc_variant": str(host_variant()), "torch_version": torch.__version__,
                "heap_kept": heap.heap_kept(), "denormals_flushed": flushed, **code_version()}
        rows: list[dict[str, Any]] = []
        try:
            for _, r in tqdm(ops.iterrows(), total=len(ops), desc="kernels",
                             disable=not progress):
                dtype = torch.float16 if r["precision"] == "fp16" else torch.float32
                call = _module(r, dtype)
                t, cv, n = _time_call(call, window_s, n_windows)
                rows.append({**{c: r[c] for c in (*OP_COLUMNS, "batch", "precision")},
                             "time_ms": 1e3 * t, "cv": cv, "n_iter": n,
                             "faults_per_call": faults_per_call(call),
                             "measured_at": pd.Timestamp.now(tz="UTC"), **prov})
                if on_chunk is not None and len(rows) % chunk == 0:
                    on_chunk(pd.DataFrame(rows))
        except KeyboardInterrupt:  # Ctrl-C: hand over every row measured, then stop
            if on_chunk is not None and rows:
                on_chunk(pd.DataFrame(rows))
            raise
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- the model
#: :func:`kernel_features`' log share of a kernel's taps inside the input (read by
#: ``KernelModel(features="taps")`` only).
TAPS_FEATURE = "log_tap_share"


def kernel_features(ops: pd.DataFrame) -> pd.DataFrame:
    """The kernel model's inputs: kind indicators, log shapes, FLOPs and bytes, precision,
    whether PyTorch's ``use_mkldnn`` rule sends a float32 convolution to oneDNN (one thread),
    the dimensions of the matrix product a convolution becomes, with its column buffer, and the
    power-of-two alignment of channels and spatial sizes."""
    _check_ops(ops, need=("batch", "precision"))
    f = {c: ops[c].to_numpy(dtype=float) for c in ("batch", "cin", "cout", "k", "stride",
                                                    "groups", "h_in", "h_out")}
    kind = ops["kind"].astype(str).to_numpy()
    prec = ops["precision"].astype(str).to_numpy()
    bpe = np.where(prec == "fp16", 2.0, 4.0)
    conv = np.isin(kind, ("conv", "dwconv"))
    in_bytes, out_bytes, w_bytes = _byte_parts(ops)
    onednn = (conv & uses_onednn_array(prec, f["batch"], f["cin"], f["k"], f["stride"],
                                       f["groups"], f["h_in"] ** 2)).astype(float)
    out = {f"is_{k}": (kind == k).astype(float) for k in KERNEL_KINDS}
    b = f["batch"]
    out.update({
        "log_batch": np.log(b), "log_cin": np.log(f["cin"]), "log_cout": np.log(f["cout"]),
        "k": f["k"], "stride": f["stride"], "log_h_in": np.log(f["h_in"]),
        "log_h_out": np.log(f["h_out"]), "fp16": (prec == "fp16").astype(float),
        "log_flops": np.log(np.maximum(_flops(ops), 1.0)),
        "log_in_bytes": np.log(in_bytes), "log_out_bytes": np.log(out_bytes),
        "log_w_bytes": np.log(np.where(w_bytes > 0, w_bytes, bpe)),  # log(bpe): no weights
        "onednn": onednn, "batch1": (b == 1).astype(float),
        # the matrix product a convolution becomes (im2col: M out channels, N output pixels of
        # the batch, K inputs per output) and its column buffer, where CPU kernels change regime
        "log_gemm_m": np.log(f["cout"] / f["groups"]), "log_gemm_n": np.log(f["h_out"] ** 2 * b),
        "log_gemm_k": np.log(f["cin"] / f["groups"] * f["k"] ** 2),
        "log_cols_bytes": np.log(b * f["cin"] * f["k"] ** 2 * f["h_out"] ** 2 * bpe),
        # power-of-two alignment of the sizes (cache-set aliasing: float16 3x3 convolutions
        # at 16, 32 or 64 px run at a third of the rate they reach at 14, 28 or 56)
        **{f"align_{c}": _twos(ops[c]) for c in ("cin", "cout", "h_in", "h_out")},
        # the share of a kernel's taps that can land on the input (a 5 x 5 depthwise conv on
        # a 1 x 1 map reads 1 of its 25 taps; PyTorch runs such convs at ~0.1 GFLOP/s)
        TAPS_FEATURE: 2 * np.log(np.minimum(f["k"], f["h_in"]) / f["k"]),
    })  # fmt: skip
    return pd.DataFrame(out, index=ops.index)


class KernelModel(RegressorMixin, BaseEstimator):
    """Predict one operator's time (ms) on a platform from its shape (LightGBM).

    By default the trees learn the log ratio of an operator's time to its FLOPs (to its
    elements for a memory-bound operator): an operator larger than any timed one keeps the
    time per FLOP of its largest neighbours, and its time grows with its FLOPs. Trees on log
    time stop at the largest time they saw. The target and the
    feature set were chosen on held-out *operators* (``docs/experiments.md``,
    ``results/carb/kernel_model_choice.txt``), never on network rows.

    Parameters
    ----------
    n_estimators : int, default=600
    learning_rate : float, default=0.05
    num_leaves : int, default=31
    target : {"flops", "roofline", "time"}, default="flops"
        What the trees learn: log(time / FLOPs) (elements for memory-bound operators),
        log(time / nominal roofline time) (the larger of FLOPs at 50 GFLOP/s and bytes at
        10 GB/s; the default of 2026-12-01), or log time (the 2026-12-01 model). ``"flops"``
        became the default on 2026-12-01 by a rule fixed before its run
        (a paired test, ``docs/experiments.md``: held-out operator MAPE 18.62 against 19.05 %,
        paired gap -0.43 +- 0.04 SE over 10 seeds, not behind on the largest operators).
    features : {"all", "shape", "taps"}, default="all"
        :func:`kernel_features` without :data:`TAPS_FEATURE` (``"all"``), also without the
        matrix-product dimensions and power-of-two alignments (``"shape"``: the 2026-12-01 set),
        or whole (``"taps"``: with the share of a kernel's taps inside its input, a campaign of 2026-12-01;
        not the default yet: README, *Where efficientnet's gap comes from*).
    draws : {"aligned", "pooled"}, default="aligned"
        How the draws of a benchmark grown with ``carb kernels --append`` (its
        :data:`DRAW_COLUMN`, one timing session each) are combined. ``"pooled"``: as timed.
        ``"aligned"``: each draw's host speed is estimated and removed before the trees are
        fitted, so that every draw is on one scale (on a shared VM the host's speed differs
        between sessions: the four Zen 3 draws by up to 1.5x, measured by re-timing them in one
        campaign, ``docs/experiments.md``). A draw's log speed is the median log
        residual of its operators under a model fitted on the other draws (themselves
        aligned; :data:`_ALIGN_ROUNDS` rounds of :data:`_ALIGN_TREES` trees); the
        operator-weighted mean log speed is the reference, at which :meth:`predict` answers.
        The draws must overlap in shape (every sampler draws most operators from the same
        grid). One draw, or no :data:`DRAW_COLUMN`: the same as ``"pooled"``. Chosen on
        held-out operators (``docs/experiments.md``: criterion 25.4 against 30.7
        pooled on the Zen 3's 15,000 operators).
    random_state : int, default=0
    faults : bool, int or str, default=False
        Split each operator's time into what the trees learn and a page-fault term: every MiB
        it allocates per call in buffers past glibc's mmap threshold
        (:data:`carb_lib.kernels._memory.MMAP_MAX_BYTES`; which buffers: the allocator model's
        events on a CPU of allocator variant ``faults``, 8, 16 or ``"16+fp16"``; for ``True``
        the benchmark's ``alloc_variant`` column, recorded since 2026-12-02, else 8) costs
        ``fault_ms_per_mib_``, fitted on the benchmark's operators that allocate such buffers
        against trees fitted on those that do not. The trees alone cannot place the step at
        32 MiB where the benchmark has no operators near it (a campaign of 2026-12-02: a 36 MiB convolution
        on a 1 x 1 map at batch 2, predicted 6.0 ms, runs 17 ms in the network).
    cache : carb_lib.kernels.cache_probe.CacheKnee or None, default=None
        The platform's read-bandwidth knee (:func:`carb_lib.kernels.cache_probe.cache_knee` of a
        :func:`~carb_lib.kernels.cache_probe.read_bandwidth` probe on that machine). When given,
        :func:`with_kernel_column` treats a network whose weights exceed ``cache.cache_mib`` as
        reading every weighted operator's weights from memory on each call (the other layers
        evicted them since its last call), at ``cache.memory_gb_per_s``: see ``traffic``.
        ``None``: operators count as timed alone, weights in cache. It does not change
        :meth:`predict` (one operator, timed alone).
    traffic : {"max", "sum"}, default="sum"
        How an operator's weights read from memory combine with its time alone: ``time + weight
        bytes / bandwidth`` (a measured test (docs/experiments.md), a campaign of 2026-12-04) or ``max(time, weight bytes /
        bandwidth)`` (the reading overlaps the compute; the default before). Read with ``cache``.

    Attributes
    ----------
    model_ : lightgbm.LGBMRegressor
    features_ : list of str
        The columns of :func:`kernel_features` the trees read.
    platform_ : str or None
        The benchmark's platform (None if it has no ``platform`` column).
    n_ops_ : int
        Operators it was fitted on.
    fault_ms_per_mib_ : float
        With ``faults``: ms per MiB of freshly mapped buffers (0.0 without, or with fewer than
        :data:`_MIN_FAULT_OPS` operators that allocate them).
    fault_variant_ : int, str or None
        The allocator variant whose buffers count (None without ``faults``).
    draw_speed_ : dict of int to float
        Each draw's time relative to the reference (> 1: a slower host), 1.0 for every draw
        when ``draws="pooled"`` or the benchmark holds one draw; empty without
        :data:`DRAW_COLUMN`.

    Examples
    --------
    >>> from carb_lib.kernels.law import KernelModel, read_bench
    >>> model = KernelModel().fit(read_bench("data/cpu_epyc_zen3_2c/design/kernels.parquet"))  # doctest: +SKIP
    >>> model.predict(ops)  # ms per operator                              # doctest: +SKIP
    """

    _parameter_constraints: dict = {
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "num_leaves": [Interval(Integral, 2, None, closed="left")],
        "target": [StrOptions({"roofline", "flops", "time"})],
        "features": [StrOptions({"all", "shape", "taps"})],
        "draws": [StrOptions({"pooled", "aligned"})],
        "random_state": ["random_state"],
        "faults": ["boolean", Options(Integral, {8, 16}), StrOptions({FP16_ONEDNN_VARIANT})],
        "cache": [CacheKnee, None],
        "traffic": [StrOptions({"max", "sum"})],
    }

    def __init__(self, n_estimators: int = 600, *, learning_rate: float = 0.05,
                 num_leaves: int = 31, target: str = "flops", features: str = "all",
                 draws: str = "aligned", random_state: int = 0, faults: bool | int | str = False,
                 cache: CacheKnee | None = None, traffic: str = "sum") -> None:
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.target = target
        self.features = features
        self.draws = draws
        self.random_state = random_state
        self.faults = faults
        self.cache = cache
        self.traffic = traffic

    def _unit(self, ops: pd.DataFrame) -> np.ndarray:
        """Log of the unit the trees' target is relative to (0 for ``target="time"``)."""
        if self.target == "roofline":
            return np.log(_roofline_ms(ops))
        if self.target == "flops":
            return np.log(np.maximum(_flops(ops), 1.0))
        return np.zeros(len(ops))

    def _X(self, ops: pd.DataFrame) -> pd.DataFrame:
        X = kernel_features(ops)
        return X[self.features_] if hasattr(self, "features_") else X

    def fit(self, bench: pd.DataFrame, y: Any = None) -> KernelModel:
        """Fit on a kernel benchmark (``time_ms`` of each operator; ``y`` is ignored)."""
        self._validate_params()
        if "time_ms" not in bench.columns:
            raise ValueError("the kernel benchmark lacks column 'time_ms'")
        t = pd.to_numeric(bench["time_ms"], errors="coerce").to_numpy(dtype=float)
        ok = np.isfinite(t) & (t > 0)
        if ok.sum() < 20:
            raise ValueError(f"a kernel model needs >= 20 timed operators, got {int(ok.sum())}")
        rows = bench.loc[ok]
        X = kernel_features(rows)
        if self.features != "taps":
            X = X.drop(columns=TAPS_FEATURE)
        if self.features == "shape":
            X = X[[c for c in X.columns if not c.startswith(_REGIME_FEATURES)]]
        self.features_ = list(X.columns)
        t = t[ok]
        self.fault_variant_, self.fault_ms_per_mib_ = None, 0.0
        if self.faults is not False:
            self.fault_variant_ = self.faults if self.faults is not True else bench_variant(rows)
            mib = self._mapped(rows)
            self.fault_ms_per_mib_ = self._fault_cost(X, t, rows, mib)
            if self.fault_ms_per_mib_ > 0:
                t = np.maximum(t - self.fault_ms_per_mib_ * mib, _MIN_LEFT * t)
        y = np.log(t) - self._unit(rows)
        draw = _draws(rows)
        seeds, codes = np.unique(draw, return_inverse=True)
        log_speed = np.zeros(len(seeds))
        if self.draws == "aligned" and len(seeds) > 1:
            log_speed = self._draw_log_speeds(X, y, codes)
        speeds = np.exp(log_speed)
        self.draw_speed_ = ({int(d): float(v) for d, v in zip(seeds, speeds, strict=True)}
                            if DRAW_COLUMN in rows.columns else {})
        self.model_ = self._trees(self.n_estimators).fit(X, y - log_speed[codes])
        plats = bench["platform"].dropna().astype(str).unique() if "platform" in bench else []
        self.platform_ = str(plats[0]) if len(plats) == 1 else None
        self.n_ops_ = int(ok.sum())
        return self

    def _mapped(self, ops: pd.DataFrame) -> np.ndarray:
        """MiB each operator maps afresh per call (``fault_variant_``)."""
        return _mmap_mib(ops, self.fault_variant_)

    def _fault_cost(self, X: pd.DataFrame, t: np.ndarray, rows: pd.DataFrame,
                    mib: np.ndarray) -> float:
        """ms per freshly mapped MiB (``mib`` per operator): the median, over operators that map
        buffers, of their time beyond what trees fitted on the others predict, per MiB (>= 0)."""
        mapped = mib > 0
        if mapped.sum() < _MIN_FAULT_OPS or (~mapped).sum() < 20:
            logger.info("faults: %d operators map buffers past 32 MiB; no fault term",
                        int(mapped.sum()))
            return 0.0
        unit = self._unit(rows)
        trees = self._trees(self.n_estimators).fit(X[~mapped], np.log(t[~mapped]) - unit[~mapped])
        rest = np.exp(trees.predict(X[mapped]) + unit[mapped])
        return float(max(np.median((t[mapped] - rest) / mib[mapped]), 0.0))

    def _trees(self, n_estimators: int) -> Any:
        from lightgbm import LGBMRegressor

        return LGBMRegressor(
            n_estimators=n_estimators, learning_rate=self.learning_rate,
            num_leaves=self.num_leaves, min_child_samples=5, subsample=0.8, subsample_freq=1,
            colsample_bytree=0.9, n_jobs=1, verbose=-1, random_state=self.random_state,
            deterministic=True, force_row_wise=True)  # no timed choice of histogram layout

    def _draw_log_speeds(self, X: pd.DataFrame, y: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """Each draw's log speed, centred on the operator-weighted mean.

        A round fits trees on the other draws (aligned by the current estimate) and takes the
        median log residual of the draw's operators; the estimate moves half way to it (a
        damped fixed-point iteration: the undamped one swaps two draws' speeds every round).
        """
        n = np.bincount(codes).astype(float)
        log_speed = np.zeros(len(n))
        for _ in range(_ALIGN_ROUNDS):
            new = np.empty_like(log_speed)
            for j in range(len(n)):
                own = codes == j
                trees = self._trees(min(self.n_estimators, _ALIGN_TREES)).fit(
                    X[~own], y[~own] - log_speed[codes[~own]])
                new[j] = np.median(y[own] - trees.predict(X[own]))
            log_speed = 0.5 * (log_speed + new)
            log_speed -= np.average(log_speed, weights=n)
        return log_speed

    def predict(self, ops: pd.DataFrame, *, n_jobs: int = 1,
                at_draw_speed: bool = False) -> np.ndarray:
        """Predicted time (ms) of each operator (:data:`OP_COLUMNS`, ``batch``, ``precision``),
        on ``n_jobs`` threads (the same numbers on any number), at the reference host speed;
        with ``at_draw_speed=True`` at the speed of each operator's draw
        (:data:`DRAW_COLUMN`, ``draw_speed_``; the reference for a draw it was not fitted on).
        """
        check_is_fitted(self)
        if len(ops) == 0:
            return np.zeros(0)
        log_ratio = self.model_.predict(self._X(ops), num_threads=int(n_jobs))
        if at_draw_speed:
            log_ratio = log_ratio + np.log([self.draw_speed_.get(int(d), 1.0)
                                            for d in _draws(ops)])
        t = np.exp(log_ratio + self._unit(ops))
        if getattr(self, "fault_ms_per_mib_", 0.0) > 0:
            t = t + self.fault_ms_per_mib_ * self._mapped(ops)
        return t


def _draws(ops: pd.DataFrame) -> np.ndarray:
    """Each operator's draw (:data:`DRAW_COLUMN`; -1 where missing or unrecorded)."""
    if DRAW_COLUMN not in ops.columns:
        return np.full(len(ops), -1, dtype=np.int64)
    return pd.to_numeric(ops[DRAW_COLUMN], errors="coerce").fillna(-1).to_numpy(np.int64)


@dataclass
class KernelCheck:
    """How well a kernel model predicts operators it was not fitted on (:func:`holdout_check`).

    Attributes
    ----------
    n_train, n_test : int
    metrics : carb_lib.core.metrics.RegressionMetrics
        On the held-out operators (MAPE %, share within +-10 %, Spearman, ...).
    by_kind : pandas.DataFrame
        ``kind``, ``precision``, ``n``, ``mape_pct``, ``median_ape_pct`` of the held-out
        operators.
    """

    n_train: int
    n_test: int
    metrics: Any
    by_kind: pd.DataFrame


def fit_kernel_model(bench: pd.DataFrame, template: KernelModel | None = None, *,
                     random_state: int = 0) -> KernelModel:
    """A clone of ``template`` (an unfitted :class:`KernelModel`; default
    ``KernelModel(random_state=random_state)``) fitted on ``bench``: the fits of one study
    take their parameters (e.g. fewer trees for a smoke run) from one model."""
    model = KernelModel(random_state=random_state) if template is None else clone(template)
    return model.fit(bench)


def holdout_check(bench: pd.DataFrame, *, test_fraction: float = 0.2, random_state: int = 0,
                  **model_params: Any) -> KernelCheck:
    """Fit a :class:`KernelModel` on a random ``1 - test_fraction`` of the timed operators and
    score it on the rest (each at its draw's speed, ``predict(at_draw_speed=True)``)."""
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    test = np.random.default_rng(random_state).random(len(bench)) < test_fraction
    tr, te = bench[~test], bench[test]
    if len(te) < 2:
        raise ValueError(f"{len(bench)} operators leave {len(te)} to test; need >= 2")
    model = KernelModel(random_state=random_state, **model_params).fit(tr)
    pred = model.predict(te, at_draw_speed=True)
    y = te["time_ms"].to_numpy(dtype=float)
    ape = 100 * np.abs(pred / y - 1)
    by = (pd.DataFrame({"kind": te["kind"].astype(str).to_numpy(),
                        "precision": te["precision"].astype(str).to_numpy(), "ape": ape})
          .groupby(["kind", "precision"])["ape"]
          .agg(n="size", mape_pct="mean", median_ape_pct="median").reset_index())
    return KernelCheck(len(tr), len(te), regression_metrics(y, pred), by)


#: Operator groups of :func:`with_kernel_column`'s ``by_group`` columns
#: (``kernel_ms_<group>``): dense convolutions, depthwise convolutions, linear layers and the
#: memory-bound operators between them (batch norm, activations, adds, SE scaling, pooling).
KERNEL_GROUPS: dict[str, tuple[str, ...]] = {"conv": ("conv",), "dwconv": ("dwconv",),
                                             "linear": ("linear",), "memory": _ELTWISE}


def with_kernel_column(df: pd.DataFrame, model: KernelModel, *, progress: bool = False,
                       n_jobs: int = 1, by_group: bool = False) -> pd.DataFrame:
    """``df`` with :data:`~carb_lib.core.vocab.KERNEL_FEATURE`: the predicted times of its
    network's operators at its batch and precision, summed (ms), each distinct operator
    predicted once on ``n_jobs`` threads. ``df`` is not modified.

    With ``by_group=True`` also ``kernel_ms_<group>`` per :data:`KERNEL_GROUPS` (they sum to
    ``kernel_ms``): where a network's operator time goes."""
    check_is_fitted(model)
    for c in ("batch", "precision"):
        if c not in df.columns:
            raise ValueError(f"rows need column {c!r} for their kernel times")
    if model.platform_ is not None and "platform" in df.columns:
        other = sorted(set(df["platform"].dropna().astype(str)) - {model.platform_})
        if other:
            raise ValueError(f"the kernel model times operators of platform {model.platform_!r}; "
                             f"rows of {other} need their own (carb kernels on that machine)")
    ops, arch_id = network_ops(df, progress=progress)
    key = pd.DataFrame({"arch_id": arch_id, "batch": df["batch"].to_numpy(dtype=np.int64),
                        "precision": df["precision"].astype(str).to_numpy()})
    uniq = key.drop_duplicates().reset_index(drop=True)
    uniq["uid"] = np.arange(len(uniq))
    o = ops.merge(uniq, on="arch_id")
    # each distinct operator (shape, batch, precision) is predicted once
    sig = [*OP_COLUMNS, "batch", "precision"]
    codes = o.groupby(sig, sort=False).ngroup().to_numpy()  # numbered by first appearance
    o["t"] = model.predict(o[sig].drop_duplicates(), n_jobs=n_jobs)[codes]
    if getattr(model, "cache", None) is not None:
        o["t"] = _weight_traffic(o, model.cache, model.traffic)
    total = o.groupby("uid")["t"].sum().reindex(uniq["uid"]).fillna(0.0).to_numpy()
    uniq[KERNEL_FEATURE] = total
    cols = [KERNEL_FEATURE]
    if by_group:
        for group, kinds in KERNEL_GROUPS.items():
            part = o[o["kind"].isin(kinds)].groupby("uid")["t"].sum()
            uniq[f"{KERNEL_FEATURE}_{group}"] = part.reindex(uniq["uid"]).fillna(0.0).to_numpy()
            cols.append(f"{KERNEL_FEATURE}_{group}")
    per_row = key.merge(uniq, on=["arch_id", "batch", "precision"], how="left")
    return df.assign(**{c: per_row[c].to_numpy() for c in cols})
