"""Measuring on a host whose speed swings: the same configs in several passes, fastest kept.

On the lent VMs the host's own speed moves 10-40 % within seconds and in-guest detectors cannot
see it (README, *What is missing*). Windows taken back to back share the slow spell, so a row's
own window CV stays low while the row is 1.3x slow; repeats spread through time do not. In
``scripts/host_noise_roundrobin.py``'s study (30 configs x 16 rounds on a noisy host) two halves
of the rounds agreed to a median 22.8 % with one window per config and 3.7 % with the fastest of
8 windows. :func:`run_passes` turns that into a campaign: pass ``p`` measures the configs in
``OUT/pass<p>/`` (its own part files, resumable, its own seeded order, so one config's passes lie
a whole pass apart); passes after the first measure only the configs the first measured ``ok``.
:func:`combine_passes` makes one row per config: the row of the pass with the lowest
``latency_ms`` (latency, energy, quality and time of that pass), the first pass's memory, and
``latency_passes`` / ``latency_pass_spread`` (median over passes / fastest - 1).
:func:`pass_agreement` is the data's own noise check: the fastest of the first half of the
passes against the fastest of the second half. :func:`carb_lib.campaign.merge_parts` combines a
folder of passes by itself, so ``carb merge OUT data.parquet`` works as for one pass.

Examples
--------
>>> import pandas as pd
>>> p0 = pd.DataFrame({"config_id": ["a", "b"], "status": ["ok", "ok"],
...                    "latency_ms": [10.0, 20.0], "peak_mem_mib": [1.0, 2.0]})
>>> p1 = p0.assign(latency_ms=[12.0, 18.0], peak_mem_mib=float("nan"))
>>> combine_passes([p0, p1])[["config_id", "latency_ms", "peak_mem_mib", "latency_passes"]]
  config_id  latency_ms  peak_mem_mib  latency_passes
0         a        10.0           1.0               2
1         b        18.0           2.0               2
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["MEMORY_COLUMNS", "PASS_COLUMN", "PassAgreement", "combine_passes",
           "latency_matrix", "latency_spread", "merge_passes", "pass_agreement", "pass_dirs",
           "read_passes", "run_passes", "save_pass_rows"]

logger = logging.getLogger("carb.passes")

#: Columns taken from the first pass (peak memory does not depend on the host's speed).
MEMORY_COLUMNS = ("peak_mem_mib", "peak_reserved_mib", "nvml_proc_mem_mib")
_PASS_DIR = re.compile(r"^pass(\d+)$")
#: The column of :func:`save_pass_rows`' table that says which pass a row is from.
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
    """Each pass's result rows: ``carb_lib.campaign_parts.read_parts`` of every pass folder of
    a campaign folder, or, when ``source`` is a file, the table :func:`save_pass_rows` wrote
    (split by its :data:`PASS_COLUMN`)."""
    from carb_lib.campaign_parts import read_parts

    if Path(source).is_file():
        rows = pd.read_parquet(source)
        return [g.drop(columns=PASS_COLUMN) for _, g in rows.groupby(PASS_COLUMN, sort=True)]
    return [read_parts(p) for p in pass_dirs(source)]


def save_pass_rows(folder: str | Path, path: str | Path) -> None:
    """Every pass's rows of a campaign folder in one Parquet table with a :data:`PASS_COLUMN`
    (kept beside the merged dataset for the protocol checks; :func:`read_passes` reads it)."""
    frames = read_passes(folder)
    pd.concat([f.assign(**{PASS_COLUMN: p}) for p, f in enumerate(frames)]).to_parquet(path)


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
    """One row per config from the rows of several passes (see the module docstring).

    A config whose first pass is not ``ok`` (oom, error, skipped) keeps that row as it is. A
    config that only later passes hold (:func:`run_passes` never leaves one) keeps its
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
        logger.info(agree.summary())
    return combine_passes(frames)


def run_passes(
    configs: pd.DataFrame,
    out_dir: str | Path,
    n_passes: int,
    device: Any = "cpu",
    protocol: Any = None,
    *,
    seed: int = 0,
    time_budget_s: float | None = None,
    **campaign: Any,
) -> list[Any]:
    """Measure ``configs`` in ``n_passes`` passes into ``out_dir/pass<p>/``.

    Pass 0 is :func:`carb_lib.campaign.run_campaign` of ``configs`` with ``protocol`` and
    ``seed``; pass ``p`` measures the configs pass 0 measured ``ok``, in the order of seed
    ``seed + p``, with the same protocol. A time budget is shared: pass ``p`` gets the
    time left divided by the passes left (so pass 0 sets how many configs all passes measure).
    Rerunning resumes every pass. At the end the halves check (:func:`pass_agreement`) of
    every pass so far is logged.

    Parameters
    ----------
    configs : pandas.DataFrame
    out_dir : path
        The campaign folder; it must not hold part files of a single-pass campaign.
    n_passes : int
        At least 1 (1: the same as ``run_campaign`` into ``out_dir/pass0``).
    device, protocol
        As for ``run_campaign``.
    seed : int, default 0
    time_budget_s : float, optional
        For all passes together.
    **campaign
        Further keyword arguments of ``run_campaign`` (``platform``, ``ref_every``, ...).

    Returns
    -------
    list of carb_lib.campaign.CampaignResult
        One per pass run.

    Raises
    ------
    ValueError
        ``n_passes < 1``, or ``out_dir`` already holds single-pass part files.
    """
    from carb_lib.campaign import run_campaign
    from carb_lib.campaign_parts import RESULTS_PREFIX, read_parts
    from carb_lib.protocol import Protocol

    if n_passes < 1:
        raise ValueError(f"--passes must be >= 1, got {n_passes}")
    out = Path(out_dir)
    if out.is_dir() and any(out.glob(f"{RESULTS_PREFIX}-*.parquet")):
        raise ValueError(f"{out} holds the part files of a single-pass campaign; give the passes "
                         "their own --out")  # fmt: skip
    protocol = protocol or Protocol()
    t0 = time.perf_counter()
    results = []
    todo = configs
    for p in range(n_passes):
        left = None
        if time_budget_s is not None:
            left = (time_budget_s - (time.perf_counter() - t0)) / (n_passes - p)
            if left <= 0:
                logger.info("[passes] time budget spent before pass %d", p)
                break
        logger.info("[passes] pass %d of %d: %d configs", p + 1, n_passes, len(todo))
        results.append(run_campaign(todo, out / f"pass{p}", device, protocol, seed=seed + p,
                                    time_budget_s=left, desc=f"pass {p + 1}/{n_passes}",
                                    **campaign))  # fmt: skip
        if p == 0:
            first = read_parts(out / "pass0")
            ok_ids = set(first.loc[first["status"] == "ok", "config_id"]) if len(first) else set()
            from carb_lib.space import add_config_ids

            ids = configs if "config_id" in configs.columns else add_config_ids(configs)
            todo = ids[ids["config_id"].isin(ok_ids)].reset_index(drop=True)
            if not len(todo):
                break
    if (agree := pass_agreement(read_passes(out))) is not None:
        logger.info(agree.summary())
    return results
