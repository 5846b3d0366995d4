"""Measuring on a host whose speed swings: the same configs in several passes, fastest kept.

On the lent VMs the host's own speed moves 10-40 % within seconds and in-guest detectors cannot
see it (README, *What is missing*). Windows taken back to back share the slow spell, so a row's
own window CV stays low while the row is 1.3x slow; repeats spread through time do not. In
a round-robin study (30 configs x 16 rounds on a noisy host) two halves
of the rounds agreed to a median 22.8 % with one window per config and 3.7 % with the fastest of
8 windows. :func:`run_passes` turns that into a campaign: pass ``p`` measures the configs in
``OUT/pass<p>/`` (its own part files, resumable, its own seeded order, so one config's passes lie
a whole pass apart); passes after the first measure only the configs the first measured ``ok``.
:func:`combine_passes` makes one row per config: the row of the pass with the lowest
``latency_ms`` (latency, energy, quality and time of that pass), the first pass's memory, and
``latency_passes`` / ``latency_pass_spread`` (median over passes / fastest - 1).
:func:`pass_agreement` is the data's own noise check: the fastest of the first half of the
passes against the fastest of the second half. :func:`carb_lib.measure.campaign.merge_parts` combines a
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
import time
from pathlib import Path
from typing import Any

import pandas as pd

from carb_lib.families.space import add_config_ids
from carb_lib.measure.campaign_parts import (  # noqa: F401  (pass reading lives beside the part files)
    MEMORY_COLUMNS,
    PASS_COLUMN,
    RESULTS_PREFIX,
    PassAgreement,
    combine_passes,
    latency_matrix,
    latency_spread,
    merge_passes,
    pass_agreement,
    pass_dirs,
    read_parts,
    read_passes,
)
from carb_lib.measure.protocol import Protocol

__all__ = ["MEMORY_COLUMNS", "PASS_COLUMN", "PassAgreement", "combine_passes",
           "latency_matrix", "latency_spread", "merge_passes", "pass_agreement", "pass_dirs",
           "read_passes", "run_passes", "save_pass_rows"]

logger = logging.getLogger("carb.passes")


def save_pass_rows(folder: str | Path, path: str | Path) -> None:
    """Every pass's rows of a campaign folder in one Parquet table with a :data:`PASS_COLUMN`
    (kept beside the merged dataset for the protocol checks; :func:`read_passes` reads it)."""
    frames = read_passes(folder)
    pd.concat([f.assign(**{PASS_COLUMN: p}) for p, f in enumerate(frames)]).to_parquet(path)


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

    Pass 0 is :func:`carb_lib.measure.campaign.run_campaign` of ``configs`` with ``protocol`` and
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
    list of carb_lib.measure.campaign.CampaignResult
        One per pass run.

    Raises
    ------
    ValueError
        ``n_passes < 1``, or ``out_dir`` already holds single-pass part files.
    """
    from carb_lib.measure.campaign import run_campaign

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

            ids = configs if "config_id" in configs.columns else add_config_ids(configs)
            todo = ids[ids["config_id"].isin(ok_ids)].reset_index(drop=True)
            if not len(todo):
                break
    if (agree := pass_agreement(read_passes(out))) is not None:
        logger.info(agree.summary())
    return results
