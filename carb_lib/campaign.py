"""Measurement campaigns: many configs on one device, crash-safe, resumable, drift-controlled.

A campaign measures configs in a **seeded random order** (so slow drift of the machine is not
confounded with any config column) and appends each result as a small Parquet **part file**
written atomically (temporary file in the same folder, fsync, rename): a ``SIGKILL`` at any
moment loses at most the config in flight and never leaves a partial or duplicate row. A rerun
with the same output folder **resumes**: config_ids already present in ``results-*.parquet``
parts (for the same platform) are skipped.

Drift control: a fixed **reference config** is measured at the start and every ``ref_every``
configs (default 50); its rows go to ``reference-*.parquet`` parts (kept, never merged into
the dataset). :func:`merge_parts` fills ``latency_norm_ms = latency_ms / (r(t) / r0)`` where
``r(t)`` is the reference latency linearly interpolated at the row's ``measured_at`` (held
constant outside the measured span) and ``r0`` the first reference latency; the raw
``latency_ms`` is never changed. On a GPU the idle power baseline is measured at the start
and every ``ref_every`` configs and passed to :func:`carb_lib.profiling.profile_config`.

Each config is an independent task (:func:`run_one`), so a distributed engine can map it over
workers; :func:`shard_mask` splits a config list deterministically by a hash of config_id.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.dataset import (
    STATIC_FEATURE_COLUMNS,
    SchemaError,
    clean_temporary_files,
    conform,
    validate,
    write_dataset,
)
from carb_lib.dataset import atomic_write_parquet as _atomic_write
from carb_lib.lock import FolderLock
from carb_lib.profiling import (
    NAN,
    Device,
    Protocol,
    base_row,
    get_device,
    measure_tag,
    profile_config,
)

RESULTS_PREFIX = "results"
REFERENCE_PREFIX = "reference"
#: Reference measurements tried at each checkpoint until one is accepted.
REFERENCE_TRIES = 3
#: Default reference config (cheap on a CPU, a few ms; launch-bound on a large GPU).
DEFAULT_REFERENCE: dict[str, Any] = {
    "family": "resnet",
    "block": "basic",
    "depth": 18,
    "width": 0.5,
    "early_downsample": True,
    "resolution": 64,
    "batch": 8,
    "precision": "fp32",
    "num_classes": 1000,
}


# ----------------------------------------------------------------------------------------
# tasks and helpers


def run_one(
    config_row: Mapping[str, Any],
    device: str | Device = "cpu",
    protocol: Protocol | None = None,
    idle_power_w: float = NAN,
) -> dict[str, Any]:
    """Measure one config given as a row of config columns; returns one schema row.

    Independent of any campaign state: usable as the task of a distributed engine.
    """
    from carb_lib.space import config_from_row

    return profile_config(
        config_from_row(dict(config_row)), device, protocol, idle_power_w=idle_power_w
    )


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


def skipped_row(config: Any, device: Device, protocol: Protocol, reason: str) -> dict[str, Any]:
    """A ``status == "skipped"`` row (config and provenance filled)."""
    row = base_row(config, device, protocol)
    row.update(status="skipped", error=reason)
    return row


def _flops(configs: pd.DataFrame) -> pd.Series:
    if "flops" in configs.columns:
        return configs["flops"].astype(float)
    from carb_lib.features import static_features

    return static_features(configs)["flops"].astype(float)


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
        for col in ("latency_ms", "energy_j", "peak_mem_mib"):
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
# campaign


@dataclass
class CampaignResult:
    """What a campaign run did."""

    out_dir: str
    platform: str
    n_total: int = 0
    n_already_done: int = 0
    n_planned: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    n_reference: int = 0
    stopped_by_budget: bool = False
    elapsed_s: float = 0.0
    drift: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ConfigListError(ValueError):
    """A config list (``--configs``) is unreadable or holds an invalid row; nothing measured."""


def read_config_list(path: str | Path) -> pd.DataFrame:
    """Read and validate a config list: exactly the configs to measure.

    The file (``.parquet`` or ``.csv``) holds either config columns (any family; other columns
    of the dataset schema are allowed and ignored, so a shipped dataset can be passed to
    re-measure its rows) or only the ``config_id`` column (configs of the paper grid). Every
    row is validated by its family before anything is measured.

    Raises
    ------
    ConfigListError
        Unreadable or empty file, unknown columns, an invalid value (names row, column and
        value), an unknown ``config_id``, a ``config_id`` that does not match its config
        columns, or a duplicated config.
    """
    from carb_lib import space
    from carb_lib.dataset import COLUMNS
    from carb_lib.tables import TableError, read_table

    p = Path(path)
    try:
        df = read_table(p, "config list")
    except TableError as exc:
        raise ConfigListError(str(exc)) from None
    unknown = [c for c in df.columns if c not in COLUMNS]
    if unknown:
        raise ConfigListError(
            f"{p}: unknown column(s) {unknown}; give config columns "
            f"({', '.join(space.CONFIG_COLUMNS)}) or config_id"
        )
    config_cols = [c for c in df.columns if COLUMNS[c].group == "config" and c != "config_id"]
    if not config_cols:
        if "config_id" not in df.columns:
            raise ConfigListError(f"{p}: neither config columns nor config_id")
        grid = space.paper_grid().set_index("config_id")
        ids = df["config_id"].astype(str)
        bad = ~ids.isin(grid.index)
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise ConfigListError(
                f"{p}: row {i}, column 'config_id': {ids.iloc[i]!r} is not a config of the "
                f"paper grid ({int(bad.sum())} unknown id(s)); give config columns instead"
            )
        out = grid.loc[ids.to_numpy()].reset_index()
    else:
        configs = []
        for i, row in enumerate(df[config_cols].to_dict(orient="records")):
            row = {k: v for k, v in row.items() if not (np.isscalar(v) and pd.isna(v))}
            try:
                configs.append(space.config_from_row(row))
            except (space.ConfigError, ValueError, TypeError, KeyError) as exc:
                raise ConfigListError(f"{p}: row {i}: {exc}") from None
        out = pd.DataFrame([c.to_dict() for c in configs])
        out["config_id"] = [c.config_id for c in configs]
        if "config_id" in df.columns:
            given = df["config_id"].astype(str).to_numpy()
            bad = given != out["config_id"].to_numpy()
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ConfigListError(
                    f"{p}: row {i}, column 'config_id': {given[i]!r} does not match the row's "
                    f"config (its id is {out['config_id'].iloc[i]!r})"
                )
    dup = out["config_id"].duplicated(keep="first").to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        raise ConfigListError(
            f"{p}: row {i}: config_id {out['config_id'].iloc[i]!r} is duplicated "
            f"({int(dup.sum())} duplicate row(s)); list each config once"
        )
    return out.reset_index(drop=True)


def sample_configs(
    n_sample: int | None = None,
    seed: int = 0,
    configs_file: str | Path | None = None,
    max_gflops: float | None = None,
    sample_under_cap: bool = False,
) -> pd.DataFrame:
    """Configs for a campaign: from a file (:func:`read_config_list`) or the paper grid,
    optionally a seeded stratified sample of ``n_sample`` rows. With ``sample_under_cap`` the
    sample is drawn from configs whose ``flops`` (whole batch) are within ``max_gflops``."""
    from carb_lib import space

    if configs_file is not None:
        df = read_config_list(configs_file)
    else:
        df = space.paper_grid()
    if sample_under_cap and max_gflops is not None:
        df = df[_flops(df).to_numpy() <= max_gflops * 1e9]
    if n_sample is not None and n_sample < len(df):
        df = space.stratified_sample(df, n_sample, seed)
    return df.reset_index(drop=True)


def run_campaign(
    configs: pd.DataFrame,
    out_dir: str | Path,
    device: str | Device = "cpu",
    protocol: Protocol | None = None,
    *,
    platform: str | None = None,
    seed: int = 0,
    ref_every: int = 50,
    reference: Mapping[str, Any] | None = None,
    time_budget_s: float | None = None,
    max_gflops: float | None = None,
    shard: tuple[int, int] | str | None = None,
    idle_seconds: float = 2.0,
    progress: bool = True,
    log: Any = None,
) -> CampaignResult:
    """Measure ``configs`` on one device into part files under ``out_dir``.

    Parameters
    ----------
    configs : pandas.DataFrame
        Config columns (``config_id`` added if absent).
    out_dir : path
        Folder of part files (created). Rerunning resumes.
    device : str or Device
    protocol : Protocol, optional
    platform : str, optional
        Platform name of the rows (default: the device's).
    seed : int
        Seed of the measurement order.
    ref_every : int
        Reference config (and GPU idle power) every this many configs, and at the start;
        0 disables both.
    reference : mapping, optional
        Reference config columns (default :data:`DEFAULT_REFERENCE`).
    time_budget_s : float, optional
        Stop cleanly before a config that would not fit (median duration so far) and abort
        (without recording) a config still running when the budget is over.
    max_gflops : float, optional
        Compute cap: configs with ``flops`` (whole batch) above ``max_gflops * 1e9`` get a
        ``skipped`` row without being run.
    shard : (i, n) or "i/n", optional
        Run only configs whose :func:`shard_of` is ``i``.
    idle_seconds : float
        Length of each GPU idle-power measurement.
    progress : bool
        Show a tqdm bar with ETA.
    log : callable, optional
        ``log(str)`` for messages (default: print to stderr).

    Returns
    -------
    CampaignResult
    """
    t_begin = time.perf_counter()
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    protocol = protocol or Protocol()
    dev = get_device(device, platform=platform)
    if platform is not None and isinstance(device, Device):
        dev._platform = platform
    dev.setup(protocol)
    plat = dev.platform
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out {out} is a file; give a folder for the part files")
    out.mkdir(parents=True, exist_ok=True)
    shard_t = parse_shard(shard) if isinstance(shard, str) or shard is None else shard
    with FolderLock(out):
        stale = clean_temporary_files(out)
        if stale:
            log(f"[campaign] removed {len(stale)} temporary file(s) of an interrupted write")
        return _run_locked(
            configs, out, dev, protocol, plat=plat, seed=seed, ref_every=ref_every,
            reference=reference, time_budget_s=time_budget_s, max_gflops=max_gflops,
            shard_t=shard_t, idle_seconds=idle_seconds, progress=progress, log=log,
            t_begin=t_begin,
        )  # fmt: skip


def _run_locked(
    configs: pd.DataFrame,
    out: Path,
    dev: Device,
    protocol: Protocol,
    *,
    plat: str,
    seed: int,
    ref_every: int,
    reference: Mapping[str, Any] | None,
    time_budget_s: float | None,
    max_gflops: float | None,
    shard_t: tuple[int, int] | None,
    idle_seconds: float,
    progress: bool,
    log: Any,
    t_begin: float,
) -> CampaignResult:
    """The body of :func:`run_campaign`, run while holding the folder's lock."""
    from tqdm.auto import tqdm

    from carb_lib.space import add_config_ids, config_from_row

    cfg = configs.copy()
    if "config_id" not in cfg.columns:
        cfg = add_config_ids(cfg)
    cfg = cfg.drop_duplicates("config_id").reset_index(drop=True)
    cfg = cfg[shard_mask(cfg["config_id"], shard_t)]
    rng = np.random.default_rng(seed)
    cfg = cfg.iloc[rng.permutation(len(cfg))].reset_index(drop=True)
    res = CampaignResult(out_dir=str(out), platform=plat, n_total=len(cfg))
    done = done_ids(out, plat)
    todo = cfg[~cfg["config_id"].isin(done)].reset_index(drop=True)
    res.n_already_done = len(cfg) - len(todo)
    res.n_planned = len(todo)
    writer = PartWriter(out, RESULTS_PREFIX)
    counts = {"ok": 0, "oom": 0, "error": 0, "skipped": 0}
    if max_gflops is not None and len(todo):
        flops = _flops(todo).to_numpy()
        over = flops > max_gflops * 1e9
        skipped = [
            skipped_row(
                config_from_row({c: v for c, v in rec.items() if c != "config_id"}), dev, protocol,
                f"compute cap: flops {f:.4g} (whole batch) > max_gflops {max_gflops:g} x 1e9",
            )
            for rec, f in zip(todo[over].to_dict(orient="records"), flops[over], strict=True)
        ]  # fmt: skip
        for i in range(0, len(skipped), 2000):
            writer.write(skipped[i : i + 2000])
        counts["skipped"] = len(skipped)
        todo = todo[~over].reset_index(drop=True)
    log(
        f"[campaign] platform={plat} configs={len(cfg)} already done={res.n_already_done} "
        f"skipped by compute cap={counts['skipped']} to measure={len(todo)} out={out}"
    )

    ref_writer = PartWriter(out, REFERENCE_PREFIX, unique=False)
    ref_cfg = config_from_row(dict(reference or DEFAULT_REFERENCE))
    durations: list[float] = []
    idle_w = NAN

    def budget_left() -> float:
        if time_budget_s is None:
            return math.inf
        return time_budget_s - (time.perf_counter() - t_begin)

    def checkpoint() -> bool:
        """Idle power + reference; returns False if the budget ran out.

        A reference measurement that is not clean (``quality == "disturbed"`` or a failure)
        is kept with its flag but re-measured, up to :data:`REFERENCE_TRIES` times: drift
        normalisation uses only accepted reference rows."""
        nonlocal idle_w
        if dev.kind == "cuda":
            idle_w = dev.idle_power_w(idle_seconds)
        for _ in range(REFERENCE_TRIES):
            if budget_left() <= 0:
                return False
            row = profile_config(ref_cfg, dev, protocol, idle_power_w=idle_w)
            ref_writer.write([row])
            res.n_reference += 1
            if row["status"] == "ok" and row.get("quality") != "disturbed":
                break
            log(f"[campaign] reference measurement not clean ({row.get('quality')}, "
                f"{row.get('error')}); re-measuring")  # fmt: skip
        return True

    n_measured = 0
    bar = tqdm(total=len(todo), desc=f"carb {plat}", unit="cfg", disable=not progress,
               dynamic_ncols=True, smoothing=0.05)  # fmt: skip
    try:
        if ref_every and len(todo) and not checkpoint():
            res.stopped_by_budget = True
        for rec in todo.to_dict(orient="records"):
            if res.stopped_by_budget:
                break
            config_row = {c: v for c, v in rec.items() if c != "config_id"}
            config = config_from_row(config_row)
            if ref_every and n_measured and n_measured % ref_every == 0:
                if not checkpoint():
                    res.stopped_by_budget = True
                    break
            left = budget_left()
            est = float(np.median(durations)) if durations else 0.0
            if left <= 0 or (durations and est > left):
                res.stopped_by_budget = True
                break
            proto = protocol
            budget_bound = False
            if math.isfinite(left):
                cap = protocol.timeout_s if protocol.timeout_s is not None else math.inf
                if left < cap:
                    proto = Protocol(**{**protocol.to_dict(), "timeout_s": left})
                    budget_bound = True
            t0 = time.perf_counter()
            row = profile_config(config, dev, proto, idle_power_w=idle_w)
            dur = time.perf_counter() - t0
            if (
                budget_bound
                and row["status"] == "error"
                and str(row["error"]).startswith("timeout")
            ):
                res.stopped_by_budget = True  # not the config's fault: do not record it
                break
            if row["config_id"] != rec["config_id"]:
                raise RuntimeError(
                    f"config_id mismatch: row {rec['config_id']} measured as {row['config_id']}"
                )
            writer.write([row])
            durations.append(dur)
            counts[row["status"]] += 1
            n_measured += 1
            bar.update(1)
            bar.set_postfix({k2: v for k2, v in counts.items() if v}, refresh=False)
        if (
            ref_every
            and n_measured
            and not res.stopped_by_budget
            and budget_left() > 0
            and n_measured % ref_every != 0
        ):
            checkpoint()  # close the campaign with a reference point
    finally:
        bar.close()
    res.counts = counts
    res.elapsed_s = time.perf_counter() - t_begin
    res.drift = drift_summary(reference_rows(out))
    d = res.drift
    if d.get("n_reference", 0) >= 1:
        log(
            f"[campaign] drift: {d['n_reference']} reference runs, latency first "
            f"{d['first_latency_ms']:.3f} ms, last {d['last_latency_ms']:.3f} ms "
            f"(x{d['last_over_first']:.3f}), max |drift| {d['max_abs_drift_pct']:.1f}%"
        )
    log(
        f"[campaign] done in {res.elapsed_s:.0f} s: {counts}"
        + (" (stopped by the time budget)" if res.stopped_by_budget else "")
    )
    return res


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
    try:
        df = read_parts(folder, RESULTS_PREFIX)
    except Exception as exc:  # a corrupt part file
        raise SchemaError(f"{folder}: cannot read the part files: {exc}") from None
    if len(df) == 0:
        raise FileNotFoundError(f"no {RESULTS_PREFIX}-*.parquet parts in {folder}")
    ref = reference_rows(folder)
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
    df = dedupe(df, n_existing=n_old)

    df = df.drop(columns=[c for c in STATIC_FEATURE_COLUMNS if c in df.columns])
    if features:
        cfg_cols = [c for c in ("family", "block", "depth", "width", "early_downsample", "arch",
                                "resolution", "batch", "precision", "num_classes")
                    if c in df.columns]  # fmt: skip
        feats = static_features(_plain_configs(df[cfg_cols]))
        df = pd.concat([df, feats.set_index(df.index)], axis=1)
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


# ----------------------------------------------------------------------------------------
# noise study

TARGET_COLUMNS = ("latency_ms", "energy_j", "peak_mem_mib")


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, (np.bool_,)):
        return bool(o)
    if o is pd.NA:
        return None
    return str(o)


def measure_in_subprocess(
    config_row: Mapping[str, Any],
    device: str = "cpu",
    protocol: Protocol | None = None,
    platform: str | None = None,
    timeout_s: float = 900.0,
) -> dict[str, Any]:
    """Run :func:`run_one` in a fresh Python process and return its row."""
    return measure_many_in_subprocess([config_row], device, protocol, platform, timeout_s)[0]


def measure_many_in_subprocess(
    config_rows: list[Mapping[str, Any]],
    device: str = "cpu",
    protocol: Protocol | None = None,
    platform: str | None = None,
    timeout_s: float = 900.0,
) -> list[dict[str, Any]]:
    """Run :func:`run_one` on each config, in order, in ONE fresh Python process; its rows."""
    protocol = protocol or Protocol()
    cmd = [
        sys.executable, "-m", "carb_lib.campaign", "one",
        "--config", json.dumps([dict(r) for r in config_rows], default=_json_default),
        "--device", device,
        "--protocol", json.dumps(protocol.to_dict()),
    ]  # fmt: skip
    if platform:
        cmd += ["--platform", platform]
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
    if proc.returncode != 0:
        raise RuntimeError(
            f"measurement subprocess failed ({proc.returncode}): {proc.stderr[-2000:]}"
        )
    rows = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if len(rows) != len(config_rows):
        raise RuntimeError(
            f"measurement subprocess returned {len(rows)} rows for {len(config_rows)} configs"
        )
    return rows


def noise_study(
    configs: pd.DataFrame,
    device: str = "cpu",
    protocol: Protocol | None = None,
    *,
    repeats: int = 3,
    modes: tuple[str, ...] = ("back_to_back", "spread"),
    separate_processes: bool = True,
    platform: str | None = None,
    spread_gap_s: float = 0.0,
    progress: bool = True,
    spread_process_per_round: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Re-measure each config ``repeats`` times and report the spread per target.

    Modes: ``back_to_back`` measures a config ``repeats`` times in a row; ``spread`` runs
    ``repeats`` rounds over all configs (repeats of one config are separated by every other
    config, plus ``spread_gap_s`` seconds of idle between rounds). With
    ``separate_processes`` every measurement is a fresh Python process
    (:func:`measure_in_subprocess`), so process-level state (allocator, thread pools, cuDNN
    handles) is not shared; otherwise they run in this process (a GPU self-check does this).
    ``spread_process_per_round`` runs each spread round (all configs, in order) in one fresh
    process instead: repeats of a config are still in separate processes, at a fraction of the
    start-up cost, so that many configs can be studied.

    Returns
    -------
    rows : pandas.DataFrame
        Every measurement with ``noise_mode``, ``repeat`` and ``seq`` columns.
    summary : pandas.DataFrame
        Per mode and target: median, mean and max over configs of the CV (std/mean, ddof=1)
        across repeats, and the number of configs with ``repeats`` ok rows.
    """
    from tqdm.auto import tqdm

    protocol = protocol or Protocol()
    cfg_rows = [
        {c: v for c, v in r.items() if c != "config_id"} for r in configs.to_dict(orient="records")
    ]
    plan: list[tuple[str, int, int]] = []
    for mode in modes:
        if mode == "back_to_back":
            plan += [(mode, i, r) for i in range(len(cfg_rows)) for r in range(repeats)]
        elif mode == "spread":
            plan += [(mode, i, r) for r in range(repeats) for i in range(len(cfg_rows))]
        else:
            raise ValueError(f"mode {mode!r} unknown; use back_to_back or spread")
    dev: str | Device = device
    if not separate_processes:
        dev = get_device(device, platform=platform)
    rows = []
    batched: dict[int, dict[str, Any]] = {}  # spread rows measured one process per round
    for seq, (mode, i, r) in enumerate(tqdm(plan, desc="noise", disable=not progress)):
        if mode == "spread" and spread_gap_s > 0 and r > 0 and i == 0:
            time.sleep(spread_gap_s)
        if mode == "spread" and separate_processes and spread_process_per_round:
            if i == 0:
                batched = dict(enumerate(
                    measure_many_in_subprocess(cfg_rows, device, protocol, platform,
                                               timeout_s=900.0 * len(cfg_rows))
                ))
            row = batched[i]
        elif separate_processes:
            row = measure_in_subprocess(cfg_rows[i], device, protocol, platform)
        else:
            row = run_one(cfg_rows[i], dev, protocol)
        row.update(noise_mode=mode, repeat=r, seq=seq)
        rows.append(row)
    df = pd.DataFrame(rows)
    return df, noise_summary(df)


def noise_summary(rows: pd.DataFrame) -> pd.DataFrame:
    """CV across repeats per (mode, config) and target, summarised over configs."""
    out = []
    ok = rows[rows["status"] == "ok"]
    for mode, g in ok.groupby("noise_mode", sort=False):
        for target in TARGET_COLUMNS:
            vals = pd.to_numeric(g[target], errors="coerce")
            per = vals.groupby(g["config_id"]).agg(["std", "mean", "count"])
            per = per[(per["count"] >= 2) & per["mean"].notna()]
            cv = (per["std"] / per["mean"]).dropna()
            out.append({
                "noise_mode": mode, "target": target, "n_configs": int(len(cv)),
                "median_cv": float(cv.median()) if len(cv) else NAN,
                "mean_cv": float(cv.mean()) if len(cv) else NAN,
                "max_cv": float(cv.max()) if len(cv) else NAN,
            })  # fmt: skip
    return pd.DataFrame(out)


# ----------------------------------------------------------------------------------------
def _main(argv: list[str] | None = None) -> int:
    """``python -m carb_lib.campaign one --config JSON [--device D] [--protocol JSON]``:
    measure one config (a JSON object) or several in order (a JSON list) and print one JSON row
    per line (used by :func:`measure_in_subprocess` / :func:`measure_many_in_subprocess`)."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m carb_lib.campaign")
    sub = p.add_subparsers(dest="cmd", required=True)
    one = sub.add_parser("one")
    one.add_argument("--config", required=True)
    one.add_argument("--device", default="cpu")
    one.add_argument("--protocol", default="{}")
    one.add_argument("--platform", default=None)
    a = p.parse_args(argv)
    protocol = Protocol(**json.loads(a.protocol))
    dev = get_device(a.device, platform=a.platform)
    cfg = json.loads(a.config)
    for c in cfg if isinstance(cfg, list) else [cfg]:
        print(json.dumps(run_one(c, dev, protocol), default=_json_default), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
