"""The measured-dataset schema: one row per (``platform``, ``config_id``).

Every column has a kind (``str``, ``int``, ``float``, ``bool``), a group, and rules for when it
may be missing (NaN/None). :func:`validate` enforces them and raises :class:`SchemaError`
naming the column, the row (its ``config_id``) and the offending value. :func:`write_dataset`
validates and writes Parquet atomically; :func:`read_dataset` reads and validates.

Groups and missing-value rules
------------------------------
config
    ``family``, ``config_id`` (16 hex digits), ``resolution``, ``batch``, ``precision``
    (``fp32``/``fp16``), ``num_classes``: required, never missing. Family ``resnet`` also needs
    ``block``, ``depth``, ``width``, ``early_downsample``; family ``nb201`` needs ``arch``.
    Columns of another family are missing (NaN/None).
static features
    :data:`STATIC_FEATURE_COLUMNS` (from :func:`carb_lib.features.static_features`): required in a
    finished dataset (``require_features=True``), absent from campaign part files; never missing,
    never negative. :data:`NB201_FEATURE_COLUMNS` (op counts) are optional, missing for other
    families.
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
pandas and pyarrow (it must work on the GPU box, which has no xgboost/lightgbm/matplotlib).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.interference import QUALITIES

STATUSES: tuple[str, ...] = ("ok", "oom", "error", "skipped")
STATIC_FEATURE_COLUMNS: tuple[str, ...] = (
    "n_conv", "n_bn", "n_act", "n_fc", "max_channels", "flops", "params", "param_bytes",
    "activation_bytes", "peak_act_bytes", "arith_intensity_flop_per_byte",
)  # fmt: skip
#: Extra static features of family nb201 (``carb_lib.nb201.OP_COUNT_COLUMNS``); optional.
NB201_FEATURE_COLUMNS: tuple[str, ...] = (
    "n_op_none", "n_op_skip", "n_op_conv1x1", "n_op_conv3x3", "n_op_avgpool", "longest_conv_path",
)  # fmt: skip
TARGETS: tuple[str, ...] = ("energy_j", "latency_ms", "peak_mem_mib")


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


SCHEMA: tuple[Column, ...] = (
    # provenance / key
    _c("platform", "str", "provenance", doc="measurement platform, e.g. cpu_epyc_2c, h200"),
    _c("config_id", "str", "config", doc="16-hex content hash of the config"),
    # config
    _c("family", "str", "config", doc="model family: resnet | nb201"),
    _c("block", "str", "config", False, "family", families=("resnet",), doc="basic | bottleneck"),
    _c("depth", "int", "config", False, "family", True, ("resnet",), "weighted layers"),
    _c("width", "float", "config", False, "family", True, ("resnet",), "width multiplier"),
    _c("early_downsample", "bool", "config", False, "family", families=("resnet",)),
    _c("arch", "str", "config", False, "family", families=("nb201",), doc="NB201 arch string"),
    _c("resolution", "int", "config", nonneg=True, doc="square input side, px"),
    _c("batch", "int", "config", nonneg=True),
    _c("precision", "str", "config", doc="fp32 | fp16"),
    _c("num_classes", "int", "config", nonneg=True),
    # static features
    *(
        _c(n, "float" if n == "arith_intensity_flop_per_byte" else "int", "feature", nonneg=True)
        for n in STATIC_FEATURE_COLUMNS
    ),
    # family-specific static features (NB201 op counts; missing for other families)
    *(
        _c(n, "int", "feature", False, "allowed", True, doc="NB201 op count (nb201 rows only)")
        for n in NB201_FEATURE_COLUMNS
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
    _c("cpu_share", "float", "quality", False, "allowed", True,
       doc="lowest CPU time / wall time of the measuring thread over the used windows"),
    _c("other_busy", "float", "quality", False, "allowed", True,
       doc="highest share of the other cores kept busy by other processes in a used window"),
    _c("rejected_by", "str", "quality", False, "allowed",
       doc="windows not used, by reason: share=a,other=b,spread=c"),
    _c("load_1m", "float", "quality", False, "allowed", True,
       doc="host 1-minute load average when the row was measured"),
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
    _c("carb_version", "str", "provenance", False, "allowed"),
    _c("git_commit", "str", "provenance", False, "allowed", doc="commit of the measuring code"),
    _c("git_dirty", "bool", "provenance", False, "allowed",
       doc="the measuring checkout had uncommitted changes to tracked files"),
    _c("mkldnn_enabled", "bool", "provenance", False, "allowed"),
    _c("cudnn_benchmark", "bool", "provenance", False, "allowed"),
    _c("tf32_matmul", "bool", "provenance", False, "allowed",
       doc="torch.backends.cuda.matmul.allow_tf32"),
    _c("tf32_cudnn", "bool", "provenance", False, "allowed", doc="torch.backends.cudnn.allow_tf32"),
    _c("deterministic", "bool", "provenance", False, "allowed",
       doc="torch.are_deterministic_algorithms_enabled()"),
)  # fmt: skip

COLUMNS: dict[str, Column] = {c.name: c for c in SCHEMA}
COLUMN_ORDER: tuple[str, ...] = tuple(c.name for c in SCHEMA)
_HEX16 = re.compile(r"^[0-9a-f]{16}$")


class SchemaError(ValueError):
    """A dataset violates the schema; the message names column, row (config_id) and value."""


# ----------------------------------------------------------------------------------------
def _missing(s: pd.Series) -> np.ndarray:
    m = s.isna().to_numpy(dtype=bool)
    if s.dtype == object or isinstance(s.dtype, pd.StringDtype):
        m = m | (s.astype("string").fillna("").str.len() == 0).to_numpy(dtype=bool)
    return m


def _row_name(df: pd.DataFrame, i: int) -> str:
    if "config_id" in df.columns:
        cid = df["config_id"].iloc[i]
        plat = df["platform"].iloc[i] if "platform" in df.columns else None
        return f"config_id={cid!r}" + (f" platform={plat!r}" if plat is not None else "")
    return f"index={df.index[i]!r}"


def _fail(df: pd.DataFrame, col: str, mask: np.ndarray, why: str) -> None:
    i = int(np.flatnonzero(mask)[0])
    n = int(mask.sum())
    more = f" (and {n - 1} more row(s))" if n > 1 else ""
    raise SchemaError(
        f"column {col!r}, row {_row_name(df, i)}: value {df[col].iloc[i]!r} {why}{more}"
    )


def _check_kind(df: pd.DataFrame, col: Column) -> None:
    s = df[col.name]
    present = ~s.isna().to_numpy(dtype=bool)
    if not present.any():
        return
    if col.kind in ("int", "float"):
        if pd.api.types.is_bool_dtype(s.dtype) or not pd.api.types.is_numeric_dtype(s.dtype):
            num = pd.to_numeric(s, errors="coerce")
            bad = present & num.isna().to_numpy(dtype=bool)
            if bad.any() or pd.api.types.is_bool_dtype(s.dtype):
                _fail(df, col.name, bad if bad.any() else present, f"is not a number ({col.kind})")
        if col.kind == "int":
            v = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            bad = present & np.isfinite(v) & (v != np.round(v))
            if bad.any():
                _fail(df, col.name, bad, "is not an integer")
            bad = present & ~np.isfinite(v)
            if bad.any():
                _fail(df, col.name, bad, "is not finite")
    elif col.kind == "bool":
        ok = s.map(lambda v: isinstance(v, (bool, np.bool_)) or pd.isna(v)).to_numpy(dtype=bool)
        if not ok.all():
            _fail(df, col.name, ~ok, "is not a bool")
    elif col.kind == "str":
        ok = s.map(lambda v: isinstance(v, str) or pd.isna(v)).to_numpy(dtype=bool)
        if not ok.all():
            _fail(df, col.name, ~ok, "is not a string")


def validate(
    df: pd.DataFrame,
    *,
    require_features: bool = True,
    unique: bool = True,
    extra_columns: Iterable[str] = (),
) -> pd.DataFrame:
    """Check ``df`` against the schema and return it unchanged.

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
        Unknown or missing column, wrong type, negative cost, missing value where none is
        allowed, bad status, malformed config_id, or duplicate (platform, config_id).
    """
    extra = set(extra_columns)
    unknown = [c for c in df.columns if c not in COLUMNS and c not in extra]
    if unknown:
        raise SchemaError(
            f"unknown column(s) {unknown}; known columns: {list(COLUMN_ORDER)} "
            "(pass extra_columns= for family-specific features)"
        )
    need = [c.name for c in SCHEMA if c.required and (c.group != "feature" or require_features)]
    missing_cols = [c for c in need if c not in df.columns]
    if missing_cols:
        raise SchemaError(f"missing required column(s) {missing_cols}")
    if len(df) == 0:
        return df

    for col in SCHEMA:
        if col.name in df.columns:
            _check_kind(df, col)

    status = df["status"]
    bad = ~status.isin(STATUSES).to_numpy(dtype=bool)
    if bad.any():
        _fail(df, "status", bad, f"is not a valid status; allowed: {list(STATUSES)}")
    is_ok = (status == "ok").to_numpy(dtype=bool)
    family = df["family"].astype("string").fillna("").to_numpy(dtype=object)

    for col in SCHEMA:
        if col.name not in df.columns:
            continue
        miss = _missing(df[col.name])
        if col.missing == "never":
            rule = miss
            why = "is missing (NaN/None/empty); this column may never be missing"
        elif col.missing == "ok_required":
            rule = miss & is_ok
            why = "is missing in a row with status 'ok'"
            if col.name == "energy_j" and "energy_reason" in df.columns:
                rule = rule & _missing(df["energy_reason"])
                why += " and energy_reason does not say why"
        elif col.missing == "family":
            in_fam = np.isin(family, list(col.families))
            rule = miss & in_fam
            why = f"is missing in a row of family {list(col.families)}"
        else:
            rule = np.zeros(len(df), dtype=bool)
        if rule.any():
            _fail(df, col.name, rule, why)
        if col.nonneg and col.kind in ("int", "float"):
            v = pd.to_numeric(df[col.name], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            neg = v < 0
            if neg.any():
                _fail(df, col.name, neg, "is negative; costs and counts must be >= 0")

    err_missing = _missing(df["error"])
    bad = ~is_ok & err_missing
    if bad.any():
        _fail(df, "error", bad, "is missing in a row whose status is not 'ok' (say why)")
    bad = is_ok & ~err_missing
    if bad.any():
        _fail(df, "error", bad, "is set in a row with status 'ok'")

    ids = df["config_id"].astype("string").fillna("")
    bad = ~ids.str.fullmatch(_HEX16).fillna(False).to_numpy(dtype=bool)
    if bad.any():
        _fail(df, "config_id", bad, "is not 16 lowercase hex digits")
    if "quality" in df.columns:
        q = df["quality"]
        bad = ~(q.isna() | q.isin(QUALITIES)).to_numpy(dtype=bool)
        if bad.any():
            _fail(df, "quality", bad, f"is not a valid quality; allowed: {list(QUALITIES)}")
    bad = ~df["precision"].isin(("fp32", "fp16")).to_numpy(dtype=bool)
    if bad.any():
        _fail(df, "precision", bad, "is not fp32 or fp16")

    if unique:
        dup = df.duplicated(subset=["platform", "config_id"], keep="first").to_numpy(dtype=bool)
        if dup.any():
            _fail(df, "config_id", dup, "is duplicated for this platform (one row per pair)")
    return df


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


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. Windows
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def backup_path(path: str | Path) -> Path:
    """Where :func:`write_dataset` keeps the previous version of ``path`` (``<name>.bak``)."""
    path = Path(path)
    return path.with_name(path.name + ".bak")


def clean_temporary_files(folder: str | Path) -> list[Path]:
    """Remove ``.tmp-*`` files that an interrupted atomic write left in ``folder``; returns
    them. Call only while no writer is active in the folder (e.g. holding its lock)."""
    removed = []
    for f in Path(folder).glob(".tmp-*"):
        try:
            f.unlink()
            removed.append(f)
        except OSError:
            pass
    return removed


def atomic_write_parquet(df: pd.DataFrame, path: str | Path) -> Path:
    """Write ``df`` to ``path`` atomically: a temporary file in the same folder, fsync,
    ``os.replace``, fsync of the folder. A crash leaves either the old file or the new one
    (and possibly a ``.tmp-*`` file, which readers ignore)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".tmp-{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            df.to_parquet(fh, index=False)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; datasets are shared files
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(path.parent)
    return path


def write_dataset(
    df: pd.DataFrame,
    path: str | Path,
    *,
    require_features: bool = True,
    unique: bool = True,
    extra_columns: Iterable[str] = (),
    backup: bool = False,
) -> Path:
    """Conform, validate, then write ``df`` to Parquet atomically (see
    :func:`atomic_write_parquet`). With ``backup``, an existing file at ``path`` is first
    copied to :func:`backup_path` (replacing an older backup). Returns the path.

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
    if backup and path.exists():
        import shutil

        bak = backup_path(path)
        tmp = bak.with_name(f".tmp-{bak.name}")
        shutil.copy2(path, tmp)
        os.replace(tmp, bak)
    return atomic_write_parquet(out, path)


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
