"""Characterization data: loading measured files, selecting rows, per-platform application
and pairing of configs that differ in one factor (:mod:`carb_lib.characterize.scaling` uses these).

Every analysis keeps only rows with ``status == "ok"`` (:func:`ok_rows`) and runs per
``platform`` (:func:`per_platform`). A column a dataset cannot analyse (``energy_j`` all NaN on
a CPU) is reported by :func:`untestable_reason`, never raised.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.dataset.catalog import dataset_name
from carb_lib.dataset.schema import conform
from carb_lib.families import all_config_columns

__all__ = ["CONFIG_COLS", "as_float", "fmt_num", "load_measured",
           "ok_rows", "percentile_ci", "platforms", "positive_rows",
           "pair_frame", "per_platform", "untestable_reason"]

#: The leading config columns of :data:`CONFIG_COLS`, in the order of the pairing key (and so
#: of the pairs that the bootstrap resamples, and of the transfer study's architecture keys):
#: keep it. Family columns not named here follow them, in registration order.
_KEY_ORDER: tuple[str, ...] = ("family", "arch", "block", "depth", "width", "early_downsample")
#: Columns that define a configuration (those present in a dataset are used for pairing):
#: :data:`_KEY_ORDER`, the other config columns of the registered families
#: (:func:`carb_lib.families.all_config_columns`), then the common ones.
CONFIG_COLS: tuple[str, ...] = (
    *_KEY_ORDER, *(c for c in all_config_columns() if c not in _KEY_ORDER)
)


def ok_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Return the rows with ``status == "ok"`` (a copy).

    Raises
    ------
    KeyError
        If the dataset has no ``status`` column.
    """
    if "status" not in df.columns:
        raise KeyError("dataset has no 'status' column; expected the CARB schema (status == 'ok')")
    return df.loc[df["status"] == "ok"].copy()


def load_measured(paths: Iterable[str | Path]) -> pd.DataFrame:
    """Read measured parquet files (storage dtypes via :func:`carb_lib.dataset.schema.conform`, not
    validated), concatenate them and add a ``dataset`` column
    (:func:`carb_lib.dataset.catalog.dataset_name`).

    Raises
    ------
    FileNotFoundError
        If a path does not exist.
    """
    frames = []
    for p in paths:
        p = Path(p)
        if not p.is_file():
            raise FileNotFoundError(f"measured dataset {p} does not exist")
        frame = conform(pd.read_parquet(p))
        frame["dataset"] = dataset_name(p)
        frames.append(frame)
    if not frames:
        raise FileNotFoundError("no measured dataset given")
    return pd.concat(frames, ignore_index=True)


def platforms(df: pd.DataFrame) -> list[Any]:
    """Sorted platform names of ``df`` (``[None]`` without a platform column or value)."""
    if "platform" not in df.columns:
        return [None]
    values = sorted(df["platform"].dropna().astype(str).unique())
    return values or [None]


def per_platform(df: pd.DataFrame, fn: Callable[[pd.DataFrame], pd.DataFrame]) -> pd.DataFrame:
    """Apply ``fn`` to each platform's ok rows and stack the results with a platform column."""
    ok = ok_rows(df)
    out = []
    for plat in platforms(ok):
        sub = ok if plat is None else ok.loc[ok["platform"].astype(str) == plat]
        res = fn(sub)
        res.insert(0, "platform", plat)
        out.append(res)
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def untestable_reason(df: pd.DataFrame, col: str) -> str | None:
    """Why ``col`` cannot be analysed in ``df`` (ok rows), or None if it has finite values."""
    if col not in df.columns:
        return f"column {col!r} not in dataset"
    values = as_float(df[col])
    if np.isfinite(values).any():
        return None
    plat = ",".join(str(p) for p in platforms(df) if p is not None) or "dataset"
    reason = f"{col} is NaN for all {len(df)} ok rows of {plat}"
    if col.startswith("energy") and "energy_reason" in df.columns:
        why = df["energy_reason"].dropna().astype(str)
        if len(why):
            reason += f" (energy_reason: {why.value_counts().index[0]})"
    return reason


def as_float(s: pd.Series) -> pd.Series:
    """``s`` as float64 (nullable ints / booleans / text numbers; NA and junk -> NaN)."""
    return pd.to_numeric(s, errors="coerce").astype("float64")


def positive_rows(df: pd.DataFrame, cols: Sequence[str]) -> pd.DataFrame:
    """Rows where every column of ``cols`` is finite and > 0 (numeric copies)."""
    sub = df[list(cols)].apply(as_float)
    mask = np.isfinite(sub).all(axis=1) & (sub > 0).all(axis=1)
    return sub.loc[mask]


def percentile_ci(samples: np.ndarray, alpha: float) -> tuple[float, float]:
    """Percentile interval ``(alpha/2, 1 - alpha/2)`` of the finite ``samples`` (NaNs if < 2)."""
    samples = np.asarray(samples, dtype=float)
    samples = samples[np.isfinite(samples)]
    if len(samples) < 2:
        return (math.nan, math.nan)
    lo, hi = np.quantile(samples, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def pair_frame(df: pd.DataFrame, factor: str, a: Any, b: Any, metrics: Sequence[str]):
    """Join rows with ``factor == a`` to rows with ``factor == b`` sharing all other config cols."""
    key = [c for c in CONFIG_COLS if c in df.columns and c != factor]
    if "platform" in df.columns:
        key.append("platform")
    sub = df.loc[df[factor].notna()].copy()
    sub["_key"] = "all"
    for i, col in enumerate(key):
        part = sub[col].map(lambda v: "<NA>" if pd.isna(v) else str(v)).astype(str)
        sub["_key"] = part if i == 0 else sub["_key"] + "|" + part
    metrics = list(metrics)
    num = sub.loc[sub[factor] == a].groupby("_key")[metrics].median()
    den = sub.loc[sub[factor] == b].groupby("_key")[metrics].median()
    return num.add_suffix("_num").join(den.add_suffix("_den"), how="inner")


def fmt_num(v: Any) -> str:
    """``v`` as short text: ``256`` for 256.0, ``0.5`` for 0.5; non-numbers as ``str``."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    return str(int(f)) if f.is_integer() else f"{f:g}"
