"""The C heap of a measuring process: minor page faults, and glibc's heap kept.

PyTorch's CPU allocator takes every tensor from the C library's ``malloc``. glibc serves a
large request either from its heap or from a fresh ``mmap``, and returns the top of its heap
to the kernel once enough of it is free; the thresholds behind both move with what the
process freed before (glibc's dynamic mmap and trim thresholds). A buffer in fresh pages costs
one minor page fault per 4 KiB page on every call, so the same network can run 20-60 %
slower in one process than in another, by what that process timed before it (docs/measuring.md:
11 of 400 ResNet configs took 9,217-46,085 faults per call in at
least one list, and ran 20-60 % faster in the campaigns timed among depthwise networks).

* :func:`minor_faults`: this process's minor page faults so far (``getrusage``); the CPU
  device records them per timed call (``minor_faults_per_call``).
* :func:`keep_heap`: glibc's ``mallopt`` so that every allocation comes from the heap
  (``M_MMAP_MAX`` 0) and the heap is never trimmed (``M_TRIM_THRESHOLD`` -1). After a
  network's first call its buffers are in pages already faulted in, whatever the process ran
  before: the steady state of a long-running inference process. Memory freed is kept by the
  process: its resident size grows to at least the largest peak it has run, and more where
  the heap fragments (a bare loop that allocates and frees one 40 MiB tensor grows it by
  40 MiB on 6 iterations of 7, each in fresh pages: the chunk just freed is not reused, the
  next one lies 40 MiB + 128 B above it; a campaign of 2026-12-03, not traced further). A network's forward
  reached its steady state by its second call: 0 faults per timed call over all 6,548 rows
  of a measured test (docs/experiments.md). ``Protocol(cpu_keep_heap=True)`` applies it when the CPU
  device is set up. Where the C library has no ``mallopt`` (not glibc),
  :class:`HeapSettingError`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import resource
from collections.abc import Iterable
from typing import Any

logger = logging.getLogger(__name__)

#: glibc ``<malloc.h>`` parameter numbers.
M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
#: (name, parameter, value) :func:`keep_heap` sets, in this order.
KEEP_HEAP_SETTINGS: tuple[tuple[str, int, int], ...] = (
    ("M_MMAP_MAX", M_MMAP_MAX, 0),
    ("M_TRIM_THRESHOLD", M_TRIM_THRESHOLD, -1),
)

_KEPT = False


class HeapSettingError(RuntimeError):
    """The C library cannot keep the heap (no glibc ``mallopt``, or it refused a setting)."""


def minor_faults() -> int:
    """Minor page faults of this process so far (``getrusage(RUSAGE_SELF).ru_minflt``)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _libc() -> Any:
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name) if name else ctypes.CDLL(None)
    except OSError as exc:  # pragma: no cover - every supported platform has a C library
        raise HeapSettingError(f"cpu_keep_heap: cannot load the C library ({exc})") from None


def heap_kept() -> bool:
    """Whether :func:`keep_heap` has set this process's heap."""
    return _KEPT


def recorded_heaps(values: Iterable[Any]) -> list[bool]:
    """The heaps that recorded ``heap_kept`` values (missing ones left out) say rows were timed
    with, sorted: ``[False]``, ``[True]`` or ``[False, True]``. Rows with no value at all (files
    and campaign parts from before 2026-12-03, when the column did not exist) ran with the
    default heap: ``[False]``.

    Examples
    --------
    >>> from carb_lib.measure.heap import recorded_heaps
    >>> recorded_heaps([]), recorded_heaps([True, True]), recorded_heaps([True, False])
    ([False], [True], [False, True])
    """
    return sorted({bool(v) for v in values}) or [False]


def keep_heap(libc: Any = None) -> None:
    """Serve every allocation from glibc's heap and never trim it (once per process).

    Parameters
    ----------
    libc : ctypes library, optional
        The C library (default: this process's); tests pass a stand-in.

    Raises
    ------
    HeapSettingError
        The C library has no ``mallopt`` (not glibc) or refused a setting; one line.

    Examples
    --------
    >>> from carb_lib.measure.heap import keep_heap, heap_kept
    >>> keep_heap()  # doctest: +SKIP
    >>> heap_kept()  # doctest: +SKIP
    True
    """
    global _KEPT
    if _KEPT:
        return
    lib = _libc() if libc is None else libc
    mallopt = getattr(lib, "mallopt", None)
    if mallopt is None:
        raise HeapSettingError("cpu_keep_heap needs glibc's mallopt, which this C library "
                               "lacks; measure without it (cpu_keep_heap false)")
    for name, param, value in KEEP_HEAP_SETTINGS:
        if mallopt(ctypes.c_int(param), ctypes.c_int(value)) != 1:
            raise HeapSettingError(f"cpu_keep_heap: mallopt({name}, {value}) was refused")
    _KEPT = True
    logger.info("heap kept: every allocation from glibc's heap, never trimmed")
