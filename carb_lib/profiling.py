"""Measure one configuration: energy, latency and peak memory of inference, one batch at a time.

:func:`profile_config` returns one row of the dataset schema (:mod:`carb_lib.dataset`). The
measurement protocol is documented on :class:`Protocol`; devices (:class:`CpuDevice`,
:class:`CudaDevice`) implement it and can be replaced by a fake in tests.
"""

from __future__ import annotations

import gc
import math
import os
import platform as _platform
import re
import socket
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np

from carb_lib.counters import (  # noqa: F401 - re-exported for callers of this module
    _resident_bytes,
    count_kernel_launches,
    cpu_peak_memory_bytes,
    memory_events,
)
from carb_lib.interference import (
    OtherLoad,
    Window,
    WindowPolicy,
    cpu_clock,
    host_load,
    run_windows,
    software_provenance,
)
from carb_lib.telemetry import (
    NAN,
    EnergyCounterError,
    EnergyMeter,
    MIGRefusedError,
    NvmlDevice,
    NVMLNotFoundError,
    RaplReader,
    TelemetryError,
    TelemetrySampler,
)

MIB = 2**20


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
    both ``gpu_min_iters`` (100) iterations and ``gpu_min_window_s`` (0.5 s) have passed. Each
    inference is timed with a pair of CUDA events; the window is closed by a synchronize and
    ``temp_c_after`` is read. All inferences run under ``torch.inference_mode()``; outputs are
    discarded at once. Other PyTorch defaults are kept (e.g. TF32 is allowed for cuDNN
    convolutions, ``torch.backends.cudnn.allow_tf32 = True``, so fp32 convolutions may run on
    tensor cores).

    * ``latency_ms`` is the median of the per-inference event times; ``latency_mean_ms``,
      ``latency_p10_ms``, ``latency_p90_ms`` and ``latency_cv`` (std / mean) describe them.
    * ``energy_j`` (per batch) = difference of NVML's cumulative energy counter
      (``nvmlDeviceGetTotalEnergyConsumption``) across the window / ``n_iters``. A zero
      difference is an error (:class:`~carb_lib.telemetry.EnergyCounterError`), never 0 J: the
      row keeps latency and memory, ``energy_j`` is NaN and ``energy_reason`` says why.
      ``avg_power_w`` = window energy / window time. ``idle_power_w`` is the idle baseline the
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
    most (:mod:`carb_lib.interference`). ``latency_ms`` is the median of the used windows'
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
    Telemetry columns and ``kernel_launches`` are NaN on a CPU.

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
    timeout_s : float or None
        Per-config wall-clock cap.
    seed : int
        Seed of the input batch.
    """

    cooldown_s: float = 1.0
    gpu_warmup_iters: int = 10
    gpu_min_iters: int = 100
    gpu_min_window_s: float = 0.5
    cpu_cooldown_s: float = 0.0
    cpu_warmup_iters: int = 3
    cpu_min_iters: int = 2
    cpu_min_window_s: float = 0.1
    n_windows: int = 3
    max_windows: int = 8
    min_cpu_share: float = 0.95
    max_window_spread: float = 0.05
    backoff_s: float = 0.05
    max_other_busy: float = 0.3
    threads: int | None = None
    sample_hz: float = 50.0
    count_kernels: bool = True
    cpu_profile_memory: bool = True
    timeout_s: float | None = 300.0
    seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def policy(self) -> WindowPolicy:
        """The window policy (:class:`carb_lib.interference.WindowPolicy`) of this protocol."""
        return WindowPolicy(
            n_windows=self.n_windows,
            max_windows=self.max_windows,
            min_cpu_share=self.min_cpu_share,
            max_window_spread=self.max_window_spread,
            backoff_s=self.backoff_s,
            max_other_busy=self.max_other_busy,
        )


class ConfigTimeoutError(RuntimeError):
    """The per-config wall-clock cap was exceeded."""


# ----------------------------------------------------------------------------------------
# helpers


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


def _deadline_check(deadline: float | None, what: str) -> None:
    if deadline is not None and time.perf_counter() > deadline:
        raise ConfigTimeoutError(f"timeout: per-config wall-clock cap exceeded during {what}")


def _is_oom(exc: BaseException) -> bool:
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


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return _platform.processor() or _platform.machine() or "cpu"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


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


def _idle_power_from_counter(read_j: Any, source: str, seconds: float) -> float:
    """Mean power (W) over ``seconds`` of sleep from the cumulative energy counter ``read_j``
    (an :class:`EnergyMeter` window); NaN if the window raises :class:`EnergyCounterError`."""
    meter = EnergyMeter(read_j, source)
    meter.begin()
    time.sleep(seconds)
    try:
        return meter.end().avg_power_w
    except EnergyCounterError:
        return NAN


def utc_now() -> str:
    """Current UTC time, ISO 8601 with milliseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


# ----------------------------------------------------------------------------------------
# devices


class Device:
    """Base class of measurement devices.

    Subclasses implement :meth:`prepare` (model and input on the device),
    :meth:`measure` (the protocol; returns schema columns), :meth:`release` (free memory)
    and :meth:`provenance`. Tests subclass a device and override :meth:`measure` to inject
    failures such as ``torch.OutOfMemoryError``.
    """

    kind = "base"

    def __init__(self, platform: str | None = None):
        self._platform = platform

    @property
    def platform(self) -> str:
        return self._platform or self.default_platform()

    def default_platform(self) -> str:  # pragma: no cover - overridden
        return self.kind

    def setup(self, protocol: Protocol) -> None:
        """Apply process-wide settings (threads, cuDNN) before a measurement."""

    def provenance(self, protocol: Protocol) -> dict[str, Any]:
        import torch

        return {
            "platform": self.platform,
            "device_name": self.kind,
            "driver": None,
            "cuda": None,
            "torch_version": torch.__version__,
            "host": socket.gethostname(),
            "threads": int(torch.get_num_threads()),
            **software_provenance(),
        }

    def prepare(self, model: Any, config: Any, protocol: Protocol) -> tuple[Any, Any]:
        raise NotImplementedError

    def measure(
        self, model: Any, x: Any, protocol: Protocol, idle_power_w: float, deadline: float | None
    ) -> dict[str, Any]:
        raise NotImplementedError

    def release(self) -> None:
        gc.collect()

    def idle_power_w(self, seconds: float = 2.0) -> float:
        """Idle power baseline in W (NaN where no energy counter)."""
        return NAN


def _dtype(precision: str) -> Any:
    import torch

    return {"fp32": torch.float32, "fp16": torch.float16}[precision]


def _make_input(config: Any, protocol: Protocol, device: Any, dtype: Any) -> Any:
    import torch

    g = torch.Generator().manual_seed(protocol.seed)
    x = torch.randn(config.batch, 3, config.resolution, config.resolution, generator=g)
    return x.to(device=device, dtype=dtype)


class CpuDevice(Device):
    """The CPU, timed with ``perf_counter``; energy from RAPL where readable.

    Parameters
    ----------
    platform : str, optional
        Platform name for the rows (default ``cpu_<model slug>_<threads>t``).
    rapl_root : str
        powercap folder (tests point it elsewhere).
    """

    kind = "cpu"

    def __init__(self, platform: str | None = None, rapl_root: str = "/sys/class/powercap"):
        super().__init__(platform)
        self.rapl = RaplReader(rapl_root)
        self._name = _cpu_name()

    def default_platform(self) -> str:
        import torch

        return f"cpu_{_slug(self._name)[:40]}_{torch.get_num_threads()}t"

    def setup(self, protocol: Protocol) -> None:
        import torch

        if protocol.threads is not None and torch.get_num_threads() != protocol.threads:
            torch.set_num_threads(int(protocol.threads))

    def provenance(self, protocol: Protocol) -> dict[str, Any]:
        out = super().provenance(protocol)
        out["device_name"] = self._name
        return out

    def prepare(self, model: Any, config: Any, protocol: Protocol) -> tuple[Any, Any]:
        dtype = _dtype(config.precision)
        model = model.to(dtype=dtype)
        return model, _make_input(config, protocol, "cpu", dtype)

    def measure(
        self, model: Any, x: Any, protocol: Protocol, idle_power_w: float, deadline: float | None
    ) -> dict[str, Any]:
        import torch

        gc.collect()
        if protocol.cpu_cooldown_s > 0:
            time.sleep(protocol.cpu_cooldown_s)
        out: dict[str, Any] = {"load_1m": host_load()}
        clock = cpu_clock(torch.get_num_threads())
        other = OtherLoad()

        def take_window() -> Window:
            times: list[float] = []
            meter = EnergyMeter(self.rapl.energy_j, "rapl") if self.rapl.available else None
            if meter:
                meter.begin()
            other.start()
            c0 = clock()
            t_start = time.perf_counter()
            while True:
                t0 = time.perf_counter()
                model(x)
                t1 = time.perf_counter()
                times.append(t1 - t0)
                if (
                    len(times) >= protocol.cpu_min_iters
                    and t1 - t_start >= protocol.cpu_min_window_s
                ):
                    break
                _deadline_check(deadline, "the timed window")
            wall = time.perf_counter() - t_start
            share = (clock() - c0) / wall
            w = Window(np.asarray(times) * 1e3, wall, share=share, other_busy=other.stop())
            if meter:
                try:
                    w.extra["energy_j"] = meter.end().energy_j
                except EnergyCounterError as exc:
                    w.extra["energy_error"] = str(exc)
            return w

        with torch.inference_mode():
            for _ in range(max(protocol.cpu_warmup_iters, 0)):
                model(x)
                _deadline_check(deadline, "warm-up")
            res = run_windows(
                take_window,
                protocol.policy(),
                deadline_check=lambda: _deadline_check(deadline, "the timed windows"),
            )
        out.update(res.columns())
        window_s = res.wall_s
        n = len(res.times_ms)
        out.update(latency_stats(res.times_ms))
        out.update(n_iters=n, window_s=window_s)
        if self.rapl.available:
            errors = [w.extra["energy_error"] for w in res.used if "energy_error" in w.extra]
            if errors:
                out.update(energy_j=NAN, energy_reason=errors[0])
            else:
                total_j = float(sum(w.extra["energy_j"] for w in res.used))
                out.update(
                    energy_j=total_j / n, avg_power_w=total_j / window_s, power_source="rapl"
                )
                if not math.isnan(idle_power_w):
                    out["idle_power_w"] = idle_power_w
                    out["energy_dynamic_j"] = out["energy_j"] - idle_power_w * window_s / n
        else:
            out.update(energy_j=NAN, energy_reason=self.rapl.reason)
        if protocol.cpu_profile_memory:
            _deadline_check(deadline, "the memory profile")
            mem = cpu_peak_memory_bytes(model, x)
            out["peak_mem_mib"] = mem["peak_bytes"] / MIB
        else:
            out["peak_mem_mib"] = NAN
        return out

    def idle_power_w(self, seconds: float = 2.0) -> float:
        if not self.rapl.available:
            return NAN
        return _idle_power_from_counter(self.rapl.energy_j, "rapl", seconds)


class CudaDevice(Device):
    """One CUDA GPU, timed with CUDA events; energy and telemetry from NVML.

    Parameters
    ----------
    index : int
        CUDA device index.
    platform : str, optional
        Platform name (default: slug of the GPU name, e.g. ``nvidia_h200``).
    use_nvml : bool
        Read energy/telemetry from NVML (False: latency and memory only).

    Raises
    ------
    MIGRefusedError
        The GPU is a MIG slice.
    """

    kind = "cuda"

    def __init__(self, index: int = 0, platform: str | None = None, use_nvml: bool = True):
        super().__init__(platform)
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("CUDA device requested but torch.cuda.is_available() is False")
        self.index = index
        self.torch_device = torch.device("cuda", index)
        self.nvml: NvmlDevice | None = None
        self.nvml_reason = ""
        self.energy_ok = False
        self.info = None
        if use_nvml:
            try:
                self.nvml = NvmlDevice.for_torch_device(index)
                self.info = self.nvml.info()
                self.energy_ok = self.info.energy_counter_supported
                if not self.energy_ok:
                    self.nvml_reason = (
                        f"no energy counter: nvmlDeviceGetTotalEnergyConsumption not supported "
                        f"on {self.info.name}"
                    )
            except MIGRefusedError:
                raise
            except (NVMLNotFoundError, TelemetryError) as exc:
                self.nvml = None
                self.nvml_reason = f"no energy counter: {exc}"
        else:
            self.nvml_reason = "no energy counter: NVML disabled"
        self._name = torch.cuda.get_device_name(index)

    def default_platform(self) -> str:
        return _slug(self._name)

    def setup(self, protocol: Protocol) -> None:
        import torch

        torch.backends.cudnn.benchmark = False
        torch.cuda.set_device(self.index)
        if protocol.threads is not None and torch.get_num_threads() != protocol.threads:
            torch.set_num_threads(int(protocol.threads))

    def provenance(self, protocol: Protocol) -> dict[str, Any]:
        import torch

        out = super().provenance(protocol)
        out["device_name"] = self._name
        out["cuda"] = torch.version.cuda
        out["driver"] = self.info.driver if self.info is not None else None
        return out

    def prepare(self, model: Any, config: Any, protocol: Protocol) -> tuple[Any, Any]:
        model = model.to(self.torch_device)
        if config.precision == "fp16":
            model = model.half()
        return model, _make_input(config, protocol, self.torch_device, _dtype(config.precision))

    def _interference(self) -> tuple[float, float, float]:
        """(other compute processes, throttle-reason bitmask, SM clock MHz) now."""
        if self.nvml is None:
            return NAN, NAN, NAN
        return (
            self.nvml.other_compute_processes(),
            self.nvml.throttle_reasons(),
            self.nvml.clocks_mhz()[0],
        )

    def _window(self, model: Any, x: Any, protocol: Protocol, deadline: float | None) -> dict:
        """One timed window (energy, events, interference at both ends)."""
        import torch

        w: dict[str, Any] = {"energy_reason": None, "em": None}
        torch.cuda.synchronize(self.torch_device)
        torch.cuda.reset_peak_memory_stats(self.torch_device)
        w["temp_c_before"] = self.nvml.temperature_c() if self.nvml else NAN
        w["start"] = self._interference()
        meter = (
            EnergyMeter(self.nvml.energy_counter_j, "nvml_total_energy")
            if (self.nvml is not None and self.energy_ok)
            else None
        )
        events: list[tuple[Any, Any]] = []
        w["t_mono0"] = time.monotonic()
        if meter:
            meter.begin()
        t_start = time.perf_counter()
        while True:
            s = torch.cuda.Event(enable_timing=True)
            e = torch.cuda.Event(enable_timing=True)
            s.record()
            model(x)
            e.record()
            events.append((s, e))
            if (
                len(events) >= protocol.gpu_min_iters
                and time.perf_counter() - t_start >= protocol.gpu_min_window_s
            ):
                torch.cuda.synchronize(self.torch_device)
                if time.perf_counter() - t_start >= protocol.gpu_min_window_s:
                    break
            _deadline_check(deadline, "the timed window")
        torch.cuda.synchronize(self.torch_device)
        w["window_s"] = time.perf_counter() - t_start
        if meter:
            try:
                w["em"] = meter.end()
            except EnergyCounterError as exc:
                w["energy_reason"] = str(exc)
        w["t_mono1"] = time.monotonic()
        w["end"] = self._interference()
        w["temp_c_after"] = self.nvml.temperature_c() if self.nvml else NAN
        w["times_ms"] = np.array([s.elapsed_time(e) for s, e in events])
        return w

    def measure(
        self, model: Any, x: Any, protocol: Protocol, idle_power_w: float, deadline: float | None
    ) -> dict[str, Any]:
        import torch

        out: dict[str, Any] = {"load_1m": host_load()}
        torch.cuda.synchronize(self.torch_device)
        gc.collect()
        torch.cuda.empty_cache()
        if protocol.cooldown_s > 0:
            time.sleep(protocol.cooldown_s)
        sampler = None
        if self.nvml is not None and protocol.sample_hz > 0:
            sampler = TelemetrySampler(self.nvml, hz=protocol.sample_hz).start()
        policy = protocol.policy()
        attempts = max(1, policy.max_windows // policy.n_windows)
        n_rejected = 0
        try:
            with torch.inference_mode():
                for _ in range(max(protocol.gpu_warmup_iters, 0)):
                    model(x)
                    _deadline_check(deadline, "warm-up")
                for attempt in range(attempts):
                    w = self._window(model, x, protocol, deadline)
                    others = np.nanmax([w["start"][0], w["end"][0], 0.0])
                    if others > 0 and attempt < attempts - 1:
                        n_rejected += 1
                        time.sleep(min(policy.backoff_s * 2**attempt, 1.0))
                        continue
                    break
        finally:
            if sampler is not None:
                sampler.stop()
        times_ms = w["times_ms"]
        n = len(times_ms)
        window_s = w["window_s"]
        em = w["em"]
        out.update(latency_stats(times_ms))
        thirds = [np.median(c) for c in np.array_split(times_ms, policy.n_windows) if len(c)]
        out.update(
            n_iters=n,
            window_s=window_s,
            temp_c_before=w["temp_c_before"],
            temp_c_after=w["temp_c_after"],
            n_windows=n_rejected + 1,
            n_rejected=n_rejected,
            latency_window_cv=(
                float(np.std(thirds, ddof=1) / np.mean(thirds)) if len(thirds) > 1 else NAN
            ),
            gpu_other_procs=others if self.nvml is not None else NAN,
            sm_clock_start_mhz=w["start"][2],
            sm_clock_end_mhz=w["end"][2],
            quality="disturbed" if others > 0 else ("retried" if n_rejected else "clean"),
        )
        tr = [v for v in (w["start"][1], w["end"][1]) if not math.isnan(v)]
        out["throttle_reasons"] = float(int(tr[0]) | int(tr[-1])) if tr else NAN
        if em is not None:
            out["energy_j"] = em.energy_j / n
            out["avg_power_w"] = em.avg_power_w
        else:
            out["energy_j"] = NAN
            out["energy_reason"] = w["energy_reason"] or self.nvml_reason or "no energy counter"
        if not math.isnan(idle_power_w):
            out["idle_power_w"] = idle_power_w
            if em is not None:
                out["energy_dynamic_j"] = out["energy_j"] - idle_power_w * window_s / n
        out["peak_mem_mib"] = torch.cuda.max_memory_allocated(self.torch_device) / MIB
        out["peak_reserved_mib"] = torch.cuda.max_memory_reserved(self.torch_device) / MIB
        if self.nvml is not None:
            out["nvml_proc_mem_mib"] = self.nvml.process_memory_mib()
            out["power_source"] = self.nvml.power_source
        if sampler is not None:
            m = sampler.window_means(w["t_mono0"], w["t_mono1"])
            out.update(
                sm_util_pct=m["sm_util_pct"],
                mem_util_pct=m["mem_util_pct"],
                sm_clock_mhz=m["sm_clock_mhz"],
                mem_clock_mhz=m["mem_clock_mhz"],
                power_sampled_w=m["power_w"],
            )
        if protocol.count_kernels:
            out["kernel_launches"] = count_kernel_launches(model, x)
        return out

    def release(self) -> None:
        import torch

        gc.collect()
        torch.cuda.empty_cache()

    def idle_power_w(self, seconds: float = 2.0) -> float:
        """Mean power over ``seconds`` of idling (energy counter difference / time), after a
        synchronize and a 0.2 s settle; NaN without a counter."""
        import torch

        torch.cuda.synchronize(self.torch_device)
        time.sleep(0.2)
        if self.nvml is None:
            return NAN
        if self.energy_ok:
            return _idle_power_from_counter(self.nvml.energy_counter_j, "nvml_total_energy",
                                            seconds)
        with TelemetrySampler(self.nvml, hz=20) as s:
            time.sleep(seconds)
        vals = [x.power_w for x in s.samples if not math.isnan(x.power_w)]
        return float(np.mean(vals)) if vals else NAN


def get_device(spec: str | Device = "cpu", platform: str | None = None) -> Device:
    """A :class:`Device` from ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` (devices pass through)."""
    if isinstance(spec, Device):
        return spec
    if spec == "cpu":
        return CpuDevice(platform=platform)
    if spec.startswith("cuda"):
        idx = int(spec.split(":", 1)[1]) if ":" in spec else 0
        return CudaDevice(index=idx, platform=platform)
    raise ValueError(f"device={spec!r} is unknown; use 'cpu', 'cuda' or 'cuda:N'")


# ----------------------------------------------------------------------------------------
def base_row(config: Any, device: Device, protocol: Protocol) -> dict[str, Any]:
    """A schema row with config and provenance filled, measurements missing."""
    from carb_lib.dataset import empty_row

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
        A config object (e.g. :class:`carb_lib.space.ResNetConfig`).
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
    from carb_lib import space

    protocol = protocol or Protocol()
    _freeze_gc_once()
    dev = get_device(device)
    dev.setup(protocol)
    row = base_row(config, dev, protocol)
    deadline = time.perf_counter() + protocol.timeout_s if protocol.timeout_s is not None else None
    model = x = None
    try:
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
        for k in ("energy_j", "latency_ms", "peak_mem_mib"):
            row[k] = NAN
    return row


def measure_tag() -> str:
    """A short unique tag for this process (host-pid-time) used in part file names."""
    return f"{_slug(socket.gethostname())[:20]}-{os.getpid()}-{int(time.time() * 1000)}"
