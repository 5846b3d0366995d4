"""Counters read from ``torch.profiler``: CPU peak memory from the allocator's events, and
CUDA kernel launches of one inference. Used by :mod:`carb_lib.measure.profiling`."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

NAN = float("nan")
#: Line prefixes of the PyTorch profiler's (Kineto's) own notes on stderr, two per profiled
#: call ("USDT: ... profiler_start", "... profiler_stop"); kept out of the terminal.
PROFILER_NOTES = ("USDT:", "STAGE:")


@contextmanager
def profiler_notes_kept_out() -> Iterator[None]:
    """Run a ``torch.profiler`` block with its native notes (:data:`PROFILER_NOTES`) kept off
    stderr: file descriptor 2 goes to a temporary file meanwhile, and every other line written
    to it is passed on to stderr afterwards."""
    import sys
    import tempfile

    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no file descriptor 2: nothing to keep out
        yield
        return
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            lines = tmp.read().decode(errors="replace").splitlines(keepends=True)
            rest = "".join(ln for ln in lines if not ln.startswith(PROFILER_NOTES))
            if rest:
                os.write(2, rest.encode())


def _resident_bytes(model: Any, *tensors: Any) -> int:
    """Bytes of the distinct storages of the model's parameters and buffers and ``tensors``."""
    seen: set[int] = set()
    total = 0
    items = [*model.parameters(), *model.buffers(), *tensors]
    for t in items:
        st = t.untyped_storage()
        key = st.data_ptr()
        if key in seen or st.nbytes() == 0:
            continue
        seen.add(key)
        total += st.nbytes()
    return total


def memory_events(prof: Any) -> list[tuple[int, int]]:
    """``(time_ns, nbytes)`` of the CPU allocator's events recorded by a ``torch.profiler``
    run with ``profile_memory=True``, ordered by time (allocations > 0, frees < 0).

    Uses Kineto's results (``prof.profiler.kineto_results.events()``, ``[memory]`` events);
    in torch 2.13 the plain ``prof.events()`` list does not carry every allocation. Falls back
    to ``prof.events()`` (``cpu_memory_usage``) on torch versions without that API.
    """
    import torch

    out: list[tuple[int, int]] = []
    try:
        kev = prof.profiler.kineto_results.events()
        cpu = torch.profiler.DeviceType.CPU if hasattr(torch.profiler, "DeviceType") else None
        for e in kev:
            if e.name() != "[memory]":
                continue
            if cpu is not None and e.device_type() != cpu:
                continue
            out.append((int(e.start_ns()), int(e.nbytes())))
    except AttributeError:  # pragma: no cover - older/newer torch
        for e in prof.events():
            nb = int(getattr(e, "cpu_memory_usage", 0) or 0)
            if nb:
                out.append((int(e.time_range.start * 1000), nb))
    out.sort(key=lambda p: p[0])
    return out


def cpu_peak_memory_bytes(model: Any, x: Any) -> dict[str, int]:
    """Peak CPU memory of one inference ``model(x)``, from the profiler's memory events.

    Returns
    -------
    dict
        ``peak_bytes`` (resident + peak increment), ``resident_bytes`` (parameters, buffers and
        input allocated before the call), ``peak_increment_bytes`` (max of the running sum of
        allocations and frees during the call), ``n_events``.
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    resident = _resident_bytes(model, x)
    with torch.inference_mode(), profiler_notes_kept_out():
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            model(x)
    ev = memory_events(prof)
    running = peak = 0
    for _, nb in ev:
        running += nb
        peak = max(peak, running)
    return {
        "peak_bytes": resident + peak,
        "resident_bytes": resident,
        "peak_increment_bytes": peak,
        "n_events": len(ev),
    }


_LAUNCH_RE = re.compile(r"^(cuda|cu)Launch(Kernel|CooperativeKernel)")


def count_kernel_launches(model: Any, x: Any) -> float:
    """CUDA kernel launches of one inference, counted with ``torch.profiler``.

    Counts runtime/driver launch calls (``cudaLaunchKernel*``, ``cuLaunchKernel*``,
    ``cudaLaunchCooperativeKernel*``); if the profiler shows none, counts GPU kernel events
    (excluding memcpy/memset). NaN if the profiler fails.
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    try:
        with torch.inference_mode(), profiler_notes_kept_out():
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                model(x)
                torch.cuda.synchronize()
        kev = prof.profiler.kineto_results.events()
        launches = sum(1 for e in kev if _LAUNCH_RE.match(e.name()))
        if launches:
            return float(launches)
        cuda = torch.profiler.DeviceType.CUDA
        kernels = sum(
            1
            for e in kev
            if e.device_type() == cuda and not re.match(r"(?i)^(memcpy|memset)", e.name())
        )
        return float(kernels) if kernels else NAN
    except Exception:
        return NAN


def _status_kib(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(f"/proc/self/status has no {field}")


def rss_peak_growth_bytes(fn: Any) -> tuple[Any, float]:
    """Call ``fn()`` and return ``(its result, the growth of the process's peak resident set
    during the call, in bytes)``: the peak RSS (``VmHWM``) after the call minus the RSS before
    it, the peak reset first by writing ``5`` to ``/proc/self/clear_refs`` (Linux >= 4.0).

    The growth is NaN where that is not possible (another OS, a restricted ``/proc``). Memory
    already resident before the call (a heap kept from earlier work) is not counted: measure
    the first call after the model is built, in a fresh process, for what the call costs the
    process.
    """
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        before = _status_kib("VmRSS")
    except OSError:
        return fn(), NAN
    result = fn()
    try:
        peak = _status_kib("VmHWM")
    except OSError:
        return result, NAN
    return result, float(max(peak - before, 0) * 1024)
