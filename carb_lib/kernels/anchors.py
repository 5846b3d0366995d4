"""Anchor operators: a fixed set re-timed in every campaign, so host speed is measured.

On a shared VM the same operator's time moves with the host: a campaign of 2026-12-01 found the four draws
of the Zen 3 benchmark timed at host speeds up to 1.5x apart, and
``KernelModel(draws="aligned")`` can only *estimate* each draw's speed from the operators. An
anchor set measures it instead. :func:`anchor_operators` is a fixed, versioned set of small
operators of every kind. ``carb kernels`` times it before, every ``--anchor-every`` (500)
operators during, and after each draw it appends, and ``carb kernels --anchors-only`` times it
alone (``--campaigns`` 5 back to back, e.g. at the start of a session). The rows go beside the benchmark, in
:func:`anchors_path` (``<benchmark>.anchors.parquet``), never into it.

:func:`anchor_speeds` compares campaigns. Per campaign (one timing of the whole set, ~4 s), the
time of each anchor is divided by its time in the first campaign. The median of those ratios is
the campaign's relative time (1.2: the host ran 1.2x slower than in the first campaign). Their
quartiles say how much the anchors agree.

What a campaign measures (2026-12-01, Zen 3 VM; ``docs/experiments.md``): the *moment*, not
the minutes around it. 26 campaigns in 14 minutes ranged 0.99-1.38, and the operators of a draw
timed between them did not follow them (Pearson r = 0.004 between an operator's residual and
the anchors' time interpolated to its moment). The median over a session's campaigns was stable
(1.249 over 5 checks, 1.233 over a draw's 21 campaigns). So read a session's speed as the median
of several campaigns, and do not divide single operators by a campaign's value.

Examples
--------
>>> from carb_lib.kernels.anchors import anchor_operators
>>> ops = anchor_operators()
>>> len(ops), sorted(ops["precision"].unique())
(24, ['fp16', 'fp32'])
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.dataset.schema import atomic_write_parquet
from carb_lib.kernels.operators import OP_COLUMNS, sample_kernels
from carb_lib.measure.devices import refuse_other_cpu

__all__ = ["ANCHOR_PHASES", "ANCHOR_VERSION", "anchor_operators", "anchor_speeds",
           "anchors_path", "AnchorFile", "time_anchors"]

logger = logging.getLogger(__name__)

#: Version of :func:`anchor_operators` (anchor rows record it in ``anchor_version``).
ANCHOR_VERSION = 1
#: When a campaign was timed: before, during (every ``--anchor-every`` operators) or after a
#: draw of ``carb kernels``, or alone (a check).
ANCHOR_PHASES: tuple[str, ...] = ("before", "during", "after", "check")
#: Anchors per (kind, precision) in version 1: every kind of dense and depthwise convolution,
#: linear layer and memory-bound operator the sampler draws, both precisions for the weighted
#: kinds.
_V1_STRATA: dict[tuple[str, str], int] = {
    ("conv", "fp32"): 4, ("conv", "fp16"): 2, ("dwconv", "fp32"): 3, ("dwconv", "fp16"): 1,
    ("linear", "fp32"): 2, ("linear", "fp16"): 1, ("bn", "fp32"): 1, ("relu", "fp32"): 1,
    ("relu6", "fp32"): 1, ("silu", "fp32"): 1, ("sigmoid", "fp32"): 1, ("add", "fp32"): 1,
    ("mul", "fp32"): 1, ("maxpool", "fp32"): 2, ("avgpool", "fp32"): 2,
}
#: Version 1's pool: sampler v4, this seed; anchors have a nominal roofline time in this range
#: (ms) so that a campaign takes seconds.
_V1_SEED, _V1_POOL, _V1_RANGE_MS = 20261202, 4000, (0.02, 1.0)
#: :func:`anchor_operators` per version, drawn once per process.
_ANCHOR_CACHE: dict[int, pd.DataFrame] = {}


def anchor_operators(version: int = ANCHOR_VERSION) -> pd.DataFrame:
    """The anchor set: :data:`~carb_lib.kernels.operators.OP_COLUMNS`, ``batch``, ``precision`` and
    ``anchor_id`` (0, 1, ...), the same operators on every machine and in every session.

    Version 1 takes, from 4,000 operators of sampler v4 (a fixed seed), those with a nominal
    roofline time of 0.02-1 ms, and of them the first of each (kind, precision) stratum, as
    many as :data:`_V1_STRATA` asks (24 in all).

    Raises
    ------
    ValueError
        An unknown version.
    """
    if version != 1:
        raise ValueError(f"anchor version {version} is unknown; valid: [1]")
    if version not in _ANCHOR_CACHE:  # drawn once per process (~0.5 s), not once per campaign
        _ANCHOR_CACHE[version] = _draw_anchors_v1()
    return _ANCHOR_CACHE[version].copy()


def _draw_anchors_v1() -> pd.DataFrame:
    from carb_lib.kernels.law import _roofline_ms

    pool = sample_kernels(_V1_POOL, seed=_V1_SEED, version=4)
    t = _roofline_ms(pool)
    pool = pool[(t >= _V1_RANGE_MS[0]) & (t <= _V1_RANGE_MS[1])]
    parts = [pool[(pool["kind"] == kind) & (pool["precision"] == prec)].head(n)
             for (kind, prec), n in _V1_STRATA.items()]
    out = pd.concat(parts, ignore_index=True)
    if len(out) != sum(_V1_STRATA.values()):  # the sampler changed under a fixed version
        raise RuntimeError(f"anchor set v1 has {len(out)} operators, expected "
                           f"{sum(_V1_STRATA.values())}: sampler v4 no longer draws what it did")
    return out[[*OP_COLUMNS, "batch", "precision"]].assign(anchor_id=np.arange(len(out)))


def anchors_path(bench: Any) -> Path:
    """Where a benchmark's anchor rows live: ``<bench stem>.anchors.parquet`` beside it."""
    p = Path(bench)
    return p.with_name(f"{p.stem}.anchors.parquet")


def time_anchors(*, phase: str, sample_seed: int | None = None, threads: int = 1,
                 platform: str | None = None, version: int = ANCHOR_VERSION,
                 n_windows: int = 7) -> pd.DataFrame:
    """Time the anchor set once (one campaign) with the benchmark's harness
    (:func:`carb_lib.kernels.law.bench_kernels`).

    Parameters
    ----------
    phase : {"before", "during", "after", "check"}
    sample_seed : int, optional
        The draw a ``before`` / ``during`` / ``after`` campaign belongs to (-1 for a check).
    threads : int, default=1
    platform : str, optional
    version : int, default=ANCHOR_VERSION
    n_windows : int, default=7
        Timed windows per anchor (two more than an operator of a draw gets: the anchors'
        medians carry the campaign's speed).

    Returns
    -------
    pandas.DataFrame
        The benchmark's columns plus ``anchor_id``, ``anchor_version``, ``phase``,
        ``sample_seed`` and ``campaign`` (the UTC time the campaign started).
    """
    from carb_lib.kernels.law import bench_kernels

    if phase not in ANCHOR_PHASES:
        raise ValueError(f"phase={phase!r} is unknown; valid: {list(ANCHOR_PHASES)}")
    ops = anchor_operators(version)
    start = pd.Timestamp.now(tz="UTC")
    rows = bench_kernels(ops, threads=threads, n_windows=n_windows, platform=platform,
                         progress=False)
    return rows.assign(anchor_id=ops["anchor_id"].to_numpy(), anchor_version=int(version),
                       phase=phase, sample_seed=-1 if sample_seed is None else int(sample_seed),
                       campaign=start)


def anchor_speeds(anchors: pd.DataFrame, *, reference: Any = None) -> pd.DataFrame:
    """Each campaign's time relative to a reference campaign, from the anchors they share.

    Parameters
    ----------
    anchors : pandas.DataFrame
        Anchor rows (:func:`time_anchors`, or read from :func:`anchors_path`) of one anchor
        version.
    reference : timestamp, optional
        The reference campaign's ``campaign`` value (default: the first).

    Returns
    -------
    pandas.DataFrame
        One row per campaign, in time order: ``campaign``, ``phase``, ``sample_seed``,
        ``n_anchors`` (shared with the reference), ``relative_time`` (median of the anchors'
        time ratios: above 1, the host ran slower than in the reference campaign),
        ``ratio_q25`` and ``ratio_q75``.

    Raises
    ------
    ValueError
        No rows, several anchor versions, or an unknown reference campaign.
    """
    if anchors.empty:
        raise ValueError("no anchor rows")
    versions = sorted(set(anchors["anchor_version"].astype(int)))
    if len(versions) != 1:
        raise ValueError(f"the rows hold anchor versions {versions}; compare one at a time")
    wide = anchors.pivot_table(index="campaign", columns="anchor_id", values="time_ms",
                               aggfunc="median").sort_index()
    ref = wide.index[0] if reference is None else pd.Timestamp(reference)
    if ref.tzinfo is None and getattr(wide.index, "tz", None) is not None:
        ref = ref.tz_localize("UTC")  # campaigns are stored in UTC
    if ref not in wide.index:
        raise ValueError(f"reference campaign {reference} is not in the rows; campaigns: "
                         f"{[str(s) for s in wide.index]}")
    ratio = wide / wide.loc[ref]
    meta = anchors.groupby("campaign")[["phase", "sample_seed"]].first()
    out = pd.DataFrame({
        "n_anchors": ratio.notna().sum(axis=1),
        "relative_time": ratio.median(axis=1),
        "ratio_q25": ratio.quantile(0.25, axis=1),
        "ratio_q75": ratio.quantile(0.75, axis=1),
    })
    return meta.join(out).reset_index()[["campaign", "phase", "sample_seed", "n_anchors",
                                         "relative_time", "ratio_q25", "ratio_q75"]]


class AnchorFile:
    """The anchor rows beside one benchmark (:func:`anchors_path`): read when the file
    exists (refusing rows of another CPU: one ``ValueError``), and grown one campaign at a time,
    each written atomically, so an interrupted run keeps every campaign it timed.

    Parameters
    ----------
    bench : path
        The benchmark file the anchors sit beside.
    """

    def __init__(self, bench: Any) -> None:
        from carb_lib.kernels.law import read_bench

        self.path = anchors_path(bench)
        self.rows: pd.DataFrame | None = read_bench(self.path) if self.path.exists() else None
        if self.rows is not None:
            refuse_other_cpu(self.rows.get("cpu_id", ()), f"the anchor rows {self.path} were",
                             "time anchors into a new benchmark's file on this machine")

    def time(self, **kwargs: Any) -> pd.DataFrame:
        """Time one campaign (:func:`time_anchors` ``**kwargs``), add it, write the file."""
        campaign = time_anchors(**kwargs)
        self.rows = campaign if self.rows is None else pd.concat([self.rows, campaign],
                                                                ignore_index=True)
        atomic_write_parquet(self.rows, self.path)
        return campaign

    def report(self, last: int = 0) -> str:
        """Every campaign's relative time (:func:`anchor_speeds`, campaigns of the current
        :data:`ANCHOR_VERSION`), as text; with ``last``, also the median and range of the last
        ``last`` campaigns (this session's speed)."""
        rows = self.rows[self.rows["anchor_version"].astype(int) == ANCHOR_VERSION]
        sp = anchor_speeds(rows).round({c: 3 for c in ("relative_time", "ratio_q25",
                                                       "ratio_q75")})
        text = (f"anchors: {len(sp)} campaigns in {self.path} (relative_time: the anchors' "
                "median time over the first campaign's; above 1, the host ran slower)\n"
                + sp.to_string(index=False))
        if last > 0:
            rt = sp["relative_time"].tail(last)
            text += (f"\nthis session ({len(rt)} campaigns): median relative_time "
                     f"{rt.median():.3f} (range {rt.min():.3f}-{rt.max():.3f})")
        return text
