"""SYNTHETIC CARB-schema data for the ensemble's tests and benchmark (not a measurement).

The static features are rough analytic stand-ins (not carb_lib.dataset.features), and the targets come
from a made-up cost model with known log-normal noise, so that tests can check what a model
should recover (e.g. interval coverage). Never write this data to ``data/``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from carb_lib.families import get_family

BASIC_DEPTHS = (8, 10, 12, 14, 18, 22, 26, 34)  # carb_lib.families.space
BOTTLENECK_DEPTHS = (50, 101, 152, 200)
WIDTHS = (0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 4.0)
RESOLUTIONS = (32, 48, 64, 96, 128)
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def make_carb_synthetic(
    n: int = 1000,
    seed: int = 0,
    noise_sigma: float = 0.05,
    energy: bool = True,
    telemetry: bool = True,
    platform: str = "synthetic_gpu",
    oom_mib: float = 8_000.0,
) -> pd.DataFrame:
    """Return ``n`` SYNTHETIC rows in the dataset schema (config, static features, targets).

    Parameters
    ----------
    n : int
        Rows, drawn without replacement from the 17,280-point ResNet grid.
    seed : int
    noise_sigma : float
        Standard deviation of the independent Gaussian noise on log(target) (each target).
    energy : bool
        False mimics CPU data: ``energy_j`` all-NaN (``energy_reason`` set).
    telemetry : bool
        Add ``sm_util_pct``, ``mem_util_pct``, ``temp_c_before``, ``kernel_launches``.
    platform : str
    oom_mib : float
        Rows whose memory would exceed this get ``status="oom"`` and NaN targets.
    """
    rng = np.random.default_rng(seed)
    blocks = [("basic", d) for d in BASIC_DEPTHS] + [("bottleneck", d) for d in BOTTLENECK_DEPTHS]
    grid = list(itertools.product(blocks, WIDTHS, (False, True), RESOLUTIONS, BATCHES, ("fp32", "fp16")))
    pick = rng.choice(len(grid), size=min(n, len(grid)), replace=False)
    rows = [grid[i] for i in pick]
    df = pd.DataFrame(
        {
            "family": "resnet",
            "block": [r[0][0] for r in rows],
            "depth": [r[0][1] for r in rows],
            "width": [r[1] for r in rows],
            "early_downsample": [r[2] for r in rows],
            "arch": None,
            "resolution": [r[3] for r in rows],
            "batch": [r[4] for r in rows],
            "precision": [r[5] for r in rows],
            "num_classes": 1000,
        }
    )
    df["config_id"] = get_family("resnet").config_ids(df)  # the content hash, as in a dataset
    depth = df["depth"].to_numpy(float)
    width = df["width"].to_numpy(float)
    bottleneck = (df["block"] == "bottleneck").to_numpy()
    eds = df["early_downsample"].to_numpy(bool)
    res = df["resolution"].to_numpy(float)
    batch = df["batch"].to_numpy(float)
    nbytes = np.where(df["precision"] == "fp16", 2.0, 4.0)

    c0 = np.maximum(8.0, np.round(64 * width))
    n_conv = depth - 1 + 3
    df["n_conv"] = n_conv
    df["n_bn"] = n_conv
    df["n_act"] = n_conv - np.where(bottleneck, 0, 1)
    df["n_fc"] = 1
    df["max_channels"] = c0 * np.where(bottleneck, 32, 8)
    params = depth * (c0**2) * np.where(bottleneck, 10.0, 9.0) * 4.0 + df["max_channels"] * 1000
    spatial = (res / np.where(eds, 4.0, 1.0)) ** 2
    flops_ps = 2.0 * depth * (c0**2) * 9.0 * spatial * np.where(bottleneck, 1.4, 1.0)
    df["flops"] = np.round(flops_ps * batch)  # an integer column of the schema
    df["params"] = params
    df["param_bytes"] = params * nbytes
    act = batch * n_conv * c0 * spatial * 2.0 * nbytes
    df["activation_bytes"] = act
    df["peak_act_bytes"] = act / n_conv * 4.0
    df["arith_intensity_flop_per_byte"] = df["flops"] / (df["param_bytes"] + df["activation_bytes"])

    def noise() -> np.ndarray:
        return np.exp(rng.normal(0.0, noise_sigma, len(df)))

    mem = (df["param_bytes"] + df["peak_act_bytes"]) / 2**20 * 1.15 + 20.0
    peak_tflops = np.where(nbytes == 2, 60.0, 20.0)
    util = 1.0 - np.exp(-(df["flops"] / 1e9) / 40.0)  # small work cannot fill the device
    compute_ms = df["flops"] / (peak_tflops * 1e12 * np.maximum(util, 0.02)) * 1e3
    launch_ms = 0.012 * n_conv * np.where(batch <= 8, 1.6, 1.0)  # overhead regime
    lat = compute_ms + launch_ms + df["activation_bytes"] / 500e9 * 1e3
    power_w = 70.0 + 280.0 * util * np.where(nbytes == 2, 0.8, 1.0)
    df["peak_mem_mib"] = mem * noise()
    df["latency_ms"] = lat * noise()
    df["energy_j"] = (lat / 1e3) * power_w * noise() if energy else np.nan
    df["energy_reason"] = None if energy else "no energy counter on CPU (synthetic)"
    df["latency_cv"] = rng.uniform(0.005, 0.04, len(df))
    if telemetry:
        df["sm_util_pct"] = np.clip(100 * util + rng.normal(0, 3, len(df)), 0, 100)
        df["mem_util_pct"] = np.clip(60 * util + rng.normal(0, 3, len(df)), 0, 100)
        df["temp_c_before"] = rng.uniform(35, 45, len(df))
        df["kernel_launches"] = (n_conv * 3).astype(int)
    df["status"] = "ok"
    oom = (mem > oom_mib).to_numpy()
    df.loc[oom, ["peak_mem_mib", "latency_ms", "energy_j"]] = np.nan
    df.loc[oom, "status"] = "oom"
    df["platform"] = platform
    return df
