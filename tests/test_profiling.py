"""Profiling: a real CPU measurement of a tiny config, CPU peak memory from profiler events,
and the failure paths (OOM with a fake device, timeout, errors)."""

from __future__ import annotations

import gc
import weakref
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from fast_protocol import NO_DETECTOR
from torch import nn

from carb_lib.dataset.features import static_features
from carb_lib.dataset.schema import conform, validate
from carb_lib.families.space import ResNetConfig
from carb_lib.measure import counters, devices, telemetry
from carb_lib.measure import profiling as pf

torch.set_num_threads(1)
TINY = dict(block="basic", depth=8, width=0.1, early_downsample=True, resolution=32, batch=1)
FAST = pf.Protocol(threads=1, cpu_min_window_s=0.05)
#: For rows checked for memory or energy, not timing: the interference detector off (a
#: loaded test machine would make it retry windows for seconds).
QUIET = pf.Protocol(threads=1, cpu_min_window_s=0.05, **NO_DETECTOR)


def tiny(precision="fp32") -> ResNetConfig:
    return ResNetConfig(**TINY, precision=precision)


def check_row(row: dict) -> pd.Series:
    df = conform(pd.DataFrame([row]))
    validate(df, require_features=False)
    return df.iloc[0]


def test_real_cpu_measurement_of_tiny_config():
    cfg = tiny()
    row = pf.profile_config(cfg, "cpu", pf.Protocol(threads=1))  # the default CPU protocol
    r = check_row(row)
    assert r["status"] == "ok", r["error"]
    assert r["config_id"] == cfg.config_id and r["threads"] == 1
    p = pf.Protocol(threads=1)
    # n_windows used windows (a disturbed row: the most agreeing accepted ones, possibly fewer;
    # carb_lib.measure.interference.run_windows), each of >= cpu_min_iters inferences and
    # >= cpu_min_window_s seconds; at most max_windows taken
    used = r["n_windows"] - r["n_rejected"]
    assert used == p.n_windows or (r["quality"] == "disturbed" and 1 <= used < p.n_windows)
    assert r["n_iters"] >= used * p.cpu_min_iters
    assert r["window_s"] >= used * p.cpu_min_window_s
    assert p.n_windows <= r["n_windows"] <= p.max_windows
    assert r["quality"] in ("clean", "retried", "disturbed")
    assert (r["quality"] == "clean") == (r["n_windows"] == p.n_windows)
    assert 0 < r["latency_p10_ms"] <= r["latency_ms"] <= r["latency_p90_ms"]
    assert r["latency_mean_ms"] > 0 and np.isfinite(r["latency_cv"]) and r["latency_cv"] > 0
    # no RAPL on this machine: energy NaN with a reason (or a value where RAPL exists)
    assert (np.isnan(r["energy_j"]) and r["energy_reason"]) or r["energy_j"] > 0
    f = static_features(pd.DataFrame([cfg.to_dict()])).iloc[0]
    input_bytes = 1 * 3 * 32 * 32 * 4
    floor = f["param_bytes"] + input_bytes  # weights + input are resident (BN buffers too)
    assert r["peak_mem_mib"] * pf.MIB > floor
    assert r["peak_mem_mib"] * pf.MIB < floor + 20 * f["activation_bytes"]
    assert r["torch_version"] == torch.__version__ and r["measured_at"].endswith("+00:00")
    assert pd.isna(r["kernel_launches"]) and pd.isna(r["sm_util_pct"])  # GPU only


def test_fp16_on_cpu_is_measured_with_half_the_weight_bytes():
    """torch >= 2.4 (the supported range) runs fp16 convolutions on a CPU: the row is ok, and
    its peak memory holds 2-byte weights and input where fp32 holds 4-byte ones."""
    cfg16 = tiny("fp16")
    r = check_row(pf.profile_config(cfg16, "cpu", QUIET))
    assert r["status"] == "ok" and pd.isna(r["error"]), r["error"]
    assert r["precision"] == "fp16" and r["config_id"] == cfg16.config_id
    assert r["latency_ms"] > 0
    r32 = check_row(pf.profile_config(tiny("fp32"), "cpu", QUIET))
    f = static_features(pd.DataFrame([tiny().to_dict()])).iloc[0]
    half_floor = f["param_bytes"] / 2 + 1 * 3 * 32 * 32 * 2
    assert half_floor < r["peak_mem_mib"] * pf.MIB < r32["peak_mem_mib"] * pf.MIB


class AllocInForward(nn.Module):
    """Allocates a known temporary of ``n`` float32 elements inside forward."""

    def __init__(self, n: int):
        super().__init__()
        self.n = n
        self.w = nn.Parameter(torch.zeros(1000))  # 4000 bytes resident

    def forward(self, x):
        t = torch.ones(self.n)
        return x + t.sum() + self.w.sum()


def test_cpu_peak_memory_sees_a_known_allocation():
    n = 1 << 20  # 4 MiB
    x = torch.zeros(256)  # 1 KiB input
    m = pf.cpu_peak_memory_bytes(AllocInForward(n), x)
    assert m["resident_bytes"] == 4000 + 1024
    assert m["n_events"] >= 2
    # the 4 MiB temporary plus a few small scalars / the output
    assert 4 * 2**20 <= m["peak_increment_bytes"] < 4 * 2**20 + 8192
    assert m["peak_bytes"] == m["resident_bytes"] + m["peak_increment_bytes"]


def test_cpu_peak_memory_of_a_conv_counts_its_output():
    conv = nn.Conv2d(3, 64, 3, padding=1, bias=False).eval()
    x = torch.zeros(1, 3, 32, 32)
    m = pf.cpu_peak_memory_bytes(conv, x)
    out_bytes = 64 * 32 * 32 * 4
    assert m["resident_bytes"] == 64 * 3 * 9 * 4 + 3 * 32 * 32 * 4
    assert m["peak_increment_bytes"] >= out_bytes
    # 4x the batch: resident grows by the input only, the increment by at least 4 outputs
    m4 = pf.cpu_peak_memory_bytes(conv, torch.zeros(4, 3, 32, 32))
    assert m4["resident_bytes"] - m["resident_bytes"] == 3 * 3 * 32 * 32 * 4
    assert m4["peak_increment_bytes"] >= 4 * out_bytes


class FakeOOMDevice(pf.CpuDevice):
    """A device whose measurement runs out of memory (like a CUDA OOM)."""

    def __init__(self, exc):
        super().__init__(platform="synthetic_fake")
        self.exc = exc
        self.model_ref = None
        self.released = 0

    def measure(self, model, x, protocol, idle_power_w, deadline):
        self.model_ref = weakref.ref(model)
        big = torch.empty(1024)  # noqa: F841  (held by the frame when the error is raised)
        raise self.exc

    def release(self):
        self.released += 1
        super().release()


@pytest.mark.parametrize(
    "exc",
    [
        torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (synthetic)"),
        RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 1 GB"),
    ],
)
def test_oom_gives_oom_row_and_frees_memory(exc):
    dev = FakeOOMDevice(exc)
    row = pf.profile_config(tiny(), dev, FAST)
    r = check_row(row)
    assert r["status"] == "oom" and "allocate" in r["error"]
    assert np.isnan(r["latency_ms"]) and np.isnan(r["peak_mem_mib"])
    assert r["platform"] == "synthetic_fake"
    gc.collect()
    assert dev.released == 1
    assert dev.model_ref is not None and dev.model_ref() is None  # model freed


def test_other_exception_gives_error_row():
    row = pf.profile_config(tiny(), FakeOOMDevice(ValueError("bad kernel (synthetic)")), FAST)
    r = check_row(row)
    assert r["status"] == "error" and "ValueError: bad kernel" in r["error"]


def test_timeout_gives_error_row():
    r = check_row(pf.profile_config(tiny(), "cpu", pf.Protocol(threads=1, timeout_s=0.0)))
    assert r["status"] == "error" and r["error"].startswith("timeout")


def _stuck_rapl_device(tmp_path):
    """A CpuDevice reading a fake RAPL tree whose energy counter never advances."""
    z = tmp_path / "intel-rapl:0"
    z.mkdir()
    (z / "energy_uj").write_text("123\n")
    (z / "max_energy_range_uj").write_text("1000000\n")
    return pf.CpuDevice(platform="synthetic_rapl", rapl_root=str(tmp_path))


def test_stuck_rapl_counter_gives_nan_energy_with_reason(tmp_path):
    dev = _stuck_rapl_device(tmp_path)
    r = check_row(pf.profile_config(tiny(), dev, QUIET))
    assert r["status"] == "ok"
    assert np.isnan(r["energy_j"]) and "did not advance" in r["energy_reason"]


def test_idle_power_from_an_energy_counter():
    """The idle-power window shared by CpuDevice (RAPL) and CudaDevice (NVML energy counter)."""
    readings = iter([10.0, 10.5])  # J: 0.5 J over the window
    clock = iter([100.0, 100.25])  # s: the window is 0.25 s on the meter's clock
    with pytest.MonkeyPatch.context() as mp:  # module-local clocks: no real sleep
        mp.setattr(devices, "time", SimpleNamespace(sleep=lambda s: None))
        mp.setattr(telemetry, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
        w = pf._idle_power_from_counter(lambda: next(readings), "fake", 0.25)
    assert w == pytest.approx(0.5 / 0.25)
    assert np.isnan(pf._idle_power_from_counter(lambda: 10.0, "stuck", 0.01))


def test_stuck_rapl_counter_gives_nan_idle_power(tmp_path):
    dev = _stuck_rapl_device(tmp_path)
    assert dev.rapl.available and np.isnan(dev.idle_power_w(seconds=0.01))


def test_latency_stats():
    s = pf.latency_stats([1.0, 2.0, 3.0, 4.0, 100.0])
    assert s["latency_ms"] == 3.0 and s["latency_mean_ms"] == 22.0
    assert s["latency_p10_ms"] < s["latency_ms"] < s["latency_p90_ms"]
    assert s["latency_cv"] == pytest.approx(np.std([1, 2, 3, 4, 100], ddof=1) / 22.0)


def test_kernel_launch_names():
    for name in ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel",
                 "cuLaunchKernelEx", "cudaLaunchCooperativeKernel"):  # fmt: skip
        assert counters._LAUNCH_RE.match(name)
    for name in ("cudaMemcpyAsync", "cudaEventRecord", "aten::conv2d"):
        assert not counters._LAUNCH_RE.match(name)


def test_protocol_defaults_are_the_documented_ones():
    p = pf.Protocol()
    assert (p.cooldown_s, p.gpu_warmup_iters, p.gpu_min_iters, p.gpu_min_window_s) == (
        1.0, 10, 100, 3.0,
    )  # fmt: skip
    assert "``gpu_min_window_s`` (3.0 s)" in " ".join(pf.Protocol.__doc__.split())
    assert "cudnn.benchmark" in pf.Protocol.__doc__
    # every CPU default is stated in the docstring that goes to the data card
    doc = " ".join(pf.Protocol.__doc__.split())
    for name in ("cpu_warmup_iters", "cpu_min_iters", "n_windows", "max_windows",
                 "min_cpu_share", "max_other_busy"):  # fmt: skip
        assert f"``{name}`` ({getattr(p, name)})" in doc, name
    assert f"``cpu_min_window_s`` ({p.cpu_min_window_s} s)" in doc
    assert f"``max_window_spread`` ({p.max_window_spread * 100:.0f} %" in doc
    pol = p.policy()
    assert (pol.n_windows, pol.max_windows, pol.max_window_spread) == (
        p.n_windows, p.max_windows, p.max_window_spread)
