"""The measured-dataset schema and the one validator of measurement tables.

One row per (``platform``, ``config_id``). Every column has a kind (``str``, ``int``,
``float``, ``bool``), a group, and rules for when it may be missing (NaN/None).
:func:`validate_table` enforces them and raises :class:`SchemaError` naming the row (its label,
``config_id`` and ``platform``), the column and the offending value. It has two levels:

* ``complete=True`` (:func:`validate`): a finished dataset or campaign part written by CARB's
  profiler: every required column, nothing unknown;
* ``complete=False`` (:func:`carb_lib.dataset.readers.validate_measurements`): a measurement table
  from elsewhere (HELP, a user's CSV): ``platform``, each row's family config columns and a
  target are enough; configs are validated by their family and ``config_id`` is filled in (or
  checked against the content hash).

Both apply the same rules to the columns they share; in particular **one rule for costs**
(:data:`~carb_lib.core.vocab.TARGETS`): in a row with status ``ok`` (every row when there is no
``status`` column) a cost is a finite number > 0, or missing where the column may be missing
(``energy_j`` on a CPU); in other rows a cost is missing or a finite number >= 0.
:func:`write_dataset` validates and writes Parquet atomically (:mod:`carb_lib.core.tables`);
:func:`read_dataset` reads and validates.

Groups and missing-value rules
------------------------------
config
    ``family``, ``config_id`` (16 hex digits), ``resolution``, ``batch``, ``precision``
    (``fp32``/``fp16``), ``num_classes``: required, never missing. Each family adds its own
    columns (``Family.own_columns``; ``resnet``: ``block``, ``depth``, ``width``,
    ``early_downsample``; ``nb201``: ``arch``), present in its rows and missing (NaN/None) in
    rows of other families.
static features
    :data:`STATIC_FEATURE_COLUMNS` (from :func:`carb_lib.dataset.features.static_features`): required in a
    finished dataset (``require_features=True``), absent from campaign part files; never missing,
    never negative. A family's extra features (``Family.extra_feature_columns``, e.g. the NB201
    op counts :data:`NB201_FEATURE_COLUMNS`) are optional, missing for other families.
targets
    ``energy_j`` (J per batch), ``latency_ms`` (median ms per batch), ``peak_mem_mib``.
    When ``status == "ok"``: ``latency_ms`` and ``peak_mem_mib`` present; ``energy_j`` may be
    missing only if ``energy_reason`` says why (e.g. a CPU without RAPL). When ``status != "ok"``
    every target may be missing.
quality
    ``n_iters``, ``window_s``, ``latency_mean_ms``, ``latency_p10_ms``, ``latency_p90_ms``,
    ``latency_cv``: present when ``status == "ok"``. ``status`` in :data:`STATUSES`, never
    missing; ``error`` non-empty when ``status != "ok"``, missing when ``ok``.
measurement / telemetry
    ``latency_norm_ms``, ``energy_dynamic_j``, ``avg_power_w``, ``idle_power_w``,
    ``peak_reserved_mib``, ``nvml_proc_mem_mib``, ``sm_util_pct``, ``mem_util_pct``,
    ``temp_c_before``, ``temp_c_after``, ``sm_clock_mhz``, ``mem_clock_mhz``,
    ``power_sampled_w``, ``kernel_launches``, ``power_source``, ``energy_reason``: may be
    missing (GPU-only or optional). ``energy_dynamic_j`` may be negative (idle power subtracted
    from a tiny, noisy total); every other cost column is ``>= 0``.
provenance
    ``platform``, ``device_name``, ``torch_version``, ``host``, ``measured_at`` (UTC ISO 8601),
    ``threads``: never missing. ``driver``, ``cuda``: GPU only.

Storage dtypes (:func:`conform`): text -> pandas ``string``, integers -> ``Int64`` (nullable),
``early_downsample`` -> ``boolean``, the rest ``float64``. This module imports only numpy,
pandas and pyarrow besides CARB's families (it must work on the GPU box, which has no
xgboost/lightgbm/matplotlib).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.tables import atomic_write as _atomic_write
from carb_lib.core.tables import (
    atomic_write_parquet,
    backup_path,
    clean_temporary_files,
)
from carb_lib.core.vocab import (
    ALLOC_FEATURES,
    FLOAT_STATIC_FEATURES,
    NB201_FEATURE_COLUMNS,
    PRECISIONS,
    QUALITIES,
    STATIC_FEATURES,
    STATUSES,
    TARGETS,
)
from carb_lib.families import FAMILIES, ConfigError, family_names, get_family
from carb_lib.families.space import add_config_ids, family_of

__all__ = [
    "COLUMNS", "COLUMN_ORDER", "NB201_FEATURE_COLUMNS", "SCHEMA", "STATIC_FEATURE_COLUMNS",
    "STATUSES", "TARGETS", "Column", "SchemaError", "atomic_write_parquet", "backup_path",
    "check_costs", "check_repeats", "clean_temporary_files", "conform", "describe_schema", "empty_row", "read_dataset",
    "validate", "validate_table", "write_dataset",
]  # fmt: skip

STATIC_FEATURE_COLUMNS: tuple[str, ...] = STATIC_FEATURES


@dataclass(frozen=True)
class Column:
    """One column of the schema.

    Attributes
    ----------
    name : str
    kind : {"str", "int", "float", "bool"}
    group : str
        ``config``, ``feature``, ``target``, ``quality``, ``measurement``, ``telemetry``,
        ``provenance``.
    required : bool
        The column must exist (features: only when ``require_features``).
    missing : {"never", "ok_required", "allowed", "family"}
        ``never``: no missing value; ``ok_required``: present when status is ok;
        ``allowed``: may be missing; ``family``: present for rows of the families in ``families``.
    nonneg : bool
        Values must be ``>= 0``.
    families : tuple of str
        For ``missing == "family"``.
    doc : str
    """

    name: str
    kind: str
    group: str
    required: bool = True
    missing: str = "never"
    nonneg: bool = False
    families: tuple[str, ...] = ()
    doc: str = ""


def _c(*args: Any, **kw: Any) -> Column:
    return Column(*args, **kw)


def _family_config_columns() -> tuple[Column, ...]:
    """The families' own config columns (registration order; one entry per name)."""
    out: dict[str, Column] = {}
    for fam in FAMILIES.values():
        for col in fam.own_columns:
            old = out.get(col.name)
            fams = (*old.families, fam.name) if old else (fam.name,)
            out[col.name] = _c(col.name, col.kind, "config", False, "family", col.nonneg, fams,
                               col.doc)  # fmt: skip
    return tuple(out.values())


def _family_feature_columns() -> tuple[Column, ...]:
    """The families' extra static features (optional, missing in other families' rows)."""
    fams: dict[str, list[str]] = {}
    for fam in FAMILIES.values():
        for name in fam.extra_feature_columns:
            fams.setdefault(name, []).append(fam.name)
    return tuple(
        _c(name, "float" if name in FLOAT_STATIC_FEATURES else "int", "feature", False,
           "allowed", True, doc="static feature of families " + ", ".join(names))
        for name, names in fams.items()
    )  # fmt: skip


SCHEMA: tuple[Column, ...] = (
    # provenance / key
    _c("platform", "str", "provenance", doc="measurement platform, e.g. cpu_epyc_2c, h200"),
    _c("config_id", "str", "config", doc="16-hex content hash of the config"),
    # config
    _c("family", "str", "config", doc="model family: " + " | ".join(family_names())),
    *_family_config_columns(),
    _c("resolution", "int", "config", nonneg=True, doc="square input side, px"),
    _c("batch", "int", "config", nonneg=True),
    _c("precision", "str", "config", doc=" | ".join(PRECISIONS)),
    _c("num_classes", "int", "config", nonneg=True),
    # static features
    *(
        _c(n, "float" if n == "arith_intensity_flop_per_byte" else "int", "feature", nonneg=True)
        for n in STATIC_FEATURE_COLUMNS
    ),
    # family-specific static features (e.g. NB201 op counts; missing for other families)
    *_family_feature_columns(),
    # the allocator model's peak (optional: computed on demand; NaN where a family has none)
    *(
        _c(name, "float", "feature", False, "allowed", True,
           doc=(f"simulated CPU allocator peak with {b}-channel oneDNN blocks, bytes "
                if isinstance(b, int) else "simulated CPU allocator peak with 16-channel "
                "oneDNN blocks and fp16 convs through oneDNN (AVX512-FP16), bytes")
               + " (carb_lib.families._alloc)")
        for b, name in ALLOC_FEATURES.items()
    ),
    # targets
    _c("energy_j", "float", "target", missing="ok_required", nonneg=True, doc="J per batch"),
    _c("latency_ms", "float", "target", missing="ok_required", nonneg=True, doc="median ms/batch"),
    _c("peak_mem_mib", "float", "target", missing="ok_required", nonneg=True),
    # quality
    _c("n_iters", "int", "quality", missing="ok_required", nonneg=True, doc="timed iterations"),
    _c("window_s", "float", "quality", missing="ok_required", nonneg=True),
    _c("latency_mean_ms", "float", "quality", missing="ok_required", nonneg=True),
    _c("latency_p10_ms", "float", "quality", missing="ok_required", nonneg=True),
    _c("latency_p90_ms", "float", "quality", missing="ok_required", nonneg=True),
    _c("latency_cv", "float", "quality", missing="ok_required", nonneg=True),
    _c("status", "str", "quality", doc="ok | oom | error | skipped"),
    _c("quality", "str", "quality", False, "allowed",
       doc="clean | retried | disturbed: verdict of the interference detector (v2 protocol)"),
    _c("n_windows", "int", "quality", False, "allowed", True, doc="timed windows taken"),
    _c("n_rejected", "int", "quality", False, "allowed", True,
       doc="windows taken but not used (disturbed or disagreeing)"),
    _c("latency_window_cv", "float", "quality", False, "allowed", True,
       doc="CV of the used windows' median latencies: the row's own noise"),
    _c("latency_passes", "int", "quality", False, "allowed", True,
       doc="passes that measured the config ok; the row is the fastest (carb profile --passes; "
           "missing: one pass)"),
    _c("latency_pass_spread", "float", "quality", False, "allowed", True,
       doc="median latency over the passes / the fastest pass's - 1 (carb_lib.measure.passes)"),
    _c("cpu_share", "float", "quality", False, "allowed", True,
       doc="lowest CPU time / wall time of the measuring thread over the used windows"),
    _c("other_busy", "float", "quality", False, "allowed", True,
       doc="highest share of the other cores kept busy by other processes in a used window"),
    _c("rejected_by", "str", "quality", False, "allowed",
       doc="windows not used, by reason: share=a,other=b,spread=c"),
    _c("load_1m", "float", "quality", False, "allowed", True,
       doc="host 1-minute load average when the row was measured"),
    _c("siblings", "int", "quality", False, "allowed", True,
       doc="other measuring workers on the row's host (Dask campaign; 0: it measured alone "
           "there; missing: a local campaign): its other-load threshold allowed for them"),
    _c("error", "str", "quality", missing="allowed", doc="message when status != ok"),
    # measurement
    _c("latency_norm_ms", "float", "measurement", False, "allowed", True,
       doc="latency / (reference latency at that time / first reference latency)"),
    _c("energy_dynamic_j", "float", "measurement", False, "allowed",
       doc="energy_j - idle_power_w * window_s / n_iters (may be < 0)"),
    _c("avg_power_w", "float", "measurement", False, "allowed", True),
    _c("idle_power_w", "float", "measurement", False, "allowed", True),
    _c("peak_reserved_mib", "float", "measurement", False, "allowed", True),
    _c("nvml_proc_mem_mib", "float", "measurement", False, "allowed", True),
    _c("energy_reason", "str", "measurement", False, "allowed", doc="why energy_j is missing"),
    _c("power_source", "str", "measurement", False, "allowed",
       doc="instant_field | power_usage | rapl | none"),
    # telemetry (GPU; window means of the background sampler)
    _c("sm_util_pct", "float", "telemetry", False, "allowed", True),
    _c("mem_util_pct", "float", "telemetry", False, "allowed", True),
    _c("temp_c_before", "float", "telemetry", False, "allowed"),
    _c("temp_c_after", "float", "telemetry", False, "allowed"),
    _c("sm_clock_mhz", "float", "telemetry", False, "allowed", True),
    _c("mem_clock_mhz", "float", "telemetry", False, "allowed", True),
    _c("power_sampled_w", "float", "telemetry", False, "allowed", True,
       doc="mean of sampled power over the window (telemetry only, not energy)"),
    _c("minor_faults_per_call", "float", "telemetry", False, "allowed", True,
       doc="the process's minor page faults per timed inference over the used windows (CPU; "
           "one per 4 KiB page a call writes in fresh pages; carb_lib.measure.heap)"),
    _c("kernel_launches", "int", "telemetry", False, "allowed", True,
       doc="CUDA kernel launches of one inference"),
    _c("gpu_other_procs", "int", "telemetry", False, "allowed", True,
       doc="other compute processes on the GPU during the used window (NVML)"),
    _c("throttle_reasons", "int", "telemetry", False, "allowed", True,
       doc="NVML clock-throttle reasons bitmask, OR of window start and end"),
    _c("sm_clock_start_mhz", "float", "telemetry", False, "allowed", True),
    _c("sm_clock_end_mhz", "float", "telemetry", False, "allowed", True),
    # provenance
    _c("device_name", "str", "provenance"),
    _c("driver", "str", "provenance", False, "allowed"),
    _c("cuda", "str", "provenance", False, "allowed"),
    _c("torch_version", "str", "provenance"),
    _c("host", "str", "provenance"),
    _c("measured_at", "str", "provenance", doc="UTC ISO 8601"),
    _c("threads", "int", "provenance", nonneg=True, doc="torch intra-op threads"),
    _c("cpu_id", "str", "provenance", False, "allowed",
       doc="the host CPU: vendor, family, model, stepping, ISA, L3 (carb_lib.measure.devices.cpu_identity)"),
    _c("carb_version", "str", "provenance", False, "allowed"),
    _c("git_commit", "str", "provenance", False, "allowed", doc="commit of the measuring code"),
    _c("git_dirty", "bool", "provenance", False, "allowed",
       doc="the measuring checkout had uncommitted changes to tracked files (after "
           "2026-12-02: outside data/, results/ and figures/, which campaigns append "
           "to)"),
    _c("mkldnn_enabled", "bool", "provenance", False, "allowed"),
    _c("cudnn_benchmark", "bool", "provenance", False, "allowed"),
    _c("tf32_matmul", "bool", "provenance", False, "allowed",
       doc="torch.backends.cuda.matmul.allow_tf32"),
    _c("tf32_cudnn", "bool", "provenance", False, "allowed", doc="torch.backends.cudnn.allow_tf32"),
    _c("deterministic", "bool", "provenance", False, "allowed",
       doc="torch.are_deterministic_algorithms_enabled()"),
    _c("campaign", "str", "provenance", False, "allowed",
       doc="the measurement campaign of the row: <platform>/<name> (the file's campaign)"),
    _c("heap_kept", "bool", "provenance", False, "allowed",
       doc="the CPU process's heap was kept (Protocol.cpu_keep_heap, carb_lib.measure.heap.keep_heap: "
           "no buffer mapped afresh per call); recorded since 2026-12-03"),
)  # fmt: skip

COLUMNS: dict[str, Column] = {c.name: c for c in SCHEMA}
COLUMN_ORDER: tuple[str, ...] = tuple(c.name for c in SCHEMA)
_HEX16 = re.compile(r"^[0-9a-f]{16}$")


class SchemaError(ValueError):
    """A table violates the schema; the message names column, row and value.

    The one error type of :func:`validate_table` (``carb_lib.dataset.readers.DatasetError`` is this
    class).
    """


# ----------------------------------------------------------------------------------------
def _missing(s: pd.Series) -> np.ndarray:
    m = s.isna().to_numpy(dtype=bool)
    if s.dtype == object or isinstance(s.dtype, pd.StringDtype):
        m = m | (s.astype("string").fillna("").str.strip() == "").to_numpy(dtype=bool)
    return m


def _show(v: Any) -> str:
    """``repr`` of a value, numpy scalars as plain Python values (``-2.0``, not
    ``np.float64(-2.0)``)."""
    return repr(v.item() if isinstance(v, np.generic) else v)


def _identity(df: pd.DataFrame, i: int) -> str:
    """`` (config_id=..., platform=...)`` of the ``i``-th row (the columns it has)."""
    extra = [f"{c}={_show(df[c].iloc[i])}" for c in ("config_id", "platform") if c in df.columns]
    return f" ({', '.join(extra)})" if extra else ""


def _fail(df: pd.DataFrame, col: str, mask: np.ndarray, why: str, what: str = "") -> None:
    """``[what: ]row <label>: column <col> value <v> <why> (config_id=.., platform=..)``."""
    i = int(np.flatnonzero(mask)[0])
    n = int(mask.sum())
    more = f"; {n - 1} more row(s) like it" if n > 1 else ""
    prefix = f"{what}: " if what else ""
    raise SchemaError(
        f"{prefix}row {_show(df.index[i])}: column {col!r} value {_show(df[col].iloc[i])} "
        f"{why}{_identity(df, i)}{more}"
    )


def _numbers(s: pd.Series) -> np.ndarray:
    return pd.to_numeric(s, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def _check_kind(df: pd.DataFrame, col: Column, what: str) -> None:
    s = df[col.name]
    present = ~s.isna().to_numpy(dtype=bool)
    if not present.any():
        return
    if col.kind in ("int", "float"):
        if pd.api.types.is_bool_dtype(s.dtype) or not pd.api.types.is_numeric_dtype(s.dtype):
            bad = present & np.isnan(_numbers(s))
            if bad.any() or pd.api.types.is_bool_dtype(s.dtype):
                _fail(df, col.name, bad if bad.any() else present,
                      f"is not a number ({col.kind})", what)  # fmt: skip
        v = _numbers(s)
        bad = present & np.isinf(v)
        if bad.any():
            _fail(df, col.name, bad, "is not finite", what)
        if col.kind == "int":
            bad = present & np.isfinite(v) & (v != np.round(v))
            if bad.any():
                _fail(df, col.name, bad, "is not an integer", what)
    elif col.kind == "bool":
        if not pd.api.types.is_bool_dtype(s.dtype):
            _check_values(df, col.name, lambda v: isinstance(v, (bool, np.bool_)), "a bool", what)
    elif col.kind == "str":
        if not isinstance(s.dtype, pd.StringDtype):
            _check_values(df, col.name, lambda v: isinstance(v, str), "a string", what)


def _check_values(df: pd.DataFrame, name: str, good, kind: str, what: str) -> None:
    """Fail on the first present value of ``df[name]`` for which ``good`` is False (each
    distinct value is tested once)."""
    codes, uniques = pd.factorize(df[name], use_na_sentinel=True)
    bad_unique = np.array([not good(u) for u in uniques] + [False], dtype=bool)
    bad = bad_unique[codes]  # code -1 (missing) -> the trailing False
    if bad.any():
        _fail(df, name, bad, f"is not {kind}", what)


def _check_costs(df: pd.DataFrame, is_ok: np.ndarray, what: str, nan_rule: bool = True) -> None:
    """The one rule for costs (see the module docstring): in an ok row a cost is a finite
    number > 0, or missing where its platform does not measure it at all (``energy_j`` on a
    CPU) or ``energy_reason`` says why (``nan_rule``; a complete dataset has its own
    missing-value rules). An infinite cost is refused by the column's kind check."""
    for name in TARGETS:
        if name not in df.columns:
            continue
        v = _numbers(df[name])
        bad = is_ok & ~np.isnan(v) & ~(v > 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            kind = "negative" if v[i] < 0 else "zero"
            _fail(df, name, bad, f"is {kind}; a cost of an ok row must be a finite number > 0",
                  what)  # fmt: skip
        nan_ok = is_ok & np.isnan(v)
        if not nan_rule or not nan_ok.any():
            continue
        if name == "energy_j" and "energy_reason" in df.columns:
            nan_ok &= _missing(df["energy_reason"])
        plat = (df["platform"].astype("string").fillna("").to_numpy(dtype=object)
                if "platform" in df.columns else np.full(len(df), "", dtype=object))  # fmt: skip
        measured = set(plat[is_ok & ~np.isnan(v)])
        bad = nan_ok & np.isin(plat, list(measured))
        if bad.any():
            _fail(df, name, bad, "is missing (NaN) in an ok row while other ok rows of its "
                  "platform have it; give the cost or set the row's status to 'error'", what)


def check_costs(df: pd.DataFrame, what: str = "") -> None:
    """The rule for costs (:data:`TARGETS`) of ``ok`` rows (every row without a ``status``
    column), for tables that reach a model without :func:`validate_table` (the library's
    ``CARBRegressor.fit``): a cost is a finite number > 0, or missing only where the
    platform does not measure it at all or ``energy_reason`` says why.

    Raises
    ------
    SchemaError
        ``[what: ]row <label>: column <name> value <v> <why> (config_id=..., platform=...)``,
        the row labelled by ``df``'s index (the row the caller counts).
    """
    is_ok = ((df["status"] == "ok").fillna(False).to_numpy(dtype=bool) if "status" in df.columns
             else np.ones(len(df), dtype=bool))  # fmt: skip
    for name in TARGETS:
        if name in df.columns:
            bad = is_ok & np.isinf(_numbers(df[name]))
            if bad.any():
                _fail(df, name, bad, "is not finite; a cost of an ok row must be a finite "
                      "number > 0", what)  # fmt: skip
    _check_costs(df, is_ok, what)


def check_repeats(df: pd.DataFrame, what: str = "") -> None:
    """Refuse rows that repeat a config of one campaign: key (``platform``, ``campaign`` where
    the table has it, ``config_id``). A repeated row would count twice (as two samples, or
    two calibration rows); measurements of one config from several campaigns are told apart
    by a ``campaign`` column.

    Raises
    ------
    SchemaError
        ``[what: ]rows <a>, <b>: config_id <id> repeated (platform ..., ...)``, rows labelled
        by ``df``'s index.
    """
    if "config_id" not in df.columns:
        return
    key = [c for c in ("platform", "campaign") if c in df.columns] + ["config_id"]
    dup = df.duplicated(subset=key, keep=False).to_numpy(dtype=bool)
    if not dup.any():
        return
    i = int(np.flatnonzero(dup)[0])
    same = (df[key].astype("string") == df[key].iloc[i].astype("string")).all(axis=1)
    rows = [_show(r) for r in df.index[same.to_numpy(dtype=bool)]]
    of = ", ".join(f"{c} {_show(df[c].iloc[i])}" for c in key[:-1])
    prefix = f"{what}: " if what else ""
    raise SchemaError(
        f"{prefix}rows {', '.join(rows)}: config_id {_show(df['config_id'].iloc[i])} repeated"
        f"{f' ({of})' if of else ''}; a repeated row counts twice: keep one row per config "
        f"({int(dup.sum())} repeated row(s) in all; repeats of several campaigns need a "
        "'campaign' column)")


def _check_families(df: pd.DataFrame, what: str) -> None:
    fam = df["family"]
    known = fam.isna().to_numpy(dtype=bool) | fam.isin(list(FAMILIES)).to_numpy(dtype=bool)
    if not known.all():
        _fail(df, "family", ~known, f"is not a registered family; known: {list(FAMILIES)}", what)


def _fill_config(df: pd.DataFrame, what: str) -> pd.DataFrame:
    """Measurement level: default family, each family's configs validated, ``config_id``
    filled in or checked against the content hash."""
    df["family"] = family_of(df)
    _check_families(df, what)
    for name, idx in df.groupby("family", sort=False).groups.items():
        try:
            get_family(name).validate_frame(df.loc[idx], what)
        except ConfigError as exc:
            raise SchemaError(str(exc)) from None
    given = df["config_id"].astype("string") if "config_id" in df.columns else None
    df = add_config_ids(df)
    if given is not None:
        wrong = (given.notna() & (given != df["config_id"])).to_numpy(dtype=bool)
        if wrong.any():
            i = int(np.flatnonzero(wrong)[0])
            raise SchemaError(
                f"{what}: row {_show(df.index[i])}: column 'config_id' value {given.iloc[i]!r} "
                f"does not match the row's config (expected {df['config_id'].iloc[i]!r})"
            )
    return df


def validate_table(
    df: pd.DataFrame,
    *,
    complete: bool = True,
    what: str = "",
    require_features: bool = True,
    require_target: bool = True,
    unique: bool | None = None,
    extra_columns: Iterable[str] = (),
) -> pd.DataFrame:
    """The one validator of measurement tables (see the module docstring for the rules).

    Parameters
    ----------
    df : pandas.DataFrame
    complete : bool
        True: a dataset of the full schema (every required column, no unknown column, the
        missing-value rules of every column); ``df`` is returned unchanged. False: a
        measurement table from elsewhere: ``platform`` and each row's family config columns
        (``family`` defaults to :data:`~carb_lib.families.DEFAULT_FAMILY`) suffice, other
        columns are checked when present, unknown ones are kept; a validated copy is returned
        (index reset to positions, targets as float64, ``family`` and ``config_id`` filled).
    what : str
        Names the table at the start of every message (a path, ``"--data"``).
    require_features : bool
        ``complete`` only: the static feature columns must be present (False for campaign
        part files).
    require_target : bool
        ``complete=False`` only: at least one of :data:`TARGETS` must be a column.
    unique : bool, optional
        Reject duplicate (``platform``, ``config_id``) pairs; default ``complete``.
    extra_columns : iterable of str
        Further columns accepted as optional when ``complete``.

    Raises
    ------
    SchemaError
        ``[what: ]row <label>: column <name> value <v> <why> (config_id=..., platform=...)``
        for the first offending row (and how many more), or a missing/unknown column.
    """
    unique = complete if unique is None else unique
    prefix = f"{what}: " if what else ""
    if not complete:
        df = df.reset_index(drop=True).copy()
    extra = set(extra_columns)
    if complete:
        unknown = [c for c in df.columns if c not in COLUMNS and c not in extra]
        if unknown:
            raise SchemaError(
                f"{prefix}unknown column(s) {unknown}; known columns: {list(COLUMN_ORDER)} "
                "(pass extra_columns= for family-specific features)"
            )
        need = [c.name for c in SCHEMA
                if c.required and (c.group != "feature" or require_features)]  # fmt: skip
    else:
        need = ["platform"]
    missing_cols = [c for c in need if c not in df.columns]
    if missing_cols:
        raise SchemaError(f"{prefix}missing required column(s) {missing_cols}")
    if not complete and require_target and not any(t in df.columns for t in TARGETS):
        raise SchemaError(f"{prefix}no target column; need one of {list(TARGETS)}")
    if len(df) == 0:
        return df

    for col in SCHEMA:
        if col.name in df.columns:
            _check_kind(df, col, what)
    if "status" in df.columns:
        status = df["status"]
        bad = ~status.isin(STATUSES).to_numpy(dtype=bool)
        if bad.any():
            _fail(df, "status", bad, f"is not a valid status; allowed: {list(STATUSES)}", what)
        is_ok = (status == "ok").to_numpy(dtype=bool)
    else:
        is_ok = np.ones(len(df), dtype=bool)
    _check_costs(df, is_ok, what, nan_rule=not complete)
    if complete:
        _check_families(df, what)
    family = (df["family"].astype("string").fillna("").to_numpy(dtype=object)
              if "family" in df.columns else np.full(len(df), "", dtype=object))  # fmt: skip

    for col in SCHEMA:
        if col.name not in df.columns:
            continue
        miss = _missing(df[col.name])
        rule = np.zeros(len(df), dtype=bool)
        if col.missing == "never" and (complete or col.name == "platform"):
            rule = miss
            why = "is missing (NaN/None/empty); this column may never be missing"
        elif col.missing == "ok_required" and complete:
            rule = miss & is_ok
            why = "is missing in a row with status 'ok'"
            if col.name == "energy_j" and "energy_reason" in df.columns:
                rule = rule & _missing(df["energy_reason"])
                why += " and energy_reason does not say why"
        elif col.missing == "family" and complete:
            rule = miss & np.isin(family, list(col.families))
            why = f"is missing in a row of family {list(col.families)}"
        if rule.any():
            _fail(df, col.name, rule, why, what)
        if col.nonneg and col.kind in ("int", "float"):
            neg = _numbers(df[col.name]) < 0
            if neg.any():
                _fail(df, col.name, neg, "is negative; costs and counts must be >= 0", what)

    if complete:
        err_missing = _missing(df["error"])
        bad = ~is_ok & err_missing
        if bad.any():
            _fail(df, "error", bad, "is missing in a row whose status is not 'ok' (say why)", what)
        bad = is_ok & ~err_missing
        if bad.any():
            _fail(df, "error", bad, "is set in a row with status 'ok'", what)
        ids = df["config_id"].astype("string").fillna("")
        bad = ~ids.str.fullmatch(_HEX16).fillna(False).to_numpy(dtype=bool)
        if bad.any():
            _fail(df, "config_id", bad, "is not 16 lowercase hex digits", what)
        bad = ~df["precision"].isin(PRECISIONS).to_numpy(dtype=bool)
        if bad.any():
            _fail(df, "precision", bad, f"is not one of {list(PRECISIONS)}", what)
    else:
        df = _fill_config(df, what)
        for name in TARGETS:
            if name in df.columns:
                df[name] = _numbers(df[name])
    if "quality" in df.columns:
        q = df["quality"]
        bad = ~(q.isna() | q.isin(QUALITIES)).to_numpy(dtype=bool)
        if bad.any():
            _fail(df, "quality", bad, f"is not a valid quality; allowed: {list(QUALITIES)}", what)

    if unique:
        key = ["platform", *(["campaign"] if "campaign" in df.columns else []), "config_id"]
        dup = df.duplicated(subset=key, keep="first").to_numpy(dtype=bool)
        if dup.any():
            i = int(np.flatnonzero(dup)[0])
            keys = df[key].astype(object).where(df[key].notna(), None)  # NaN campaigns match
            same = tuple(keys.iloc[i])
            first = next(j for j, row in enumerate(keys.itertuples(index=False)) if row == same)
            _fail(df, "config_id", dup, f"is duplicated for this {' and '.join(key[:-1])} (also "
                  f"row {_show(df.index[first])}): one row per config per campaign; repeated "
                  "measurements from several campaigns need a 'campaign' column", what)
    return df


def validate(
    df: pd.DataFrame,
    *,
    require_features: bool = True,
    unique: bool = True,
    extra_columns: Iterable[str] = (),
) -> pd.DataFrame:
    """Check a dataset of the full schema and return it unchanged (:func:`validate_table`
    with ``complete=True``).

    Parameters
    ----------
    df : pandas.DataFrame
    require_features : bool
        The static feature columns must be present (a finished dataset). Campaign part files
        are validated with False.
    unique : bool
        Reject duplicate (``platform``, ``config_id``) pairs (False for reference-config rows,
        which repeat one config over time).
    extra_columns : iterable of str
        Further columns accepted as optional (e.g. family-specific static features).

    Raises
    ------
    SchemaError
        Unknown or missing column, wrong type, a cost that breaks the cost rule, missing
        value where none is allowed, bad status, malformed config_id, or duplicate
        (platform, config_id).
    """
    return validate_table(df, complete=True, require_features=require_features, unique=unique,
                          extra_columns=extra_columns)  # fmt: skip


# ----------------------------------------------------------------------------------------
_DTYPES = {"str": "string", "int": "Int64", "float": "float64", "bool": "boolean"}


def conform(df: pd.DataFrame, extra_columns: Iterable[str] = ()) -> pd.DataFrame:
    """Return a copy with schema columns first (schema order) and storage dtypes applied.

    Text -> ``string``, integers -> ``Int64``, bools -> ``boolean``, others ``float64``.
    Values that cannot be converted are left as they are (``validate`` reports them).
    """
    out = df.copy()
    for name in out.columns:
        col = COLUMNS.get(name)
        if col is None:
            continue
        try:
            if col.kind == "str":
                s = out[name]
                out[name] = s.where(~s.isna(), None).astype("string")
            elif col.kind == "int":
                v = pd.to_numeric(out[name], errors="raise")
                if pd.api.types.is_float_dtype(v.dtype):
                    v = v.round()
                out[name] = v.astype("Int64")
            elif col.kind == "float":
                out[name] = pd.to_numeric(out[name], errors="raise").astype("float64")
            elif col.kind == "bool":
                out[name] = out[name].astype("boolean")
        except (TypeError, ValueError):
            pass
    order = [c for c in COLUMN_ORDER if c in out.columns]
    rest = [c for c in out.columns if c not in COLUMNS]
    return out[order + rest]


def write_dataset(
    df: pd.DataFrame,
    path: str | Path,
    *,
    require_features: bool = True,
    unique: bool = True,
    extra_columns: Iterable[str] = (),
    backup: bool | str = False,
) -> Path:
    """Conform, validate, then write ``df`` to Parquet atomically
    (:func:`carb_lib.core.tables.atomic_write_parquet`). With ``backup``, an existing file at
    ``path`` is first kept as a numbered backup (``"rolling"``: as ``<name>.bak``,
    replacing an older one; :func:`carb_lib.core.tables.atomic_write`). Returns the
    path.

    Raises
    ------
    SchemaError
        ``df`` violates the schema (nothing is written).
    IsADirectoryError
        ``path`` is a folder.
    """
    out = conform(df, extra_columns).reset_index(drop=True)
    validate(out, require_features=require_features, unique=unique, extra_columns=extra_columns)
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder; give a file name ending in .parquet")
    return _atomic_write(path, lambda fh: out.to_parquet(fh, index=False), backup=backup)


def read_dataset(
    path: str | Path,
    *,
    require_features: bool = True,
    unique: bool = True,
    extra_columns: Iterable[str] = (),
) -> pd.DataFrame:
    """Read a Parquet dataset, conform its dtypes and validate it."""
    df = conform(pd.read_parquet(path), extra_columns)
    return validate(
        df, require_features=require_features, unique=unique, extra_columns=extra_columns
    )


def empty_row() -> dict[str, Any]:
    """A row with every non-feature schema column set to missing (None/NaN)."""
    return {
        c.name: (None if c.kind in ("str", "bool") else np.nan)
        for c in SCHEMA
        if c.group != "feature"
    }


def describe_schema() -> pd.DataFrame:
    """The schema as a table (name, kind, group, required, missing rule, nonneg, doc) for the
    data card."""
    return pd.DataFrame(
        [
            {
                "column": c.name,
                "kind": c.kind,
                "group": c.group,
                "required": (c.required and "in datasets") if c.group == "feature" else c.required,
                "missing": c.missing if c.missing != "family" else f"family {list(c.families)}",
                "nonneg": c.nonneg,
                "doc": c.doc,
            }
            for c in SCHEMA
        ]
    )
