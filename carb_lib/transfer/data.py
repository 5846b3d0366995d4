"""Transfer study data: settings (``platform`` x ``batch``), architecture keys, usable rows,
the per-setting log-target matrix and the loaders and subsamplers of the study
(:mod:`carb_lib.transfer.pairwise` uses these; every name is importable from there too).

A *setting* is ``"<platform>@b<batch>"``; the *architecture key* of a row joins every config
column except ``batch``, so one network matches across platforms and batch sizes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from carb_lib.characterize.scaling_data import CONFIG_COLS
from carb_lib.dataset.catalog import files as catalog_files
from carb_lib.dataset.catalog import load_catalog, shown_path, study_files
from carb_lib.dataset.readers import DatasetError, load_measurements
from carb_lib.families import DEFAULT_FAMILY

__all__ = [
    "ARCH_KEY_COLUMNS", "DEFAULT_METHOD", "KS", "METHODS", "SETTING", "arch_keys", "clean",
    "families_of", "load_transfer_data", "log_target_matrix", "primary_settings",
    "representative_settings", "setting_of", "settings_table", "subsample_archs",
]

SETTING = "setting"
#: Few-shot methods (:func:`carb_lib.transfer.pairwise.few_shot_predict`) and the default one.
METHODS: tuple[str, ...] = ("blend", "ridge", "loglinear", "target_only", "flops", "offset")
DEFAULT_METHOD = "blend"
#: Numbers of target samples of the few-shot curve.
KS: tuple[int, ...] = (5, 10, 20, 50, 100)
#: Config columns that identify an architecture across batch sizes: every config column
#: (:data:`carb_lib.characterize.scaling_data.CONFIG_COLS`, in its order: the key strings depend on it)
#: except ``batch``.
ARCH_KEY_COLUMNS: tuple[str, ...] = tuple(c for c in CONFIG_COLS if c != "batch")


def setting_of(df: pd.DataFrame) -> pd.Series:
    """``"<platform>@b<batch>"`` of every row."""
    for c in ("platform", "batch"):
        if c not in df.columns:
            raise KeyError(f"rows need column {c!r} to define a setting")
    b = pd.to_numeric(df["batch"]).astype(np.int64).astype(str)
    return (df["platform"].astype(str) + "@b" + b).rename(SETTING)


def arch_keys(df: pd.DataFrame) -> pd.Series:
    """Architecture key of every row: the config columns except ``batch``, joined."""
    cols = [c for c in ARCH_KEY_COLUMNS if c in df.columns]
    if not cols:
        raise KeyError(f"rows have none of the config columns {list(ARCH_KEY_COLUMNS)}")
    parts = []
    for c in cols:
        s = df[c]
        missing = s.isna().to_numpy()  # a column of another family (rows of mixed families)
        if pd.api.types.is_bool_dtype(s):
            s = s.astype(object).map({True: "1", False: "0"})
        elif pd.api.types.is_numeric_dtype(s):
            s = s.astype(np.float64).map(lambda v: format(v, ".6g"))
        s = s.astype(object).astype(str)
        s[missing] = "-"
        parts.append(s)
    key = parts[0]
    for p in parts[1:]:
        key = key + "|" + p
    return key.rename("arch_key")


def clean(df: pd.DataFrame, target: str = "latency_ms") -> pd.DataFrame:
    """Rows usable for ``target``: status ok (if given), target finite and > 0."""
    if target not in df.columns:
        raise KeyError(f"rows have no target column {target!r}")
    ok = pd.to_numeric(df[target], errors="coerce").gt(0)
    if "status" in df.columns:
        ok &= df["status"].fillna("ok").eq("ok")
    return df.loc[ok]



def families_of(df: pd.DataFrame) -> pd.Series:
    """The ``family`` column (:data:`~carb_lib.families.DEFAULT_FAMILY` for rows without one)."""
    return df["family"] if "family" in df.columns else pd.Series(DEFAULT_FAMILY, index=df.index)


def settings_table(df: pd.DataFrame, target: str = "latency_ms") -> pd.DataFrame:
    """One row per setting: platform, batch, family, device_kind, n rows (usable for target)."""
    d = clean(df, target)
    out = pd.DataFrame({
        SETTING: setting_of(d), "platform": d["platform"], "batch": d["batch"],
        "family": families_of(d),
        "device_kind": d["device_kind"] if "device_kind" in d.columns else "unknown",
    })
    return (out.groupby(SETTING, sort=True)
            .agg(platform=("platform", "first"), batch=("batch", "first"),
                 family=("family", "first"), device_kind=("device_kind", "first"),
                 n=("platform", "size"))
            .reset_index())



def log_target_matrix(df: pd.DataFrame, target: str = "latency_ms") -> pd.DataFrame:
    """Median log target per architecture key (rows) and setting (columns)."""
    d = clean(df, target)
    tab = pd.DataFrame({"key": arch_keys(d), SETTING: setting_of(d),
                        "y": np.log(d[target].to_numpy(dtype=np.float64))})
    return tab.pivot_table(index="key", columns=SETTING, values="y", aggfunc="median")



def primary_settings(settings: pd.DataFrame) -> list[str]:
    """One setting per platform, HELP-like: the largest batch (GPUs at 256, others at 1)."""
    idx = settings.sort_values("batch").groupby("platform")["batch"].idxmax()
    return sorted(settings.loc[idx, SETTING])



def load_transfer_data(
    data_dir: str | Path | None = None, external: str | Path | bool | None = True, *,
    platforms: list[str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The measured platforms' rows plus the external HELP table.

    Missing or unreadable files do not stop the study: the inventory says why.

    Parameters
    ----------
    data_dir : path, optional
        A folder of ``*.parquet`` files to read instead of the catalog.
    external : path or bool
        The external table; ``True`` (default): the catalog's ``external`` Parquet files;
        ``None``/``False``: none.
    platforms : list of str, optional
        Catalogued platforms whose design-campaign ResNet rows are read (every platform a user
        catalog adds joins them: :func:`carb_lib.dataset.catalog.study_files`); None: every
        catalogued platform. A named platform without rows is listed as ``absent``.

    Returns
    -------
    (rows, inventory)
        ``rows``: all measurement rows (validated, with ``config_id``); ``inventory``: one row
        per file with ``path`` (as :func:`carb_lib.dataset.catalog.shown_path` names it),
        ``status`` ("loaded", "absent" or "error: ..."), ``n_rows``, ``platforms``.
    """
    absent: list[str] = []
    if data_dir is not None:
        paths = sorted(Path(data_dir).glob("*.parquet")) if Path(data_dir).is_dir() else []
    else:
        paths = study_files(platforms)
        have = {e.platform for e in map(load_catalog().entry_of, paths) if e is not None}
        absent = [p for p in (platforms or []) if p not in have]
    if external is True:
        paths += [p for p in catalog_files(role="external") if p.suffix == ".parquet"]
    elif external:
        paths.append(Path(external))
    frames, inv = [], []
    inv += [{"path": f"platform {p}", "status": "absent", "n_rows": 0, "platforms": p}
            for p in absent]
    for p in paths:
        if not p.exists():
            inv.append({"path": shown_path(p), "status": "absent", "n_rows": 0,
                        "platforms": ""})
            continue
        try:
            d = load_measurements(p)
        except (DatasetError, ValueError, KeyError, OSError) as exc:
            inv.append({"path": shown_path(p), "status": f"error: {exc}", "n_rows": 0,
                        "platforms": ""})
            continue
        frames.append(d)
        inv.append({"path": shown_path(p), "status": "loaded", "n_rows": len(d),
                    "platforms": ", ".join(sorted(d["platform"].astype(str).unique()))})
    rows = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return rows, pd.DataFrame(inv, columns=["path", "status", "n_rows", "platforms"])


def subsample_archs(df: pd.DataFrame, n: int | None, seed: int = 0) -> pd.DataFrame:
    """Keep the rows of ``n`` random architectures (the same ones on every setting)."""
    if n is None:
        return df
    keys = arch_keys(df)
    uniq = np.sort(keys.unique())
    if n >= len(uniq):
        return df
    keep = set(np.random.default_rng(seed).choice(uniq, size=n, replace=False))
    return df.loc[keys.isin(keep).to_numpy()]


def representative_settings(settings: pd.DataFrame, per_kind: int = 1) -> list[str]:
    """A few settings per device kind (largest and smallest batch first) for quick runs."""
    out = []
    for _kind, g in settings.groupby("device_kind", sort=True):
        g = g.sort_values(["batch", SETTING], ascending=[False, True])
        picks = list(g[SETTING].iloc[:per_kind])
        if g["batch"].nunique() > 1 and per_kind > 1:
            picks[-1] = g.sort_values("batch")[SETTING].iloc[0]
        out += picks
    return sorted(set(out))

