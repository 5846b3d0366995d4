"""Measurement devices: the CPU (``perf_counter`` windows, RAPL energy) and CUDA GPUs (CUDA
events, NVML energy and telemetry), each implementing :class:`carb_lib.measure.protocol.Protocol`.
Tests subclass a device to inject failures. Every name is importable from
:mod:`carb_lib.measure.profiling` too.
"""

from __future__ import annotations

import functools
import gc
import math
import platform as _platform
import re
import socket
import time
from collections.abc import Iterable
from typing import Any

import numpy as np

from carb_lib.measure.counters import count_kernel_launches, cpu_peak_memory_bytes
from carb_lib.measure.heap import heap_kept, keep_heap, minor_faults
from carb_lib.measure.interference import (
    OtherLoad,
    Window,
    cpu_clock,
    host_load,
    run_windows,
    software_provenance,
)
from carb_lib.measure.protocol import MIB, Protocol, latency_stats
from carb_lib.measure.protocol import deadline_check as _deadline_check
from carb_lib.measure.telemetry import (
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

__all__ = ["UNKNOWN_CPU", "CpuDevice", "CudaDevice", "Device", "cpu_identity", "get_device",
           "idle_power_from_counter", "is_unknown_cpu", "refuse_other_cpu", "slug"]

#: ``cpu_id`` of rows whose CPU was not recorded (measured before the column existed, or
#: on a machine no campaign log names): the CPU is unknown, never assumed to be this one.
UNKNOWN_CPU = "unknown"


def _read_cpuinfo() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            return fh.read()
    except OSError:
        return ""


def _cpuinfo_fields(text: str) -> dict[str, str]:
    """``key: value`` pairs of the first processor block of ``/proc/cpuinfo`` text."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if out:
                break
            continue
        key, _, value = line.partition(":")
        out.setdefault(key.strip().lower(), value.strip())
    return out


@functools.cache
def _machine_cpuinfo() -> dict[str, str]:
    """This machine's :func:`_cpuinfo_fields` (``/proc/cpuinfo`` is read once per process)."""
    return _cpuinfo_fields(_read_cpuinfo())


def _cpu_name() -> str:
    name = _machine_cpuinfo().get("model name")
    return name if name is not None else (_platform.processor() or _platform.machine() or "cpu")


def _torch_isa() -> str:
    try:
        import torch

        return str(torch.backends.cpu.get_cpu_capability())
    except Exception:  # noqa: BLE001 - an older torch: no capability to report
        return "unknown ISA"


def _l3_size() -> str:
    try:
        with open("/sys/devices/system/cpu/cpu0/cache/index3/size") as fh:
            return fh.read().strip()
    except OSError:
        return "?"


def cpu_identity(cpuinfo: str | None = None, *, isa: str | None = None,
                 l3: str | None = None) -> str:
    """What tells this CPU apart from another of the same model name: vendor, family, model
    and stepping, the ISA PyTorch's CPU kernels use, and the L3 size, e.g.
    ``"AuthenticAMD family 25 model 17 stepping 1 | AVX512 | L3 32768K"``.

    Cloud VMs report one model name ("AMD EPYC") for processors three generations apart (Zen 3
    without AVX-512, Zen 4 and Zen 5 with it), which run the same network 3x apart: rows of
    two such machines under one platform name would be one platform to every model. The
    profiler records this string in each row (``cpu_id``) and campaigns, merges and kernel
    benchmarks refuse to mix two of them under one platform. Arguments replace what is read
    from the machine (tests); without any, the machine's identity is computed once."""
    if cpuinfo is None and isa is None and l3 is None:
        return _machine_identity()
    f = _machine_cpuinfo() if cpuinfo is None else _cpuinfo_fields(cpuinfo)
    parts = [f.get("vendor_id") or _platform.processor() or _platform.machine() or "cpu"]
    parts += [f"{k} {f[k]}" for k in ("cpu family", "model", "stepping") if f.get(k)]
    head = " ".join(parts).replace("cpu family", "family")
    return (f"{head} | {_torch_isa() if isa is None else isa} | "
            f"L3 {_l3_size() if l3 is None else l3}")


@functools.cache
def _machine_identity() -> str:
    return cpu_identity(_read_cpuinfo(), isa=_torch_isa(), l3=_l3_size())


def is_unknown_cpu(value: Any) -> bool:
    """Whether a stored ``cpu_id`` names no CPU: missing (None, NaN, empty) or
    :data:`UNKNOWN_CPU`."""
    return not isinstance(value, str) or value.strip() in ("", UNKNOWN_CPU)


def refuse_other_cpu(ids: Iterable[Any], what: str, advice: str) -> None:
    """One clear ``ValueError`` if the stored ``cpu_id`` values ``ids`` (missing and
    :data:`UNKNOWN_CPU` ones ignored: an unknown CPU is refused where it matters, e.g.
    :func:`carb_lib.measure.audit.refuse_unknown_cpu`) name a CPU other than this machine's:
    ``"<what> measured on another CPU (...); this machine is ...: <advice>"``."""
    me = cpu_identity()
    other = sorted({i for i in ids if not is_unknown_cpu(i)} - {me})
    if other:
        raise ValueError(f"{what} measured on another CPU (cpu_id {other}); this machine is "
                         f"{me!r}: {advice}")


def slug(text: str) -> str:
    """``text`` as a lower-case identifier (runs of other characters -> ``_``)."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def idle_power_from_counter(read_j: Any, source: str, seconds: float) -> float:
    """Mean power (W) over ``seconds`` of sleep from the cumulative energy counter ``read_j``
    (an :class:`EnergyMeter` window); NaN if the window raises :class:`EnergyCounterError`."""
    meter = EnergyMeter(read_j, source)
    meter.begin()
    time.sleep(seconds)
    try:
        return meter.end().avg_power_w
    except EnergyCounterError:
        return NAN



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
            "cpu_id": cpu_identity(),
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
    # a config may give its per-sample input shape (family ``module``); else 3 x R x R
    shape = getattr(config, "input_shape", None) or (3, config.resolution, config.resolution)
    x = torch.randn(config.batch, *shape, generator=g)
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

        # family and model in the name: one model name ("AMD EPYC") covers CPUs 3x apart
        f = _machine_cpuinfo()
        gen = (f"_f{f['cpu family']}m{f['model']}" if f.get("cpu family") and f.get("model")
               else "")
        return f"cpu_{slug(self._name)[:40]}{gen}_{torch.get_num_threads()}t"

    def setup(self, protocol: Protocol) -> None:
        import torch

        if protocol.threads is not None and torch.get_num_threads() != protocol.threads:
            torch.set_num_threads(int(protocol.threads))
        if protocol.cpu_keep_heap:
            keep_heap()

    def provenance(self, protocol: Protocol) -> dict[str, Any]:
        out = super().provenance(protocol)
        out["device_name"] = self._name
        out["heap_kept"] = heap_kept()
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
            f0 = minor_faults()
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
            faults = minor_faults() - f0
            share = (clock() - c0) / wall
            w = Window(np.asarray(times) * 1e3, wall, share=share, other_busy=other.stop())
            w.extra["minor_faults"] = faults
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
        out.update(n_iters=n, window_s=window_s,
                   minor_faults_per_call=sum(w.extra["minor_faults"] for w in res.used) / n)
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
        return idle_power_from_counter(self.rapl.energy_j, "rapl", seconds)


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
        return slug(self._name)

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
            return idle_power_from_counter(self.nvml.energy_counter_j, "nvml_total_energy",
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

