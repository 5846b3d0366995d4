"""Telemetry: NVML mocked at the boundary (a fake ``pynvml`` module), RAPL on a fake powercap
tree. No GPU needed."""

from __future__ import annotations

import sys
import time
import types

import pytest

from carb_lib.measure import telemetry as tm

NOT_SUPPORTED, LIB_NOT_FOUND, UNKNOWN = 3, 12, 999


class FakeNVMLError(Exception):
    def __init__(self, value):
        super().__init__(value)
        self.value = value


def make_fake_pynvml(
    *,
    energy_mj=(1_000_000, 1_000_500),
    instant_ret=0,
    instant_mw=250_000,
    usage_mw=240_000,
    mig=0,
    init_error=None,
    energy_supported=True,
):
    """A minimal pynvml stand-in; ``energy_mj`` readings are returned in turn (last repeats)."""
    m = types.ModuleType("pynvml")
    m.NVMLError = FakeNVMLError
    m.NVML_ERROR_NOT_SUPPORTED = NOT_SUPPORTED
    m.NVML_ERROR_LIBRARY_NOT_FOUND = LIB_NOT_FOUND
    m.NVML_ERROR_FUNCTION_NOT_FOUND = 13
    m.NVML_ERROR_DRIVER_NOT_LOADED = 9
    m.NVML_FI_DEV_POWER_INSTANT = 186
    m.NVML_TEMPERATURE_GPU = 0
    m.NVML_CLOCK_SM = 1
    m.NVML_CLOCK_MEM = 2
    m.NVML_DEVICE_MIG_ENABLE = 1
    m.calls = []
    readings = list(energy_mj)

    def init():
        if init_error is not None:
            raise FakeNVMLError(init_error)

    def energy(h):
        m.calls.append("energy")
        if not energy_supported:
            raise FakeNVMLError(NOT_SUPPORTED)
        return readings.pop(0) if len(readings) > 1 else readings[0]

    def field_values(h, ids):
        m.calls.append(("fields", tuple(ids)))
        v = types.SimpleNamespace(
            nvmlReturn=instant_ret, value=types.SimpleNamespace(uiVal=instant_mw)
        )
        return [v]

    def power_usage(h):
        m.calls.append("power_usage")
        return usage_mw

    m.nvmlInit = init
    m.nvmlDeviceGetHandleByIndex = lambda i: f"handle{i}"
    m.nvmlDeviceGetHandleByUUID = lambda u: "handle-uuid"
    m.nvmlDeviceGetName = lambda h: b"Fake H200"
    m.nvmlDeviceGetMigMode = lambda h: [mig, mig]
    m.nvmlDeviceGetTotalEnergyConsumption = energy
    m.nvmlDeviceGetFieldValues = field_values
    m.nvmlDeviceGetPowerUsage = power_usage
    m.nvmlDeviceGetUtilizationRates = lambda h: types.SimpleNamespace(gpu=87, memory=41)
    m.nvmlDeviceGetTemperature = lambda h, s: 55
    m.nvmlDeviceGetClockInfo = lambda h, c: 1980 if c == 1 else 3201
    m.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(
        used=512 * 2**20, total=143771 * 2**20
    )
    m.nvmlDeviceGetComputeRunningProcesses = lambda h: [
        types.SimpleNamespace(pid=__import__("os").getpid(), usedGpuMemory=300 * 2**20)
    ]
    m.nvmlDeviceGetEnforcedPowerLimit = lambda h: 700_000
    m.nvmlSystemGetDriverVersion = lambda: "580.159.03"
    m.nvmlSystemGetCudaDriverVersion = lambda: 13000
    m.nvmlDeviceGetArchitecture = lambda h: 9
    m.nvmlDeviceGetUUID = lambda h: "GPU-fake"
    return m


def test_energy_counter_mj_to_j_and_window_arithmetic(fake):
    fake(energy_mj=(1_000_000, 1_000_750))
    dev = tm.NvmlDevice(0)
    meter = tm.EnergyMeter(dev.energy_counter_j, "nvml")
    meter.begin()
    time.sleep(0.01)
    m = meter.end()
    assert m.energy_j == pytest.approx(0.75)  # 750 mJ
    assert m.duration_s > 0
    assert m.avg_power_w == pytest.approx(0.75 / m.duration_s)


def test_zero_energy_delta_raises_never_zero(fake):
    fake(energy_mj=(5_000, 5_000))
    dev = tm.NvmlDevice(0)
    meter = tm.EnergyMeter(dev.energy_counter_j, "nvml")
    meter.begin()
    with pytest.raises(tm.EnergyCounterError, match="did not advance"):
        meter.end()


def test_missing_library_maps_to_not_found(fake):
    fake(init_error=LIB_NOT_FOUND)
    with pytest.raises(tm.NVMLNotFoundError, match="libnvidia-ml"):
        tm.NvmlDevice(0)


def test_missing_python_package_maps_to_not_found(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import raises ImportError
    with pytest.raises(tm.NVMLNotFoundError, match="nvidia-ml-py"):
        tm.NvmlDevice(0)


def test_mig_mode_refused(fake):
    fake(mig=1)
    with pytest.raises(tm.MIGRefusedError, match="MIG"):
        tm.NvmlDevice(0)


def test_mig_slice_in_visible_devices_refused(fake, monkeypatch):
    fake()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-4f1c2d3e")
    with pytest.raises(tm.MIGRefusedError):
        tm.NvmlDevice(0)
    assert issubclass(tm.MIGRefusedError, tm.TelemetryError)


def test_instant_power_field_used_when_supported(fake):
    mod = fake(instant_ret=0, instant_mw=312_500)
    dev = tm.NvmlDevice(0)
    assert dev.power_w() == pytest.approx(312.5)
    assert dev.power_source == "instant_field"
    assert ("fields", (186,)) in mod.calls
    assert "power_usage" not in mod.calls


def test_power_falls_back_to_power_usage_and_records_source(fake):
    mod = fake(instant_ret=NOT_SUPPORTED, usage_mw=199_000)
    dev = tm.NvmlDevice(0)
    assert dev.power_w() == pytest.approx(199.0)
    assert dev.power_source == "power_usage"
    n_fields = sum(1 for c in mod.calls if isinstance(c, tuple))
    dev.power_w()  # the choice is remembered: no second field query
    assert sum(1 for c in mod.calls if isinstance(c, tuple)) == n_fields


def test_unsupported_energy_counter_is_typed(fake):
    fake(energy_supported=False)
    dev = tm.NvmlDevice(0)
    with pytest.raises(tm.NVMLNotSupportedError, match="TotalEnergyConsumption"):
        dev.energy_counter_j()
    info = dev.info()
    assert info.energy_counter_supported is False
    assert info.architecture == "hopper" and info.driver == "580.159.03"
    assert info.power_limit_w == pytest.approx(700.0)
    s = dev.sample()  # unsupported values are NaN, the rest is read
    assert s.energy_j != s.energy_j and s.sm_util_pct == 87


def test_other_nvml_errors_are_telemetry_errors(fake):
    mod = fake()
    dev = tm.NvmlDevice(0)

    def boom(h, s):
        raise FakeNVMLError(UNKNOWN)

    mod.nvmlDeviceGetTemperature = boom
    with pytest.raises(tm.TelemetryError, match="temperature"):
        dev.temperature_c()


def test_readings_and_process_memory(fake):
    fake()
    dev = tm.NvmlDevice(0)
    assert dev.utilization_pct() == (87.0, 41.0)
    assert dev.clocks_mhz() == (1980.0, 3201.0)
    assert dev.memory_used_mib() == pytest.approx(512.0)
    assert dev.process_memory_mib() == pytest.approx(300.0)
    assert dev.process_memory_mib(pid=-5) != dev.process_memory_mib(pid=-5)  # NaN: not listed


def test_sampler_thread_frame_and_window_means(fake):
    fake(energy_mj=(1_000,))
    dev = tm.NvmlDevice(0)
    with tm.TelemetrySampler(dev, hz=200) as s:
        t0 = time.monotonic()
        time.sleep(0.1)
        t1 = time.monotonic()
    df = s.to_frame()
    assert len(df) >= 5
    assert df["t_s"].is_monotonic_increasing
    assert set(df.columns) >= {"power_w", "sm_util_pct", "temp_c", "sm_clock_mhz", "energy_j"}
    m = s.window_means(t0, t1)
    assert m["sm_util_pct"] == pytest.approx(87.0) and m["power_w"] == pytest.approx(250.0)
    assert m["n_samples"] >= 1


def test_sampler_survives_failing_reads():
    class Flaky:
        n = 0

        def sample(self):
            self.n += 1
            if self.n % 2:
                raise tm.TelemetryError("flaky")
            return tm.TelemetrySample(time.monotonic(), 1, 2, 3, 4, 5, 6, 7, 8)

    with tm.TelemetrySampler(Flaky(), hz=500) as s:
        time.sleep(0.05)
    assert s.n_errors >= 1 and len(s.samples) >= 1


def _zone(root, name, uj, rng):
    z = root / name
    z.mkdir()
    (z / "energy_uj").write_text(f"{uj}\n")
    (z / "max_energy_range_uj").write_text(f"{rng}\n")
    return z


def test_rapl_reader_sums_packages_and_unwraps(tmp_path):
    z0 = _zone(tmp_path, "intel-rapl:0", 900, 1000)
    _zone(tmp_path, "intel-rapl:1", 100, 10_000)
    _zone(tmp_path, "intel-rapl:0:0", 5, 1000)  # sub-zone: not summed
    r = tm.RaplReader(tmp_path)
    assert r.available and r.reason == "" and len(r.zones) == 2
    assert r.energy_j() == 0.0
    (z0 / "energy_uj").write_text("50\n")  # wrapped: 900 -> 1000 -> 50 = +150 uJ
    assert r.energy_j() == pytest.approx(150e-6)
    (tmp_path / "intel-rapl:1" / "energy_uj").write_text("1100\n")
    assert r.energy_j() == pytest.approx(1150e-6)


def test_rapl_absent_gives_reason(tmp_path):
    r = tm.RaplReader(tmp_path / "nope")
    assert not r.available
    assert r.reason.startswith("no energy counter:") and "absent" in r.reason
    assert r.energy_j() != r.energy_j()  # NaN
    r2 = tm.RaplReader(tmp_path)  # exists but no zones
    assert not r2.available and "intel-rapl" in r2.reason


def test_counter_resolution_reports_steps():
    state = {"t": 0}

    def counter():
        state["t"] += 1
        return float(state["t"] // 5) * 0.25  # steps of 0.25 J every 5 polls

    r = tm.counter_resolution(counter, duration_s=0.05, poll_s=0.0005)
    assert r["advanced"] == 1.0 and r["min_step_j"] == pytest.approx(0.25)
    assert r["n_changes"] >= 1
