"""Measure one configuration: energy, latency and peak memory of inference, one batch at a time.

:func:`profile_config` returns one row of the dataset schema (:mod:`carb_lib.dataset.schema`): it
builds the model, lets the device measure it and turns any failure into a row (``oom`` or
``error``), never an exception. The measurement protocol is documented on :class:`Protocol`
(:mod:`carb_lib.measure.protocol`); devices (:class:`CpuDevice`, :class:`CudaDevice`,
:mod:`carb_lib.measure.devices`) implement it and can be replaced by a fake in tests. Every name of
those modules is importable from here.
"""

from __future__ import annotations

import gc
import os
import socket
import time
from datetime import datetime, timezone
from typing import Any

from carb_lib.core.vocab import TARGETS
from carb_lib.dataset.schema import empty_row
from carb_lib.families import space
from carb_lib.measure.counters import (  # noqa: F401 - re-exported for callers of this module
    _resident_bytes,
    count_kernel_launches,
    cpu_peak_memory_bytes,
    memory_events,
)
from carb_lib.measure.devices import (  # noqa: F401  (re-exported: the old home of these names)
    CpuDevice,
    CudaDevice,
    Device,
    get_device,
    slug,
)
from carb_lib.measure.devices import idle_power_from_counter as _idle_power_from_counter  # noqa: F401
from carb_lib.measure.interference import OtherLoad, Window, WindowPolicy  # noqa: F401
from carb_lib.measure.protocol import (  # noqa: F401  (re-exported)
    MIB,
    ConfigTimeoutError,
    Protocol,
    deadline_check,
    latency_stats,
)
from carb_lib.measure.protocol import deadline_check as _deadline_check  # noqa: F401
from carb_lib.measure.telemetry import NAN
from carb_lib.measure.watchdog import exits_trapped, wall_clock_cap


def _is_oom(exc: BaseException) -> bool:
    """True for an out-of-memory error (CUDA's, or the CPU allocator's failure)."""
    import torch

    oom_cls = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
    if isinstance(exc, oom_cls):
        return True
    msg = str(exc)
    return isinstance(exc, (RuntimeError, MemoryError)) and (
        "out of memory" in msg.lower()
        or "can't allocate memory" in msg
        or "DefaultCPUAllocator" in msg
        or isinstance(exc, MemoryError)
    )


_GC_FROZEN = False


def _freeze_gc_once() -> None:
    """``gc.freeze()`` once per process, before the first measurement.

    With torch and pandas loaded a process holds ~300k objects and every full ``gc.collect()``
    takes 0.2-0.4 s; the protocol collects twice per config. Freezing moves the objects alive
    now (modules, caches) to the permanent generation, so later collections only scan objects
    created since (models, tensors) and take microseconds.
    """
    global _GC_FROZEN
    if not _GC_FROZEN:
        gc.collect()
        gc.freeze()
        _GC_FROZEN = True



def utc_now() -> str:
    """Current UTC time, ISO 8601 with milliseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


# ----------------------------------------------------------------------------------------
def base_row(config: Any, device: Device, protocol: Protocol) -> dict[str, Any]:
    """A schema row with config and provenance filled, measurements missing."""
    row = empty_row()
    row.update(config.to_dict())
    row["config_id"] = config.config_id
    row.update(device.provenance(protocol))
    row["measured_at"] = utc_now()
    return row


def profile_config(
    config: Any,
    device: str | Device = "cpu",
    protocol: Protocol | None = None,
    *,
    idle_power_w: float = NAN,
) -> dict[str, Any]:
    """Measure one config with the protocol and return one dataset row (dict).

    Parameters
    ----------
    config
        A config object (e.g. :class:`carb_lib.families.space.ResNetConfig`).
    device : str or Device
        ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a :class:`Device`.
    protocol : Protocol, optional
        Defaults to ``Protocol()``.
    idle_power_w : float
        Idle power baseline (W) measured by the caller; NaN if unknown.

    Returns
    -------
    dict
        Schema columns (static features excluded); ``status`` is ``ok``, ``oom`` or
        ``error`` (with ``error`` set). Never raises for a failing config.
    """
    protocol = protocol or Protocol()
    _freeze_gc_once()
    dev = get_device(device)
    dev.setup(protocol)
    row = base_row(config, dev, protocol)
    deadline = time.perf_counter() + protocol.timeout_s if protocol.timeout_s is not None else None
    model = x = None
    try:
        # the cap holds for code that never returns too (a user module's build or forward);
        # the deadline checks between inferences come first, the watchdog is the backstop
        slack = None if protocol.timeout_s is None else max(5.0, 0.25 * protocol.timeout_s)
        with (wall_clock_cap(protocol.timeout_s, "building and timing the config",
                             slack_s=slack or 0.0),
              exits_trapped("building and timing the config")):
            model = space.build_model(config)
            model, x = dev.prepare(model, config, protocol)
            meas = dev.measure(model, x, protocol, idle_power_w, deadline)
        row.update(meas)
        row["status"] = "ok"
        row["error"] = None
    except ConfigTimeoutError as exc:
        exc.__traceback__ = None
        row.update(status="error", error=f"{exc} (cap {protocol.timeout_s} s)")
    except Exception as exc:
        # drop the traceback: its frames hold the model, the input and activations
        exc.__traceback__ = None
        if _is_oom(exc):
            row.update(status="oom", error=f"{type(exc).__name__}: {str(exc)[:500]}")
        else:
            row.update(status="error", error=f"{type(exc).__name__}: {str(exc)[:500]}")
    finally:
        del model, x
        dev.release()
    if row["status"] != "ok":
        for k in TARGETS:
            row[k] = NAN
    return row


def measure_tag() -> str:
    """A short unique tag for this process (host-pid-time) used in part file names."""
    return f"{slug(socket.gethostname())[:20]}-{os.getpid()}-{int(time.time() * 1000)}"
