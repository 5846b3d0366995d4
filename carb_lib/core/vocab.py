"""CARB's vocabulary: the one place where targets, column groups, units and axis labels are
defined. Every module (and every notebook) imports them from here.

This module imports nothing from the project (and nothing but the standard library), so any
module can import it without a cycle.

Examples
--------
>>> from carb_lib.core.vocab import TARGETS, label
>>> TARGETS
('energy_j', 'latency_ms', 'peak_mem_mib')
>>> label("latency_ms")
'latency per batch (ms)'
"""

from __future__ import annotations

__all__ = [
    "AXIS_LABELS",
    "BATCH_TIER_EDGES",
    "BATCH_TIER_LABELS",
    "COMMON_CONFIG_COLUMNS",
    "DEFAULT_COVERAGE",
    "coverage_value",
    "DISPLAY",
    "DISPLAY_SCALE",
    "PLATFORM_NAMES",
    "ALLOC_FEATURE",
    "ALLOC_FEATURES",
    "DEFAULT_ALLOC_BLOCK",
    "FP16_ONEDNN_VARIANT",
    "EXTRA_STATIC_FEATURES",
    "FLOAT_STATIC_FEATURES",
    "KEY_COLUMNS",
    "LOG_FEATURES",
    "NB201_FEATURE_COLUMNS",
    "PRECISIONS",
    "QUALITIES",
    "REMEASURED_COLUMNS",
    "SMALL_BATCH_MAX",
    "STATIC_FEATURES",
    "STATUSES",
    "TARGETS",
    "TARGET_SHORT",
    "TARGET_UNITS",
    "TELEMETRY_FEATURES",
    "code_names",
    "display_name",
    "in_words",
    "label",
    "platform_name",
]

#: Measured costs, in the paper's order (energy, latency, memory); per batch.
TARGETS: tuple[str, ...] = ("energy_j", "latency_ms", "peak_mem_mib")
#: Stored target -> the column of its re-measurement in an audit's rows
#: (:func:`carb_lib.measure.audit.audit`).
REMEASURED_COLUMNS: dict[str, str] = {"latency_ms": "latency_ms_new",
                                      "peak_mem_mib": "peak_mem_mib_new"}
#: Unit of each target.
TARGET_UNITS: dict[str, str] = {"energy_j": "J", "latency_ms": "ms", "peak_mem_mib": "MiB"}
#: Short names of the targets (budgets, objectives: ``latency<=5ms``).
TARGET_SHORT: dict[str, str] = {"energy_j": "energy", "latency_ms": "latency",
                                "peak_mem_mib": "memory"}

#: Row status of a measurement.
STATUSES: tuple[str, ...] = ("ok", "oom", "error", "skipped")
#: Measurement quality flag (``carb_lib.measure.interference``).
QUALITIES: tuple[str, ...] = ("clean", "retried", "disturbed")
#: Numeric precisions of the design space.
PRECISIONS: tuple[str, ...] = ("fp32", "fp16")

#: Key of a measured row.
KEY_COLUMNS: tuple[str, ...] = ("platform", "config_id")
#: Config columns every family has (a family adds its own: ``carb_lib.families``).
COMMON_CONFIG_COLUMNS: tuple[str, ...] = ("family", "resolution", "batch", "precision",
                                          "num_classes")

#: Static (analytic) features every family provides, per batch.
STATIC_FEATURES: tuple[str, ...] = (
    "n_conv", "n_bn", "n_act", "n_fc", "max_channels", "flops", "params", "param_bytes",
    "activation_bytes", "peak_act_bytes", "arith_intensity_flop_per_byte",
)  # fmt: skip
#: Further family-agnostic static features (layer types and memory-bound traffic that tell
#: mobile-style networks apart: depthwise convs, squeeze-and-excitation, pooling, residual adds;
#: definitions in ``carb_lib.families._layers``). Every family fills those it computes exactly;
#: the paper's models read :data:`STATIC_FEATURES` only.
EXTRA_STATIC_FEATURES: tuple[str, ...] = (
    "n_dwconv", "n_pool", "n_add", "n_se", "dw_flops_share", "se_flops", "memory_bound_bytes",
)  # fmt: skip
#: The allocator model's peak (bytes): what an eager forward pass asks the CPU allocator for at
#: its peak, parameters, buffers and input included (``carb_lib.families._alloc``; NaN for a
#: family without the model). Read by the memory base law, not by the learners.
ALLOC_FEATURE: str = "alloc_peak_bytes"
#: The kernel characterization's estimate (ms) of a row's network: its convolutions and linear
#: layers, each timed alone on the platform by ``carb kernels bench`` and predicted by the
#: platform's kernel model, summed (:mod:`carb_lib.kernels.law`). Read by the ``kernel`` latency
#: law (``CARBRegressor(latency_law="kernel")``), not by the learners.
KERNEL_FEATURE: str = "kernel_ms"
#: The allocator variant of an AVX-512 CPU whose oneDNN also runs float16 convolutions
#: (AVX512-FP16: Intel Sapphire Rapids and later; ``torch.ops.mkldnn._is_mkldnn_fp16_supported()``):
#: fp32 as on any AVX-512 CPU (16-channel blocks), fp16 convolutions through oneDNN instead of
#: PyTorch's slow path (``carb_lib.families._alloc``).
FP16_ONEDNN_VARIANT: str = "16+fp16"
#: The allocator model's peak per variant: oneDNN channel blocks of 8 (AVX2 CPUs,
#: :data:`ALLOC_FEATURE`) and 16 (AVX-512 CPUs), both with fp16 convolutions on the slow path,
#: and :data:`FP16_ONEDNN_VARIANT`. The memory base law learns from its training rows which
#: one its platform follows (``BaseLaw.alloc_block``).
ALLOC_FEATURES: dict[int | str, str] = {8: ALLOC_FEATURE, 16: "alloc_peak_bytes_b16",
                                        FP16_ONEDNN_VARIANT: "alloc_peak_bytes_b16_fp16dnn"}
#: The channel block of :data:`ALLOC_FEATURE` (AVX2): the default where none is learned.
DEFAULT_ALLOC_BLOCK: int = 8
#: Static features stored as floats (the others are integer counts, FLOPs or bytes).
FLOAT_STATIC_FEATURES: tuple[str, ...] = ("arith_intensity_flop_per_byte", "dw_flops_share")
#: Extra static features of family nb201 (operation counts); optional elsewhere.
NB201_FEATURE_COLUMNS: tuple[str, ...] = (
    "n_op_none", "n_op_skip", "n_op_conv1x1", "n_op_conv3x3", "n_op_avgpool", "longest_conv_path",
)  # fmt: skip
#: Heavy-tailed static features (entered as log1p by the learners).
LOG_FEATURES: tuple[str, ...] = (
    "max_channels", "flops", "params", "param_bytes", "activation_bytes", "peak_act_bytes",
    "arith_intensity_flop_per_byte",
)  # fmt: skip
#: Telemetry features (GPU runs).
TELEMETRY_FEATURES: tuple[str, ...] = ("sm_util_pct", "mem_util_pct", "temp_c_before",
                                       "kernel_launches")

#: Small-batch regime: ``batch <= SMALL_BATCH_MAX`` (corrector, Mondrian intervals, the
#: leave-small-batches-out split, the edge scenario).
SMALL_BATCH_MAX: int = 8
#: The paper's batch tiers: ``<=4``, ``<=16``, ``<=128``, above.
BATCH_TIER_EDGES: tuple[int, ...] = (4, 16, 128)
BATCH_TIER_LABELS: tuple[str, ...] = ("b<=4", "b<=16", "b<=128", "b>128")
#: Default nominal coverage of prediction intervals.
DEFAULT_COVERAGE: float = 0.9


def coverage_value(coverage: object, name: str = "coverage",
                   error: type[Exception] = ValueError) -> float:
    """``coverage`` as a float when it is a nominal coverage, strictly between 0 and 1; else
    ``error`` naming ``name`` and the value (the one check of every coverage the library and
    the command line take).

    >>> coverage_value(0.9)
    0.9
    >>> coverage_value(1.0, "--coverage")
    Traceback (most recent call last):
    ...
    ValueError: --coverage must be in (0, 1), got 1.0
    """
    try:
        value = float(coverage)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        value = float("nan")
    if isinstance(coverage, bool) or not 0 < value < 1:
        raise error(f"{name} must be in (0, 1), got {coverage!r}")
    return value

#: Axis / table labels with units, one per column name.
AXIS_LABELS: dict[str, str] = {
    "energy_j": "energy per batch (J)",
    "latency_ms": "latency per batch (ms)",
    "peak_mem_mib": "peak memory (MiB)",
    "energy_j_per_sample": "energy per sample (J)",
    "latency_ms_per_sample": "latency per sample (ms)",
    "energy_j_per_gflop": "energy per GFLOP (J/GFLOP)",
    "latency_ms_per_gflop": "latency per GFLOP (ms/GFLOP)",
    "energy_over_latency": "energy growth / latency growth",
    "flops": "FLOPs per batch (2 x MAC)",
    "params": "parameters",
    "param_bytes": "parameter bytes (B)",
    "activation_bytes": "activation bytes per batch (B)",
    "peak_act_bytes": "peak activation estimate (B)",
    "arith_intensity_flop_per_byte": "arithmetic intensity (FLOP/B)",
    "max_channels": "widest layer (channels)",
    "n_conv": "convolutions",
    "n_dwconv": "depthwise convolutions",
    "n_pool": "pooling layers",
    "n_add": "residual additions",
    "n_se": "squeeze-and-excitation blocks",
    "dw_flops_share": "depthwise share of FLOPs",
    "se_flops": "squeeze-and-excitation FLOPs per batch",
    "memory_bound_bytes": "memory-bound op bytes per batch (B)",
    "batch": "batch size",
    "resolution": "input resolution (px)",
    "depth": "depth (layers)",
    "width": "width multiplier",
    "avg_power_w": "mean power (W)",
    "sm_util_pct": "SM utilisation (%)",
    "mem_util_pct": "memory-controller utilisation (%)",
    "latency_cv": "latency CV (std / mean)",
    "latency_window_cv": "latency CV across timed windows",
    "minor_faults_per_call": "minor page faults per inference",
    "latency_p90_p10_rel": "(p90 - p10) / median latency",
    "latency_drift_rel": "|drift-normalised / raw latency - 1|",
}


def label(column: str) -> str:
    """Axis label of ``column`` with its unit; the column name itself when none is defined."""
    return AXIS_LABELS.get(column, column)


#: What a person reads for a column or code name, in controls, table headers, fit summaries and
#: warnings of the notebook explorers: name -> (words, unit). The unit is "" for a count or a
#: category. :data:`AXIS_LABELS` are the figures' axis labels (the same words, per batch).
DISPLAY: dict[str, tuple[str, str]] = {
    "latency_ms": ("latency per batch", "ms"),
    "peak_mem_mib": ("peak memory", "MiB"),
    "energy_j": ("energy per batch", "J"),
    "flops": ("FLOPs per batch", "GFLOP"),
    "params": ("parameters", "millions"),
    "param_bytes": ("parameter bytes", "MB"),
    "activation_bytes": ("activation bytes per batch", "MB"),
    "peak_act_bytes": ("peak activation estimate", "MB"),
    "arith_intensity_flop_per_byte": ("arithmetic intensity", "FLOP/B"),
    "resolution": ("input resolution", "px"),
    "depth": ("depth", "layers"),
    "width": ("width multiplier", ""),
    "batch": ("batch size", ""),
    "block": ("block", ""),
    "precision": ("precision", ""),
    "early_downsample": ("early downsampling", ""),
    "platform": ("platform", ""),
    "family": ("network family", ""),
    "num_classes": ("classes", ""),
    "n_dwconv": ("depthwise convolutions", ""),
    "dw_flops_share": ("depthwise share of FLOPs", ""),
    "n_add": ("residual additions", ""),
    "n_se": ("squeeze-and-excitation blocks", ""),
    "distance": ("distance", ""),
    "group_by": ("fitted to", ""),
    "group": ("group", ""),
    "n": ("rows", ""),
    "exponent": ("exponent b", ""),
    "ci_low": ("95 % CI from", ""),
    "ci_high": ("95 % CI to", ""),
    "r2": ("R²", ""),
    "testable": ("fitted", ""),
    "reason": ("why not", ""),
}
#: How large a value is shown in a table: divide by this (FLOPs in GFLOP, bytes in MB).
DISPLAY_SCALE: dict[str, float] = {"flops": 1e9, "params": 1e6, "param_bytes": 1e6,
                                   "activation_bytes": 1e6, "peak_act_bytes": 1e6}
#: Each platform whose rows ship in ``data/``, explained (the CPUs: 2-vCPU cloud VMs).
PLATFORM_NAMES: dict[str, str] = {
    "cpu_epyc_2c": "AMD EPYC, 2 vCPU (first campaign: fixed iteration counts)",
    "cpu_epyc_zen3_2c": "AMD EPYC Zen 3, 2 vCPU",
    "cpu_epyc_zen4_2c": "AMD EPYC Zen 4, 2 vCPU",
    "cpu_epyc_zen5_2c": "AMD EPYC Zen 5, 2 vCPU",
    "cpu_xeon_emr_2c": "Intel Xeon Emerald Rapids, 2 vCPU",
    "cpu_xeon_gnr_2c": "Intel Xeon Granite Rapids, 2 vCPU",
    "gpu_nvidia_h200": "NVIDIA H200 GPU",
    "synthetic_cpu": "SYNTHETIC CPU (demo data, not measured)",
    "synthetic_gpu": "SYNTHETIC GPU (demo data, not measured)",
}


def display_name(column: str, unit: bool = True) -> str:
    """``column`` in words (:data:`DISPLAY`), with its unit in brackets when ``unit`` and it has
    one; a name not in the table with spaces for underscores.

    >>> display_name("peak_mem_mib"), display_name("early_downsample")
    ('peak memory (MiB)', 'early downsampling')
    """
    words, u = DISPLAY.get(str(column), (str(column).replace("_", " "), ""))
    return f"{words} ({u})" if unit and u else words


def platform_name(platform: str) -> str:
    """A platform in words (:data:`PLATFORM_NAMES`); an unknown one with spaces for
    underscores.

    >>> platform_name("cpu_epyc_zen3_2c")
    'AMD EPYC Zen 3, 2 vCPU'
    """
    p = str(platform)
    return PLATFORM_NAMES.get(p, p.replace("_", " "))


def code_names() -> frozenset[str]:
    """The code names a person must not read where words belong: every name of
    :data:`DISPLAY`, :data:`PLATFORM_NAMES` and :data:`AXIS_LABELS` with an underscore
    (``latency_ms``, ``cpu_epyc_2c``), and the short ones that are no English word (``flops``,
    ``params``, ``r2``, ``testable``); not ``batch`` or ``depth``, which are words."""
    names = {*DISPLAY, *PLATFORM_NAMES, *AXIS_LABELS}
    return frozenset({k for k in names if "_" in k} | {"flops", "params", "r2", "testable"})


def in_words(text: str) -> str:
    """``text`` (a fit's reason, a model's note) with every code name of :func:`code_names`
    replaced by its words (:func:`display_name` without unit, :func:`platform_name`).

    >>> in_words("only 3 rows with finite positive latency_ms and flops")
    'only 3 rows with finite positive latency per batch and FLOPs per batch'
    """
    import re

    names = sorted(code_names(), key=len, reverse=True)
    pattern = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, names)) + r")(?![\w-])")

    def words(m: re.Match) -> str:
        k = m.group(1)
        if k in PLATFORM_NAMES:
            return platform_name(k)
        if k in DISPLAY:
            return display_name(k, unit=False)
        return AXIS_LABELS.get(k, k.replace("_", " "))

    return pattern.sub(words, str(text))
