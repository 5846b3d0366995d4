"""The CPU allocator model: the bytes an eager PyTorch forward pass asks the allocator for.

CARB's CPU peak memory (:func:`carb_lib.measure.counters.cpu_peak_memory_bytes`) is the resident bytes
(parameters, buffers, the input) plus the peak of the running sum of the allocator's events
during one ``model(x)``. Those events are deterministic, and they are not only the layers'
outputs: the CPU kernels allocate scratch copies whose size depends on the kernel PyTorch
dispatches to. This module models them, per op, for PyTorch 2.x on an x86 CPU with oneDNN
(``mkldnn``) and one intra-op thread — the protocol of CARB's CPU campaigns. The rules were read
off the allocator's events of single ops (``torch.profiler`` with ``profile_memory=True``):

``Conv2d``, float32
    PyTorch's ``use_mkldnn`` heuristic picks oneDNN unless the conv is 1x1, stride 1, with fewer
    than 16 images on one thread, or has ``groups == 1``, a kernel of at most 3 x 3, one image
    and at most 20,480 input elements. oneDNN works in channel-blocked layouts (blocks of
    ``block`` channels: 8 on AVX2, 16 on AVX-512): it copies the input into a padded blocked
    tensor (not for a k > 1 conv with fewer than ``block`` input channels), reorders the
    weights (the fixed bytes ``pad(cout) x pad(cin) x k x k``; ``cin`` unpadded without the
    input copy), writes a padded blocked output, frees the input copy and weights, and reorders
    the output into a plain tensor. A strided 1x1 conv also takes a per-image scratch buffer
    (``pad(cin) x ho x wo`` floats + 128 bytes), and a bias whose length is not a multiple of
    the block a padded copy (``pad(cout) + 32`` floats). A grouped conv whose channels per group
    the block does not divide (RegNet's groups of 24 on AVX-512) runs in plain layouts: its
    input copy, weights and output are not padded (read on an AVX-512 Zen 4 with PyTorch 2.13;
    a depthwise conv, one channel per group, is blocked and padded). The slow path
    (``slow_conv2d``) unfolds the input (``cin x k x k x ho x wo`` per image; none for a 1x1
    stride-1 conv) and writes the output.
``Conv2d``, float16
    Always the slow path, unless the CPU's oneDNN runs float16 (variant
    :data:`~carb_lib.core.vocab.FP16_ONEDNN_VARIANT`, below). A grouped (depthwise) conv runs group
    by group: each group's input slice is copied (more than one image), unfolded and written
    to its own output; the outputs are concatenated at the end, so the output exists twice for
    a moment.
``Conv2d``, float16 through oneDNN (AVX512-FP16 CPUs: Intel Sapphire Rapids and later)
    Every fp16 conv, whatever its shape and batch: a fixed 8,216-byte scratch (dense convs
    only), a copy of the input (its exact size; none for a 1 x 1 input), the weights
    reordered (output channels: :func:`_fp16_onednn_oc`; for a depthwise conv padded to 16),
    the output written (its exact size); weights, input copy and
    scratch freed; then the output is copied twice (once for a 1 x 1 output) and all copies
    but one freed. Read off ``torch.profiler`` on a 2-vCPU Xeon (family 6 model 207) with
    PyTorch 2.13, some 60 conv shapes.
``BatchNorm2d``
    The output plus two float32 per-channel temporaries.
``MaxPool2d``
    The output plus int64 indices of the same size, freed at once.
global average pool
    float16 inputs are first copied to float32 (the input and the output, for a moment).
in-place activations, ``flatten``
    Nothing. Sigmoid, ``Linear``, out-of-place adds and multiplies: their output.

A walk of one architecture at one resolution runs in every *lane* — a precision, a range of
batch sizes and (fp32, and fp16 through oneDNN) a channel block, within which every size is
``a * batch + w`` (``a`` bytes per image, ``w`` fixed bytes, e.g. reordered weights) and every
kernel choice is the same: :data:`LANES`. Each event
leaves the running total at a point ``(a, w)``; the peak at batch ``n`` is the largest
``a * n + w`` over the points, and :meth:`AllocWalk.table` keeps, per lane, the :data:`K`
points that are largest at :data:`LANE_PROBES` (exact there; between probes the largest of
them). :func:`alloc_peak` evaluates them per row.
:func:`carb_lib.families.allocator.simulate_peak` runs the same rules on any ``nn.Module`` on the
``meta`` device, and the tests hold both against each other and against measured peaks.
"""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd

from carb_lib.core.vocab import ALLOC_FEATURES, DEFAULT_ALLOC_BLOCK, FP16_ONEDNN_VARIANT

#: The allocator variants modelled (:data:`carb_lib.core.vocab.ALLOC_FEATURES`): oneDNN's channel
#: blocks 8 (AVX2) and 16 (AVX-512), and :data:`~carb_lib.core.vocab.FP16_ONEDNN_VARIANT`. The walk
#: runs every lane once; each variant reads its lanes and has its feature.
BLOCKS: tuple[int | str, ...] = tuple(ALLOC_FEATURES)
#: ``(precision, lowest batch, highest batch, channel block)`` of each lane (block 0: the lane's
#: kernels never use blocked layouts; an fp16 lane with a block: fp16 convs through oneDNN).
LANES: tuple[tuple[str, int, int, int], ...] = (
    ("fp32", 1, 1, 8),
    ("fp32", 2, 15, 8),
    ("fp32", 16, 1 << 20, 8),
    ("fp16", 1, 1, 0),
    ("fp16", 2, 1 << 20, 0),
    ("fp32", 1, 1, 16),
    ("fp32", 2, 15, 16),
    ("fp32", 16, 1 << 20, 16),
    ("fp16", 1, 1, 16),
    ("fp16", 2, 15, 16),
    ("fp16", 16, 1 << 20, 16),
)
#: Batch sizes at which each lane's kept points are exact (the largest there).
LANE_PROBES: tuple[tuple[int, ...], ...] = (
    (1,),
    (2, 4, 8, 15),
    (16, 64, 256, 1024),
    (1,),
    (2, 16, 128, 1024),
    (1,),
    (2, 4, 8, 15),
    (16, 64, 256, 1024),
    (1,),
    (2, 4, 8, 15),
    (16, 64, 256, 1024),
)
#: Points kept per lane.
K: int = 4
#: :data:`LANE_PROBES` padded to ``K`` per lane (repeating the last probe).
_PROBES = np.array([(*p, *[p[-1]] * (K - len(p))) for p in LANE_PROBES], dtype=np.float64)
#: Default channel block of oneDNN's blocked layouts (8 on AVX2, 16 on AVX-512).
BLOCK: int = DEFAULT_ALLOC_BLOCK
_BPE = {"fp32": 4, "fp16": 2}
_INDEX_BYTES = 8  # int64 max-pool indices
_BN_TEMP = 4  # float32 per-channel temporaries of batch norm


#: ``(bytes per image, fixed bytes)`` or, for the op's output, ``(bytes per image, 0, True)``.
Events = list[tuple]


_LANE_PREC: tuple[str, ...] = tuple(lane[0] for lane in LANES)
_LANE_BPE_ARR = np.array([_BPE[p] for p in _LANE_PREC], dtype=np.float64)[None, :, None]


def _pad(c: int, block: int = BLOCK) -> int:
    return -(-c // block) * block


def variant_parts(variant: int | str) -> tuple[int, bool]:
    """``(channel block, fp16 convs through oneDNN)`` of an allocator variant
    (:data:`BLOCKS`); ``ValueError`` for one that is not modelled."""
    if variant == FP16_ONEDNN_VARIANT:
        return 16, True
    if variant not in BLOCKS:
        raise ValueError(f"block={variant!r} is not modelled; valid values: {list(BLOCKS)}")
    return int(variant), False


def variant_case(variant: int | str, precision: str) -> int | str:
    """The variant whose simulation gives ``variant``'s peak at ``precision``: the channel block
    alone for fp32 (``"16+fp16"`` runs fp32 as 16), the fp16 path alone for other precisions
    (8 and 16 run fp16 convs on the same slow path)."""
    channels, fp16_onednn = variant_parts(variant)
    if precision == "fp32":
        return channels
    return variant if fp16_onednn else BLOCK


def parse_variant(text: str) -> int | str:
    """An allocator variant (:data:`BLOCKS`) from its text, e.g. ``"16"`` or ``"16+fp16"`` as a
    file column or a command line holds it; ``ValueError`` for one that is not modelled."""
    variant: int | str = int(text) if str(text).isdigit() else str(text)
    variant_parts(variant)
    return variant


def host_variant() -> int | str:
    """The allocator variant (:data:`BLOCKS`) of the CPU this process runs on:
    :data:`~carb_lib.core.vocab.FP16_ONEDNN_VARIANT` where PyTorch's oneDNN runs fp16 convs, 16 on
    another AVX-512 CPU, else 8."""
    import torch

    if torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_fp16_supported():
        return FP16_ONEDNN_VARIANT
    return 16 if torch.backends.cpu.get_cpu_capability().startswith("AVX512") else 8


#: The fixed scratch (bytes) of a dense fp16 conv through oneDNN.
_FP16_DNN_SCRATCH = 8216


class AllocWalk:
    """Symbolic allocator walk of one architecture at one resolution, in every lane.

    The caller keeps the liveness (which tensors are referenced) and passes, per op, the
    elements per image already live (``live``: the input, held tensors and the op's input).
    Each op contributes, per lane, its undominated running-total points above the live bytes
    (:func:`_op_points`, kept per op geometry by a per-thread registry); :meth:`table`
    evaluates them all at once.
    """

    def __init__(self, threads: int = 1) -> None:
        self.threads = threads
        self.reg = _registry()
        self.reg.reset_if_full()
        self.lives: list[int] = []
        self.points: list[int] = []  # registry ids of the ops' candidate points
        self.buffer_elems = 0  # BN running statistics (elements)
        self.n_buffers = 0  # BN num_batches_tracked (int64 scalars)

    # -------------------------------------------------------------- ops
    def conv(self, live: int, cin: int, cout: int, k: int, stride: int, padding: int,
             groups: int, h: int, ho: int, bias: bool = False) -> None:
        """A square ``Conv2d`` reading ``cin x h x h`` and writing ``cout x ho x ho``."""
        self.lives.append(live)
        self.points.append(self.reg.id_of("conv", (cin, cout, k, stride, padding, groups, h * h,
                                               ho * ho, bias, self.threads)))

    def bn(self, live: int, c: int, elems: int) -> None:
        """``BatchNorm2d(c)`` writing ``elems`` per image."""
        self.buffer_elems += 2 * c
        self.n_buffers += 1
        self.lives.append(live)
        self.points.append(self.reg.id_of("bn", (c, elems)))

    def maxpool(self, live: int, out: int) -> None:
        """``MaxPool2d`` writing ``out`` elements per image (and its indices for a moment)."""
        self.lives.append(live)
        self.points.append(self.reg.id_of("maxpool", (out,)))

    def global_pool(self, live: int, c: int, elems_in: int) -> None:
        """The global average pool of a ``c``-channel tensor of ``elems_in`` per image."""
        self.lives.append(live)
        self.points.append(self.reg.id_of("global_pool", (c, elems_in)))

    def new(self, live: int, out: int) -> None:
        """Any other op writing a new tensor of ``out`` elements per image (Sigmoid, Linear,
        out-of-place add or multiply)."""
        self.lives.append(live)
        self.points.append(self.reg.id_of("new", (out,)))

    # -------------------------------------------------------------- result
    def table(self) -> np.ndarray:
        """``(len(LANES), K, 2)`` points ``(a, w)`` per lane (largest at the probes)."""
        if not self.lives:
            return np.zeros((len(LANES), K, 2))
        P = self.reg.points[np.asarray(self.points)]  # (ops, lanes, M, 2)
        A = P[..., 0] + np.asarray(self.lives, dtype=np.float64)[:, None, None] * _LANE_BPE_ARR
        A = A.transpose(0, 2, 1).reshape(-1, len(LANES))  # (ops * M, lanes)
        W = P[..., 1].transpose(0, 2, 1).reshape(-1, len(LANES))
        best = np.argmax(A[:, :, None] * _PROBES[None] + W[:, :, None], axis=0)  # (lanes, K)
        lanes = np.arange(len(LANES))[:, None]
        return np.stack([A[best, lanes], W[best, lanes]], axis=-1)

    def unit(self) -> tuple[float, ...]:
        """:data:`ALLOC_UNIT_COLUMNS`: BN buffer elements and counters, then :meth:`table`."""
        return (float(self.buffer_elems), float(self.n_buffers), *self.table().ravel())


# --------------------------------------------------------------------------- op rules


def uses_onednn(precision: str, n: int, cin: int, kernel: tuple[int, int],
                stride: tuple[int, int], groups: int, hw_in: int, threads: int = 1) -> bool:
    """Whether PyTorch's ``use_mkldnn`` rule sends this ``Conv2d`` on ``n`` images to oneDNN
    (float32 only; otherwise the slow path: unfold + GEMM)."""
    if precision != "fp32":
        return False
    kh, kw = kernel
    pointwise = kh == 1 and kw == 1
    strided = stride[0] != 1 or stride[1] != 1
    return (strided or n >= 16 or not pointwise or threads > 1) and (
        groups > 1 or (kh > 3 and kw > 3) or n > 1 or n * cin * hw_in > 20480
    )


def uses_onednn_array(precision: np.ndarray, n: np.ndarray, cin: np.ndarray, k: np.ndarray,
                      stride: np.ndarray, groups: np.ndarray, hw_in: np.ndarray,
                      threads: int = 1) -> np.ndarray:
    """:func:`uses_onednn` over arrays of square kernels and strides (the same rule,
    vectorised for the kernel characterization's operator tables)."""
    n, cin, k, stride, groups, hw_in = (np.asarray(a, dtype=np.int64)
                                        for a in (n, cin, k, stride, groups, hw_in))
    pointwise, strided = k == 1, stride != 1
    return ((np.asarray(precision) == "fp32")
            & (strided | (n >= 16) | ~pointwise | (threads > 1))
            & ((groups > 1) | (k > 3) | (n > 1) | (n * cin * hw_in > 20480)))


def conv_events(precision: str, n: int, cin: int, cout: int, kernel: tuple[int, int],
                stride: tuple[int, int], padding: tuple[int, int], groups: int, hw_in: int,
                hw_out: int, *, bias: bool = False, threads: int = 1,
                block: int = BLOCK, fp16_onednn: bool = False) -> Events:
    """Allocator events ``(bytes per image, fixed bytes)`` of one ``Conv2d`` on ``n`` images
    (``n`` only chooses the kernel; sizes are per image) reading ``hw_in`` and writing
    ``hw_out`` pixels per channel, in order, positive for an allocation and negative for a
    free. The output's allocation is among them and is not freed. ``fp16_onednn``: the CPU's
    oneDNN runs float16 convs (:data:`~carb_lib.core.vocab.FP16_ONEDNN_VARIANT`)."""
    kh, kw = kernel
    pointwise = kh == 1 and kw == 1
    strided = stride[0] != 1 or stride[1] != 1
    out = cout * hw_out
    cg = cin // groups
    if precision == "fp16" and fp16_onednn:
        return _fp16_onednn_conv_events(cin, cout, kh * kw, groups, hw_in, out)
    unfold = 0 if (pointwise and not strided and not any(padding)) else cin * kh * kw * hw_out
    bpe = _BPE[precision]
    if precision == "fp32":
        if not uses_onednn(precision, n, cin, kernel, stride, groups, hw_in, threads):
            return [(unfold * 4, 0), (out * 4, 0, True), (-unfold * 4, 0)]
        in_blk = _pad(cin, block) * hw_in * 4 if (cin >= block or pointwise or groups > 1) else 0
        w_cin = _pad(cg, block) if (in_blk and groups == 1) else cg
        # a grouped conv whose channels per group the block does not divide runs in plain
        # (unpadded) layouts; a depthwise conv (one channel per group) is blocked and padded
        cpad = block if (groups == 1 or cg == 1 or cg % block == 0) else 1
        if cpad == 1:
            in_blk = cin * hw_in * 4
        wr = _pad(cout, cpad) * w_cin * kh * kw * 4
        scratch = _pad(cin, block) * hw_out * 4 + 128 if (pointwise and strided) else 0
        out_blk = _pad(cout, cpad) * hw_out * 4
        # a bias whose length is not a multiple of the block is copied, padded (+ 128 bytes)
        bcopy = (_pad(cout, block) + 32) * 4 if (bias and cout % block) else 0
        return [(0, bcopy), (0, scratch), (in_blk, 0), (0, wr), (out_blk, 0), (0, -wr),
                (-in_blk, 0), (0, -scratch), (0, -bcopy), (out * 4, 0, True), (-out_blk, 0)]
    if groups == 1:
        return [(unfold * bpe, 0), (out * bpe, 0, True), (-unfold * bpe, 0)]
    # grouped: group by group into per-group outputs, concatenated at the end; the events up
    # to the last group's peak are summed (the earlier groups' outputs are held)
    out_g = out // groups
    in_g = cg * hw_in * bpe if n > 1 else 0
    col_g = cg * kh * kw * hw_out * bpe
    return [((groups - 1) * out_g * bpe, 0), (in_g, 0), (col_g, 0), (out_g * bpe, 0),
            (-col_g, 0), (-in_g, 0), (out * bpe, 0, True), (-groups * out_g * bpe, 0)]


def _fp16_onednn_oc(cout: int, kk: int) -> int:
    """Output channels of a dense fp16 conv's weights as oneDNN reorders them: 16 up to 16
    channels; a 1 x 1 conv keeps a multiple of 32 or 48 as it is; else padded to 32. (On few
    images x output pixels, oneDNN pads a 1 x 1 conv's multiple of 32 that is not one of 48 --
    320, 640, 1280, 1408, 1792 -- up to a multiple of 48: not modelled, docs/memory.md *Limits*.)"""
    if cout <= 16:
        return 16
    if kk == 1 and (cout % 32 == 0 or cout % 48 == 0):
        return cout
    return _pad(cout, 32)


def _fp16_onednn_conv_events(cin: int, cout: int, kk: int, groups: int, hw_in: int,
                             out: int) -> Events:
    """:func:`conv_events` of a float16 conv through oneDNN (module docstring)."""
    inp = cin * hw_in * 2 if hw_in > 1 else 0  # a 1 x 1 input is used as it is
    o = out * 2
    if groups == 1:
        wr = _fp16_onednn_oc(cout, kk) * cin * kk * 2
        pre = [(0, _FP16_DNN_SCRATCH)]
        post = [(0, -_FP16_DNN_SCRATCH)]
    else:
        wr = _pad(cout, 16) * (cin // groups) * kk * 2
        pre, post = [], []
    # the output is copied twice (once for a 1 x 1 output); all but one copy is freed
    tail = [(o, 0, True), (o, 0), (-o, 0), (-o, 0)] if out > cout else [(o, 0, True), (-o, 0)]
    return [*pre, (inp, 0), (0, wr), (o, 0), (0, -wr), (-inp, 0), *post, *tail]


def bn_events(precision: str, c: int, elems: int) -> Events:
    """``BatchNorm2d(c)`` writing ``elems`` per image: the output, two float32 temporaries."""
    t = c * _BN_TEMP
    return [(elems * _BPE[precision], 0, True), (0, t), (0, t), (0, -t), (0, -t)]


def maxpool_events(precision: str, out: int) -> Events:
    """``MaxPool2d`` writing ``out`` elements per image; its int64 indices live for a moment."""
    return [(out * _BPE[precision], 0, True), (out * _INDEX_BYTES, 0), (-out * _INDEX_BYTES, 0)]


def global_pool_events(precision: str, c: int, elems_in: int) -> Events:
    """Global average pool to ``c`` x 1 x 1 of ``elems_in`` per image (float16: via float32)."""
    ev: Events = [(c * _BPE[precision], 0, True)]
    if precision == "fp16":
        ev += [(c * 4, 0), (elems_in * 4, 0), (-elems_in * 4, 0), (-c * 4, 0)]
    return ev


def _new_events(precision: str, out: int) -> Events:
    return [(out * _BPE[precision], 0, True)]


def _conv_events_flat(precision, n, block, cin, cout, k, stride, padding, groups, hw_in, hw_out,
                      bias, threads) -> Events:
    """``block`` is the lane's (0: no blocked layouts; on an fp16 lane, > 0: oneDNN fp16)."""
    return conv_events(precision, n, cin, cout, (k, k), (stride, stride), (padding, padding),
                       groups, hw_in, hw_out, bias=bias, threads=threads, block=block or BLOCK,
                       fp16_onednn=precision == "fp16" and block > 0)


_EVENTS = {"conv": _conv_events_flat, "bn": bn_events, "maxpool": maxpool_events,
           "global_pool": global_pool_events, "new": _new_events}


def _candidates(kind: str, args: tuple) -> list[tuple[float, float]]:
    """The running totals ``(bytes per image, fixed bytes)`` of one op's events above the live
    bytes, after each allocation, without those dominated in both coordinates."""
    a = w = 0.0
    pts = []
    for ev in _EVENTS[kind](*args):
        a += ev[0]
        w += ev[1]
        if ev[0] > 0 or ev[1] > 0:
            pts.append((a, w))
    keep = []
    for p in pts:  # (a plain loop: this runs for every op geometry of a cold walk)
        for q in pts:
            if q[0] >= p[0] and q[1] >= p[1] and q != p:
                break
        else:
            keep.append(p)
    return keep


#: Candidate points kept per op and lane (an op has at most this many undominated ones).
_M = 3


def _op_points(kind: str, args: tuple) -> np.ndarray:
    """One op's ``(len(LANES), _M, 2)`` candidate points in every lane (padded by repeating
    the last one). ``args`` follow the precision (and, for a conv, the lane's lowest batch and
    channel block)."""
    out = np.empty((len(LANES), _M, 2))
    for lane, (prec, lo, _, block) in enumerate(LANES):
        cands = _candidates(kind, (prec, lo, block, *args) if kind == "conv"
                            else (prec, *args))
        if not cands or len(cands) > _M:
            raise AssertionError(f"{kind}{args}: {len(cands)} candidate points")
        cands += [cands[-1]] * (_M - len(cands))
        out[lane] = cands
    return out


class _Registry:
    """Candidate points of every op geometry seen, in one growing array (row = op id), with
    the id of each geometry. One per thread (:func:`_registry`): a walk's ids index its own
    thread's array, which no other thread grows or resets."""

    def __init__(self) -> None:
        self.points = np.empty((1024, len(LANES), _M, 2))
        self.n = 0
        self.ids: dict[tuple, int] = {}

    def reset_if_full(self, limit: int = 1 << 18) -> None:
        """Forget every op once ``limit`` are stored (called when a walk starts: ids never
        outlive the walk that asked for them)."""
        if self.n >= limit:
            self.__init__()

    def id_of(self, kind: str, args: tuple) -> int:
        """The row of one op geometry's points (computed on first sight)."""
        key = (kind, args)
        i = self.ids.get(key)
        if i is None:
            if self.n == len(self.points):
                self.points = np.concatenate([self.points, np.empty_like(self.points)])
            self.points[self.n] = _op_points(kind, args)
            i = self.ids[key] = self.n
            self.n += 1
        return i


_LOCAL = threading.local()


def _registry() -> _Registry:
    """This thread's registry."""
    reg = getattr(_LOCAL, "registry", None)
    if reg is None:
        reg = _LOCAL.registry = _Registry()
    return reg


def clear_cache() -> None:
    """Forget this thread's op geometries (benchmarks time cold walks with it)."""
    _LOCAL.registry = _Registry()


#: Per-architecture quantities of the walk (appended to a family's unit columns).
ALLOC_UNIT_COLUMNS: tuple[str, ...] = (
    "buffer_elems", "n_buffers",
    *(f"lane{i}_p{k}_{ab}" for i in range(len(LANES)) for k in range(K) for ab in "aw"),
)  # fmt: skip


def alloc_peak_bytes(alloc_units: np.ndarray, codes: np.ndarray, params: np.ndarray,
                     precision: np.ndarray, batch: np.ndarray, bpe: np.ndarray,
                     block: int | str = BLOCK) -> np.ndarray:
    """The ``alloc_peak_bytes`` feature of every row: parameters and BN buffers at the row's
    precision, the int64 BN counters, and the walk's peak at the row's batch (the input is
    among the walk's live bytes) with allocator variant ``block`` (:data:`BLOCKS`).

    ``alloc_units`` is ``(n_units, len(ALLOC_UNIT_COLUMNS))``, ``codes`` the unit of each row,
    ``params`` the parameter count of each row.
    """
    tables = alloc_units[:, 2:].reshape(len(alloc_units), len(LANES), K, 2)
    peak = alloc_peak(tables, codes, precision, batch, block)
    buffers = alloc_units[:, 0][codes] * bpe + 8.0 * alloc_units[:, 1][codes]
    return np.asarray(params, dtype=np.float64) * bpe + buffers + peak


def alloc_feature_columns(alloc_units: np.ndarray, codes: np.ndarray, params: np.ndarray,
                          precision: np.ndarray | pd.Series, batch: np.ndarray,
                          bpe: np.ndarray) -> dict[str, np.ndarray]:
    """Every :data:`~carb_lib.core.vocab.ALLOC_FEATURES` column (one per allocator variant) of every
    row: :func:`alloc_peak_bytes` with each variant (the precisions are factorized once, as a
    categorical, for all of them)."""
    pcodes, uniq = pd.factorize(precision if isinstance(precision, pd.Series)
                                else np.asarray(precision, dtype=object))
    prec = pd.Categorical.from_codes(pcodes, categories=pd.Index(np.asarray(uniq, dtype=object)))
    return {name: alloc_peak_bytes(alloc_units, codes, params, prec, batch, bpe, block)
            for block, name in ALLOC_FEATURES.items()}


#: Where the batch ranges of :data:`LANES` start and end (each lane's range is a union of the
#: tiers between consecutive breaks, so a row's lane follows from its precision and tier).
_BREAKS = np.array(sorted({lo for _, lo, _, _ in LANES} | {hi + 1 for _, _, hi, _ in LANES}))


def lane_of(precision: np.ndarray, batch: np.ndarray, block: int | str = BLOCK) -> np.ndarray:
    """Lane index (into :data:`LANES`) of each row with allocator variant ``block``
    (:data:`BLOCKS`: oneDNN's channel block, or :data:`~carb_lib.core.vocab.FP16_ONEDNN_VARIANT`);
    -1 where none applies."""
    channels, fp16_dnn = variant_parts(block)
    pcodes, uniq = pd.factorize(precision if isinstance(precision, pd.Categorical)
                                else np.asarray(precision, dtype=object))
    tier = np.searchsorted(_BREAKS, np.asarray(batch), side="right") - 1  # -1: below the first
    # (precision, tier) -> lane; the last row (code -1: missing) and the last two columns
    # (beyond the last break; tier -1) stay -1
    table = np.full((len(uniq) + 1, len(_BREAKS) + 1), -1, dtype=np.int64)
    for j, p in enumerate(uniq):
        for t, start in enumerate(_BREAKS[:-1]):
            for i, (prec, lo, hi, blk) in enumerate(LANES):
                want = (16 if fp16_dnn else 0) if prec == "fp16" else channels
                if prec == p and blk == want and lo <= start <= hi:
                    table[j, t] = i
    return table[pcodes, tier]


def alloc_peak(tables: np.ndarray, codes: np.ndarray, precision: np.ndarray,
               batch: np.ndarray, block: int | str = BLOCK) -> np.ndarray:
    """Peak allocator bytes above the parameters and buffers, per row, with allocator variant
    ``block`` (:data:`BLOCKS`).

    ``tables`` is ``(n_units, len(LANES), K, 2)``; ``codes`` the unit of each row. Rows of a
    precision without a lane (e.g. bf16) get NaN.
    """
    lane = lane_of(precision, batch, block)
    n = np.asarray(batch, dtype=np.float64)
    flat = tables.reshape(-1, K, 2)
    idx = np.asarray(codes, dtype=np.int64) * len(LANES) + np.maximum(lane, 0)
    best = flat[:, 0, 0][idx] * n + flat[:, 0, 1][idx]
    for k in range(1, K):
        np.maximum(best, flat[:, k, 0][idx] * n + flat[:, k, 1][idx], out=best)
    best[lane < 0] = np.nan
    return best
