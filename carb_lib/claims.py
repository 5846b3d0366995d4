"""The shared claims table ``results/claims.csv`` (and ``claims_synthetic.csv``).

Every notebook that tests a number of the paper writes its rows here: characterization (01),
transfer (02), CARB (03), screening (04). One row per ``(claim_id, platform)``.

Columns
-------
Required (:data:`CLAIM_COLUMNS`): ``claim_id``, ``claim`` (the paper's statement),
``paper_value`` (the paper's *reported* number), ``our_value``, ``platform``, ``n``,
``testable`` (bool), ``reason`` (why not testable, or how comparable). Optional
(:data:`OPTIONAL_CLAIM_COLUMNS`): ``our_ci_low``, ``our_ci_high``, ``dataset``, ``method``,
``source``. Any other column is kept, after these.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from carb_lib.tables import atomic_write

#: Columns every claim row has (missing ones are added empty by :func:`merge_claims`).
CLAIM_COLUMNS: list[str] = [
    "claim_id",
    "claim",
    "paper_value",
    "our_value",
    "platform",
    "n",
    "testable",
    "reason",
]
#: Optional columns some notebooks add (confidence interval, provenance).
OPTIONAL_CLAIM_COLUMNS: list[str] = ["our_ci_low", "our_ci_high", "dataset", "method", "source"]
#: Column order of the written table (required and optional columns; others follow).
COLUMN_ORDER: list[str] = [
    "claim_id",
    "claim",
    "paper_value",
    "our_value",
    "our_ci_low",
    "our_ci_high",
    "platform",
    "dataset",
    "n",
    "testable",
    "reason",
    "method",
    "source",
]
KEY: tuple[str, str] = ("claim_id", "platform")


def merge_claims(path: str | Path, rows: pd.DataFrame | Iterable[Mapping]) -> pd.DataFrame:
    """Merge claim rows into the CSV at ``path`` by ``(claim_id, platform)``.

    Rows already in the file with another key (other notebooks, other platforms) are kept;
    rows with the same key are replaced by the new ones (within ``rows``, the last of a key
    wins). Missing :data:`CLAIM_COLUMNS` are added empty, extra columns are kept. The table is
    sorted by key and written atomically (:func:`carb_lib.tables.atomic_write`): an error
    leaves the old file as it was and no partial file behind.

    Parameters
    ----------
    path : str or Path
        The claims CSV (created with its folder if absent; an empty file counts as absent).
    rows : DataFrame or iterable of mappings
        New claim rows; each needs ``claim_id`` and ``platform``.

    Returns
    -------
    pandas.DataFrame
        The merged table as written.

    Raises
    ------
    TypeError
        If the arguments come in the order ``(rows, path)``.
    KeyError
        If ``rows`` lack a ``claim_id`` or ``platform`` column.
    """
    if isinstance(path, (pd.DataFrame, list, tuple)):
        raise TypeError("merge_claims takes (path, rows): path first, then the claim rows")
    path = Path(path)
    new = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    for col in KEY:
        if col not in new.columns:
            raise KeyError(f"claim rows need a {col!r} column (columns: {list(new.columns)})")
    frames = []
    if path.is_file() and path.stat().st_size > 0:
        frames.append(pd.read_csv(path))
    frames.append(new)
    merged = pd.concat(frames, ignore_index=True)
    for col in CLAIM_COLUMNS:
        if col not in merged.columns:
            merged[col] = None
    # a missing platform (None in memory, NaN once read back from the CSV) is one key
    platform = merged["platform"].astype(object).where(merged["platform"].notna(), "")
    key = merged["claim_id"].astype(str) + "\x00" + platform.astype(str)
    merged = merged.loc[~key.duplicated(keep="last")]
    cols = [c for c in COLUMN_ORDER if c in merged.columns]
    cols += [c for c in merged.columns if c not in cols]
    merged = merged[cols].sort_values(list(KEY), kind="stable").reset_index(drop=True)
    atomic_write(path, lambda fh: merged.to_csv(fh, index=False))
    return merged


__all__ = ["CLAIM_COLUMNS", "OPTIONAL_CLAIM_COLUMNS", "COLUMN_ORDER", "KEY", "merge_claims"]
