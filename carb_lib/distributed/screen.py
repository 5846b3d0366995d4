"""Screening on a Dask cluster: stage 1 per partition on the workers, stage 2 on the client.

:func:`screen_on_cluster` splits the candidates into partitions: ``extended`` candidates are
generated on the workers (:func:`extended_partitions`), a ``.parquet`` / ``.csv`` file is read
in partitions on the workers (:func:`file_partitions`: row groups, or blocks of rows). Each partition is screened on a worker with the local
path's own functions (:mod:`carb_lib.screening.screen`): validation, de-duplication, static
features, prediction with intervals, stage 1 (budgets on the conformal upper bounds). Back to
the client come only

* per distinct candidate its 64-bit ``config_id`` and a bit mask (budgets failed,
  extrapolated, non-finite objective): 12 bytes a candidate, from which the funnel counts and
  the budget report are exact, duplicates across partitions counted once;
* the survivors of the partition's first ``k`` non-dominated fronts. The global fronts
  ``0..k-1`` (all stage 2 can use) are subsets of the union of these, so the client's stage 2
  (:func:`carb_lib.screening.screen._stage2`, the local code) gives the local path's front
  and shortlist exactly; rows are kept in candidate order (partition, row) so that ties
  break the same way.

Client memory is bounded by one partition's results plus 12 bytes per distinct candidate;
worker memory by the partition size. :class:`carb_lib.screening.ScreeningResult` is
returned as by :func:`carb_lib.screening.screen`, except that its ``table`` holds only the
candidates that reached stage 2 (not the eliminated ones).

The cross-platform variant (``model_a`` / ``--model-b``) is not distributed.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.families import space
from carb_lib.families.space import SAMPLED_SPACES
from carb_lib.screening.budgets import DeploymentSpec
from carb_lib.screening.pareto import pareto_ranks
from carb_lib.screening.result import ScreeningResult
from carb_lib.screening.screen import (
    _check_objective_columns,
    _check_screening,
    _extrapolated_note,
    _nonfinite_note,
    _objective_matrix,
    _outcome_notes,
    _predict_interval,
    _stage1,
    _stage2,
    prepare_candidates,
    unknown_candidates,
)

logger = logging.getLogger("carb.cluster")

__all__ = ["ExtendedPartition", "FilePartition", "extended_partitions", "file_partitions",
           "screen_on_cluster", "screen_partition"]

#: Bits of the per-candidate mask above the budgets' (budget ``i`` is bit ``i``).
BIT_EXTRAPOLATED = 1 << 30
BIT_NONFINITE = 1 << 29
MAX_BUDGETS = 29


@dataclass(frozen=True)
class ExtendedPartition:
    """Partition ``index`` of an ``extended`` (or ``extended-dense``) candidate set: ``n``
    configs drawn by :func:`carb_lib.families.space.extended_sample` (:func:`~carb_lib.families.space.dense_sample`)
    with seed ``seed``."""

    index: int
    n: int
    seed: int
    source: str = "extended"

    def load(self) -> pd.DataFrame:
        df = space.SAMPLED_SPACES[self.source](self.n, seed=self.seed)
        return df if "config_id" in df.columns else space.add_config_ids(df)


def extended_partitions(n: int, seed: int = 0, partition_size: int = 1_000_000,
                        source: str = "extended") -> list[ExtendedPartition]:
    """``n`` extended-space candidates as partitions of at most ``partition_size``.

    Partition 0 is drawn with ``seed`` itself, so a set that fits one partition is exactly
    :func:`carb_lib.screening.load_candidates` ``("extended", n, seed)``; partition ``i > 0``
    with a seed derived from ``(seed, i)`` (a different draw of the same distribution).
    """
    if n < 1 or partition_size < 1:
        raise ValueError(f"n and partition_size must be >= 1, got {n}, {partition_size}")
    out = []
    for i, start in enumerate(range(0, n, partition_size)):
        s = seed if i == 0 else int(np.random.SeedSequence([seed, i]).generate_state(1)[0])
        out.append(ExtendedPartition(i, min(partition_size, n - start), s, source))
    return out


def _ids64(ids: pd.Series) -> np.ndarray:
    """``config_id`` as uint64 (16-hex ids exactly, other ids by a blake2b hash)."""
    s = ids.astype(str)
    if s.str.fullmatch(r"[0-9a-f]{16}").all():
        return np.frombuffer(bytes.fromhex("".join(s)), dtype=">u8").astype(np.uint64)
    return np.array([int.from_bytes(hashlib.blake2b(x.encode(), digest_size=8).digest(), "big")
                     for x in s], dtype=np.uint64)  # fmt: skip


def screen_partition(part: Any, model: Any, spec: DeploymentSpec, index: int,
                     what: str = "candidates") -> dict[str, Any]:
    """Task: stage 1 on one partition (a DataFrame, or an object with ``load()``).

    Returns ``ids`` (uint64), ``mask`` (uint32), ``kept`` (survivors of the partition's first
    ``spec.k`` fronts, with ``_part`` and ``_row``), ``min_upper`` per budget, ``n`` (distinct
    candidates), ``seconds`` (wall) and ``cpu_s`` (the worker process's CPU time).
    """
    t0, c0 = time.perf_counter(), time.process_time()
    df = part.load() if hasattr(part, "load") else part
    if len(df) == 0:
        return {"ids": np.zeros(0, np.uint64), "mask": np.zeros(0, np.uint32), "kept": None,
                "min_upper": {}, "n": 0, "seconds": time.perf_counter() - t0,
                "cpu_s": time.process_time() - c0}
    df = df.reset_index(drop=True)
    if not isinstance(part, ExtendedPartition):
        start = part.start if isinstance(part, FilePartition) else 0
        space.validate_config_frame(
            df, f"{what}, partition {index} (rows {start}-{start + len(df) - 1})")
    if "config_id" not in df.columns:
        df = space.add_config_ids(df)
    df = df[~df["config_id"].duplicated().to_numpy()].reset_index(drop=True)
    df = prepare_candidates(df)
    _check_objective_columns(df, spec)
    pred = _predict_interval(model, df, spec.coverage, "model")
    table, report, within = _stage1(df, pred, spec)
    mask = np.zeros(len(df), dtype=np.uint32)
    for i, b in enumerate(spec.budgets):
        mask |= (~table[f"ok_{b.label}"].to_numpy(dtype=bool)).astype(np.uint32) << np.uint32(i)
    if "extrapolated" in pred.columns:
        mask |= np.where(pred["extrapolated"].to_numpy(dtype=bool), BIT_EXTRAPOLATED, 0
                         ).astype(np.uint32)
    surv = np.flatnonzero(within)
    kept = None
    if len(surv):
        which = "_hi" if spec.rank_on == "upper" else ""
        F = _objective_matrix(table, spec, which)[surv]
        bad = ~np.isfinite(F).all(axis=1)
        mask[surv[bad]] |= np.uint32(BIT_NONFINITE)
        surv, F = surv[~bad], F[~bad]
        if len(surv):
            ranks = pareto_ranks(F, [o.sense for o in spec.objectives], max_rank=spec.k)
            keep = surv[ranks >= 0]
            kept = table.iloc[keep].assign(_part=index, _row=keep)
    return {"ids": _ids64(df["config_id"]), "mask": mask, "kept": kept,
            "min_upper": report["min_upper"].to_dict(), "n": len(df),
            "seconds": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}


class _Distinct:
    """The distinct candidates seen so far: sorted uint64 ids and their masks."""

    def __init__(self) -> None:
        self.ids = np.zeros(0, np.uint64)
        self.mask = np.zeros(0, np.uint32)

    def add(self, ids: np.ndarray, mask: np.ndarray) -> None:
        ids = np.concatenate([self.ids, ids])
        mask = np.concatenate([self.mask, mask])
        self.ids, first = np.unique(ids, return_index=True)
        self.mask = mask[first]


@dataclass(frozen=True)
class FilePartition:
    """Rows of a candidate file: Parquet row groups ``groups``, or CSV data rows
    ``[start, start + n)`` (read as :func:`carb_lib.core.tables.read_table` reads the file)."""

    path: str
    groups: tuple[int, ...] = ()
    start: int = 0
    n: int = 0

    def load(self) -> pd.DataFrame:
        if self.path.endswith(".parquet"):
            import pyarrow.parquet as pq

            return pq.ParquetFile(self.path).read_row_groups(list(self.groups)).to_pandas()
        return pd.read_csv(self.path, skiprows=range(1, 1 + self.start), nrows=self.n)


def file_partitions(path: Path, partition_size: int) -> list[FilePartition]:
    """A .parquet file by row groups (grouped up to ``partition_size`` rows; a larger row
    group is one partition) or a .csv file by ``partition_size`` data rows."""
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        meta = pq.ParquetFile(str(path)).metadata
        parts, cur, rows, start = [], [], 0, 0
        for g in range(meta.num_row_groups):
            n = meta.row_group(g).num_rows
            if cur and rows + n > partition_size:
                parts.append(FilePartition(str(path), tuple(cur), start=start, n=rows))
                cur, start, rows = [], start + rows, 0
            cur.append(g)
            rows += n
        if cur:
            parts.append(FilePartition(str(path), tuple(cur), start=start, n=rows))
        return parts
    if path.suffix.lower() == ".csv":
        with open(path, "rb") as fh:
            n_rows = max(sum(1 for _ in fh) - 1, 0)
        return [FilePartition(str(path), start=s, n=min(partition_size, n_rows - s))
                for s in range(0, n_rows, partition_size)]
    raise ValueError(f"candidate file {path}: use a .parquet or .csv file")


def _partitions(candidates: Any, n_extended: int, seed: int, partition_size: int
                ) -> tuple[list[Any], str]:
    """The partitions (objects with ``load()``, or DataFrames) and what to call them."""
    if isinstance(candidates, pd.DataFrame):
        return [candidates.iloc[i : i + partition_size]
                for i in range(0, len(candidates), partition_size)], "candidates"
    src = str(candidates)

    if src in SAMPLED_SPACES:
        return extended_partitions(n_extended, seed, partition_size, src), src
    if src == "grid":
        return [space.paper_grid()], "grid"
    path = Path(src)
    if not path.is_file():
        raise unknown_candidates(src)
    return file_partitions(path, partition_size), f"candidate file {path}"


def screen_on_cluster(
    model: Any,
    candidates: Any,
    spec: DeploymentSpec,
    client: Any,
    *,
    n_extended: int = 100_000,
    seed: int = 0,
    partition_size: int = 1_000_000,
    progress: bool = True,
) -> ScreeningResult:
    """Screen ``candidates`` for ``spec`` on the workers of ``client``.

    Parameters
    ----------
    model : estimator
        As for :func:`carb_lib.screening.screen` (sent to every worker once).
    candidates : "extended", "grid", a .parquet/.csv path or a DataFrame
    spec : DeploymentSpec
    client : distributed.Client
    n_extended, seed : int
        Size and seed of an ``extended`` set (:func:`extended_partitions`).
    partition_size : int
        Candidates per partition (``extended`` and DataFrames; a CSV is read in blocks of
        about this many rows, a Parquet file by row groups).
    progress : bool
        A tqdm bar over partitions.

    Returns
    -------
    ScreeningResult
        Equal to the local path's on the same candidates, except ``table`` (only the
        candidates that reached stage 2) and ``timings_s``.
    """
    from distributed import as_completed
    from tqdm.auto import tqdm

    t_all = time.perf_counter()
    platform, notes = _check_screening(model, spec)
    if len(spec.budgets) > MAX_BUDGETS:
        raise ValueError(f"at most {MAX_BUDGETS} budgets on a cluster, got {len(spec.budgets)}")
    parts, what = _partitions(candidates, n_extended, seed, partition_size)
    model_f = client.scatter(model, broadcast=True, hash=False)
    token = time.time_ns()
    futures = [client.submit(screen_partition, p, model_f, spec, i, what, pure=False,
                             key=f"carb-screen-{i}-{token}") for i, p in enumerate(parts)]
    distinct = _Distinct()
    kept: list[pd.DataFrame] = []
    min_upper: dict[str, float] = {}
    busy = cpu = 0.0
    bar = tqdm(total=len(futures), desc="screen partitions", unit="part", disable=not progress)
    try:
        for fut in as_completed(futures):
            r = fut.result()
            fut.release()
            distinct.add(r["ids"], r["mask"])
            if r["kept"] is not None:
                kept.append(r["kept"])
            for b, v in r["min_upper"].items():
                old = min_upper.get(b, np.nan)
                min_upper[b] = v if np.isnan(old) or v < old else old
            busy += r["seconds"]
            cpu += r["cpu_s"]
            bar.update(1)
    finally:
        for fut in futures:
            fut.cancel()
        bar.close()
    if len(distinct.ids) == 0:
        raise ValueError("the candidate set is empty: nothing to screen")
    return _assemble(spec, distinct, kept, min_upper, notes, platform,
                     {"workers_busy": busy, "workers_cpu": cpu, "wall": time.perf_counter() - t_all})


def _assemble(spec: DeploymentSpec, distinct: _Distinct, kept: list[pd.DataFrame],
              min_upper: dict[str, float], notes: list[str], platform: str | None,
              timings: dict[str, float]) -> ScreeningResult:
    """The funnel from the masks, stage 2 on the kept survivors (local code)."""
    n = len(distinct.ids)
    m = distinct.mask
    budget_bits = np.uint32((1 << len(spec.budgets)) - 1)
    within = (m & budget_bits) == 0
    if (m & BIT_EXTRAPOLATED).any():
        notes.append(_extrapolated_note(int(((m & BIT_EXTRAPOLATED) > 0).sum()), n))
    rows = []
    fails = [((m >> np.uint32(i)) & 1).astype(bool) for i in range(len(spec.budgets))]
    n_fail_any = np.sum(fails, axis=0) if fails else np.zeros(n)
    first_seen = np.zeros(n, dtype=bool)
    for b, f in zip(spec.budgets, fails, strict=True):
        rows.append({"budget": b.label, "metric": b.metric, "limit": b.limit,
                     "n_fail": int(f.sum()), "n_first_fail": int((f & ~first_seen).sum()),
                     "n_only_fail": int((f & (n_fail_any == 1)).sum()),
                     "min_upper": min_upper.get(b.label, np.nan)})  # fmt: skip
        first_seen |= f
    report = pd.DataFrame(rows, columns=["budget", "metric", "limit", "n_fail", "n_first_fail",
                                         "n_only_fail", "min_upper"]).set_index("budget")
    n_bad = int((within & ((m & BIT_NONFINITE) > 0)).sum())
    if n_bad:
        notes.append(_nonfinite_note(n_bad))
    if kept:
        table = pd.concat(kept, ignore_index=True).sort_values(["_part", "_row"], kind="stable")
        table = table[~table["config_id"].duplicated().to_numpy()]
        table = table.drop(columns=["_part", "_row"]).reset_index(drop=True)
    else:
        table = pd.DataFrame(columns=["config_id"])
    on_front, rank = _stage2(table, np.ones(len(table), dtype=bool), spec, notes, timings)
    table["on_front"] = on_front
    table["shortlist_rank"] = rank
    shortlist = table[rank >= 0].sort_values("shortlist_rank").reset_index(drop=True)
    n_surv = int(within.sum())
    notes += _outcome_notes(report, spec, n_survivors=n_surv, n_front=int(on_front.sum()),
                            n_scored=n)
    counts = {"candidates": n, "after_cross_platform": n, "eliminated_stage1": n - n_surv,
              "survivors": n_surv, "front": int(on_front.sum()), "shortlist": len(shortlist)}
    return ScreeningResult(spec=spec, table=table, shortlist=shortlist, counts=counts,
                           budget_report=report, timings_s=timings, notes=notes,
                           platform=platform, platform_a=None)
