"""Device telemetry: NVIDIA GPUs through NVML, CPUs through RAPL.

Two layers, in the style of ml-energy/zeus:

* the **device layer** (:class:`NvmlDevice`, :class:`RaplReader`) reads one value at a time
  from the hardware and maps every failure to a typed :class:`TelemetryError`;
* the **monitor layer** (:class:`EnergyMeter`, :class:`TelemetrySampler`) builds measurements
  over a time window on top of it and returns result dataclasses (units in the names).

Energy on a GPU is always the difference of the driver's cumulative energy counter
(``nvmlDeviceGetTotalEnergyConsumption``, mJ since the driver was loaded). Power readings are
only used as telemetry: the instantaneous power field (``NVML_FI_DEV_POWER_INSTANT``) where
the driver has it, else ``nvmlDeviceGetPowerUsage`` (on Ampere and later a 1 s moving
average); which one was used is recorded in ``power_source``. Power samples are never
integrated into energy.

``pynvml`` (package ``nvidia-ml-py``) is imported lazily, so that this module imports on a
machine without it.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

NAN = float("nan")
MIB = 2**20

# ----------------------------------------------------------------------------------------
# errors


class TelemetryError(RuntimeError):
    """Base class of every telemetry failure."""


class NVMLNotFoundError(TelemetryError):
    """``pynvml`` or the NVML shared library (``libnvidia-ml.so.1``) cannot be loaded."""


class NVMLNotSupportedError(TelemetryError):
    """The device or driver does not support the NVML query."""


class MIGRefusedError(TelemetryError):
    """The GPU is in MIG mode: energy, power and utilisation are per physical GPU, not per
    MIG slice, so measurements on a slice would be wrong."""


class EnergyCounterError(TelemetryError):
    """An energy counter did not advance over a measurement window (a zero delta is never
    reported as 0 J)."""


# ----------------------------------------------------------------------------------------
# NVML device layer

_ARCH_NAMES = {
    2: "kepler",
    3: "maxwell",
    4: "pascal",
    5: "volta",
    6: "turing",
    7: "ampere",
    8: "ada",
    9: "hopper",
    10: "blackwell",
}


def _import_pynvml() -> Any:
    """Import ``pynvml`` lazily; raise :class:`NVMLNotFoundError` if it is not installed."""
    try:
        import pynvml
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise NVMLNotFoundError(
            "python package 'nvidia-ml-py' (module pynvml) is not installed; "
            "install it to read GPU energy and telemetry"
        ) from exc
    return pynvml


def _map_nvml_error(nvml: Any, exc: BaseException, what: str, device: str = "") -> TelemetryError:
    """Translate a ``pynvml.NVMLError`` into a typed :class:`TelemetryError`."""
    code = getattr(exc, "value", None)
    where = f" on {device}" if device else ""
    if code == getattr(nvml, "NVML_ERROR_LIBRARY_NOT_FOUND", 12):
        return NVMLNotFoundError(
            f"{what}: NVML shared library libnvidia-ml.so.1 not found (no NVIDIA driver on "
            f"this machine, or it is not on the loader path)"
        )
    if code == getattr(nvml, "NVML_ERROR_DRIVER_NOT_LOADED", 9):
        return NVMLNotFoundError(f"{what}: the NVIDIA driver is not loaded")
    if code in (
        getattr(nvml, "NVML_ERROR_NOT_SUPPORTED", 3),
        getattr(nvml, "NVML_ERROR_FUNCTION_NOT_FOUND", 13),
    ):
        return NVMLNotSupportedError(f"{what} is not supported{where} (NVML: {exc})")
    return TelemetryError(f"{what} failed{where} (NVML error {code}: {exc})")


@dataclass(frozen=True)
class DeviceInfo:
    """Static facts about a GPU, read once."""

    index: int
    name: str
    uuid: str
    architecture: str
    driver: str
    cuda_driver: str
    power_limit_w: float
    memory_total_mib: float
    energy_counter_supported: bool
    power_source: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TelemetrySample:
    """One reading of every telemetry value (NaN where unsupported).

    ``t_s`` is ``time.monotonic()`` at the start of the reading. ``energy_j`` is the raw
    cumulative counter (J since the driver loaded), not a window energy.
    """

    t_s: float
    power_w: float
    sm_util_pct: float
    mem_util_pct: float
    temp_c: float
    sm_clock_mhz: float
    mem_clock_mhz: float
    mem_used_mib: float
    energy_j: float


class NvmlDevice:
    """One physical NVIDIA GPU seen through NVML.

    Parameters
    ----------
    index : int
        NVML index of the GPU (``nvidia-smi`` order; not the CUDA index when
        ``CUDA_VISIBLE_DEVICES`` reorders devices: use :meth:`for_torch_device`).
    uuid : str, optional
        Select the GPU by UUID instead of index.
    allow_mig : bool
        Accept a GPU in MIG mode (default False: :class:`MIGRefusedError`).

    Raises
    ------
    NVMLNotFoundError
        ``pynvml`` or the NVML library is missing.
    MIGRefusedError
        The GPU (or the visible device) is a MIG slice.
    TelemetryError
        Any other NVML failure.
    """

    def __init__(self, index: int = 0, uuid: str | None = None, allow_mig: bool = False):
        nvml = _import_pynvml()
        self._nvml = nvml
        self._nvml_error = getattr(nvml, "NVMLError", Exception)
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        if not allow_mig and "MIG-" in visible:
            raise MIGRefusedError(
                f"CUDA_VISIBLE_DEVICES={visible!r} selects a MIG slice; NVML energy, power and "
                "utilisation are per physical GPU, so per-slice measurements would be wrong. "
                "Measure on a full GPU."
            )
        try:
            nvml.nvmlInit()
        except Exception as exc:  # NVMLError subclasses
            raise _map_nvml_error(nvml, exc, "nvmlInit") from exc
        self.index = index
        try:
            if uuid is not None:
                self.handle = nvml.nvmlDeviceGetHandleByUUID(uuid)
            else:
                self.handle = nvml.nvmlDeviceGetHandleByIndex(index)
        except Exception as exc:
            raise _map_nvml_error(nvml, exc, f"get handle of GPU {uuid or index}") from exc
        self.name = self._text(self._call(nvml.nvmlDeviceGetName, "nvmlDeviceGetName"))
        if not allow_mig:
            self._refuse_mig()
        self._unsupported: set[str] = set()
        self._power_source: str | None = None

    # -- plumbing --------------------------------------------------------------------------
    @staticmethod
    def _text(value: Any) -> str:
        return value.decode() if isinstance(value, bytes) else str(value)

    def _call(self, fn: Callable[..., Any], what: str, *args: Any) -> Any:
        try:
            return fn(self.handle, *args)
        except TelemetryError:
            raise
        except self._nvml_error as exc:
            raise _map_nvml_error(self._nvml, exc, what, getattr(self, "name", "")) from exc

    def _optional(self, key: str, fn: Callable[[], float]) -> float:
        """Call ``fn``; remember and return NaN if the query is unsupported."""
        if key in self._unsupported:
            return NAN
        try:
            return float(fn())
        except NVMLNotSupportedError:
            self._unsupported.add(key)
            return NAN

    def _refuse_mig(self) -> None:
        nvml = self._nvml
        try:
            current, _pending = nvml.nvmlDeviceGetMigMode(self.handle)
        except Exception:  # not supported on pre-Ampere or consumer GPUs: no MIG
            return
        if current == getattr(nvml, "NVML_DEVICE_MIG_ENABLE", 1):
            raise MIGRefusedError(
                f"GPU {self.index} ({self.name}) has MIG mode enabled; NVML energy, power and "
                "utilisation are per physical GPU, not per MIG slice. Disable MIG "
                "(nvidia-smi -mig 0) or measure on another GPU."
            )

    @classmethod
    def for_torch_device(cls, cuda_index: int = 0, allow_mig: bool = False) -> NvmlDevice:
        """The NVML device behind ``torch.device('cuda', cuda_index)`` (matched by UUID)."""
        uuid = None
        try:
            import torch

            props = torch.cuda.get_device_properties(cuda_index)
            raw = getattr(props, "uuid", None)
            if raw is not None:
                uuid = str(raw)
                if not uuid.startswith(("GPU-", "MIG-")):
                    uuid = "GPU-" + uuid
        except Exception:
            uuid = None
        if uuid is not None:
            try:
                return cls(uuid=uuid, allow_mig=allow_mig)
            except MIGRefusedError:
                raise
            except TelemetryError:
                pass
        return cls(index=cuda_index, allow_mig=allow_mig)

    # -- static facts ----------------------------------------------------------------------
    def info(self) -> DeviceInfo:
        """Read the static facts (name, driver, architecture, limits, sources)."""
        nvml = self._nvml
        try:
            driver = self._text(nvml.nvmlSystemGetDriverVersion())
        except Exception:
            driver = ""
        try:
            v = int(nvml.nvmlSystemGetCudaDriverVersion())
            cuda_driver = f"{v // 1000}.{(v % 1000) // 10}"
        except Exception:
            cuda_driver = ""
        try:
            arch = _ARCH_NAMES.get(
                int(self._call(nvml.nvmlDeviceGetArchitecture, "arch")), "unknown"
            )
        except TelemetryError:
            arch = "unknown"
        try:
            uuid = self._text(self._call(nvml.nvmlDeviceGetUUID, "uuid"))
        except TelemetryError:
            uuid = ""
        try:
            self.energy_counter_j()
            energy_ok = True
        except NVMLNotSupportedError:
            energy_ok = False
        self.power_w()
        return DeviceInfo(
            index=self.index,
            name=self.name,
            uuid=uuid,
            architecture=arch,
            driver=driver,
            cuda_driver=cuda_driver,
            power_limit_w=self.power_limit_w(),
            memory_total_mib=self._optional(
                "mem_total", lambda: self._call(nvml.nvmlDeviceGetMemoryInfo, "memory").total / MIB
            ),
            energy_counter_supported=energy_ok,
            power_source=self._power_source or "none",
        )

    # -- readings --------------------------------------------------------------------------
    def energy_counter_j(self) -> float:
        """Cumulative energy since the driver loaded, in J (counter is in mJ).

        Raises
        ------
        NVMLNotSupportedError
            The GPU has no energy counter (before Volta).
        """
        mj = self._call(
            self._nvml.nvmlDeviceGetTotalEnergyConsumption, "nvmlDeviceGetTotalEnergyConsumption"
        )
        return float(mj) / 1000.0

    @property
    def power_source(self) -> str:
        """``"instant_field"``, ``"power_usage"`` or ``"none"`` (after the first reading)."""
        if self._power_source is None:
            self.power_w()
        return self._power_source or "none"

    def _instant_power_w(self) -> float:
        nvml = self._nvml
        fid = getattr(nvml, "NVML_FI_DEV_POWER_INSTANT", None)
        if fid is None:
            raise NVMLNotSupportedError("NVML_FI_DEV_POWER_INSTANT unknown to this pynvml")
        values = self._call(nvml.nvmlDeviceGetFieldValues, "NVML_FI_DEV_POWER_INSTANT", [fid])
        v = values[0]
        if int(getattr(v, "nvmlReturn", 0)) != 0:
            raise NVMLNotSupportedError(
                f"NVML_FI_DEV_POWER_INSTANT not supported (field return {v.nvmlReturn})"
            )
        return float(v.value.uiVal) / 1000.0  # mW -> W

    def power_w(self) -> float:
        """Current power in W: the instantaneous field if supported, else
        ``nvmlDeviceGetPowerUsage``; the choice is remembered in :attr:`power_source`."""
        if self._power_source in (None, "instant_field"):
            try:
                p = self._instant_power_w()
                self._power_source = "instant_field"
                return p
            except NVMLNotSupportedError:
                if self._power_source == "instant_field":
                    return NAN
        if self._power_source in (None, "power_usage"):
            try:
                p = float(self._call(self._nvml.nvmlDeviceGetPowerUsage, "power")) / 1000.0
                self._power_source = "power_usage"
                return p
            except NVMLNotSupportedError:
                self._power_source = "none"
        return NAN

    def utilization_pct(self) -> tuple[float, float]:
        """(SM utilisation %, memory-controller utilisation %) over the driver's last sample
        period; NaN if unsupported."""
        if "util" in self._unsupported:
            return NAN, NAN
        try:
            u = self._call(self._nvml.nvmlDeviceGetUtilizationRates, "utilization")
        except NVMLNotSupportedError:
            self._unsupported.add("util")
            return NAN, NAN
        return float(u.gpu), float(u.memory)

    def temperature_c(self) -> float:
        nvml = self._nvml
        return self._optional(
            "temp",
            lambda: self._call(
                nvml.nvmlDeviceGetTemperature,
                "temperature",
                getattr(nvml, "NVML_TEMPERATURE_GPU", 0),
            ),
        )

    def clocks_mhz(self) -> tuple[float, float]:
        """(SM clock, memory clock) in MHz."""
        nvml = self._nvml
        sm = self._optional(
            "clk_sm",
            lambda: self._call(
                nvml.nvmlDeviceGetClockInfo, "SM clock", getattr(nvml, "NVML_CLOCK_SM", 1)
            ),
        )
        mem = self._optional(
            "clk_mem",
            lambda: self._call(
                nvml.nvmlDeviceGetClockInfo, "mem clock", getattr(nvml, "NVML_CLOCK_MEM", 2)
            ),
        )
        return sm, mem

    def memory_used_mib(self) -> float:
        return self._optional(
            "mem_used",
            lambda: self._call(self._nvml.nvmlDeviceGetMemoryInfo, "memory").used / MIB,
        )

    def process_memory_mib(self, pid: int | None = None) -> float:
        """GPU memory NVML attributes to process ``pid`` (default: this one), in MiB.

        NaN when NVML does not list the process (e.g. inside a container whose PID namespace
        differs from the driver's) or does not report per-process memory.
        """
        pid = os.getpid() if pid is None else pid
        if "proc_mem" in self._unsupported:
            return NAN
        try:
            procs = self._call(self._nvml.nvmlDeviceGetComputeRunningProcesses, "compute processes")
        except NVMLNotSupportedError:
            self._unsupported.add("proc_mem")
            return NAN
        for p in procs:
            if int(p.pid) == pid:
                used = getattr(p, "usedGpuMemory", None)
                if used is None or int(used) >= 2**63 - 1:
                    return NAN
                return float(used) / MIB
        return NAN

    def other_compute_processes(self, pid: int | None = None) -> float:
        """Compute processes on this GPU other than process ``pid`` (default: this one).

        When NVML lists processes but not ``pid`` (a container whose PID namespace differs
        from the driver's), one listed process is taken to be this one. NaN where NVML cannot
        list processes.
        """
        pid = os.getpid() if pid is None else pid
        if "procs" in self._unsupported:
            return NAN
        try:
            procs = self._call(self._nvml.nvmlDeviceGetComputeRunningProcesses, "compute processes")
        except NVMLNotSupportedError:
            self._unsupported.add("procs")
            return NAN
        pids = [int(p.pid) for p in procs]
        if pid in pids:
            return float(sum(1 for q in pids if q != pid))
        return float(max(len(pids) - 1, 0))

    def throttle_reasons(self) -> float:
        """The current clock-throttle (clock-event) reasons as NVML's bitmask; NaN where
        unsupported. 0 means none; bit 0x1 is "GPU idle"."""
        nvml = self._nvml
        fn = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None
        )
        if fn is None:
            return NAN
        return self._optional("throttle", lambda: self._call(fn, "throttle reasons"))

    def power_limit_w(self) -> float:
        return self._optional(
            "plimit",
            lambda: self._call(self._nvml.nvmlDeviceGetEnforcedPowerLimit, "power limit") / 1000.0,
        )

    def sample(self) -> TelemetrySample:
        """Read every telemetry value now."""
        t = time.monotonic()
        sm_u, mem_u = self.utilization_pct()
        sm_c, mem_c = self.clocks_mhz()
        return TelemetrySample(
            t_s=t,
            power_w=self.power_w(),
            sm_util_pct=sm_u,
            mem_util_pct=mem_u,
            temp_c=self.temperature_c(),
            sm_clock_mhz=sm_c,
            mem_clock_mhz=mem_c,
            mem_used_mib=self.memory_used_mib(),
            energy_j=self._optional("energy", self.energy_counter_j),
        )


# ----------------------------------------------------------------------------------------
# CPU: RAPL through powercap


class RaplReader:
    """Cumulative CPU package energy from ``/sys/class/powercap/intel-rapl*`` (Intel, and AMD
    on kernels that expose AMD RAPL through the same interface).

    Only top-level package zones (``intel-rapl:N``) are summed; sub-zones (core, dram) are
    inside them. Each zone's ``energy_uj`` wraps at ``max_energy_range_uj``; every reading
    unwraps it against the previous one, so call :meth:`energy_j` at least once per wrap
    period (minutes) during a window.

    Attributes
    ----------
    available : bool
        Whether a readable counter exists.
    reason : str
        Why energy is not available (empty when it is); goes to ``energy_reason``.
    """

    def __init__(self, root: str | Path = "/sys/class/powercap"):
        self.root = Path(root)
        self.zones: list[Path] = []
        self.reason = ""
        self._last: dict[Path, int] = {}
        self._acc: dict[Path, int] = {}
        self._range: dict[Path, int] = {}
        if not self.root.is_dir():
            self.reason = f"no energy counter: {self.root} absent (no RAPL powercap interface)"
            return
        zones = sorted(
            p
            for p in self.root.glob("intel-rapl:*")
            if p.name.count(":") == 1 and (p / "energy_uj").exists()
        )
        if not zones:
            self.reason = (
                f"no energy counter: no intel-rapl:N package zone with energy_uj in {self.root}"
            )
            return
        for z in zones:
            try:
                raw = int((z / "energy_uj").read_text().strip())
            except PermissionError:
                self.reason = f"no energy counter: {z / 'energy_uj'} not readable (permission denied; root only)"
                return
            except (OSError, ValueError) as exc:
                self.reason = f"no energy counter: cannot read {z / 'energy_uj'} ({exc})"
                return
            try:
                rng = int((z / "max_energy_range_uj").read_text().strip())
            except (OSError, ValueError):
                rng = 2**32
            self._last[z] = raw
            self._acc[z] = 0
            self._range[z] = rng
        self.zones = zones

    @property
    def available(self) -> bool:
        return bool(self.zones)

    def energy_j(self) -> float:
        """Cumulative energy in J since this reader was created (wraparound unwrapped);
        NaN if unavailable."""
        if not self.available:
            return NAN
        total = 0
        for z in self.zones:
            raw = int((z / "energy_uj").read_text().strip())
            last = self._last[z]
            delta = raw - last if raw >= last else raw + self._range[z] - last
            self._acc[z] += delta
            self._last[z] = raw
            total += self._acc[z]
        return total / 1e6


# ----------------------------------------------------------------------------------------
# monitor layer


@dataclass(frozen=True)
class EnergyMeasurement:
    """Energy over one window, from a cumulative counter."""

    energy_j: float
    duration_s: float
    avg_power_w: float
    source: str


class EnergyMeter:
    """Measure energy over windows from a cumulative counter.

    Parameters
    ----------
    counter : callable
        Returns the cumulative energy in J (e.g. ``NvmlDevice.energy_counter_j`` or
        ``RaplReader.energy_j``).
    source : str
        Name recorded in the result.

    Examples
    --------
    >>> meter = EnergyMeter(gpu.energy_counter_j, "nvml_total_energy")  # doctest: +SKIP
    >>> meter.begin(); run(); m = meter.end()                            # doctest: +SKIP
    """

    def __init__(self, counter: Callable[[], float], source: str = "counter"):
        self.counter = counter
        self.source = source
        self._start: tuple[float, float] | None = None

    def begin(self) -> None:
        self._start = (self.counter(), time.perf_counter())

    def end(self) -> EnergyMeasurement:
        """Close the window.

        Raises
        ------
        EnergyCounterError
            The counter did not advance (zero or negative delta): the window was shorter than
            the counter's update period, or the counter is stuck. Never reported as 0 J.
        """
        if self._start is None:
            raise TelemetryError("EnergyMeter.end() called before begin()")
        e1, t1 = self.counter(), time.perf_counter()
        e0, t0 = self._start
        self._start = None
        de, dt = e1 - e0, t1 - t0
        if not (de > 0):
            raise EnergyCounterError(
                f"energy counter {self.source} did not advance over a {dt:.3f} s window "
                f"(start {e0:.3f} J, end {e1:.3f} J); lengthen the window beyond the counter's "
                "update period"
            )
        return EnergyMeasurement(
            energy_j=de, duration_s=dt, avg_power_w=de / dt if dt > 0 else NAN, source=self.source
        )


@dataclass
class TelemetrySampler:
    """Background thread reading ``device.sample()`` at ``hz`` (default 50 Hz).

    Use as a context manager; timestamps are ``time.monotonic()``. A reading that raises is
    counted in ``n_errors`` and skipped, so a flaky query never stops the sampler.

    Parameters
    ----------
    device : object with ``sample() -> TelemetrySample``
    hz : float
        Sampling rate; the achieved rate is lower if one reading takes longer than 1/hz.
    """

    device: Any
    hz: float = 50.0
    samples: list[TelemetrySample] = field(default_factory=list)
    n_errors: int = 0
    last_error: str = ""

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _run(self) -> None:
        period = 1.0 / self.hz
        nxt = time.monotonic()
        while not self._stop.is_set():
            try:
                self.samples.append(self.device.sample())
            except Exception as exc:  # keep sampling
                self.n_errors += 1
                self.last_error = repr(exc)
            nxt += period
            delay = nxt - time.monotonic()
            if delay < 0:
                nxt = time.monotonic()
                delay = 0.0
            self._stop.wait(delay)

    def start(self) -> TelemetrySampler:
        if self._thread is not None:
            raise TelemetryError("TelemetrySampler already started")
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="carb-telemetry", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout=5.0)
        self._thread = None

    def __enter__(self) -> TelemetrySampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def to_frame(self):
        """All samples as a DataFrame (one row per sample, columns as in
        :class:`TelemetrySample`)."""
        import pandas as pd

        cols = list(TelemetrySample.__dataclass_fields__)
        return pd.DataFrame([asdict(s) for s in self.samples], columns=cols)

    def window_means(self, t0: float, t1: float) -> dict[str, float]:
        """Mean of each value over samples with ``t0 <= t_s <= t1`` (monotonic seconds).

        If no sample falls inside, the sample nearest to the window's middle is used; NaN if
        there are none at all. Returns the keys of :class:`TelemetrySample` minus ``t_s``
        and ``energy_j``, plus ``n_samples``.
        """
        keys = [k for k in TelemetrySample.__dataclass_fields__ if k not in ("t_s", "energy_j")]
        inside = [s for s in self.samples if t0 <= s.t_s <= t1]
        if not inside and self.samples:
            mid = 0.5 * (t0 + t1)
            inside = [min(self.samples, key=lambda s: abs(s.t_s - mid))]
        out: dict[str, float] = {"n_samples": float(len(inside))}
        for k in keys:
            vals = [getattr(s, k) for s in inside if not math.isnan(getattr(s, k))]
            out[k] = sum(vals) / len(vals) if vals else NAN
        return out


def counter_resolution(
    counter: Callable[[], float],
    duration_s: float = 2.0,
    poll_s: float = 0.001,
    load: Callable[[], None] | None = None,
) -> dict[str, float]:
    """Observe a cumulative energy counter's update behaviour.

    Polls ``counter`` for ``duration_s`` (calling ``load()`` between polls if given, to keep
    the device busy) and reports the smallest non-zero step (J), the median time between
    changes (s), the number of changes, and the mean power (W) over the span.
    """
    t_start = time.perf_counter()
    e_start = last = counter()
    t_last_change = t_start
    steps: list[float] = []
    gaps: list[float] = []
    while time.perf_counter() - t_start < duration_s:
        if load is not None:
            load()
        else:
            time.sleep(poll_s)
        e = counter()
        if e != last:
            now = time.perf_counter()
            steps.append(e - last)
            gaps.append(now - t_last_change)
            t_last_change = now
            last = e
    span = time.perf_counter() - t_start
    pos = [s for s in steps if s > 0]
    gaps_sorted = sorted(gaps[1:]) if len(gaps) > 1 else []
    return {
        "n_changes": float(len(steps)),
        "min_step_j": min(pos) if pos else NAN,
        "median_update_period_s": gaps_sorted[len(gaps_sorted) // 2] if gaps_sorted else NAN,
        "mean_power_w": (last - e_start) / span if span > 0 else NAN,
        "advanced": float(last > e_start),
    }
