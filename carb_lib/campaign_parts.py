"""Campaign part files: atomic Parquet parts, shards, resumption, drift and merging.

A campaign (:mod:`carb_lib.campaign`) appends each result as a small Parquet **part file**
written atomically (:class:`PartWriter`); a rerun skips the config_ids already in
``results-*.parquet`` parts (:func:`done_ids`). Reference-config rows go to
``reference-*.parquet`` parts; :func:`normalise_latency` turns them into ``latency_norm_ms``
and :func:`drift_summary` into the campaign's drift. :func:`merge_parts` joins a folder's
parts into one validated dataset (deduplicated, extending an existing file, never silently
replacing it). Every name is importable from :mod:`carb_lib.campaign` too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.dataset import (
    STATIC_FEATURE_COLUMNS,
    SchemaError,
    conform,
    validate,
    write_dataset,
)
from carb_lib.dataset import atomic_write_parquet as _atomic_write
from carb_lib.families import all_config_columns
from carb_lib.profiling import NAN, measure_tag
from carb_lib.vocab import TARGETS

__all__ = [
    "REFERENCE_PREFIX", "RESULTS_PREFIX", "PartWriter", "dedupe", "done_ids", "drift_summary",
    "drift_table", "merge_parts", "normalise_latency", "parse_shard", "read_parts",
    "reference_rows", "shard_mask", "shard_of",
]

RESULTS_PREFIX = "results"
REFERENCE_PREFIX = "reference"


def parse_shard(spec: str | None) -> tuple[int, int] | None:
    """``"i/n"`` -> ``(i, n)`` with ``0 <= i < n``; None passes through."""
    if spec is None or spec == "":
        return None
    try:
        i_s, n_s = spec.split("/")
        i, n = int(i_s), int(n_s)
    except ValueError:
        raise ValueError(f"--shard must look like i/n (e.g. 0/4), got {spec!r}") from None
    if not (n >= 1 and 0 <= i < n):
        raise ValueError(f"--shard {spec!r}: need n >= 1 and 0 <= i < n")
    return i, n


def shard_of(config_id: str, n: int) -> int:
    """Deterministic shard of a config_id (sha1 of the id, modulo ``n``)."""
    return int(hashlib.sha1(config_id.encode()).hexdigest()[:12], 16) % n


def shard_mask(config_ids: Iterable[str], shard: tuple[int, int] | None) -> np.ndarray:
    """Boolean mask of the ids in shard ``(i, n)`` (all True without a shard)."""
    ids = list(config_ids)
    if shard is None:
        return np.ones(len(ids), dtype=bool)
    i, n = shard
    return np.array([shard_of(c, n) == i for c in ids], dtype=bool)


def _part_files(folder: Path, prefix: str) -> list[Path]:
    return sorted(Path(folder).glob(f"{prefix}-*.parquet"))


def read_parts(folder: str | Path, prefix: str = RESULTS_PREFIX) -> pd.DataFrame:
    """Concatenate the part files ``<prefix>-*.parquet`` of ``folder`` (dtypes conformed).
    Temporary ``.tmp-*`` files of interrupted writes are ignored."""
    files = _part_files(Path(folder), prefix)
    if not files:
        return pd.DataFrame()
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = [pq.read_table(f) for f in files]
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return pd.DataFrame()
    table = pa.concat_tables(tables, promote_options="permissive")
    return conform(table.to_pandas())


def done_ids(folder: str | Path, platform: str | None = None) -> set[str]:
    """config_ids already recorded in ``results-*.parquet`` parts (of ``platform`` if given)."""
    import pyarrow.parquet as pq

    out: set[str] = set()
    for f in _part_files(Path(folder), RESULTS_PREFIX):
        t = pq.read_table(f, columns=["platform", "config_id"]).to_pydict()
        for p, c in zip(t["platform"], t["config_id"], strict=True):
            if platform is None or p == platform:
                out.add(c)
    return out


def check_one_cpu(df: pd.DataFrame, where: str) -> None:
    """Refuse CPU rows of one platform measured on two different CPUs (``cpu_id``).

    Cloud VMs give one model name to CPUs generations apart; rows of both under one platform
    name would silently become one platform. GPU rows (``cuda`` set) are not checked: their
    platform is the GPU. Rows without ``cpu_id`` (measured before it was recorded) are not
    compared."""
    if "cpu_id" not in df.columns or "platform" not in df.columns:
        return
    cpu = df["cuda"].isna() if "cuda" in df.columns else pd.Series(True, index=df.index)
    known = df.loc[cpu & df["cpu_id"].notna(), ["platform", "cpu_id"]].astype(str)
    for plat, ids in known.groupby("platform", sort=False)["cpu_id"]:
        seen = list(pd.unique(ids))
        if len(seen) > 1:
            raise ValueError(
                f"{where}: platform {plat!r} holds rows of {len(seen)} different CPUs "
                f"(cpu_id {seen}); one platform is one machine: give the other CPU's rows "
                "their own --platform")


def _part_values(folder: str | Path, platform: str, column: str) -> list[list[Any]]:
    """Per result part of a folder that holds rows of ``platform``: ``column``'s values in
    those rows (None where the part was written before the column existed)."""
    import pyarrow.parquet as pq

    out: list[list[Any]] = []
    for f in _part_files(Path(folder), RESULTS_PREFIX):
        has = column in pq.read_schema(f).names
        t = pq.read_table(f, columns=["platform", *([column] if has else [])]).to_pydict()
        values = t[column] if has else [None] * len(t["platform"])
        mine = [v for p, v in zip(t["platform"], values, strict=True) if p == platform]
        if mine:
            out.append(mine)
    return out


def part_cpu_ids(folder: str | Path, platform: str) -> set[str]:
    """The ``cpu_id`` values of ``platform``'s rows in a folder's result parts (parts written
    before the column existed count for nothing)."""
    return {c for part in _part_values(folder, platform, "cpu_id") for c in part
            if c is not None}


def part_heaps(folder: str | Path, platform: str) -> set[bool]:
    """Whether ``platform``'s rows in a folder's result parts were timed with the CPU heap kept
    (``heap_kept``, read part by part as :func:`carb_lib.heap.recorded_heaps` reads a file: a
    part written before the column existed, session 29, ran with the default heap)."""
    from carb_lib.heap import recorded_heaps

    return {k for part in _part_values(folder, platform, "heap_kept")
            for k in recorded_heaps(v for v in part if v is not None)}


class PartWriter:
    """Writes rows as atomic Parquet parts ``<prefix>-<tag>-<seq>.parquet`` in ``folder``."""

    def __init__(self, folder: str | Path, prefix: str, unique: bool = True):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.prefix = prefix
        self.unique = unique
        self.tag = measure_tag()
        self.seq = 0

    def write(self, rows: list[dict[str, Any]]) -> Path | None:
        if not rows:
            return None
        df = conform(pd.DataFrame(rows))
        validate(df, require_features=False, unique=self.unique)
        path = self.folder / f"{self.prefix}-{self.tag}-{self.seq:06d}.parquet"
        self.seq += 1
        return _atomic_write(df, path)


def _epoch(ts: pd.Series) -> np.ndarray:
    t = pd.to_datetime(ts.astype(str), utc=True, format="ISO8601")
    return (t - pd.Timestamp("1970-01-01", tz="UTC")).dt.total_seconds().to_numpy(dtype=float)


# ----------------------------------------------------------------------------------------
# drift


def reference_rows(folder: str | Path) -> pd.DataFrame:
    """The reference-config rows of a campaign folder, ordered by time."""
    ref = read_parts(folder, REFERENCE_PREFIX)
    if len(ref) == 0:
        return ref
    return ref.sort_values("measured_at", kind="stable").reset_index(drop=True)


def drift_table(ref: pd.DataFrame) -> pd.DataFrame:
    """Per platform, each ok reference measurement with its latency (and energy, memory)
    relative to the platform's first one."""
    if len(ref) == 0:
        return pd.DataFrame()
    keep = ref["status"] == "ok"
    if "quality" in ref.columns:
        keep &= ref["quality"].fillna("clean") != "disturbed"
    ok = ref[keep.to_numpy(dtype=bool)].copy()
    ok = ok.sort_values("measured_at", kind="stable")
    out = []
    for _plat, g in ok.groupby("platform", sort=False):
        g = g.copy()
        for col in TARGETS:
            first = g[col].iloc[0]
            g[f"{col}_rel"] = g[col] / first if first and not pd.isna(first) else np.nan
        out.append(g)
    cols = ["platform", "config_id", "measured_at", "latency_ms", "latency_ms_rel",
            "energy_j", "energy_j_rel", "peak_mem_mib", "peak_mem_mib_rel", "idle_power_w"]  # fmt: skip
    return pd.concat(out, ignore_index=True)[cols] if out else pd.DataFrame(columns=cols)


def drift_summary(ref: pd.DataFrame) -> dict[str, float]:
    """Drift over a campaign from its reference rows: number, first/last latency, last/first
    ratio, max |relative change| and CV of the reference latency."""
    t = drift_table(ref)
    if len(t) == 0:
        return {"n_reference": 0}
    lat = t["latency_ms"].to_numpy(dtype=float)
    rel = t["latency_ms_rel"].to_numpy(dtype=float)
    return {
        "n_reference": int(len(t)),
        "first_latency_ms": float(lat[0]),
        "last_latency_ms": float(lat[-1]),
        "last_over_first": float(rel[-1]),
        "max_abs_drift_pct": float(np.nanmax(np.abs(rel - 1.0)) * 100),
        "reference_cv": float(np.std(lat, ddof=1) / np.mean(lat)) if len(lat) > 1 else NAN,
    }


def normalise_latency(results: pd.DataFrame, ref: pd.DataFrame) -> pd.Series:
    """``latency_norm_ms`` for each row: ``latency_ms / (r(t) / r0)`` with the platform's
    reference latency ``r`` interpolated linearly at the row's time (constant beyond the ends)
    and ``r0`` the first reference latency. NaN where a platform has no ok reference row."""
    out = pd.Series(np.nan, index=results.index, dtype=float)
    if len(ref) == 0 or len(results) == 0:
        return out
    t = drift_table(ref)
    if len(t) == 0:
        return out
    for plat, g in t.groupby("platform", sort=False):
        rt = _epoch(g["measured_at"])
        rl = g["latency_ms"].to_numpy(dtype=float)
        order = np.argsort(rt, kind="stable")
        rt, rl = rt[order], rl[order]
        mask = (results["platform"] == plat).to_numpy(dtype=bool)
        if not mask.any():
            continue
        sub = results.loc[mask]
        factor = np.interp(_epoch(sub["measured_at"]), rt, rl) / rl[0]
        out.loc[mask] = sub["latency_ms"].to_numpy(dtype=float) / factor
    return out


# ----------------------------------------------------------------------------------------
# merge


def dedupe(df: pd.DataFrame, n_existing: int = 0) -> pd.DataFrame:
    """One row per (platform, config_id): the earliest ``ok`` row if there is one, else the
    latest row (a retried failure replaces an older failure).

    Rows are ordered by ``measured_at``, except that the first ``n_existing`` rows (an
    existing dataset being extended) count as earlier than all others.
    """
    if len(df) == 0:
        return df
    d = df.reset_index(drop=True)
    head = d.iloc[:n_existing]
    tail = d.iloc[n_existing:].sort_values("measured_at", kind="stable")
    d = pd.concat([head, tail], ignore_index=True)
    key = d["platform"].astype(str) + "|" + d["config_id"].astype(str)
    ok = (d["status"] == "ok").to_numpy(dtype=bool)
    first_ok = key[ok].drop_duplicates(keep="first")
    others = key[~key.isin(set(first_ok))].drop_duplicates(keep="last")
    keep = np.sort(np.concatenate([first_ok.index.to_numpy(), others.index.to_numpy()]))
    return d.loc[keep].reset_index(drop=True)


def merge_parts(
    folder: str | Path,
    out_path: str | Path | None,
    *,
    existing: str | Path | None = None,
    features: bool = True,
    reference_out: str | Path | None = None,
    force: bool = False,
    allow_mixed_platforms: bool = False,
) -> pd.DataFrame:
    """Join a campaign folder's result parts into one validated dataset.

    A folder of passes (``pass0/``, ``pass1/``, ... of ``carb profile --passes``) is first
    combined into one row per config (:func:`carb_lib.passes.combine_passes`: the fastest
    pass's row, the first pass's memory) and its reference rows joined.
    Rows are deduplicated per (platform, config_id) by :func:`dedupe` (first ``ok`` row,
    else the last row), rows of ``existing`` counting as earlier. **An existing file at
    ``out_path`` is extended, never silently replaced**: it is the ``existing`` dataset unless
    ``force``, and its previous version is kept as ``<name>.bak``
    (:func:`carb_lib.dataset.backup_path`). ``latency_norm_ms`` is computed from the accepted
    reference rows (:func:`normalise_latency`); static features are joined
    (``features=True``). The result is validated and, if ``out_path`` is given, written
    atomically. ``reference_out`` writes the reference rows (extending an existing file).

    Parameters
    ----------
    force : bool, default False
        Overwrite ``out_path`` with the parts alone, without a backup.
    allow_mixed_platforms : bool, default False
        Accept parts and existing rows of different platforms in one file.

    Raises
    ------
    FileNotFoundError
        No result parts in ``folder``.
    ValueError
        Platforms differ (parts among themselves or against the existing file) and
        ``allow_mixed_platforms`` is False; or ``out_path`` is not a ``.parquet`` file.
    carb_lib.dataset.SchemaError
        The merged data violates the schema, or the existing file cannot be read.
    """
    from carb_lib.features import static_features

    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such campaign folder")
    if out_path is not None:
        out_path = Path(out_path)
        if out_path.is_dir():
            raise IsADirectoryError(f"{out_path} is a folder; give a .parquet file name")
        if out_path.suffix != ".parquet":
            raise ValueError(f"{out_path}: a dataset is written as Parquet; name it *.parquet")
    from carb_lib.passes import merge_passes, pass_dirs

    passes = pass_dirs(folder)
    try:
        df = merge_passes(folder) if passes else read_parts(folder, RESULTS_PREFIX)
    except Exception as exc:  # a corrupt part file
        raise SchemaError(f"{folder}: cannot read the part files: {exc}") from None
    if len(df) == 0:
        raise FileNotFoundError(f"no {RESULTS_PREFIX}-*.parquet parts in {folder}")
    refs = [r for r in map(reference_rows, passes or [folder]) if len(r)]
    ref = (pd.concat(refs, ignore_index=True).sort_values("measured_at", kind="stable")
           .reset_index(drop=True) if refs else pd.DataFrame())  # fmt: skip
    df["latency_norm_ms"] = normalise_latency(df, ref)
    if existing is None and out_path is not None and out_path.exists() and not force:
        existing = out_path
    plats = set(df["platform"].astype(str))
    n_old = 0
    if existing is not None and Path(existing).exists():
        try:
            old = conform(pd.read_parquet(existing))
        except Exception as exc:
            raise SchemaError(f"{existing}: cannot read the existing dataset: {exc}") from None
        old_plats = set(old["platform"].astype(str)) if "platform" in old else set()
        if old_plats and old_plats != plats and not allow_mixed_platforms:
            raise ValueError(
                f"platform mismatch: {existing} holds {sorted(old_plats)}, the parts in "
                f"{folder} hold {sorted(plats)}; merge into data/<platform>.parquet of their "
                "own platform, or pass --allow-mixed-platforms"
            )
        old = old.drop(columns=[c for c in old.columns if c not in df.columns])
        n_old = len(old)
        df = conform(pd.concat([old, df], ignore_index=True))
    elif len(plats) > 1 and not allow_mixed_platforms:
        raise ValueError(
            f"the parts in {folder} hold several platforms {sorted(plats)}; merge each into "
            "its own file, or pass --allow-mixed-platforms"
        )
    check_one_cpu(df, f"merging {folder}" + (f" into {existing}" if n_old else ""))
    df = dedupe(df, n_existing=n_old)

    df = df.drop(columns=[c for c in STATIC_FEATURE_COLUMNS if c in df.columns])
    if features:
        cfg_cols = [c for c in all_config_columns() if c in df.columns]
        feats = static_features(_plain_configs(df[cfg_cols]))
        df = pd.concat([df.drop(columns=[c for c in feats.columns if c in df.columns]),
                        feats.set_index(df.index)], axis=1)
    df = conform(df)
    validate(df, require_features=features)
    if out_path is not None:
        write_dataset(df, out_path, require_features=features, backup=not force)
    if reference_out is not None and len(ref):
        ref_out = Path(reference_out)
        if ref_out.exists() and not force:
            prev = conform(pd.read_parquet(ref_out))
            ref = conform(pd.concat([prev, ref], ignore_index=True))
            ref = ref.drop_duplicates(subset=["platform", "config_id", "measured_at"])
        write_dataset(ref, ref_out, require_features=False, unique=False, backup=not force)
    return df


def _plain_configs(df: pd.DataFrame) -> pd.DataFrame:
    """Config columns with numpy dtypes (the feature code expects plain ints/bools)."""
    out = df.copy()
    for c in out.columns:
        if str(out[c].dtype) in ("Int64", "boolean", "string"):
            out[c] = out[c].astype(object).where(out[c].notna(), None)
    return out
