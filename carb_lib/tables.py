"""One reader and writer of user tables (.csv / .parquet) with clear errors.

The suffix decides the format; a file whose content does not match its suffix (a Parquet
file named ``.csv``), an empty file, a folder or an unknown suffix is one error naming the
file, never a parser traceback.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

SUFFIXES: tuple[str, ...] = (".csv", ".parquet")


class TableError(ValueError):
    """A table cannot be read or written; the message names the file and why."""


def read_table(path: str | Path, what: str = "table") -> pd.DataFrame:
    """Read a ``.csv`` or ``.parquet`` file (by suffix).

    Raises
    ------
    TableError
        Missing file, a folder, unknown suffix, unreadable content, or no rows.
    """
    path = Path(path)
    if not path.exists():
        raise TableError(f"{what} {path}: no such file")
    if path.is_dir():
        raise TableError(f"{what} {path} is a folder; give a .csv or .parquet file")
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise TableError(f"{what} {path}: unsupported suffix {path.suffix!r}; use .csv or .parquet")
    try:
        df = pd.read_parquet(path) if suffix == ".parquet" else pd.read_csv(path)
    except Exception as exc:
        with open(path, "rb") as fh:
            magic = fh.read(4)
        hint = " (it looks like a Parquet file: rename it .parquet)" if magic == b"PAR1" else ""
        first = " ".join(str(exc).split())[:200]
        raise TableError(f"{what} {path}: cannot read as {suffix[1:]}{hint}: {first}") from None
    if len(df) == 0:
        raise TableError(f"{what} {path}: no rows")
    return df


def write_table(df: pd.DataFrame, path: str | Path, what: str = "--out") -> Path:
    """Write ``df`` as ``.csv`` or ``.parquet`` (by suffix), atomically for Parquet.

    Raises
    ------
    TableError
        Unknown suffix or a folder as the path.
    """
    from carb_lib.dataset import atomic_write_parquet

    path = Path(path)
    suffix = path.suffix.lower()
    if path.is_dir():
        raise TableError(f"{what} {path} is a folder; give a .csv or .parquet file name")
    if suffix not in SUFFIXES:
        raise TableError(f"{what} {path}: unsupported suffix {path.suffix!r}; use .csv or .parquet")
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".parquet":
        return atomic_write_parquet(df, path)
    tmp = path.with_name(f".tmp-{path.name}")
    df.to_csv(tmp, index=False)
    tmp.replace(path)
    return path
