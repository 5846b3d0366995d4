"""The GPU campaign's self-check and sampling without a GPU: NVML mocked at the boundary (the
``fake`` fixture of ``tests/conftest.py``), the design-space sample on the real families."""

from __future__ import annotations

import types

import pandas as pd
import pytest

from carb_lib.measure import gpu_campaign as gc
from carb_lib.measure import telemetry as tm


def test_throttle_names_decode_nvml_bits():
    assert gc.throttle_names(0) == []
    assert gc.throttle_names(0x1 | 0x4) == ["gpu_idle", "sw_power_cap"]
    assert gc.throttle_names(0x40) == ["hw_thermal_slowdown"]
    assert gc.throttle_names(0x1 | 0x1000) == ["gpu_idle", "other_0x1000"]
    assert gc.throttle_names(None) == [] and gc.throttle_names(float("nan")) == []


def test_nvml_state_reads_clocks_throttle_and_processes(fake):
    m = fake()
    m.nvmlDeviceGetMaxClockInfo = lambda h, c: 1980 if c == 1 else 3201
    m.nvmlDeviceGetCurrentClocksEventReasons = lambda h: 0x4  # power cap

    def no_app_clock(h, c):
        raise m.NVMLError(m.NVML_ERROR_NOT_SUPPORTED)

    m.nvmlDeviceGetApplicationsClock = no_app_clock
    m.nvmlDeviceGetPersistenceMode = lambda h: 1
    st = gc.nvml_state(tm.NvmlDevice(0))
    assert st["sm_clock_mhz"] == 1980 and st["mem_clock_mhz"] == 3201
    assert st["sm_clock_max_mhz"] == 1980 and st["mem_clock_max_mhz"] == 3201
    assert st["throttle_reasons"] == 4 and st["throttle_reason_names"] == ["sw_power_cap"]
    assert st["other_compute_processes"] == 0  # only this process is listed
    assert st["temperature_c"] == 55 and st["power_limit_w"] == 700
    assert st["persistence_mode"] == 1
    # a query the driver refuses is None with its error, never a crash
    assert st["sm_app_clock_mhz"] is None and "sm_app_clock_mhz" in st["errors"]


def test_nvml_state_counts_other_processes(fake):
    m = fake()
    m.nvmlDeviceGetComputeRunningProcesses = lambda h: [
        types.SimpleNamespace(pid=__import__("os").getpid(), usedGpuMemory=1),
        types.SimpleNamespace(pid=999_999, usedGpuMemory=1),
    ]
    assert gc.nvml_state(tm.NvmlDevice(0))["other_compute_processes"] == 1


def test_backend_flags_report_tf32_and_cudnn_settings():
    torch = pytest.importorskip("torch")
    old = torch.backends.cudnn.benchmark
    try:
        torch.backends.cudnn.benchmark = True
        f = gc.backend_flags()
        assert f["cudnn_benchmark"] is True
        assert set(f) == {"matmul_allow_tf32", "float32_matmul_precision", "cudnn_enabled",
                          "cudnn_allow_tf32", "cudnn_benchmark", "cudnn_deterministic"}
        assert f["float32_matmul_precision"] in ("highest", "high", "medium")
    finally:
        torch.backends.cudnn.benchmark = old


def test_design_space_sample_interleaves_families_and_skips_measured():
    df = gc.design_space_sample(("resnet", "mobilenetv2", "vgg", "efficientnet"), 20, seed=3)
    assert df["config_id"].is_unique
    assert df["family"].value_counts().to_dict() == {
        "resnet": 20, "mobilenetv2": 20, "vgg": 20, "efficientnet": 20}
    # a campaign stopped early covers every family: ResNet 2 rows a round, the others 1
    assert df["family"].head(5).tolist() == ["resnet", "resnet", "mobilenetv2", "vgg",
                                             "efficientnet"]
    again = gc.design_space_sample(("resnet", "mobilenetv2", "vgg", "efficientnet"), 20, seed=3)
    pd.testing.assert_frame_equal(df, again)  # seeded
    done = set(df["config_id"].head(10))
    rest = gc.design_space_sample(("resnet", "mobilenetv2", "vgg", "efficientnet"), 20, seed=3,
                                  exclude_ids=done)
    assert not done & set(rest["config_id"])


def test_design_space_sample_names_an_unknown_family():
    with pytest.raises(ValueError, match="unknown family 'alexnet'"):
        gc.design_space_sample(("resnet", "alexnet"), 5)


def test_selfcheck_reports_flags_state_and_counter_with_a_fake_cuda_device(fake, monkeypatch):
    """The self-check's CUDA branch on a stand-in device: NVML fake, a counter that advances."""
    m = fake(energy_mj=tuple(range(1_000_000, 1_200_000, 500)))
    m.nvmlDeviceGetMaxClockInfo = lambda h, c: 1980
    m.nvmlDeviceGetCurrentClocksEventReasons = lambda h: 0x0
    m.nvmlDeviceGetApplicationsClock = lambda h, c: 1755
    m.nvmlDeviceGetPersistenceMode = lambda h: 0
    torch = pytest.importorskip("torch")
    nv = tm.NvmlDevice(0)
    dev = types.SimpleNamespace(
        kind="cuda", nvml=nv, info=nv.info(), nvml_reason="", energy_ok=True,
        torch_device=torch.device("cpu"), idle_power_w=lambda s: 71.5)
    monkeypatch.setattr(gc, "_versions", lambda d: {"torch": torch.__version__})
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch, "randn", lambda *a, **k: torch.ones(8, 8))
    sc = gc.selfcheck(dev, "cuda", seconds=0.05)
    assert sc["energy_counter_supported"] is True
    assert sc["counter_under_load"]["advanced"] == 1.0
    assert sc["counter_under_load"]["min_step_j"] == pytest.approx(0.5)
    assert sc["backend_flags"]["cudnn_benchmark"] in (True, False)
    assert sc["nvml_state_idle"]["sm_app_clock_mhz"] == 1755
    assert sc["nvml_state_load"]["throttle_reason_names"] == []
    assert sc["idle_power_w"] == 71.5


def test_the_gpu_window_default_rests_on_the_shipped_noise_files(repo_root):
    """The numbers behind ``gpu_min_window_s`` = 3 s (Protocol docstring) recomputed from the
    H200 noise files: the same 10 configs x 3 repeats with 0.5 s and with 3 s windows."""
    from carb_lib.measure.campaign import noise_summary
    from carb_lib.measure.profiling import Protocol

    d = repo_root / "data" / "gpu_nvidia_h200" / "noise"
    cv, ratio = {}, {}
    for win in ("0.5", "3"):
        rows = pd.read_parquet(d / f"noise_spread_window{win}s.parquet")
        s = noise_summary(rows).set_index("target")
        cv[win] = s.loc["energy_j", "median_cv"]
        ratio[win] = gc.counter_vs_integrated(rows)
        assert ratio[win]["n"] == 30 and s.loc["energy_j", "n_configs"] == 10
    assert round(cv["0.5"], 3) == 0.178 and round(cv["3"], 3) == 0.096
    assert (round(ratio["0.5"]["p10"], 3), round(ratio["0.5"]["p90"], 3)) == (0.976, 1.022)
    assert (round(ratio["3"]["p10"], 3), round(ratio["3"]["p90"], 3)) == (0.993, 1.001)
    doc = " ".join(Protocol.__doc__.split())
    assert "17.8 % (0.5 s windows) to 9.6 % (3 s)" in doc and "0.976-1.022 to 0.993-1.001" in doc


def test_the_gpu_window_runs_were_minutes_apart_and_every_config_moved_between_them(repo_root):
    """The confound stated beside the window numbers (Protocol docstring, docs/gpu.md): the two
    noise runs' gap and how far each config's median moved between them."""
    from carb_lib.measure.profiling import Protocol

    d = repo_root / "data" / "gpu_nvidia_h200" / "noise"
    runs = [pd.read_parquet(d / f"noise_spread_window{w}s.parquet") for w in ("0.5", "3")]
    t = [pd.to_datetime(r["measured_at"]) for r in runs]
    assert round((t[1].min() - t[0].max()).total_seconds() / 60) == 7
    med = [r.groupby("config_id")[["latency_ms", "energy_j"]].median() for r in runs]
    moved = (med[1] / med[0]).dropna()
    assert len(moved) == 10
    assert (round(moved["latency_ms"].min(), 1), round(moved["latency_ms"].max(), 1)) == (1.2, 2.2)
    assert (round(moved["energy_j"].min(), 1), round(moved["energy_j"].max(), 1)) == (1.2, 1.9)
    doc = " ".join(Protocol.__doc__.split())
    page = " ".join((repo_root / "docs" / "gpu.md").read_text(encoding="utf-8").split())
    for text in (doc, page):
        assert "7 minutes apart" in text and "1.2-2.2x" in text and "(energy 1.2-1.9x)" in text
