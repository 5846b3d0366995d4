"""The measurement protocol: :class:`Protocol` (its docstring is the protocol as the data card
states it), the per-config wall-clock cap and the latency statistics of a timed window.
:mod:`carb_lib.measure.devices` implements it, :mod:`carb_lib.measure.profiling` builds the row; every name is
importable from :mod:`carb_lib.measure.profiling` too.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from carb_lib.families._base import ConfigTimeoutError
from carb_lib.measure.heap import recorded_heaps
from carb_lib.measure.interference import WindowPolicy
from carb_lib.measure.telemetry import NAN

__all__ = ["ASSUMED_PROTOCOL", "DETECTOR_OFF", "MIB", "ConfigTimeoutError", "Protocol",
           "RowsProtocol", "deadline_check", "model_protocol", "rows_protocol",
           "latency_stats", "protocol_settings"]

MIB = 2**20
#: Interference-detector thresholds that never reject a window (``Protocol(**DETECTOR_OFF)``),
#: for runs that check bookkeeping, memory or energy rather than timing (tests).
DETECTOR_OFF: dict[str, float] = {"min_cpu_share": 0.0, "max_other_busy": 1e9,
                                  "max_window_spread": 1e9}


@dataclass(frozen=True)
class Protocol:
    """The measurement protocol (defaults are the study's; this text goes to the data card).

    **GPU** (CUDA). ``torch.backends.cudnn.benchmark`` is off (algorithm choice must not depend
    on run history). The model is built in fp32 on the CPU, moved to the GPU and cast to the
    config's precision (fp16: ``.half()``); the input is a seeded ``randn`` batch of shape
    (batch, 3, resolution, resolution) in that precision. Then the caching allocator is emptied
    (``torch.cuda.empty_cache``), garbage collected (``gc.collect``; objects alive at the
    process's first measurement are frozen once with ``gc.freeze`` so that this takes
    microseconds, not 0.2-0.4 s), and the GPU cools down idle for
    ``cooldown_s`` (1 s). ``gpu_warmup_iters`` (10) warm-up inferences follow; the peak-memory
    statistics are reset; ``temp_c_before`` is read; then a timed window runs inferences until
    both ``gpu_min_iters`` (100) iterations and ``gpu_min_window_s`` (3.0 s) have passed. Each
    inference is timed with a pair of CUDA events; the window is closed by a synchronize and
    ``temp_c_after`` is read. All inferences run under ``torch.inference_mode()``; outputs are
    discarded at once. Other PyTorch defaults are kept (e.g. TF32 is allowed for cuDNN
    convolutions, ``torch.backends.cudnn.allow_tf32 = True``, so fp32 convolutions may run on
    tensor cores).

    * ``latency_ms`` is the median of the per-inference event times; ``latency_mean_ms``,
      ``latency_p10_ms``, ``latency_p90_ms`` and ``latency_cv`` (std / mean) describe them.
    * ``energy_j`` (per batch) = difference of NVML's cumulative energy counter
      (``nvmlDeviceGetTotalEnergyConsumption``) across the window / ``n_iters``. A zero
      difference is an error (:class:`~carb_lib.measure.telemetry.EnergyCounterError`), never 0 J: the
      row keeps latency and memory, ``energy_j`` is NaN and ``energy_reason`` says why.
      ``avg_power_w`` = window energy / window time. The window is at least 3 s because
      NVML's counter moves in steps: on an H200 it changed every 100 ms, so a 0.5 s window
      can be off by a fifth. Over the same 10 configs x 3 repeats, the energy CV fell from
      17.8 % (0.5 s windows) to 9.6 % (3 s), and the counter's agreement with integrated
      sampled power tightened from 0.976-1.022 to 0.993-1.001 (p10-p90; the rows are
      ``data/gpu_nvidia_h200/noise/``). The two runs were 7 minutes
      apart and every config's median latency moved 1.2-2.2x between them (energy 1.2-1.9x),
      so the fall of the CV is not the window's alone; the counter's 100 ms step is what sets
      the window. ``idle_power_w`` is the idle baseline the
      campaign measured (counter difference over an idle period, at the start and every
      ``ref_every`` configs); ``energy_dynamic_j = energy_j - idle_power_w * window_s / n_iters``.
    * ``peak_mem_mib`` = ``torch.cuda.max_memory_allocated`` since the reset (weights, input,
      activations and workspaces); ``peak_reserved_mib`` = ``max_memory_reserved``;
      ``nvml_proc_mem_mib`` = the process's memory as NVML reports it after the window
      (includes the CUDA context; NaN when NVML cannot see this process).
    * Telemetry (``sm_util_pct``, ``mem_util_pct``, ``sm_clock_mhz``, ``mem_clock_mhz``,
      ``power_sampled_w``) are means over the window of a background sampler at ``sample_hz``
      (50 Hz) reading NVML; power is the instantaneous field (``NVML_FI_DEV_POWER_INSTANT``)
      where supported, else ``nvmlDeviceGetPowerUsage`` (``power_source`` says which). Sampled
      power is telemetry only and never integrated into energy.
    * ``kernel_launches``: one extra inference after the window runs under ``torch.profiler``
      (CPU + CUDA activities); the number of CUDA runtime/driver kernel-launch calls
      (``cudaLaunchKernel*``, ``cuLaunchKernel*``, ``cudaLaunchCooperativeKernel*``) in it; if
      none are visible, the number of GPU kernel events (memcpy/memset excluded).
    * Interference: other compute processes on the device (``gpu_other_procs``, NVML), the
      clock-throttle reasons at start and end of the window (``throttle_reasons``, their
      bitwise OR) and the SM clock at start and end. A window with another compute process on
      the device is re-measured (``max_windows`` in all); ``latency_window_cv`` is the CV of
      the medians of ``n_windows`` consecutive thirds of the window's inferences.

    **CPU**. The intra-op thread count is fixed with ``torch.set_num_threads`` (``threads``;
    default: the current setting) and recorded. Build and cast as above; garbage collect; an
    optional idle ``cpu_cooldown_s`` (default 0). ``cpu_warmup_iters`` (3) warm-up inferences
    (the first are slow: 3.0 ms against 1.8 ms on a tiny config). Then **windows**: each is
    timed with ``time.perf_counter`` per inference until both ``cpu_min_iters`` (2) and
    ``cpu_min_window_s`` (0.1 s) have passed, and records the measuring thread's CPU time
    (``time.thread_time``; process CPU time / threads with several threads), the share of the
    other cores that other processes kept busy (``/proc/stat``) and the host's load. A window
    whose thread got less than ``min_cpu_share`` (0.95) of a core, or during which others kept
    more than ``max_other_busy`` (0.3) of the other cores busy, was disturbed and is
    re-measured after a backoff; ``n_windows`` (3) accepted windows whose medians agree
    within ``max_window_spread`` (5 %, relative range) make the row, ``max_windows`` (8) at
    most (:mod:`carb_lib.measure.interference`). ``latency_ms`` is the median of the used windows'
    inferences; ``latency_window_cv`` the CV of their medians (the row's noise); ``quality``
    is ``clean``, ``retried`` or ``disturbed`` (kept with its flag, never dropped).
    Energy from RAPL (``/sys/class/powercap``) over the used windows where readable, else
    NaN with ``energy_reason``. ``peak_mem_mib``: one extra inference runs under
    ``torch.profiler`` with ``profile_memory=True``; the allocator's memory events (bytes > 0
    allocations, < 0 frees, from Kineto's results) are ordered by time and summed; the maximum
    of that running sum plus the bytes already allocated before the inference (parameters,
    buffers and the input batch) is the peak -- the same meaning as ``max_memory_allocated``
    after a reset on a GPU. Only allocations through PyTorch's CPU allocator are seen (memory
    that oneDNN or OpenMP allocate on their own is not); the value is deterministic and does
    not depend on the thread count (checked: identical over repeats and for 1 and 2 threads).
    Telemetry columns and ``kernel_launches`` are NaN on a CPU, except
    ``minor_faults_per_call``: the process's minor page faults over the used windows per timed
    inference (a buffer in fresh pages costs one per 4 KiB page on every call). With
    ``cpu_keep_heap`` (on by default since 2026-12-03, a measured test (docs/experiments.md); every row measured
    before then ran without it and records ``heap_kept`` False or lacks the column) the device
    sets glibc's ``mallopt`` once per process so that every buffer comes from the heap and the
    heap is never trimmed (:func:`carb_lib.measure.heap.keep_heap`): a network's timed calls then run in
    pages already faulted in, whatever the process timed before. Interleaved with the default
    heap on 640 ResNet configs, it left the 600 that map nothing past 32 MiB unchanged (median
    ratio 0.999) and ran the 36 that paid for faults at 0.68 of their time. Set it false to
    time as before (``'{"cpu_keep_heap": false}'``).

    **Both**. A per-config wall-clock cap ``timeout_s`` (checked between inferences; None = no
    cap) ends the measurement with status ``error`` and an error starting with ``timeout``.
    Out-of-memory (``torch.OutOfMemoryError``, or the CPU allocator's failure) gives status
    ``oom``; model, input and caches are freed before returning. Any other exception gives
    status ``error`` with its message.

    Attributes
    ----------
    cooldown_s : float
        GPU idle time before warm-up (s).
    gpu_warmup_iters, gpu_min_iters : int
    gpu_min_window_s : float
    cpu_cooldown_s : float
    cpu_warmup_iters, cpu_min_iters : int
    cpu_min_window_s : float
        Per window (CPU).
    n_windows, max_windows : int
        Accepted windows a row needs; windows taken at most.
    min_cpu_share : float
        A CPU window whose measuring thread got less of a core is disturbed.
    max_window_spread : float
        Largest relative range of the used windows' medians.
    backoff_s : float
        Sleep after a disturbed window (doubled each time, capped at 1 s).
    max_other_busy : float
        A CPU window in which other processes kept more of the other cores busy is disturbed.
    threads : int or None
        CPU intra-op threads (None: leave torch's setting).
    sample_hz : float
        Telemetry sampling rate (GPU); 0 disables the sampler.
    count_kernels : bool
        Count kernel launches (GPU).
    cpu_profile_memory : bool
        Measure CPU peak memory with the profiler.
    cpu_keep_heap : bool, default=True
        Keep glibc's heap (no ``mmap``, no trim) for the whole process (CPU).
    timeout_s : float or None
        Per-config wall-clock cap.
    seed : int
        Seed of the input batch.
    """

    cooldown_s: float = 1.0
    gpu_warmup_iters: int = 10
    gpu_min_iters: int = 100
    gpu_min_window_s: float = 3.0
    cpu_cooldown_s: float = 0.0
    cpu_warmup_iters: int = 3
    cpu_min_iters: int = 2
    cpu_min_window_s: float = 0.1
    # the interference detector's settings: WindowPolicy's defaults (one owner)
    n_windows: int = WindowPolicy.n_windows
    max_windows: int = WindowPolicy.max_windows
    min_cpu_share: float = WindowPolicy.min_cpu_share
    max_window_spread: float = WindowPolicy.max_window_spread
    backoff_s: float = WindowPolicy.backoff_s
    max_other_busy: float = WindowPolicy.max_other_busy
    threads: int | None = None
    sample_hz: float = 50.0
    count_kernels: bool = True
    cpu_profile_memory: bool = True
    cpu_keep_heap: bool = True
    timeout_s: float | None = 300.0
    seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self, device: str = "cpu") -> str:
        """One phrase for a command's output: threads, heap and windows on a CPU; windows on a
        GPU."""
        if not str(device).startswith("cpu"):
            return (f"{device}: windows of >= {self.gpu_min_iters} inferences and "
                    f">= {self.gpu_min_window_s:g} s")
        t = ("torch's default threads" if self.threads is None else
             f"{self.threads} thread{'s' if self.threads != 1 else ''}")
        return (f"{t}, {'heap kept' if self.cpu_keep_heap else 'default heap'}, "
                f"{self.n_windows} windows of >= {self.cpu_min_iters} inferences and "
                f">= {self.cpu_min_window_s:g} s")

    def policy(self) -> WindowPolicy:
        """The window policy (:class:`carb_lib.measure.interference.WindowPolicy`) of this protocol."""
        return WindowPolicy(
            n_windows=self.n_windows,
            max_windows=self.max_windows,
            min_cpu_share=self.min_cpu_share,
            max_window_spread=self.max_window_spread,
            backoff_s=self.backoff_s,
            max_other_busy=self.max_other_busy,
        )


def protocol_settings(text: str) -> dict[str, Any]:
    """Protocol fields from JSON: an inline object or the path of a ``.json`` file.

    Every key must be a field of :class:`Protocol`, every value of that field's type (an
    integer where a float is expected is fine; ``null`` only where the default is ``None``) and
    within the field's range (counts and windows positive, ``max_windows >= n_windows``, shares
    in [0, 1]), so that a bad value is refused before a campaign starts.

    Raises
    ------
    ValueError
        One line naming the bad JSON, the unknown field(s) or the field with a bad value.

    Examples
    --------
    >>> protocol_settings('{"cpu_min_window_s": 0.5, "max_windows": 12}')
    {'cpu_min_window_s': 0.5, 'max_windows': 12}
    """
    src = text.strip()
    where = "--protocol"
    if not src.startswith("{"):
        path = Path(src)
        if not path.is_file():
            raise ValueError(f"--protocol: {text!r} is neither a JSON object nor a .json file")
        src = path.read_text()
        where = f"--protocol {path}"
    try:
        values = json.loads(src)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not valid JSON ({exc})") from None
    if not isinstance(values, dict):
        raise ValueError(f"{where}: expected a JSON object of Protocol fields, got {src[:40]!r}")
    kinds = {f.name: f.default for f in fields(Protocol)}
    unknown = sorted(set(values) - set(kinds))
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {unknown}; valid: {sorted(kinds)}")
    ints = {"threads"} | {n for n, d in kinds.items()
                          if isinstance(d, int) and not isinstance(d, bool)}
    for name, v in values.items():
        default = kinds[name]
        if v is None:
            ok, want = default is None, "number"
        elif isinstance(default, bool):
            ok, want = isinstance(v, bool), "bool"
        elif name in ints:
            ok, want = isinstance(v, int) and not isinstance(v, bool), "int"
        else:
            ok, want = isinstance(v, (int, float)) and not isinstance(v, bool), "number"
        if not ok:
            raise ValueError(f"{where}: field {name!r} must be of type {want}, got {v!r}")
        if isinstance(v, float) and not math.isfinite(v):  # JSON's NaN, Infinity
            raise ValueError(f"{where}: field {name!r} must be a finite number, got {v!r}")
    for name, v in values.items():
        lo, hi, closed = _RANGES.get(name, (None, None, True))
        if v is None or isinstance(v, bool) or lo is None:
            continue
        if (v < lo if closed else v <= lo) or (hi is not None and v > hi):
            rng = f"{'>=' if closed else '>'} {lo}" + (f" and <= {hi}" if hi is not None else "")
            raise ValueError(f"{where}: field {name!r} must be {rng}, got {v!r}")
    merged = {**kinds, **values}
    if merged["max_windows"] < merged["n_windows"]:
        raise ValueError(f"{where}: max_windows ({merged['max_windows']}) must be >= "
                         f"n_windows ({merged['n_windows']})")
    return values


#: Ranges of the numeric :class:`Protocol` fields: ``(low, high, low included)``; checked by
#: :func:`protocol_settings` before a campaign starts.
_RANGES: dict[str, tuple[float, float | None, bool]] = {
    "cooldown_s": (0, None, True), "cpu_cooldown_s": (0, None, True), "backoff_s": (0, None, True),
    "gpu_warmup_iters": (0, None, True), "cpu_warmup_iters": (0, None, True),
    "gpu_min_iters": (1, None, True), "cpu_min_iters": (1, None, True),
    "gpu_min_window_s": (0, None, False), "cpu_min_window_s": (0, None, False),
    "n_windows": (1, None, True), "max_windows": (1, None, True),
    "min_cpu_share": (0, 1, True), "max_window_spread": (0, None, False),
    "max_other_busy": (0, None, True), "sample_hz": (0, None, False),
    "threads": (1, None, True), "timeout_s": (0, None, False), "seed": (0, None, True),
}


def latency_stats(times_ms: np.ndarray | list[float]) -> dict[str, float]:
    """Median, mean, p10, p90 and CV (sample std / mean) of per-inference times (ms)."""
    t = np.asarray(times_ms, dtype=float)
    mean = float(t.mean())
    std = float(t.std(ddof=1)) if len(t) > 1 else 0.0
    return {
        "latency_ms": float(np.median(t)),
        "latency_mean_ms": mean,
        "latency_p10_ms": float(np.percentile(t, 10)),
        "latency_p90_ms": float(np.percentile(t, 90)),
        "latency_cv": std / mean if mean > 0 else NAN,
    }


def deadline_check(deadline: float | None, what: str) -> None:
    """Raise :class:`ConfigTimeoutError` once ``time.perf_counter()`` is past ``deadline``."""
    if deadline is not None and time.perf_counter() > deadline:
        raise ConfigTimeoutError(f"timeout: per-config wall-clock cap exceeded during {what}")



# --------------------------------------------------------------------------- rows' protocol
@dataclass(frozen=True)
class RowsProtocol:
    """How a set of stored rows was timed: what a model fitted on them predicts for, and what
    any timing compared with them (calibration, ``carb check``, ``screen --validate``) must
    repeat.

    Attributes
    ----------
    device : str
        ``"cpu"`` or ``"cuda"``.
    threads : int or None
        CPU intra-op threads of the rows (None: not recorded, or a GPU).
    heap_kept : bool
        CPU rows timed with glibc's heap kept (``Protocol.cpu_keep_heap``); rows without a
        ``heap_kept`` column ran with the default heap.
    torch_version : str or None
        PyTorch of the rows.
    recorded : bool
        False for a protocol assumed for a model file that records none (older files).

    Examples
    --------
    >>> RowsProtocol("cpu", 1, False, "2.13.0+cpu").describe()
    '1 thread, default heap (cpu)'
    """

    device: str = "cpu"
    threads: int | None = 1
    heap_kept: bool = False
    torch_version: str | None = None
    recorded: bool = True

    def describe(self) -> str:
        """One phrase for outputs: ``"1 thread, default heap (cpu)"``."""
        if self.device != "cpu":
            return f"{self.device}, the GPU protocol"
        t = "threads not recorded" if self.threads is None else \
            f"{self.threads} thread{'s' if self.threads != 1 else ''}"
        return f"{t}, {'heap kept' if self.heap_kept else 'default heap'} (cpu)"

    def protocol(self, **settings: Any) -> Protocol:
        """The :class:`Protocol` that times as these rows were timed (``settings`` add fields)."""
        return Protocol(threads=self.threads, cpu_keep_heap=self.heap_kept, **settings)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RowsProtocol:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


#: The protocol assumed for a model file that records none: the study's CPU rows before the
#: heap was kept (one thread, default heap).
ASSUMED_PROTOCOL = RowsProtocol("cpu", 1, False, None, recorded=False)


def _one(values: Any, column: str, what: str) -> Any:
    vals = sorted({v for v in values if v is not None and v == v}, key=str)
    if len(vals) > 1:
        raise ValueError(f"{what} mixes timing protocols: column {column!r} holds {vals}; "
                         "fit (or compare) rows of one protocol at a time")
    return vals[0] if vals else None


def rows_protocol(rows: Any, what: str = "the rows") -> RowsProtocol:
    """The :class:`RowsProtocol` of measured rows (their ``device`` or platform prefix,
    ``threads``, ``heap_kept`` and ``torch_version`` columns).

    Raises
    ------
    ValueError
        One line naming the column whose values differ between rows (a mix of protocols).

    Examples
    --------
    >>> import pandas as pd
    >>> rows_protocol(pd.DataFrame({"platform": ["cpu_x"], "threads": [1]})).describe()
    '1 thread, default heap (cpu)'
    """
    if "status" in rows.columns:
        ok = rows[rows["status"].astype(str).eq("ok")]
        rows = ok if len(ok) else rows
    if "device" in rows.columns:
        dev = _one((str(d).split(":")[0] for d in rows["device"].dropna()), "device", what)
    elif "platform" in rows.columns:
        dev = _one(("cuda" if str(p).startswith("gpu") else "cpu"
                    for p in rows["platform"].dropna()), "platform", what)
    else:
        dev = None
    dev = dev or "cpu"
    threads = (_one((int(t) for t in rows["threads"].dropna()), "threads", what)
               if "threads" in rows.columns and dev == "cpu" else None)

    heaps = recorded_heaps(rows["heap_kept"].dropna()) if "heap_kept" in rows.columns else [False]
    if len(heaps) > 1:
        raise ValueError(f"{what} mixes timing protocols: column 'heap_kept' holds [False, True] "
                         "(the default heap and the heap kept); fit (or compare) rows of one "
                         "protocol at a time")
    torch_version = (_one((str(v) for v in rows["torch_version"].dropna()), "torch_version", what)
                     if "torch_version" in rows.columns else None)
    return RowsProtocol(dev, threads, bool(heaps[0]) and dev == "cpu", torch_version)


def model_protocol(model: Any) -> RowsProtocol:
    """The protocol a fitted model predicts for (``rows_protocol_``, set by ``carb fit``), or
    :data:`ASSUMED_PROTOCOL` (``recorded`` False) for a model that records none."""
    d = getattr(model, "rows_protocol_", None)
    return RowsProtocol.from_dict(d) if isinstance(d, dict) else ASSUMED_PROTOCOL
