"""Audit a measured dataset: re-measure a seeded random sample and compare.

:func:`audit` re-measures ``n`` ``ok`` rows of a dataset (seeded random sample) in separate,
fresh processes with the dataset's protocol, and :func:`agreement` compares the new values
with the shipped ones: median |log ratio| of latency, the share of rows within 5 % and 10 %,
and the share whose peak memory is identical. :func:`noise_by_regime` reports the noise floor
per regime (batch tier, FLOPs tier, precision) from the rows' own window spread and, where an
audit exists, from the re-measurement.

``carb audit DATASET --n 200`` runs it from the command line and writes
``<out>/<platform>_audit_rows.parquet`` and ``<out>/<platform>_audit.csv``.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.vocab import (  # REMEASURED_COLUMNS: re-exported, its former home
    BATCH_TIER_EDGES,
    BATCH_TIER_LABELS,
    REMEASURED_COLUMNS,
)
from carb_lib.dataset.schema import read_dataset
from carb_lib.families import all_config_columns
from carb_lib.measure import campaign
from carb_lib.measure.devices import UNKNOWN_CPU, cpu_identity, is_unknown_cpu, refuse_other_cpu
from carb_lib.measure.heap import recorded_heaps
from carb_lib.measure.profiling import Protocol

logger = logging.getLogger("carb.audit")


#: FLOPs tiers (whole batch, GFLOP): upper bounds.
FLOPS_TIERS: dict[str, tuple[float, float]] = {
    "<0.05 GFLOP": (0.0, 0.05),
    "0.05-0.5 GFLOP": (0.05, 0.5),
    ">0.5 GFLOP": (0.5, np.inf),
}


@dataclass
class Agreement:
    """How well re-measured rows agree with the shipped ones.

    Agreement is symmetric in the two measurements (neither is the truth): ``within_5pct`` is
    the share with ``|log(new / old)| <= log 1.05``, not :func:`carb_lib.core.metrics.within_pct`
    (relative to a measured value), so that swapping old and new gives the same numbers.
    """

    n: int
    median_abs_log_ratio: float
    p90_abs_log_ratio: float
    within_5pct: float
    within_10pct: float
    memory_identical: float
    median_ratio: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _tier(values: np.ndarray, tiers: dict[str, tuple[float, float]]) -> np.ndarray:
    out = np.full(len(values), "", dtype=object)
    for name, (lo, hi) in tiers.items():
        out[(values >= lo) & (values <= hi) & (out == "")] = name
    return out


def agreement(rows: pd.DataFrame) -> Agreement:
    """Agreement of ``latency_ms_new`` with ``latency_ms`` and of the memory columns.

    ``rows`` has ``latency_ms``, ``latency_ms_new``, ``peak_mem_mib``, ``peak_mem_mib_new``
    (rows whose re-measurement failed are ignored)."""
    r = rows.dropna(subset=["latency_ms", "latency_ms_new"])
    lr = np.abs(np.log(r["latency_ms_new"].to_numpy(float) / r["latency_ms"].to_numpy(float)))
    mem_same = np.isclose(
        r["peak_mem_mib_new"].to_numpy(float), r["peak_mem_mib"].to_numpy(float), rtol=0, atol=1e-9
    )
    nan = float("nan")
    return Agreement(
        n=int(len(r)),
        median_abs_log_ratio=float(np.median(lr)) if len(r) else nan,
        p90_abs_log_ratio=float(np.percentile(lr, 90)) if len(r) else nan,
        within_5pct=float(np.mean(lr <= np.log(1.05))) if len(r) else nan,
        within_10pct=float(np.mean(lr <= np.log(1.10))) if len(r) else nan,
        memory_identical=float(np.mean(mem_same)) if len(r) else nan,
        median_ratio=float(np.exp(np.median(np.log(
            r["latency_ms_new"].to_numpy(float) / r["latency_ms"].to_numpy(float))))) if len(r) else nan,
    )  # fmt: skip


def batch_tiers(batch: np.ndarray) -> np.ndarray:
    """The paper's batch tier of each batch size (:data:`carb_lib.core.vocab.BATCH_TIER_LABELS`:
    ``b<=4``, ``b<=16``, ``b<=128``, ``b>128``)."""
    b = np.asarray(batch, dtype=float)
    return np.asarray(BATCH_TIER_LABELS, dtype=object)[np.searchsorted(BATCH_TIER_EDGES, b)]


def regimes(df: pd.DataFrame) -> pd.DataFrame:
    """``batch_tier`` (the paper's, :func:`batch_tiers`), ``flops_tier`` and ``precision`` of
    each row."""
    return pd.DataFrame(
        {
            "batch_tier": batch_tiers(df["batch"].to_numpy(float)),
            "flops_tier": _tier(df["flops"].to_numpy(float) / 1e9, FLOPS_TIERS),
            "precision": df["precision"].astype(str).to_numpy(),
        },
        index=df.index,
    )


def noise_by_regime(df: pd.DataFrame, audit_rows: pd.DataFrame | None = None) -> pd.DataFrame:
    """Noise floor per regime: rows, median ``latency_window_cv`` (within-row spread), share of
    rows not ``clean``, and, with ``audit_rows``, median |log ratio| of the re-measurement."""
    ok = df[df["status"] == "ok"]
    reg = regimes(ok)
    out = []
    for key in ("batch_tier", "flops_tier", "precision"):
        groups = reg.groupby(key).groups
        order = [t for t in BATCH_TIER_LABELS if t in groups] if key == "batch_tier" else groups
        for val in order:
            g = ok.loc[groups[val]]
            rec: dict[str, Any] = {"regime": key, "value": val, "rows": len(g)}
            if "latency_window_cv" in g:
                rec["median_window_cv"] = float(g["latency_window_cv"].median())
            if "quality" in g:
                rec["share_not_clean"] = float((g["quality"] != "clean").mean())
            if audit_rows is not None and len(audit_rows):
                a = audit_rows[audit_rows["config_id"].isin(g["config_id"])]
                ag = agreement(a)
                rec.update(audit_n=ag.n, audit_median_abs_log_ratio=ag.median_abs_log_ratio,
                           audit_within_5pct=ag.within_5pct)  # fmt: skip
            out.append(rec)
    return pd.DataFrame(out)


def sample_rows(df: pd.DataFrame, n: int, seed: int = 0) -> pd.DataFrame:
    """A seeded random sample of ``n`` ok rows (all of them if fewer)."""
    ok = df[df["status"] == "ok"]
    if n <= 0:
        raise ValueError(f"--n must be >= 1, got {n}")
    if len(ok) == 0:
        raise ValueError("the dataset has no ok rows to audit")
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(len(ok), min(n, len(ok)), replace=False))
    return ok.iloc[idx]


def recorded_heap(df: pd.DataFrame) -> bool:
    """Whether the rows were measured with the CPU heap kept (their ``heap_kept``), so that an
    audit re-measures them the same way. Files from before 2026-12-03 lack the column: their
    rows were measured with the default heap (False). A dataset whose rows disagree is refused:
    audit one heap at a time."""
    kept = df["heap_kept"].dropna().astype(bool) if "heap_kept" in df.columns else []
    heaps = recorded_heaps(kept)
    if len(heaps) > 1:
        raise ValueError(f"audit one heap at a time: heap_kept is True in {int(kept.sum()):,} "
                         f"rows and False in {int((~kept).sum()):,}")
    return heaps[0]


def refuse_unknown_cpu(df: pd.DataFrame, what: str = "the dataset") -> None:
    """One ``ValueError`` if rows of ``df`` have no ``cpu_id`` (missing, or
    :data:`carb_lib.measure.devices.UNKNOWN_CPU`): the CPU they were measured on is unknown, so a
    re-measurement on this machine may compare two different CPUs (cloud VMs report one model
    name for CPUs generations apart)."""
    missing = (df["cpu_id"].map(is_unknown_cpu).to_numpy(dtype=bool) if "cpu_id" in df.columns
               else np.ones(len(df), dtype=bool))  # fmt: skip
    if missing.any():
        first = int(np.flatnonzero(missing)[0])
        raise ValueError(
            f"{what}: {int(missing.sum())} of {len(df)} row(s) have no cpu_id (missing or "
            f"{UNKNOWN_CPU!r}, the first in row {first}), so the CPU they "
            f"were measured on is unknown and this machine ({cpu_identity()!r}) cannot be "
            "matched to it; an audit re-measures on the same CPU: pass --assume-same-cpu if "
            "you know it is the same")


def audit(
    dataset: str | Path | pd.DataFrame,
    n: int = 200,
    *,
    seed: int = 0,
    device: str = "cpu",
    protocol: Any = None,
    chunk: int = 25,
    progress: bool = True,
    assume_same_cpu: bool = True,
) -> tuple[pd.DataFrame, Agreement]:
    """Re-measure a seeded random sample of ``n`` ok rows in fresh processes (``chunk`` rows
    per process) and compare. Without a ``protocol``, the study's, with the rows' threads and
    their heap (:func:`recorded_heap`: rows measured with the heap kept are re-measured with it
    kept).

    On the CPU, rows whose ``cpu_id`` names another CPU are refused; rows without a
    ``cpu_id`` (the CPU they were measured on is unknown) are refused unless
    ``assume_same_cpu`` (``carb audit`` refuses them unless ``--assume-same-cpu``).

    Returns
    -------
    rows : pandas.DataFrame
        One row per audited config: config columns, shipped and new latency and memory,
        ``log_ratio``, the new row's ``quality``.
    agreement : Agreement
    """
    from tqdm.auto import tqdm

    df = read_dataset(dataset) if not isinstance(dataset, pd.DataFrame) else dataset
    # every family's config columns present (a file may hold several families)
    config_columns = [c for c in all_config_columns() if c in df.columns]
    platforms = df["platform"].astype(str).unique()
    if len(platforms) != 1:
        raise ValueError(f"audit one platform at a time; the dataset has {list(platforms)}")
    if device == "cpu" and not assume_same_cpu:
        refuse_unknown_cpu(df, "the dataset" if isinstance(dataset, pd.DataFrame) else str(dataset))
    if device == "cpu" and "cpu_id" in df.columns:
        refuse_other_cpu(df["cpu_id"].dropna().astype(str), "the dataset was",
                         "an audit re-measures on the same CPU")
    threads = int(df["threads"].dropna().iloc[0]) if df["threads"].notna().any() else None
    protocol = protocol or Protocol(threads=threads, cpu_keep_heap=recorded_heap(df))
    sample = sample_rows(df, n, seed)
    configs = sample[config_columns].to_dict(orient="records")
    new_rows: list[dict[str, Any]] = []
    with tqdm(total=len(configs), desc="carb audit", unit="cfg", disable=not progress) as bar:
        for i in range(0, len(configs), chunk):
            part = configs[i : i + chunk]
            new_rows += campaign.measure_many_in_subprocess(part, device, protocol,
                                                            str(platforms[0]))
            bar.update(len(part))
    new = pd.DataFrame(new_rows).set_index("config_id")
    keep = ["config_id", *config_columns, "flops", "latency_ms", "peak_mem_mib", "measured_at"]
    keep += [c for c in ("quality", "latency_window_cv") if c in sample.columns]
    rows = sample[[c for c in keep if c in sample.columns]].copy().reset_index(drop=True)
    ids = rows["config_id"].to_numpy()
    rows["status_new"] = new.loc[ids, "status"].to_numpy()
    for target, column in REMEASURED_COLUMNS.items():
        rows[column] = pd.to_numeric(new.loc[ids, target]).to_numpy(float)
    if "quality" in new.columns:
        rows["quality_new"] = new.loc[ids, "quality"].to_numpy()
    rows["measured_at_new"] = new.loc[ids, "measured_at"].to_numpy()
    rows["log_ratio"] = np.log(rows["latency_ms_new"] / rows["latency_ms"])
    return rows, agreement(rows)


def format_agreement(ag: Agreement, platform: str = "") -> str:
    """A short table for the terminal."""
    lines = [
        f"audit {platform}: {ag.n} rows re-measured",
        f"  latency median |log ratio|   {ag.median_abs_log_ratio * 100:6.2f} %",
        f"  latency p90 |log ratio|      {ag.p90_abs_log_ratio * 100:6.2f} %",
        f"  latency within 5 %           {ag.within_5pct * 100:6.1f} %",
        f"  latency within 10 %          {ag.within_10pct * 100:6.1f} %",
        f"  latency median ratio new/old {ag.median_ratio:8.4f}",
        f"  peak memory identical        {ag.memory_identical * 100:6.1f} %",
    ]
    return "\n".join(lines)
