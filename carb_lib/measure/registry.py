"""A measured file's campaign facts, and its registration in a user catalog.

:func:`campaign_facts` reads a campaign's catalog fields (platform, device, ``cpu_id``, families,
protocol, date) from its measured rows; :func:`register_rows` registers a file with them
(:func:`carb_lib.dataset.catalog.register`). ``carb merge``, ``carb kernels`` and ``carb catalog
add`` call it (:mod:`carb_lib.app.catalog_cli`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from carb_lib.dataset.catalog import DESIGN, CatalogError, register
from carb_lib.measure.protocol import rows_protocol

__all__ = ["campaign_facts", "register_rows"]


def campaign_facts(rows: Any, what: str = "the rows") -> dict[str, Any]:
    """A campaign's catalog fields read from its measured rows (a DataFrame of the CARB schema):
    ``platform``, ``device``, ``cpu_id``, ``families``, ``protocol`` (version, threads, heap,
    windows) and ``date`` (the first ``measured_at`` day).

    Raises
    ------
    ValueError
        One line: the rows hold several platforms, CPUs or timing protocols.
    """
    def one(col: str) -> Any:
        if col not in rows.columns:
            return None
        vals = sorted({str(v) for v in rows[col].dropna()})
        if len(vals) > 1:
            raise ValueError(f"{what} hold several values of {col!r} ({', '.join(vals[:4])}): "
                             "register one campaign per platform and CPU")
        return vals[0] if vals else None

    proto = rows_protocol(rows, what)
    day = None
    if "measured_at" in rows.columns:
        stamps = pd.to_datetime(rows["measured_at"], errors="coerce", utc=True).dropna()
        day = stamps.min().strftime("%Y-%m-%d") if len(stamps) else None
    fams = sorted({str(f) for f in rows["family"].dropna()}) if "family" in rows.columns else []
    return {"platform": one("platform"), "device": "cuda" if proto.device == "cuda" else "cpu",
            "cpu_id": one("cpu_id") or "unknown", "families": fams,
            "protocol": {"version": None, "threads": proto.threads,
                         "heap": "kept" if proto.heap_kept else "default",
                         "windows": None},
            "date": day or ""}


def register_rows(path: str | Path, *, role: str = "rows", campaign: str = DESIGN,
                  catalog: str | Path | None = None, note: str = "",
                  facts_from: str | Path | None = None) -> tuple[Path, str]:
    """:func:`register` a Parquet file of measured rows (or of timed operators) with the
    campaign fields read from it (:func:`campaign_facts`), or from the Parquet file
    ``facts_from``. Returns the catalog and the campaign's ``platform/campaign``."""
    source = path if facts_from is None else facts_from
    try:
        rows = pd.read_parquet(source)
    except (OSError, ValueError) as exc:
        raise CatalogError(f"{source}: not a readable Parquet file "
                           f"({' '.join(str(exc).split())[:200]})") from None
    try:
        facts = campaign_facts(rows, str(source))
    except ValueError as exc:
        raise CatalogError(str(exc)) from None
    if not facts["platform"]:
        raise CatalogError(f"{path}: no platform column to register it by")
    fams = tuple(facts["families"]) if role in ("rows", "audit", "reference", "rss", "noise",
                                                "passes") else ()
    cat = register(path, role=role, platform=facts["platform"], campaign=campaign,
                   catalog=catalog, device=facts["device"], cpu_id=facts["cpu_id"],
                   families=fams, protocol=facts["protocol"], date=facts["date"], note=note)
    return cat, f"{facts['platform']}/{campaign}"
