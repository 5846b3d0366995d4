"""Simulated CPU peak memory of any ``nn.Module``: the allocator model run on the meta device.

:func:`simulate_peak` runs one forward pass on ``meta`` tensors (nothing is allocated or
computed) under a dispatch mode that keeps the allocator's running total: every new output
storage is allocated when an op returns it and freed when its last tensor dies, and the ops
with CPU scratch buffers (convolutions, batch norm, max pooling, float16 global pooling) add the
events of :mod:`carb_lib.families._alloc`. Its result has the meaning of
:func:`carb_lib.measure.counters.cpu_peak_memory_bytes` on a real CPU run (resident bytes + peak of
the running sum) and, on the project's CPU (PyTorch 2.13, oneDNN on AVX2, one thread), the
same value: ``benchmarks/check_allocator.py`` compares it with every measured row.

The analytic families evaluate the same rules per layer (:class:`carb_lib.families._alloc.
AllocWalk`), fast enough for millions of candidates; this module is their reference and the
path for user modules (family ``module``).

Examples
--------
>>> import torch
>>> from carb_lib.families.allocator import simulate_peak
>>> net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU())
>>> simulate_peak(net, (4, 3, 32, 32)).peak_bytes > 0
True
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass
from typing import Any

from carb_lib.families._alloc import (
    BLOCK,
    bn_events,
    conv_events,
    global_pool_events,
    maxpool_events,
    variant_parts,
)

__all__ = ["AllocatorPeak", "simulate_peak", "simulate_peaks"]

logger = logging.getLogger(__name__)

_PRECISION = {"torch.float32": "fp32", "torch.float16": "fp16"}


@dataclass(frozen=True)
class AllocatorPeak:
    """Simulated allocator peak of one forward pass (bytes).

    Attributes
    ----------
    peak_bytes : int
        ``resident_bytes + peak_increment_bytes``.
    resident_bytes : int
        Parameters, buffers and the input, allocated before the call.
    peak_increment_bytes : int
        Peak of the running sum of allocations and frees during the call.
    n_events : int
        Allocations and frees simulated.
    """

    peak_bytes: int
    resident_bytes: int
    peak_increment_bytes: int
    n_events: int


def _pair(v: Any, default: int) -> tuple[int, int]:
    if v is None:
        return (default, default)
    if isinstance(v, int):
        return (v, v)
    v = tuple(int(i) for i in v)
    return (v[0], v[0]) if len(v) == 1 else (v[0], v[1])


class _Simulator:
    """The dispatch mode's state (created lazily: importing this module needs no torch)."""

    def __init__(self, threads: int, block: int | str) -> None:
        self.threads = threads
        self.block, self.fp16_onednn = variant_parts(block)
        self.run = self.peak = 0
        self.n_events = 0
        self.refs: dict[int, int] = {}
        self.size: dict[int, int] = {}

    def alloc(self, nbytes: float) -> None:
        self.run += int(nbytes)
        self.n_events += 1
        self.peak = max(self.peak, self.run)

    def free(self, nbytes: float) -> None:
        self.run -= int(nbytes)
        self.n_events += 1

    def events(self, n: int, events, out: Any) -> None:
        """Apply per-image events on ``n`` images; the output's event tracks ``out``."""
        for ev in events:
            if len(ev) > 2:
                self.track(out)
                continue
            nb = ev[0] * n + ev[1]
            if nb > 0:
                self.alloc(nb)
            elif nb < 0:
                self.free(-nb)

    def _dead(self, key: int) -> None:
        self.refs[key] -= 1
        if self.refs[key] == 0:
            del self.refs[key]
            self.free(self.size.pop(key))

    def track(self, t: Any) -> None:
        import torch

        if not isinstance(t, torch.Tensor):
            return
        st = t.untyped_storage()
        key = st._cdata
        if key not in self.refs:
            self.refs[key] = 0
            self.size[key] = st.nbytes()
            self.alloc(self.size[key])
        self.refs[key] += 1
        weakref.finalize(t, self._dead, key)


def _mode(sims: list[_Simulator]):
    """A dispatch mode that feeds every op's allocations and frees to each of ``sims`` (one
    forward pass simulates several allocator variants)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    aten = torch.ops.aten
    convs = {aten.conv2d.default, aten.convolution.default}
    bns = {aten.batch_norm.default, aten._native_batch_norm_legit_no_training.default}
    pools = {aten.max_pool2d.default}
    means = {aten.adaptive_avg_pool2d.default, aten.mean.dim}

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            first = out[0] if isinstance(out, (tuple, list)) else out
            x = args[0] if args else None
            prec = _PRECISION.get(str(getattr(x, "dtype", None)))
            if func in convs and prec is not None and x.dim() == 4:
                w = args[1]
                if func is aten.convolution.default:
                    stride, padding, groups = args[3], args[4], args[8]
                else:
                    a = list(args) + [None] * (7 - len(args))
                    stride, padding, groups = a[3], a[4], a[6] if a[6] is not None else 1
                n, cin, h, wd = x.shape
                for sim in sims:
                    sim.events(n, conv_events(
                        prec, n, cin, w.shape[0], (w.shape[2], w.shape[3]), _pair(stride, 1),
                        _pair(padding, 0), int(groups), h * wd,
                        first.shape[2] * first.shape[3],
                        bias=len(args) > 2 and args[2] is not None, threads=sim.threads,
                        block=sim.block, fp16_onednn=sim.fp16_onednn), first)
            elif func in bns and prec is not None and x.dim() >= 2:
                events = bn_events(prec, x.shape[1], x[0].numel())
                for sim in sims:
                    sim.events(x.shape[0], events, first)
            elif func in pools and prec is not None:
                events = maxpool_events(prec, first[0].numel())
                for sim in sims:
                    sim.events(first.shape[0], events, first)
            elif (func in means and prec == "fp16" and x.dim() == 4
                  and first.numel() == x.shape[0] * x.shape[1]):
                events = global_pool_events(prec, x.shape[1], x[0].numel())
                for sim in sims:
                    sim.events(x.shape[0], events, first)
            else:
                for t in (out if isinstance(out, (tuple, list)) else (out,)):
                    for sim in sims:
                        sim.track(t)
            return out

    return Mode()


def simulate_peak(model: Any, input_shape: tuple[int, ...], *, precision: str = "fp32",
                  threads: int = 1, block: int | str = BLOCK) -> AllocatorPeak:
    """Simulated CPU peak memory of ``model(x)`` for an input of ``input_shape``.

    Parameters
    ----------
    model : torch.nn.Module
        The network; a copy goes to the ``meta`` device at ``precision`` (the caller's model is
        not changed; a model already on ``meta`` copies for free).
    input_shape : tuple of int
        ``(batch, channels, height, width)``.
    precision : {"fp32", "fp16"}, default="fp32"
    threads : int, default=1
        Intra-op threads of the simulated run (PyTorch's kernel choice for 1x1 convs depends
        on it).
    block : int or str, default=8
        Allocator variant of the simulated CPU (:data:`carb_lib.families._alloc.BLOCKS`):
        oneDNN's channel block (8 on AVX2, 16 on AVX-512), or ``"16+fp16"`` for an AVX-512
        CPU whose oneDNN runs float16 convs (:data:`~carb_lib.core.vocab.FP16_ONEDNN_VARIANT`).

    Returns
    -------
    AllocatorPeak
    """
    return simulate_peaks(model, input_shape, precision=precision, threads=threads,
                          blocks=(block,))[block]


def simulate_peaks(model: Any, input_shape: tuple[int, ...], *, precision: str = "fp32",
                   threads: int = 1, blocks: tuple[int | str, ...] = (BLOCK,)
                   ) -> dict[int | str, AllocatorPeak]:
    """:func:`simulate_peak` of several allocator variants from one forward pass.

    The meta forward (PyTorch's dispatch) is the cost of a simulation; the variants differ only
    in the events they add, so one pass feeds them all.

    Parameters
    ----------
    model, input_shape, precision, threads
        As for :func:`simulate_peak`.
    blocks : tuple of int or str, default=(8,)
        Allocator variants (:data:`carb_lib.families._alloc.BLOCKS`), each simulated apart.

    Returns
    -------
    dict
        The :class:`AllocatorPeak` of each variant of ``blocks``.

    Examples
    --------
    >>> import torch
    >>> net = torch.nn.Conv2d(3, 24, 3)
    >>> peaks = simulate_peaks(net, (2, 3, 32, 32), blocks=(8, 16))
    >>> peaks[8] == simulate_peak(net, (2, 3, 32, 32), block=8)
    True
    """
    import copy

    import torch

    if precision not in ("fp32", "fp16"):
        raise ValueError(f"precision must be 'fp32' or 'fp16', got {precision!r}")
    blocks = tuple(dict.fromkeys(blocks))
    if not blocks:
        raise ValueError("blocks is empty: give at least one allocator variant")
    dtype = torch.float16 if precision == "fp16" else torch.float32
    # a copy (cheap on meta): .to() works in place and the caller's model must not change
    model = copy.deepcopy(model).to(device="meta", dtype=dtype).eval()
    x = torch.empty(*input_shape, dtype=dtype, device="meta")
    resident = sum(t.numel() * t.element_size() for t in [*model.parameters(),
                                                          *model.buffers(), x])
    sims = [_Simulator(threads, b) for b in blocks]
    with torch.inference_mode(), _mode(sims):
        y = model(x)
    del y
    return {b: AllocatorPeak(peak_bytes=resident + sim.peak, resident_bytes=resident,
                             peak_increment_bytes=sim.peak, n_events=sim.n_events)
            for b, sim in zip(blocks, sims, strict=True)}
