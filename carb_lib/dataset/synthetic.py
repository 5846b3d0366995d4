"""SYNTHETIC ResNet cost datasets with known ground truth, for tests and demos only.

Nothing here is measured. The generator mimics the dataset schema of ``carb_lib.dataset.schema``
(config columns, static features, targets, measurement and provenance columns) so that the
analysis code (``carb_lib.characterize.scaling``, ``carb_lib.plots``, notebook 01) can be built and tested
before a measurement campaign has produced data. Every dataset it makes carries
``platform`` starting with ``"synthetic"`` and ``device_name`` ``"SYNTHETIC (not measured)"``;
it passes :func:`carb_lib.dataset.schema.validate` and has the storage dtypes of
:func:`carb_lib.dataset.schema.conform`. Never write it into ``data/``.

The static features are a crude analytic ResNet proxy (four stages, channels doubling, spatial
size halving), *not* :func:`carb_lib.dataset.features.static_features`. The targets follow known laws
(see :data:`SYNTHETIC_TRUTH`), natural-log noise added:

* ``latency_ms``: continuous hinge in log-log FLOPs with a breakpoint at
  ``breakpoint_flops``: slope ``slope_below`` below, ``slope_above`` above; times
  ``fp16_factor`` for FP16.
* ``energy_j``: the same hinge form with its own slopes and FP16 factor (so the mean power
  ``energy / latency`` stays between about 50 and 600 W).
* ``peak_mem_mib``: ``(param_bytes + peak_act_bytes) / 2**20 + workspace_mib``, times noise.
  Rows whose peak memory would exceed ``capacity_mib`` get ``status="oom"`` and NaN targets.

Because of the hinge, the exponent of a target on ``flops`` is exact only inside one regime
(e.g. rows with ``flops > 3 * breakpoint_flops`` have slope ``slope_above``).
"""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pandas as pd

from carb_lib.core.vocab import PRECISIONS
from carb_lib.dataset.schema import conform
from carb_lib.families.resnet import BATCH_SIZES, DEPTHS, RESNET_COLUMNS
from carb_lib.families.resnet import FAMILY as RESNET_FAMILY
from carb_lib.families.resnet import RESOLUTIONS as GRID_RESOLUTIONS
from carb_lib.families.resnet import WIDTHS as GRID_WIDTHS

#: Ground truth of :func:`make_synthetic_dataset` (natural-log noise ``sigma``).
SYNTHETIC_TRUTH: dict[str, dict[str, float]] = {
    "latency_ms": {
        "breakpoint_flops": 1e10,
        "value_at_breakpoint": 1.0,  # ms at the breakpoint, FP32
        "slope_below": 0.25,
        "slope_above": 0.90,
        "fp16_factor": 0.6,  # latency(fp16) / latency(fp32)
        "sigma": 0.05,
    },
    "energy_j": {
        "breakpoint_flops": 1e10,
        "value_at_breakpoint": 0.25,  # J at the breakpoint, FP32
        "slope_below": 0.40,
        "slope_above": 1.00,
        "fp16_factor": 0.8,  # energy(fp16) / energy(fp32)
        "sigma": 0.08,
    },
    "peak_mem_mib": {"workspace_mib": 16.0, "capacity_mib": 16 * 1024.0, "sigma": 0.01},
}

# the paper grid's values (one vocabulary: carb_lib.families.resnet); the generator used to carry its own
# depth list with basic-block depths 42 and 50, which no ResNet of the grid has
BASIC_DEPTHS = DEPTHS["basic"]
BOTTLENECK_DEPTHS = DEPTHS["bottleneck"]
WIDTHS = GRID_WIDTHS
RESOLUTIONS = GRID_RESOLUTIONS
BATCHES = BATCH_SIZES
EARLY_DOWNSAMPLE = (False, True)
#: Rows per architecture: every (early_downsample, precision, batch) combination.
ROWS_PER_ARCH = len(EARLY_DOWNSAMPLE) * len(PRECISIONS) * len(BATCHES)

_CONFIG_KEYS = RESNET_COLUMNS  # the schema's ResNet config columns


def _config_id(row: dict) -> str:
    """16-hex content hash of a config (synthetic stand-in for the dataset module's id)."""
    payload = json.dumps({k: row[k] for k in _CONFIG_KEYS}, sort_keys=True, default=str)
    return hashlib.sha1(("synthetic:" + payload).encode()).hexdigest()[:16]


def _arch_features(
    block: str, depth: int, width: float, early_downsample: bool, resolution: int
) -> dict[str, float]:
    """Per-sample proxy features of one architecture (counts, MACs, elements)."""
    per_block = 2 if block == "basic" else 3
    expansion = 1 if block == "basic" else 4
    n_blocks = max(1, (depth - 2) // per_block)
    blocks = [n_blocks // 4 + (1 if k < n_blocks % 4 else 0) for k in range(4)]
    c0 = max(1, round(64 * width))
    stem_k = 7 if early_downsample else 3
    side = resolution / (4 if early_downsample else 1)
    stem_side = resolution / (2 if early_downsample else 1)
    macs = stem_k * stem_k * 3 * c0 * stem_side**2
    params = stem_k * stem_k * 3 * c0
    act = 3 * c0 * stem_side**2  # conv + bn + relu outputs
    max_layer = c0 * stem_side**2
    n_conv, n_bn, n_act = 1, 1, 1
    c_in = c0
    max_ch = c0
    for k, nb in enumerate(blocks):
        if nb == 0:
            continue
        c = max(1, round(64 * width * 2**k))
        s = max(1.0, side / 2**k)
        for _ in range(nb):
            if block == "basic":
                m = 9 * c_in * c + 9 * c * c
                convs, outs = 2, 2 * c
            else:
                m = c_in * c + 9 * c * c + c * expansion * c
                convs, outs = 3, 2 * c + expansion * c
            if c_in != c * expansion:  # projection shortcut
                m += c_in * c * expansion
                convs += 1
                outs += c * expansion
            macs += m * s * s
            params += m
            act += 3 * outs * s * s
            max_layer = max(max_layer, c * expansion * s * s)
            n_conv += convs
            n_bn += convs
            n_act += convs
            c_in = c * expansion
            max_ch = max(max_ch, c_in)
    macs += c_in * 1000
    params += c_in * 1000 + 1000
    return {
        "n_conv": n_conv,
        "n_bn": n_bn,
        "n_act": n_act,
        "n_fc": 1,
        "max_channels": max_ch,
        "macs_per_sample": macs,
        "params": params,
        "act_elems_per_sample": act + 1000,
        "max_layer_elems_per_sample": max_layer,
    }


def _hinge(log_flops: np.ndarray, truth: dict[str, float]) -> np.ndarray:
    """Natural-log target of the continuous hinge law (FP32, no noise)."""
    c = math.log(truth["breakpoint_flops"])
    return (
        math.log(truth["value_at_breakpoint"])
        + truth["slope_below"] * (log_flops - c)
        + (truth["slope_above"] - truth["slope_below"]) * np.maximum(0.0, log_flops - c)
    )


def make_synthetic_dataset(
    n: int = 720,
    seed: int = 0,
    platform: str = "synthetic_gpu",
    with_energy: bool = True,
    with_telemetry: bool = True,
    error_rate: float = 0.005,
) -> pd.DataFrame:
    """Make a SYNTHETIC dataset in the CARB schema with known scaling laws.

    Architectures ``(block, depth, width, resolution)`` are drawn without replacement from
    the ResNet grid (480 of them); each is crossed with every ``early_downsample`` x
    ``precision`` x ``batch`` value (36 rows), so that paired comparisons (fp16 vs fp32,
    batch 1 vs 256, downsampling on/off) exist.

    Parameters
    ----------
    n : int
        Approximate number of rows; rounded up to a multiple of 36 and capped at 17,280.
    seed : int
        Random seed (the result is a pure function of the arguments).
    platform : str
        Value of the ``platform`` column; must start with ``"synthetic"``.
    with_energy : bool
        If False, ``energy_j`` is NaN with an ``energy_reason`` (like a CPU campaign).
    with_telemetry : bool
        If False, the GPU telemetry columns (power, utilisation, ...) are NaN.
    error_rate : float
        Fraction of rows marked ``status="error"`` (targets NaN), to exercise filtering.

    Returns
    -------
    pandas.DataFrame
        One row per config in the dataset schema (conformed dtypes);
        ``df.attrs["synthetic_truth"]`` holds :data:`SYNTHETIC_TRUTH`.
    """
    if not str(platform).startswith("synthetic"):
        raise ValueError(f"synthetic platform names must start with 'synthetic', got {platform!r}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    rng = np.random.default_rng(seed)
    archs = [("basic", d) for d in BASIC_DEPTHS] + [("bottleneck", d) for d in BOTTLENECK_DEPTHS]
    grid = [(b, d, w, r) for (b, d) in archs for w in WIDTHS for r in RESOLUTIONS]
    m = min(len(grid), max(1, math.ceil(n / ROWS_PER_ARCH)))
    chosen = [grid[i] for i in sorted(rng.choice(len(grid), size=m, replace=False))]

    rows = []
    for block, depth, width, res in chosen:
        for ed in EARLY_DOWNSAMPLE:
            f = _arch_features(block, depth, width, ed, res)
            for prec in PRECISIONS:
                nbytes = 4 if prec == "fp32" else 2
                for batch in BATCHES:
                    row = {
                        "family": RESNET_FAMILY,
                        "arch": None,
                        "block": block,
                        "depth": depth,
                        "width": width,
                        "early_downsample": ed,
                        "resolution": res,
                        "batch": batch,
                        "precision": prec,
                        "num_classes": 1000,
                        "n_conv": f["n_conv"],
                        "n_bn": f["n_bn"],
                        "n_act": f["n_act"],
                        "n_fc": f["n_fc"],
                        "max_channels": f["max_channels"],
                        "flops": 2.0 * f["macs_per_sample"] * batch,
                        "params": float(f["params"]),
                        "param_bytes": float(f["params"] * nbytes),
                        "activation_bytes": float(f["act_elems_per_sample"] * batch * nbytes),
                        "peak_act_bytes": float(3 * f["max_layer_elems_per_sample"] * batch * nbytes),
                    }
                    row["config_id"] = _config_id(row)
                    rows.append(row)
    df = pd.DataFrame(rows)
    df["arith_intensity_flop_per_byte"] = df["flops"] / (df["param_bytes"] + df["activation_bytes"])
    k = len(df)
    fp16 = (df["precision"] == "fp16").to_numpy()
    logf = np.log(df["flops"].to_numpy())

    t_lat, t_en, t_mem = (SYNTHETIC_TRUTH[t] for t in ("latency_ms", "energy_j", "peak_mem_mib"))
    lat = np.exp(
        _hinge(logf, t_lat)
        + np.where(fp16, math.log(t_lat["fp16_factor"]), 0.0)
        + rng.normal(0.0, t_lat["sigma"], k)
    )
    energy = np.exp(
        _hinge(logf, t_en)
        + np.where(fp16, math.log(t_en["fp16_factor"]), 0.0)
        + rng.normal(0.0, t_en["sigma"], k)
    )
    mem = ((df["param_bytes"] + df["peak_act_bytes"]) / 2**20 + t_mem["workspace_mib"]).to_numpy()
    mem = mem * np.exp(rng.normal(0.0, t_mem["sigma"], k))

    cv = (0.004 + 0.03 / np.sqrt(lat)) * np.exp(rng.normal(0.0, 0.3, k))
    df["latency_ms"] = lat
    df["latency_mean_ms"] = lat * (1 + 0.5 * cv)
    df["latency_p10_ms"] = lat * (1 - 1.2816 * cv)
    df["latency_p90_ms"] = lat * (1 + 1.2816 * cv)
    df["latency_cv"] = cv
    df["latency_norm_ms"] = lat * np.exp(rng.normal(0.0, 0.005, k))
    df["n_iters"] = np.clip(np.ceil(1000.0 / lat), 10, 1000).astype(int)
    df["window_s"] = df["n_iters"] * lat / 1000.0
    df["peak_mem_mib"] = mem
    if with_energy:
        df["energy_j"] = energy
        df["energy_reason"] = None
    else:
        df["energy_j"] = np.nan
        df["energy_reason"] = "synthetic CPU-like platform: no energy counter"
    if with_telemetry and with_energy:
        power = energy / (lat / 1000.0)
        util = 100.0 / (1.0 + np.exp(-1.2 * (np.log10(df["flops"].to_numpy()) - 10.0)))
        df["avg_power_w"] = power
        df["idle_power_w"] = 60.0 + rng.normal(0.0, 1.0, k)
        df["energy_dynamic_j"] = energy - df["idle_power_w"] * lat / 1000.0
        df["sm_util_pct"] = np.clip(util + rng.normal(0.0, 3.0, k), 0.0, 100.0)
        df["mem_util_pct"] = np.clip(0.6 * util + rng.normal(0.0, 3.0, k), 0.0, 100.0)
        df["temp_c_before"] = 35.0 + rng.normal(0.0, 1.0, k)
        df["kernel_launches"] = 3 * df["n_conv"] + 4
    else:
        for col in ("avg_power_w", "idle_power_w", "energy_dynamic_j", "sm_util_pct",
                    "mem_util_pct", "temp_c_before", "kernel_launches"):
            df[col] = np.nan

    status = np.where(mem > t_mem["capacity_mib"], "oom", "ok").astype(object)
    err = (rng.random(k) < error_rate) & (status == "ok")
    status[err] = "error"
    df["status"] = status
    df["error"] = np.where(err, "synthetic injected error", None)
    bad = df["status"] != "ok"
    meas_cols = ["latency_ms", "latency_mean_ms", "latency_p10_ms", "latency_p90_ms",
                 "latency_cv", "latency_norm_ms", "peak_mem_mib", "energy_j", "avg_power_w",
                 "energy_dynamic_j", "sm_util_pct", "mem_util_pct"]
    df.loc[bad, meas_cols] = np.nan
    df.loc[df["status"] == "oom", "error"] = "synthetic out of memory"

    df["platform"] = platform
    df["device_name"] = "SYNTHETIC (not measured)"
    df["host"] = "synthetic"
    df["measured_at"] = "1970-01-01T00:00:00+00:00"  # not a measurement time: synthetic
    df["torch_version"] = "synthetic"
    df["threads"] = 1
    df = conform(df)
    df.attrs["synthetic_truth"] = SYNTHETIC_TRUTH
    return df
