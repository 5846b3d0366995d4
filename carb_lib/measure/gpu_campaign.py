"""One-shot measurement run for a (borrowed, offline) CUDA machine: self-check, then a budgeted
campaign, then a summary.

Run as ``python3 -m carb_lib.measure.gpu_campaign --out DIR`` (``scripts/gpu_campaign.sh`` wraps it).
Needs only torch, numpy, pandas, pyarrow, tqdm and (for energy/telemetry) nvidia-ml-py; no
xgboost, lightgbm or matplotlib. Also runs on a CPU (``--device cpu``) for testing.

Steps

1. **Self-check**: versions (GPU name, driver, CUDA, torch); the NVML energy counter: does it
   advance under load, smallest non-zero step (J), median time between changes (s); idle
   power; the power source. If the counter is unsupported this is said and the campaign still
   measures latency and memory.
2. **Noise**: ``--noise-configs`` small configs re-measured ``--noise-repeats`` times in this
   process (spread order), CV per target.
   The self-check also records the backend flags that change speed (TF32 for matmul and
   cuDNN, ``cudnn.benchmark``), clocks (now and maximum), throttle reasons and other compute
   processes on the device, idle and under load (:func:`backend_flags`, :func:`nvml_state`).
3. **Campaign**: ``--n-per-family`` configs of each of ``--families``
   (:func:`design_space_sample`: a stratified sample of the ResNet paper grid, seeded draws of
   the other families), minus config_ids already in the rows of the platform's design campaign
   in ``<data-dir>/catalog.yaml`` (:mod:`carb_lib.dataset.catalog`), measured in seeded random
   order within the time budget (``--time-budget-s`` minus ``--reserve-s`` seconds for writing, minus
   ``--pytest-reserve-s`` with ``--pytest``), parts under ``<out>/parts``.
4. **Write + summary**: ``<out>/<platform>.parquet`` (merged, validated, static features),
   ``<out>/<platform>_reference.parquet``, ``<out>/noise_rows.parquet``,
   ``<out>/selfcheck.json``; a summary table printed last.
5. **Tests** (``--pytest``): the ``gpu``-marked tests (``tests/test_gpu.py``) on the device,
   after the rows are written; log in ``<out>/gpu_pytest.log``.

Progress and the summary go to the ``carb.gpu_campaign`` logger; :func:`main` shows them on
stdout (one line each). Options in seconds end in ``-s``; the old spellings (``--budget``,
``--reserve``, ``--timeout``, ``--cooldown``, ``--selfcheck-seconds``) still work, with a
deprecation warning.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.dataset.catalog import DESIGN, load_catalog
from carb_lib.dataset.features import static_features
from carb_lib.families import DEFAULT_FAMILY, space
from carb_lib.measure import campaign
from carb_lib.measure.campaign import drift_summary, merge_parts, noise_study, reference_rows
from carb_lib.measure.profiling import Protocol, get_device, profile_config
from carb_lib.measure.protocol import DETECTOR_OFF
from carb_lib.measure.telemetry import counter_resolution

logger = logging.getLogger("carb.gpu_campaign")


def _p(msg: str = "") -> None:
    logger.info(msg)


class _StdoutHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stdout`` is at the time of the record."""

    def __init__(self) -> None:
        super().__init__(sys.stdout)

    @property
    def stream(self):  # noqa: D102
        return sys.stdout

    @stream.setter
    def stream(self, _value) -> None:
        pass


#: Deprecated option spellings -> (destination, new spelling).
DEPRECATED_OPTIONS: dict[str, tuple[str, str]] = {
    "--budget": ("time_budget_s", "--time-budget-s"),
    "--reserve": ("reserve_s", "--reserve-s"),
    "--timeout": ("timeout_s", "--timeout-s"),
    "--cooldown": ("cooldown_s", "--cooldown-s"),
    "--selfcheck-seconds": ("selfcheck_s", "--selfcheck-s"),
}


class _DeprecatedAlias(argparse.Action):
    """A hidden old spelling of an option: sets the new option's value and remembers the use
    (:func:`main` warns once logging is set up)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        namespace.deprecated_used = [*getattr(namespace, "deprecated_used", []), option_string]


#: The plausibility anchor: ResNet-50 at 224 px, batch 256, fp16 (off the paper grid: 224 px).
ANCHOR: dict[str, Any] = {
    "family": "resnet", "block": "bottleneck", "depth": 50, "width": 1.0,
    "early_downsample": True, "resolution": 224, "batch": 256, "precision": "fp16",
    "num_classes": 1000,
}  # fmt: skip
#: Public figures printed beside the anchor (reported by others; never stored as CARB data).
ANCHOR_REFERENCES: tuple[tuple[str, str], ...] = (
    ("MLPerf Inference v4.1, 8x H200, INT8 TensorRT, 350 W cap (reported)",
     "556,234 img/s in all: <= 5.0 mJ/img for the GPUs, 8.9 mJ/img for the system"),
    ("MLPerf Inference v4.1, H200 uncapped (reported)", "about 94.6k img/s per GPU"),
    ("timm benchmark, PyTorch AMP on an RTX 4090 (reported)", "about 4.3k img/s"),
)  # fmt: skip
#: Below this energy per image (mJ) a PyTorch fp16 measurement is suspect (MLPerf's INT8
#: TensorRT bound for the GPUs).
MLPERF_MJ_PER_IMG = 5.0


def anchor_summary(row: dict[str, Any]) -> dict[str, Any]:
    """Images/s and mJ per image of the anchor row, with a plausibility verdict."""
    out: dict[str, Any] = {"status": row.get("status"), "error": row.get("error")}
    if row.get("status") != "ok":
        return out
    batch = float(row["batch"])
    out["images_per_s"] = batch / (float(row["latency_ms"]) / 1e3)
    e = row.get("energy_j")
    out["mj_per_image"] = float(e) / batch * 1e3 if e is not None and e == e else float("nan")
    verdict = []
    if not 4.3e3 <= out["images_per_s"] <= 94.6e3:
        verdict.append("throughput outside [4.3k (RTX 4090 AMP), 94.6k (MLPerf INT8)] img/s")
    if out["mj_per_image"] == out["mj_per_image"] and out["mj_per_image"] < MLPERF_MJ_PER_IMG:
        verdict.append(f"energy below MLPerf's INT8 TensorRT {MLPERF_MJ_PER_IMG} mJ/img: suspect")
    out["verdict"] = "; ".join(verdict) or "plausible"
    return out


def counter_vs_integrated(rows: pd.DataFrame) -> dict[str, float]:
    """Ratio of the NVML energy counter to the integral of sampled instant power over the same
    windows (``energy_j * n_iters / (power_sampled_w * window_s)``): median, p10, p90, n."""
    need = ["energy_j", "n_iters", "power_sampled_w", "window_s"]
    if rows is None or len(rows) == 0 or not set(need) <= set(rows.columns):
        return {"n": 0}
    r = rows[rows["status"] == "ok"][need].astype(float).dropna()
    r = r[(r["power_sampled_w"] > 0) & (r["window_s"] > 0)]
    if len(r) == 0:
        return {"n": 0}
    ratio = r["energy_j"] * r["n_iters"] / (r["power_sampled_w"] * r["window_s"])
    return {
        "n": int(len(ratio)),
        "median": float(ratio.median()),
        "p10": float(ratio.quantile(0.1)),
        "p90": float(ratio.quantile(0.9)),
    }


#: NVML clock-event (throttle) reason bits, named as in ``nvml.h``.
THROTTLE_REASONS: dict[int, str] = {
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap",
    0x8: "hw_slowdown", 0x10: "sync_boost", 0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown", 0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting",
}  # fmt: skip

#: Families measured by default: the ResNet paper grid and the layer-tally families.
DEFAULT_FAMILIES: tuple[str, ...] = ("resnet", "mobilenetv2", "vgg", "efficientnet")


def throttle_names(mask: float) -> list[str]:
    """Names of the bits set in an NVML throttle-reason bitmask (``[]`` for 0, NaN or None).

    Examples
    --------
    >>> throttle_names(0x5)
    ['gpu_idle', 'sw_power_cap']
    >>> throttle_names(float("nan"))
    []
    """
    if mask is None or mask != mask:
        return []
    m = int(mask)
    names = [name for bit, name in THROTTLE_REASONS.items() if m & bit]
    rest = m & ~sum(THROTTLE_REASONS)
    return names + ([f"other_0x{rest:x}"] if rest else [])


def backend_flags() -> dict[str, Any]:
    """The PyTorch backend settings that change GPU speed, as the campaign runs with them:
    TF32 for matmul and for cuDNN convolutions, ``float32_matmul_precision``,
    ``cudnn.benchmark`` and ``cudnn.deterministic``."""
    import torch

    return {
        "matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cudnn_enabled": bool(torch.backends.cudnn.enabled),
        "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
        "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
    }


def nvml_state(nvml_dev: Any) -> dict[str, Any]:
    """Clocks (now and maximum, MHz), throttle reasons (bitmask and names), other compute
    processes, temperature and power limit read from NVML now; a field NVML does not answer
    is None (its error in ``errors``)."""
    nvml = nvml_dev._nvml
    out: dict[str, Any] = {"errors": {}}

    def read(key: str, fn: Any) -> None:
        try:
            val = fn()
            out[key] = None if isinstance(val, float) and val != val else val
        except Exception as exc:  # any NVML failure is recorded, never fatal
            out[key] = None
            out["errors"][key] = f"{type(exc).__name__}: {exc}"

    sm_clk = getattr(nvml, "NVML_CLOCK_SM", 1)
    mem_clk = getattr(nvml, "NVML_CLOCK_MEM", 2)
    read("sm_clock_mhz", lambda: nvml_dev.clocks_mhz()[0])
    read("mem_clock_mhz", lambda: nvml_dev.clocks_mhz()[1])
    read("sm_clock_max_mhz", lambda: float(nvml.nvmlDeviceGetMaxClockInfo(nvml_dev.handle, sm_clk)))
    read("mem_clock_max_mhz",
         lambda: float(nvml.nvmlDeviceGetMaxClockInfo(nvml_dev.handle, mem_clk)))  # fmt: skip
    read("sm_app_clock_mhz",
         lambda: float(nvml.nvmlDeviceGetApplicationsClock(nvml_dev.handle, sm_clk)))  # fmt: skip
    read("throttle_reasons", nvml_dev.throttle_reasons)
    out["throttle_reason_names"] = throttle_names(out.get("throttle_reasons"))
    read("other_compute_processes", nvml_dev.other_compute_processes)
    read("temperature_c", nvml_dev.temperature_c)
    read("power_limit_w", nvml_dev.power_limit_w)
    read("persistence_mode", lambda: int(nvml.nvmlDeviceGetPersistenceMode(nvml_dev.handle)))
    return out


def design_space_sample(
    families: tuple[str, ...] | list[str],
    n_per_family: int,
    seed: int = 0,
    exclude_ids: set[str] | None = None,
    resnet_weight: int = 2,
) -> pd.DataFrame:
    """A seeded sample of several families' design spaces, interleaved so that a campaign
    stopped by its time budget covers every family.

    ResNet rows are a stratified sample of the paper grid (:func:`carb_lib.families.space.stratified_sample`);
    another family's rows are its seeded ``sample_configs`` draws. ``exclude_ids`` (config_ids
    already measured) are left out. In the interleaved order ResNet takes ``resnet_weight``
    rows per round, every other family one.

    Examples
    --------
    >>> df = design_space_sample(("resnet", "vgg"), 4, seed=0)
    >>> df["family"].tolist()[:3]
    ['resnet', 'resnet', 'vgg']
    """
    import importlib

    exclude = set(exclude_ids or ())
    parts = []
    for fam in families:
        if fam == DEFAULT_FAMILY:  # the paper grid's family
            grid = space.paper_grid()
            grid = grid[~grid["config_id"].isin(exclude)]
            df = space.stratified_sample(grid, min(n_per_family, len(grid)), seed)
            weight = max(int(resnet_weight), 1)
        else:
            try:
                mod = importlib.import_module(f"carb_lib.families.{fam}")
            except ImportError as exc:
                raise ValueError(f"--families: unknown family {fam!r}") from exc
            df = mod.sample_configs(2 * n_per_family + 16, seed=seed)
            df = df[~df["config_id"].isin(exclude)].drop_duplicates("config_id")
            df = df.head(n_per_family)
            weight = 1
        df = df.reset_index(drop=True)
        df["family"] = fam
        df["_order"] = np.arange(len(df)) // weight
        df["_fam"] = len(parts)
        parts.append(df)
    out = pd.concat(parts, ignore_index=True)
    out = out.sort_values(["_order", "_fam"], kind="stable").drop(columns=["_order", "_fam"])
    return out.reset_index(drop=True)


def _versions(device: str) -> dict[str, Any]:
    import platform as plat

    import torch

    v: dict[str, Any] = {
        "python": plat.python_version(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "numpy": np.__version__,
        "pandas": pd.__version__,
    }
    if device.startswith("cuda"):
        idx = int(device.split(":")[1]) if ":" in device else 0
        v["gpu_name"] = torch.cuda.get_device_name(idx)
        props = torch.cuda.get_device_properties(idx)
        v["gpu_memory_gib"] = round(props.total_memory / 2**30, 1)
        v["sm_count"] = props.multi_processor_count
    return v


def selfcheck(dev: Any, device: str, seconds: float = 2.0) -> dict[str, Any]:
    """Versions, energy counter behaviour under load, idle power (GPU); RAPL status (CPU)."""
    out: dict[str, Any] = {"versions": _versions(device)}
    if dev.kind == "cuda":
        import torch

        info = dev.info.to_dict() if dev.info is not None else None
        out["nvml"] = info
        out["nvml_reason"] = dev.nvml_reason
        out["backend_flags"] = backend_flags()
        out["nvml_state_idle"] = nvml_state(dev.nvml) if dev.nvml is not None else None
        out["energy_counter_supported"] = bool(dev.energy_ok)
        if dev.nvml is not None and dev.energy_ok:
            a = torch.randn(4096, 4096, device=dev.torch_device)

            def load() -> None:
                for _ in range(4):
                    a @ a
                torch.cuda.synchronize(dev.torch_device)

            out["counter_under_load"] = counter_resolution(
                dev.nvml.energy_counter_j, seconds, load=load
            )
            out["nvml_state_load"] = nvml_state(dev.nvml)
            del a
            torch.cuda.empty_cache()
        out["idle_power_w"] = dev.idle_power_w(seconds)
    else:
        out["rapl_available"] = dev.rapl.available
        out["rapl_reason"] = dev.rapl.reason
        if dev.rapl.available:
            out["counter_idle"] = counter_resolution(dev.rapl.energy_j, seconds)
        out["idle_power_w"] = dev.idle_power_w(min(seconds, 1.0))
    return out


def _print_selfcheck(sc: dict[str, Any]) -> None:
    _p("=== self-check ===")
    for k, v in sc["versions"].items():
        _p(f"  {k:16s} {v}")
    if "nvml" in sc:
        n = sc["nvml"] or {}
        _p(f"  {'driver':16s} {n.get('driver')}  (CUDA driver API {n.get('cuda_driver')})")
        _p(
            f"  {'architecture':16s} {n.get('architecture')}  power limit {n.get('power_limit_w')} W"
        )
        _p(f"  {'power source':16s} {n.get('power_source')}")
        if not sc["energy_counter_supported"]:
            _p(
                f"  ENERGY COUNTER UNSUPPORTED: {sc['nvml_reason']} -- measuring latency/memory only"
            )
        c = sc.get("counter_under_load")
        if c:
            _p(
                f"  energy counter under load: advanced={bool(c['advanced'])}, "
                f"{int(c['n_changes'])} changes, smallest step {c['min_step_j']:.4g} J, "
                f"median update period {c['median_update_period_s'] * 1e3:.1f} ms, "
                f"mean power {c['mean_power_w']:.1f} W"
            )
        for k, v in (sc.get("backend_flags") or {}).items():
            _p(f"  {k:16s} {v}")
        for when in ("idle", "load"):
            st = sc.get(f"nvml_state_{when}")
            if st:
                _p(f"  nvml {when:11s} SM {st.get('sm_clock_mhz')} / max {st.get('sm_clock_max_mhz')} MHz, "
                   f"mem {st.get('mem_clock_mhz')} / max {st.get('mem_clock_max_mhz')} MHz, "
                   f"throttle {st.get('throttle_reason_names')}, other processes "
                   f"{st.get('other_compute_processes')}, {st.get('temperature_c')} C")  # fmt: skip
    else:
        _p(f"  RAPL: {'available' if sc['rapl_available'] else sc['rapl_reason']}")
    _p(f"  {'idle power':16s} {sc['idle_power_w']:.2f} W")


def _existing_ids(data_dir: Path, platform: str) -> set[str]:
    """config_ids with a final result (ok or oom) in the rows of ``platform``'s design campaign
    in ``<data_dir>/catalog.yaml`` (extended by the user catalogs; none without a catalog there:
    nothing is skipped); skipped and error rows are measured again."""
    have: set[str] = set()
    if not (data_dir / "catalog.yaml").is_file():
        return have
    for path in load_catalog(shipped=data_dir / "catalog.yaml").files(platform, DESIGN, "rows"):
        if path.exists():
            df = pd.read_parquet(path, columns=["config_id", "status"])
            have |= set(df.loc[df["status"].isin(["ok", "oom"]), "config_id"].astype(str))
    return have


def build_parser() -> argparse.ArgumentParser:
    """The command line of :func:`main` (old option spellings hidden, see
    :data:`DEPRECATED_OPTIONS`)."""
    ap = argparse.ArgumentParser(prog="python3 -m carb_lib.measure.gpu_campaign", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--out", default=os.environ.get("OUT", "gpu_out"), help="output folder ($OUT)")
    ap.add_argument("--device", default="cuda", help="cuda | cuda:N | cpu (testing)")
    ap.add_argument("--platform", default=None, help="platform name (default from the device)")
    ap.add_argument("--time-budget-s", type=float, default=480.0,
                    help="total seconds for everything")
    ap.add_argument("--reserve-s", type=float, default=60.0, help="seconds kept for writing")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--data-dir", default="data",
        help="skip configs already in the platform's catalogued rows (<data-dir>/catalog.yaml)"
    )
    ap.add_argument(
        "--max-gflops", type=float, default=5000.0, help="compute cap (whole batch, GFLOP)"
    )
    ap.add_argument("--timeout-s", type=float, default=60.0, help="per-config wall-clock cap (s)")
    ap.add_argument("--cooldown-s", type=float, default=1.0, help="GPU cool-down per config (s)")
    ap.add_argument("--ref-every", type=int, default=50)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--noise-configs", type=int, default=10)
    ap.add_argument("--noise-repeats", type=int, default=3)
    ap.add_argument("--noise-max-gflops", type=float, default=50.0)
    ap.add_argument("--selfcheck-s", type=float, default=2.0,
                    help="length of the energy-counter and idle-power checks (s)")
    ap.add_argument("--quick", action="store_true",
                    help="tiny windows, interference detector off (tests only)")
    ap.add_argument("--anchor", choices=("auto", "on", "off"), default="auto",
                    help="measure the ResNet-50 224 px b256 fp16 anchor (auto: on CUDA only)")
    ap.add_argument("--pytest", action="store_true",
                    help="after the campaign, run the gpu-marked tests (tests/test_gpu.py), log in OUT")
    ap.add_argument("--pytest-reserve-s", type=float, default=60.0,
                    help="seconds kept at the end for --pytest")
    ap.add_argument("--families", default=",".join(DEFAULT_FAMILIES),
                    help="comma-separated families to sample (resnet = the paper grid)")
    ap.add_argument("--n-per-family", type=int, default=500,
                    help="configs drawn per family before the budget stops the campaign")
    ap.add_argument("--no-progress", action="store_true")
    for old, (dest, _new) in DEPRECATED_OPTIONS.items():
        ap.add_argument(old, dest=dest, type=float, action=_DeprecatedAlias,
                        help=argparse.SUPPRESS)
    ap.set_defaults(deprecated_used=[])
    return ap


def main(argv: list[str] | None = None) -> int:
    """Run the self-check, noise study, campaign and summary (see the module docstring);
    progress and summary lines go to stdout. Returns the exit code."""
    a = build_parser().parse_args(argv)

    handler = _StdoutHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False  # shown once, on stdout, even where ``carb`` logs to stderr
    try:
        for old in a.deprecated_used:
            _p(f"warning: {old} is deprecated; use {DEPRECATED_OPTIONS[old][1]}")
        return _run(a)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


def _run(a: argparse.Namespace) -> int:
    """The steps of :func:`main` with parsed options."""
    t0 = time.perf_counter()
    deadline = t0 + a.time_budget_s

    def left() -> float:
        return deadline - time.perf_counter()

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    kw: dict[str, Any] = {"threads": a.threads, "timeout_s": a.timeout_s,
                          "cooldown_s": a.cooldown_s}
    if a.quick:
        kw.update(gpu_warmup_iters=2, gpu_min_iters=5, gpu_min_window_s=0.02, cpu_warmup_iters=1,
                  cpu_min_iters=2, cpu_min_window_s=0.01, cooldown_s=0.0, count_kernels=False,
                  **DETECTOR_OFF)  # fmt: skip
    protocol = Protocol(**kw)
    dev = get_device(a.device, platform=a.platform)
    dev.setup(protocol)
    platform = dev.platform
    _p(
        f"carb gpu_campaign: platform={platform} device={a.device} budget={a.time_budget_s:.0f} s out={out}"
    )

    # 1. self-check
    sc = selfcheck(dev, a.device, a.selfcheck_s)
    sc["platform"] = platform
    _print_selfcheck(sc)
    (out / "selfcheck.json").write_text(json.dumps(sc, indent=2, default=str))

    # 2. noise
    noise_sum = pd.DataFrame()
    rows = None
    if a.noise_configs > 0 and a.noise_repeats > 1 and left() > a.reserve_s + 10:
        grid = space.paper_grid()

        small = grid[static_features(grid)["flops"].to_numpy() <= a.noise_max_gflops * 1e9]
        ncfg = space.stratified_sample(small, min(a.noise_configs, len(small)), a.seed + 1)
        _p(f"=== noise: {len(ncfg)} configs x {a.noise_repeats} repeats (spread, in-process) ===")
        rows, noise_sum = noise_study(
            ncfg, dev, protocol, repeats=a.noise_repeats, modes=("spread",),
            separate_processes=False, progress=not a.no_progress,
        )  # fmt: skip
        rows.to_parquet(out / "noise_rows.parquet", index=False)
        _p(noise_sum.to_string(index=False))

    ratio = counter_vs_integrated(rows)  # on the noise rows
    if ratio.get("n"):
        _p(f"=== energy counter / integrated sampled power: median {ratio['median']:.3f} "
           f"(p10 {ratio['p10']:.3f}, p90 {ratio['p90']:.3f}, n={ratio['n']}) ===")  # fmt: skip

    # 2b. plausibility anchor
    anc: dict[str, Any] = {}
    if a.anchor == "on" or (a.anchor == "auto" and dev.kind == "cuda"):
        arow = profile_config(space.config_from_row(ANCHOR), dev, protocol)
        anc = anchor_summary(arow)
        (out / "anchor.json").write_text(json.dumps({"row": arow, "summary": anc}, indent=2,
                                                    default=str))  # fmt: skip
        _p(f"=== anchor ResNet-50 224 px b256 fp16: {anc} ===")
        for who, what in ANCHOR_REFERENCES:
            _p(f"    {who}: {what}")

    # 3. campaign
    families = tuple(f.strip() for f in a.families.split(",") if f.strip())
    have = _existing_ids(Path(a.data_dir), platform)
    sample = design_space_sample(families, a.n_per_family, a.seed, exclude_ids=have)
    budget = left() - a.reserve_s - (a.pytest_reserve_s if a.pytest else 0.0)
    _p(
        f"=== campaign: {len(sample)} configs of {', '.join(families)} not yet measured on "
        f"{platform} ({len(have)} in {a.data_dir}); budget {budget:.0f} s ==="
    )
    parts = out / "parts"
    res = None
    if budget > 5:
        res = campaign.run_campaign(
            sample, parts, dev, protocol, platform=platform, seed=a.seed,
            ref_every=a.ref_every, time_budget_s=budget, max_gflops=a.max_gflops,
            progress=not a.no_progress, log=_p,
        )  # fmt: skip

    # 4. write + summary
    merged = None
    try:
        merged = merge_parts(
            parts, out / f"{platform}.parquet",
            reference_out=out / f"{platform}_reference.parquet",
        )  # fmt: skip
    except FileNotFoundError:
        _p("no result parts to merge")
    except Exception as exc:  # keep the summary even if merging fails
        _p(f"MERGE FAILED: {type(exc).__name__}: {exc} (parts are kept in {parts})")

    _p("")
    _p("=== summary ===")
    lines: list[tuple[str, str]] = [
        ("platform", platform),
        ("device", sc["versions"].get("gpu_name", getattr(dev, "_name", a.device))),
        ("torch / cuda", f"{sc['versions']['torch']} / {sc['versions']['torch_cuda']}"),
    ]
    if merged is not None:
        st = merged["status"].value_counts().to_dict()
        lines.append(("rows by status", ", ".join(f"{k}={v}" for k, v in sorted(st.items()))))
        if "family" in merged.columns:
            fam = merged.loc[merged["status"] == "ok", "family"].value_counts().to_dict()
            lines.append(("ok rows by family", ", ".join(f"{k}={v}" for k, v in sorted(fam.items()))))
        ok = merged[merged["status"] == "ok"]
        if len(ok):
            lines.append(("median latency_cv", f"{ok['latency_cv'].median():.4f}"))
            e_ok = ok["energy_j"].notna().mean()
            lines.append(("rows with energy", f"{e_ok * 100:.0f}%"))
            if ok["energy_j"].notna().any():
                lines.append(("median avg_power_w", f"{ok['avg_power_w'].median():.1f}"))
    if res is not None:
        lines.append(("stopped by budget", str(res.stopped_by_budget)))
    c = sc.get("counter_under_load") or sc.get("counter_idle")
    if c:
        lines.append(
            (
                "energy counter",
                f"min step {c['min_step_j']:.4g} J, update period "
                f"{c['median_update_period_s'] * 1e3:.1f} ms",
            )  # fmt: skip
        )
    elif dev.kind == "cuda":
        lines.append(("energy counter", "UNSUPPORTED: " + str(sc.get("nvml_reason"))))
    else:
        lines.append(("energy counter", str(sc.get("rapl_reason") or "RAPL")))
    lines.append(("idle power", f"{sc['idle_power_w']:.2f} W"))
    if merged is not None:
        cr = counter_vs_integrated(merged)
        if cr.get("n"):
            lines.append(("counter / integrated (campaign)", f"median {cr['median']:.3f} "
                          f"(p10 {cr['p10']:.3f}, p90 {cr['p90']:.3f}, n={cr['n']})"))  # fmt: skip
    if ratio.get("n"):
        lines.append(("counter / integrated power", f"median {ratio['median']:.3f} "
                                                      f"(n={ratio['n']})"))  # fmt: skip
    if anc.get("images_per_s"):
        lines.append(("anchor RN50 b256 fp16", f"{anc['images_per_s']:.0f} img/s, "
                      f"{anc['mj_per_image']:.2f} mJ/img: {anc['verdict']}"))  # fmt: skip
    for _, r in noise_sum.iterrows():
        lines.append(
            (f"noise CV {r['target']}", f"median {r['median_cv']:.4f} max {r['max_cv']:.4f}")
        )
    d = drift_summary(reference_rows(parts)) if parts.exists() else {}
    if d.get("n_reference", 0):
        lines.append(("reference drift", f"{d['n_reference']} runs, last/first "
                                          f"{d['last_over_first']:.3f}, max {d['max_abs_drift_pct']:.1f}%"))  # fmt: skip
    lines.append(("elapsed", f"{time.perf_counter() - t0:.0f} s"))
    w = max(len(k) for k, _ in lines)
    for k, v in lines:
        _p(f"  {k:<{w}}  {v}")
    summary = {k: v for k, v in lines}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))

    # 5. the CUDA path's tests on this device, after the rows are safe
    if a.pytest:
        import subprocess

        log = out / "gpu_pytest.log"
        cmd = [sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider",
               "tests/test_gpu.py"]  # fmt: skip
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True,
                                  timeout=max(20.0, left() - 5.0))  # fmt: skip
            log.write_text(proc.stdout + proc.stderr)
            last = (proc.stdout.strip().splitlines() or [""])[-1]
            summary["gpu tests"] = f"exit {proc.returncode}: {last}"
        except subprocess.TimeoutExpired as exc:
            log.write_text(f"timed out after {exc.timeout:.0f} s\n{exc.stdout or ''}")
            summary["gpu tests"] = f"timed out after {exc.timeout:.0f} s"
        _p(f"=== gpu tests: {summary['gpu tests']}")
        (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return 0 if (merged is not None or res is None or sum(res.counts.values()) == 0) else 1


if __name__ == "__main__":
    sys.exit(main())
