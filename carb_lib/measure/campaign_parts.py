"""Campaign part files: atomic Parquet parts, shards, resumption, drift and merging.

A campaign (:mod:`carb_lib.measure.campaign`) appends each result as a small Parquet **part file**
written atomically (:class:`PartWriter`); a rerun skips the config_ids already in
``results-*.parquet`` parts (:func:`done_ids`). Reference-config rows go to
``reference-*.parquet`` parts; :func:`normalise_latency` turns them into ``latency_norm_ms``
and :func:`drift_summary` into the campaign's drift. :func:`merge_parts` joins a folder's
parts into one validated dataset (deduplicated, extending an existing file, never silently
replacing it). Every name is importable from :mod:`carb_lib.measure.campaign` too.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.safe_io import check_output, same_file, table_with
from carb_lib.core.vocab import TARGETS
from carb_lib.dataset.features import static_features
from carb_lib.dataset.schema import (
    COLUMNS,
    STATIC_FEATURE_COLUMNS,
    SchemaError,
    conform,
    validate,
    write_dataset,
)
from carb_lib.dataset.schema import atomic_write_parquet as _atomic_write
from carb_lib.families import all_config_columns
from carb_lib.measure.devices import is_unknown_cpu
from carb_lib.measure.heap import recorded_heaps
from carb_lib.measure.profiling import NAN, measure_tag

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
    platform is the GPU. Rows without ``cpu_id`` (measured before it was recorded, or
    ``"unknown"``) are not compared."""
    if "cpu_id" not in df.columns or "platform" not in df.columns:
        return
    cpu = df["cuda"].isna() if "cuda" in df.columns else pd.Series(True, index=df.index)

    named = ~df["cpu_id"].map(is_unknown_cpu).astype(bool)
    known = df.loc[cpu & named, ["platform", "cpu_id"]].astype(str)
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


def part_threads(folder: str | Path, platform: str) -> set[int]:
    """The thread counts (``threads``) ``platform``'s rows in a folder's result parts were
    timed with."""
    return {int(t) for part in _part_values(folder, platform, "threads") for t in part
            if t is not None}


def part_heaps(folder: str | Path, platform: str) -> set[bool]:
    """Whether ``platform``'s rows in a folder's result parts were timed with the CPU heap kept
    (``heap_kept``, read part by part as :func:`carb_lib.measure.heap.recorded_heaps` reads a file: a
    part written before the column existed, a campaign of 2026-12-03, ran with the default heap)."""
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
    combined into one row per config (:func:`carb_lib.measure.passes.combine_passes`: the fastest
    pass's row, the first pass's memory) and its reference rows joined.
    Rows are deduplicated per (platform, config_id) by :func:`dedupe` (first ``ok`` row,
    else the last row), rows of ``existing`` counting as earlier. **An existing file at
    ``out_path`` is extended, never silently replaced**: it is the ``existing`` dataset unless
    ``force``, and its previous version is kept as ``<name>.bak``
    (:func:`carb_lib.dataset.schema.backup_path`). ``existing`` must exist; an ``existing`` other
    than an existing ``out_path`` (whose rows would be dropped) needs ``force``. Columns of
    the existing dataset that the parts lack are kept (empty for the new rows); a column
    outside the schema is refused, naming it. The whole
    read-merge-write holds a lock on ``out_path`` (``.<name>.lock`` beside it), so that
    concurrent merges into one file each add their rows. ``latency_norm_ms`` is computed from the accepted
    reference rows (:func:`normalise_latency`); static features are joined
    (``features=True``). The result is validated and, if ``out_path`` is given, written
    atomically. ``reference_out`` writes the reference rows (extending an existing file).

    Parameters
    ----------
    force : bool, default False
        Replace ``out_path`` with the parts alone (or with ``existing`` plus the parts),
        keeping the previous file as ``<name>.bak``.
    allow_mixed_platforms : bool, default False
        Accept parts and existing rows of different platforms in one file.

    Raises
    ------
    FileNotFoundError
        No result parts in ``folder``, or no ``existing`` file.
    ValueError
        Platforms differ (parts among themselves or against the existing file) and
        ``allow_mixed_platforms`` is False; or ``out_path`` is not a ``.parquet`` file.
    carb_lib.dataset.schema.SchemaError
        The merged data violates the schema, or the existing file cannot be read.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such campaign folder")
    for option, path in (("OUT", out_path), ("--reference-out", reference_out)):
        if path is None:
            continue
        path = Path(path)
        if path.is_dir():
            raise IsADirectoryError(f"{option} {path} is a folder; give a .parquet file name")
        if path.suffix != ".parquet":
            raise ValueError(f"{option} {path}: a dataset is written as Parquet; name it "
                             "*.parquet")
        if folder.resolve() in path.resolve().parents:  # a part file, or a file among them
            raise ValueError(f"{option} {path} is inside the campaign folder {folder}: the "
                             "next merge would read it as a part; write it outside the folder")
        # merge owns data/ (OUT is always named); an existing OUT is read as the dataset it
        # extends (a file that is not one is refused then), other files must be reference rows
        own = (lambda p: True) if option == "OUT" else table_with("platform", "config_id")
        check_output(path, option, own=own, force=force, command="carb merge", owns=("data",))
    if out_path is not None and reference_out is not None and same_file(out_path,
                                                                         reference_out):
        raise ValueError(f"--reference-out {reference_out} is OUT itself; give another file")
    if out_path is not None:
        out_path = Path(out_path)
    if existing is not None:
        existing = Path(existing)
        if not existing.is_file():
            raise FileNotFoundError(f"--existing {existing}: no such dataset file")
        if (out_path is not None and out_path.exists() and not force
                and not same_file(existing, out_path)):
            raise ValueError(
                f"OUT {out_path} exists and --existing {existing} is another file: OUT's own "
                "rows would be dropped; merge into a new OUT, leave out --existing to extend "
                "OUT, or pass --force (OUT is kept as .bak)")
    if out_path is None:
        return _merge_parts(folder, None, existing, features, reference_out, force,
                            allow_mixed_platforms)
    from filelock import FileLock, Timeout

    out_path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(out_path.with_name(f".{out_path.name}.lock")), timeout=MERGE_LOCK_S)
    try:
        with lock:
            return _merge_parts(folder, out_path, existing, features, reference_out, force,
                                allow_mixed_platforms)
    except Timeout:
        raise RuntimeError(f"{out_path}: another merge has held its lock for {MERGE_LOCK_S:.0f} s "
                           f"({lock.lock_file}); try again when it is done") from None


#: Seconds a merge waits for another merge into the same file.
MERGE_LOCK_S = 600.0


def _merge_parts(folder: Path, out_path: Path | None, existing: Path | None, features: bool,
                 reference_out: str | Path | None, force: bool,
                 allow_mixed_platforms: bool) -> pd.DataFrame:
    """:func:`merge_parts` once the paths are checked (holding the lock on ``out_path``)."""
    passes = pass_dirs(folder)
    _refuse_foreign_columns(folder, passes)
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
                f"{folder} hold {sorted(plats)}; merge into a rows file of their "
                "own platform, or pass --allow-mixed-platforms"
            )

        foreign = [c for c in old.columns if c not in df.columns and c not in COLUMNS]
        if foreign:
            raise ValueError(
                f"{existing} has column(s) {foreign} that the parts lack and a dataset does not "
                "hold; merging would drop them: keep them in another file (joined by "
                "config_id) and merge into a copy without them")
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
    if reference_out is not None and len(ref):  # made and checked before OUT is written
        ref_out = Path(reference_out)
        if ref_out.exists() and not force:
            try:
                prev = conform(pd.read_parquet(ref_out))
            except Exception as exc:
                raise SchemaError(f"--reference-out {ref_out}: cannot read the existing "
                                  f"reference rows: {exc}") from None
            ref = conform(pd.concat([prev, ref], ignore_index=True))
            ref = ref.drop_duplicates(subset=["platform", "config_id", "measured_at"])
        ref = conform(ref).reset_index(drop=True)
        validate(ref, require_features=False, unique=False)
    if out_path is not None:  # extending its own dataset keeps one rolling OUT.bak
        extending = existing is not None and same_file(existing, out_path)
        write_dataset(df, out_path, require_features=features,
                      backup="rolling" if extending else True)
    if reference_out is not None and len(ref):
        write_dataset(ref, ref_out, require_features=False, unique=False,
                      backup="rolling" if not force else True)
    return df


def _refuse_foreign_columns(folder: Path, passes: list) -> None:
    """A part file holding a column a dataset does not hold is refused, naming the file and
    the column (before anything is read into a dataset)."""
    import pyarrow.parquet as pq

    for sub in passes or [folder]:
        for f in _part_files(Path(sub), RESULTS_PREFIX):
            try:
                names = pq.read_schema(f).names
            except Exception as exc:
                raise SchemaError(f"{folder}: cannot read the part files: {f.name}: {exc}") from None
            foreign = [c for c in names if c not in COLUMNS and not c.startswith("__")]
            if foreign:
                raise SchemaError(f"part file {f} has column(s) {foreign} that a dataset does "
                                  "not hold; it was not written by carb profile: move it out "
                                  f"of {folder}")


def _plain_configs(df: pd.DataFrame) -> pd.DataFrame:
    """Config columns with numpy dtypes (the feature code expects plain ints/bools)."""
    out = df.copy()
    for c in out.columns:
        if str(out[c].dtype) in ("Int64", "boolean", "string"):
            out[c] = out[c].astype(object).where(out[c].notna(), None)
    return out


# --------------------------------------------------------------------------- passes
# Several passes of one campaign (carb_lib.measure.passes runs them): read here, so that merging a
# folder of passes needs nothing above the part files.
_pass_logger = logging.getLogger("carb.passes")

#: Columns taken from the first pass (peak memory does not depend on the host's speed).
MEMORY_COLUMNS = ("peak_mem_mib", "peak_reserved_mib", "nvml_proc_mem_mib")
_PASS_DIR = re.compile(r"^pass(\d+)$")
#: The column of the table of :func:`carb_lib.measure.passes.save_pass_rows` that says which pass a row
#: is from.
PASS_COLUMN = "pass"


def pass_dirs(folder: str | Path) -> list[Path]:
    """The ``pass<p>`` sub-folders of a campaign folder, in pass order (empty: one pass)."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir()
             if p.is_dir() and (m := _PASS_DIR.match(p.name))]  # fmt: skip
    return [p for _, p in sorted(found)]


def read_passes(source: str | Path) -> list[pd.DataFrame]:
    """Each pass's result rows: :func:`read_parts` of every pass folder of a campaign folder,
    or, when ``source`` is a file, the table :func:`carb_lib.measure.passes.save_pass_rows` wrote
    (split by its :data:`PASS_COLUMN`)."""
    if Path(source).is_file():
        rows = pd.read_parquet(source)
        return [g.drop(columns=PASS_COLUMN) for _, g in rows.groupby(PASS_COLUMN, sort=True)]
    return [read_parts(p) for p in pass_dirs(source)]



def latency_matrix(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """``config_id`` x pass table of ``latency_ms`` of ok rows (NaN where a pass has none)."""
    cols = {}
    for p, f in enumerate(frames):
        if len(f) == 0:
            continue
        ok = f[f["status"] == "ok"].drop_duplicates("config_id", keep="first")
        cols[p] = ok.set_index("config_id")["latency_ms"].astype(float)
    return pd.DataFrame(cols)


def latency_spread(lat: pd.DataFrame) -> pd.Series:
    """Per config of a :func:`latency_matrix`: median over its passes / fastest - 1."""
    return lat.median(axis=1) / lat.min(axis=1) - 1.0


def combine_passes(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """One row per config from the rows of several passes (see :mod:`carb_lib.measure.passes`).

    A config whose first pass is not ``ok`` (oom, error, skipped) keeps that row as it is. A
    config that only later passes hold (:func:`carb_lib.measure.passes.run_passes` never leaves one)
    keeps its
    fastest row as it is.

    Parameters
    ----------
    frames : list of pandas.DataFrame
        Result rows of pass 0, 1, ... (each with ``config_id``, ``status``, ``latency_ms``).

    Returns
    -------
    pandas.DataFrame
        One row per config_id, ordered as the first pass, with ``latency_passes`` (ok passes)
        and ``latency_pass_spread`` (median ok latency / lowest - 1; 0 with one pass).
    """
    if not frames or all(len(f) == 0 for f in frames):
        return pd.DataFrame()
    first = frames[0]
    lat = latency_matrix(frames)
    rows: list[pd.DataFrame] = []
    for p, f in enumerate(frames):
        if len(f):
            rows.append(f.drop_duplicates("config_id", keep="first").assign(_pass=p))
    allrows = pd.concat(rows, ignore_index=True)
    ok = allrows[allrows["status"] == "ok"]
    best = ok.loc[ok.groupby("config_id", sort=False)["latency_ms"].idxmin()]
    failed_first = first[(first["status"] != "ok") & ~first["config_id"].isin(best["config_id"])]
    out = pd.concat([best, failed_first.assign(_pass=0)], ignore_index=True)
    mem = first[first["status"] == "ok"].drop_duplicates("config_id").set_index("config_id")
    for col in MEMORY_COLUMNS:
        if col in out.columns and col in mem.columns:
            from_first = out["config_id"].map(mem[col])
            out[col] = from_first.where(out["config_id"].isin(mem.index), out[col])
    n = lat.notna().sum(axis=1)
    spread = latency_spread(lat)
    out["latency_passes"] = out["config_id"].map(n).fillna(0).astype(int)
    out["latency_pass_spread"] = out["config_id"].map(spread).astype(float)
    order = {c: i for i, c in enumerate(pd.concat([f["config_id"] for f in frames]).unique())}
    out = out.assign(_o=out["config_id"].map(order)).sort_values("_o", kind="stable")
    return out.drop(columns=["_pass", "_o"]).reset_index(drop=True)


@dataclass(frozen=True)
class PassAgreement:
    """How two halves of the passes agree: the data's own latency noise floor.

    Attributes
    ----------
    n_configs : int
        Configs with an ok row in at least one pass of each half.
    n_passes : int
    halves : tuple of int
        Passes in the first and the second half (even and odd passes with ``interleaved``).
    median_abs_log_ratio : float
        Median |log(fastest of half 1 / fastest of half 2)|.
    within_5, within_10 : float
        Share of configs whose halves agree within 5 % / 10 % (|log ratio|).
    pass_speed : tuple of float
        Per pass, the median over configs of its latency over the config's fastest: 1 = the
        fastest pass; 1.3 = a pass that ran 30 % slow.
    interleaved : bool
        Even passes against odd ones, not the first half against the second.
    """

    n_configs: int
    n_passes: int
    halves: tuple[int, int]
    median_abs_log_ratio: float
    within_5: float
    within_10: float
    pass_speed: tuple[float, ...] = field(default=())
    interleaved: bool = False

    def summary(self) -> str:
        speeds = " ".join(f"{s:.2f}" for s in self.pass_speed)
        which = ("fastest of the even passes against fastest of the odd" if self.interleaved else
                 f"fastest of passes 1-{self.halves[0]} against fastest of the other "
                 f"{self.halves[1]}")  # fmt: skip
        return (f"{self.n_passes} passes, {self.n_configs} configs; {which}: median "
                f"|log ratio| {100 * self.median_abs_log_ratio:.1f} %, within 5 % "
                f"{100 * self.within_5:.0f} %, within 10 % {100 * self.within_10:.0f} %; "
                f"pass speeds (1 = fastest) {speeds}")  # fmt: skip


def pass_agreement(frames: list[pd.DataFrame], *,
                   interleaved: bool = False) -> PassAgreement | None:
    """The halves check of :class:`PassAgreement`; None with fewer than 2 passes.

    ``interleaved=True`` compares the even passes with the odd ones instead of the first half
    with the second: a drift of the host over the campaign then cancels.
    """
    lat = latency_matrix(frames)
    r = lat.shape[1]
    if r < 2:
        return None
    h = r // 2
    if interleaved:
        h = (r + 1) // 2
        a, b = lat.iloc[:, 0::2].min(axis=1), lat.iloc[:, 1::2].min(axis=1)
    else:
        a, b = lat.iloc[:, :h].min(axis=1), lat.iloc[:, h:].min(axis=1)
    both = a.notna() & b.notna()
    lr = np.abs(np.log(a[both] / b[both]).to_numpy(dtype=float))
    rel = lat.div(lat.min(axis=1), axis=0)
    speed = tuple(float(rel[c].median()) for c in rel.columns)
    nan = float("nan")
    return PassAgreement(
        n_configs=int(both.sum()), n_passes=r, halves=(h, r - h),
        median_abs_log_ratio=float(np.median(lr)) if len(lr) else nan,
        within_5=float(np.mean(lr < np.log(1.05))) if len(lr) else nan,
        within_10=float(np.mean(lr < np.log(1.10))) if len(lr) else nan,
        pass_speed=speed, interleaved=interleaved,
    )  # fmt: skip


def merge_passes(folder: str | Path) -> pd.DataFrame:
    """:func:`combine_passes` of a folder of passes, read once; logs the halves check."""
    frames = read_passes(folder)
    agree = pass_agreement(frames)
    if agree is not None:
        _pass_logger.info(agree.summary())
    return combine_passes(frames)
