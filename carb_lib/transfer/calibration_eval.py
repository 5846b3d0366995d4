"""Host calibration evaluated on stored campaigns of one CPU (notebook 02).

Campaigns of one CPU timed under one protocol (same thread count, same heap) at different
times: a model of each campaign predicts every other one, raw and host-calibrated
(:func:`carb_lib.transfer.calibration.campaign_calibration`: the product's ``ladder`` of the
model's own rows, the other campaign's first reference rows, or a few of its configs), with
median APE, share within +-10 % and interval coverage. :func:`summarise_pairs` averages the
seeds of each ordered pair and gives the change of median APE against no calibration with a
bootstrap interval over the pairs; :func:`calibration_claims` makes it a claims row of our
targets (host calibration lowers the median APE).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from carb_lib.core.claims import CLAIM_COLUMNS, TARGET_COLUMNS
from carb_lib.dataset.catalog import DESIGN, load_catalog
from carb_lib.dataset.schema import read_dataset
from carb_lib.families._base import DEFAULT_FAMILY
from carb_lib.transfer.calibration import campaign_calibration
from carb_lib.transfer.rows import prepare_rows

__all__ = ["CAMPAIGNS", "CALIBRATION_TARGET_SOURCE", "calibration_claims", "campaign_pairs",
           "load_campaigns", "summarise_pairs"]

#: The stored Xeon 167 campaigns timed under one protocol (1 thread, default heap), named
#: ``<platform>`` (its design campaign) or ``<platform>_<campaign>`` in the catalog.
CAMPAIGNS: tuple[str, ...] = ("cpu_xeon_gnr_2c", "cpu_xeon_gnr_2c_rest", "cpu_xeon_gnr_2c_joint",
                              "cpu_xeon_gnr_2c_heap_pair_default")
#: Where the target of :func:`calibration_claims` is stated.
CALIBRATION_TARGET_SOURCE = "project target for host calibration (docs/transfer.md)"
#: The calibration the claim judges: the one ``carb predict --calibrate`` times.
PRODUCT_CALIBRATION = "ladder"


def _protocol(rows: pd.DataFrame) -> tuple:
    threads = tuple(sorted(rows["threads"].dropna().astype(int).unique())) \
        if "threads" in rows.columns else ()
    heap = tuple(sorted(rows["heap_kept"].fillna(False).astype(bool).unique())) \
        if "heap_kept" in rows.columns else (False,)
    return threads, heap


def load_campaigns(data_dir: str | Path | None = None, names: Sequence[str] = CAMPAIGNS,
                   ) -> dict[str, tuple[pd.DataFrame, pd.DataFrame | None]]:
    """``{name: (ok rows with static features, reference rows or None)}`` of the campaigns
    ``names``: ``<platform>`` is that platform's design campaign, ``<platform>_<campaign>`` the
    campaign ``<campaign>``; their ResNet ``rows`` and ``reference`` files come from the
    catalog (:mod:`carb_lib.dataset.catalog`; ``data_dir``: a folder whose ``catalog.yaml`` is
    asked in place of the shipped one).

    Raises
    ------
    ValueError
        A campaign is not catalogued or its file is absent, or the campaigns differ in thread
        count or heap (a host factor between them would mix the protocol with the host's speed).
    """
    cat = load_catalog(shipped=None if data_dir is None else Path(data_dir) / "catalog.yaml")

    def campaign_files(name: str, role: str) -> list[Path]:
        for plat in sorted(cat.platforms(), key=len, reverse=True):
            if name == plat or name.startswith(f"{plat}_"):
                camp = DESIGN if name == plat else name[len(plat) + 1:]
                return cat.files(plat, camp, role, DEFAULT_FAMILY)
        return []

    out: dict[str, tuple[pd.DataFrame, pd.DataFrame | None]] = {}
    seen: dict[tuple, str] = {}
    for name in names:
        paths = campaign_files(name, "rows")
        if not paths:
            raise ValueError(f"campaign {name!r} has no ResNet rows in the catalog "
                             f"({', '.join(map(str, cat.sources))})")
        if not paths[0].exists():
            raise ValueError(f"campaign {name!r}: {paths[0]} is absent")
        rows = prepare_rows(read_dataset(paths[0]))
        seen.setdefault(_protocol(rows), name)
        refs = [p for p in campaign_files(name, "reference") if p.exists()]
        out[name] = (rows, pd.read_parquet(refs[0]) if refs else None)
    if len(seen) > 1:
        said = "; ".join(f"{n}: threads {t}, heap kept {h}" for (t, h), n in seen.items())
        raise ValueError(f"the campaigns were timed under different protocols ({said}): "
                         "compare campaigns of one thread count and heap")
    return out


def campaign_pairs(campaigns: Mapping[str, tuple[pd.DataFrame, pd.DataFrame | None]], *,
                   seeds: int = 5, max_rows: int | None = None, **kwargs) -> pd.DataFrame:
    """:func:`~carb_lib.transfer.calibration.campaign_calibration` for every ordered pair of
    ``campaigns`` (model of the first, calibrated and scored on the second), with
    ``model_campaign`` and ``other_campaign`` columns. ``max_rows``: each campaign's rows
    sampled down to this many (seeded), for quick runs."""
    def cut(rows: pd.DataFrame) -> pd.DataFrame:
        if max_rows is None or len(rows) <= max_rows:
            return rows
        return rows.sample(max_rows, random_state=0).reset_index(drop=True)

    parts = []
    for a, (rows_a, _) in campaigns.items():
        for b, (rows_b, ref_b) in campaigns.items():
            if a == b:
                continue
            r = campaign_calibration(cut(rows_a), cut(rows_b), ref_b, seeds=seeds, **kwargs)
            parts.append(r.assign(model_campaign=a, other_campaign=b))
    out = pd.concat(parts, ignore_index=True)
    first = ["model_campaign", "other_campaign"]
    return out[first + [c for c in out.columns if c not in first]]


def summarise_pairs(pairs: pd.DataFrame, *, n_boot: int = 2000,
                    random_state: int = 0) -> pd.DataFrame:
    """Per calibration: ``n_pairs``, the mean over pairs (each pair's mean over seeds) of
    ``median_ape_pct``, ``within_10pct``, ``coverage``, the share of seeds where the factor was
    ``applied``, and ``ape_change_pp`` (median APE minus that of no calibration, percentage
    points, paired by pair and seed) with its 95 % bootstrap percentile interval over the
    ordered pairs (``ape_change_ci_low`` / ``_high``)."""
    per_pair = (pairs.assign(applied=pairs["applied"].astype(float))
                .groupby(["calibration", "model_campaign", "other_campaign"], sort=False)
                [["median_ape_pct", "within_10pct", "coverage", "applied", "factor"]].mean()
                .reset_index())
    base = per_pair[per_pair["calibration"] == "none"].set_index(
        ["model_campaign", "other_campaign"])["median_ape_pct"]
    rng = np.random.default_rng(random_state)
    rows = []
    for cal, g in per_pair.groupby("calibration", sort=False):
        d = (g.set_index(["model_campaign", "other_campaign"])["median_ape_pct"]
             - base).dropna().to_numpy(float)
        boot = (rng.choice(d, (n_boot, len(d))).mean(axis=1) if len(d) > 1
                else np.full(1, np.nan))
        rows.append({"calibration": cal, "n_pairs": len(g),
                     "n_seeds": int(pairs.loc[pairs["calibration"] == cal, "seed"].nunique()),
                     "median_ape_pct": g["median_ape_pct"].mean(),
                     "within_10pct": g["within_10pct"].mean(),
                     "coverage": g["coverage"].mean(),
                     "nominal": float(pairs["nominal"].iloc[0]),
                     "applied_share": g["applied"].mean(),
                     "factor_median": g["factor"].median(),
                     "ape_change_pp": float(d.mean()) if len(d) else np.nan,
                     "ape_change_ci_low": float(np.quantile(boot, 0.025)),
                     "ape_change_ci_high": float(np.quantile(boot, 0.975))})
    return pd.DataFrame(rows)


def calibration_claims(summary: pd.DataFrame, platform: str = "cpu_xeon_gnr_2c") -> pd.DataFrame:
    """One claims row of our targets: the product's calibration (``ladder``) lowers the median
    APE of a model of one campaign on another campaign of the same CPU (change <= 0
    percentage points, judged on its bootstrap interval over the campaign pairs)."""
    s = summary[summary["calibration"] == PRODUCT_CALIBRATION]
    ok = len(s) == 1 and bool(np.isfinite(s["ape_change_pp"].iloc[0]))
    r = s.iloc[0] if ok else None
    row = {"claim_id": "host_calibration_ape_change_pp",
           "claim": "host calibration (the model's ladder, timed on another campaign of the same "
                    "CPU) lowers the median APE (percentage points)",
           "paper_value": None, "target_value": 0.0,
           "target_source": CALIBRATION_TARGET_SOURCE,
           "our_value": float(r["ape_change_pp"]) if ok else None,
           "our_ci_low": float(r["ape_change_ci_low"]) if ok else None,
           "our_ci_high": float(r["ape_change_ci_high"]) if ok else None,
           "platform": platform, "n": int(r["n_pairs"]) if ok else 0, "testable": ok,
           "reason": (f"model of one stored campaign, factor from the other campaign's timings "
                      f"of the model's ladder, scored on that campaign's other rows; mean over "
                      f"{int(r['n_pairs'])} ordered campaign pairs of one protocol" if ok else
                      "fewer than two campaigns of one protocol")}
    return pd.DataFrame([row], columns=[*CLAIM_COLUMNS, "our_ci_low", "our_ci_high",
                                        *TARGET_COLUMNS])
