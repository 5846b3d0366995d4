"""The CUDA measurement path on a real GPU (``gpu`` marker; skipped without CUDA).

Runs on the borrowed GPU machine through ``scripts/gpu_campaign.sh`` (``--pytest``), whose
``python3`` has torch with CUDA, nvidia-ml-py, numpy, pandas, pyarrow and pytest; nothing here
imports the modelling libraries."""

from __future__ import annotations

import math

import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

from carb_lib.dataset.features import static_features  # noqa: E402
from carb_lib.dataset.schema import conform, validate  # noqa: E402
from carb_lib.families.space import ResNetConfig  # noqa: E402
from carb_lib.measure import profiling as pf  # noqa: E402

CFG = ResNetConfig(block="basic", depth=18, width=0.5, early_downsample=True, resolution=64,
                   batch=8, precision="fp16")  # fmt: skip
FAST = pf.Protocol(cooldown_s=0.0, gpu_min_iters=50, gpu_min_window_s=0.3, count_kernels=True)


@pytest.fixture(scope="module")
def row() -> dict:
    return pf.profile_config(CFG, "cuda", FAST)


def test_cuda_row_is_valid_and_complete(row):
    validate(conform(pd.DataFrame([row])), require_features=False)
    assert row["status"] == "ok", row["error"]
    assert row["n_iters"] >= 50 and row["window_s"] >= 0.3
    assert 0 < row["latency_p10_ms"] <= row["latency_ms"] <= row["latency_p90_ms"]
    assert row["quality"] in ("clean", "retried", "disturbed")
    assert row["gpu_other_procs"] >= 0 and row["sm_clock_start_mhz"] > 0
    assert row["cudnn_benchmark"] is False and row["cuda"]


def test_cuda_peak_memory_covers_weights_and_input(row):
    f = static_features(pd.DataFrame([CFG.to_dict()])).iloc[0]
    floor = f["param_bytes"] + CFG.batch * 3 * CFG.resolution**2 * 2
    assert row["peak_mem_mib"] * pf.MIB >= floor
    assert row["peak_reserved_mib"] >= row["peak_mem_mib"]


def test_cuda_events_agree_with_wall_clock(row):
    # the events time the kernels; the window's wall time covers them plus launch gaps
    assert row["latency_mean_ms"] * row["n_iters"] <= row["window_s"] * 1e3 * 1.05


def test_energy_window_is_positive_or_explained(row):
    if math.isnan(row["energy_j"]):
        assert row["energy_reason"]
    else:
        assert row["energy_j"] > 0 and row["avg_power_w"] > 0
        assert row["kernel_launches"] > 10


def test_peak_memory_is_max_memory_allocated_of_the_same_inference(row):
    """The row's peak is ``torch.cuda.max_memory_allocated`` after a reset: the same
    inference run by hand here (same build, cast and input shape) peaks at the same bytes."""
    from carb_lib.families import get_family

    dev = torch.device("cuda")
    model = get_family("resnet").build_model(CFG).to(dev).half().eval()
    x = torch.randn(CFG.batch, 3, CFG.resolution, CFG.resolution, device=dev).half()
    with torch.inference_mode():
        for _ in range(3):
            model(x)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        model(x)
        torch.cuda.synchronize()
    peak_mib = torch.cuda.max_memory_allocated() / pf.MIB
    del model, x
    torch.cuda.empty_cache()
    assert row["peak_mem_mib"] == pytest.approx(peak_mib, rel=0.02)


def test_nvml_energy_counter_advances_over_a_loaded_window():
    """NVML's cumulative counter (mJ) advances over 0.5 s of matrix products, at a power
    between the idle floor and the board's limit."""
    import time

    from carb_lib.measure.telemetry import EnergyMeter, NvmlDevice, NVMLNotFoundError

    try:
        nv = NvmlDevice.for_torch_device(0)
    except NVMLNotFoundError as exc:
        pytest.skip(f"no NVML: {exc}")
    if not nv.info().energy_counter_supported:
        pytest.skip("the GPU has no energy counter")
    a = torch.randn(4096, 4096, device="cuda")
    meter = EnergyMeter(nv.energy_counter_j, "nvml")
    meter.begin()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.5:
        a @ a
        torch.cuda.synchronize()
    m = meter.end()
    limit = nv.power_limit_w()
    assert m.energy_j > 0
    assert 20.0 < m.avg_power_w <= (limit * 1.1 if limit == limit else 2000.0)
