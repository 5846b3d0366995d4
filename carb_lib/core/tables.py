"""The one reader and writer of tables (.csv / .parquet), with clear errors.

The suffix decides the format (:func:`table_format`: ``.csv``; ``.parquet`` or ``.pq``). A
file whose content does not match its suffix (a Parquet file named ``.csv`` is recognised by
its magic bytes), an empty file, a folder or an unknown suffix is one :class:`TableError`
naming the file, never a parser traceback; a missing file is a :class:`MissingTableError`
(also a ``FileNotFoundError``).

Writes are atomic (:func:`atomic_write`: a temporary file in the same folder, fsync,
``os.replace``, fsync of the folder): a crash leaves the old file or the new one, never half
a file. With ``backup=True`` the previous version is kept as a numbered backup
(``<name>.bak``, ``<name>.bak.1``, ...: :func:`next_backup_path`), never written over an
older one; ``backup="rolling"`` (``carb merge`` extending its own dataset) replaces
``<name>.bak``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pandas as pd

__all__ = [
    "SUFFIXES", "MissingTableError", "TableError", "atomic_write", "atomic_write_parquet",
    "backup_path", "clean_temporary_files", "next_backup_path", "read_table", "table_format", "write_table",
]  # fmt: skip

#: The suffixes to name a table with (``.pq`` is read as Parquet too).
SUFFIXES: tuple[str, ...] = (".csv", ".parquet")
_FORMATS: dict[str, str] = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
_PARQUET_MAGIC = b"PAR1"


class TableError(ValueError):
    """A table cannot be read or written; the message names the file and why."""


class MissingTableError(TableError, FileNotFoundError):
    """The table file does not exist (a :class:`TableError` and a ``FileNotFoundError``)."""


def table_format(path: str | Path, what: str = "table") -> str:
    """``"csv"`` or ``"parquet"`` from the suffix of ``path``.

    Raises
    ------
    TableError
        For any other suffix (the message lists the supported ones).
    """
    path = Path(path)
    fmt = _FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise TableError(f"{what} {path}: unsupported suffix {path.suffix!r}; use .csv or .parquet")
    return fmt


def read_table(
    path: str | Path, what: str = "table", allow_empty: bool = False, text_columns=()
) -> pd.DataFrame:
    """Read a ``.csv`` or ``.parquet`` file (by suffix).

    Parameters
    ----------
    path : str or Path
    what : str
        How the messages name the file (``"--data"``, ``"config list"``).
    allow_empty : bool
        Return a table without rows instead of raising.
    text_columns : iterable of str
        Columns a CSV file holds as text even where the values look like numbers (e.g.
        ``config_id``: ``"0123456789012345"``); absent ones are ignored.

    Raises
    ------
    MissingTableError
        No such file.
    TableError
        A folder, an unknown suffix, a Parquet file named ``.csv``, unreadable content, or
        no rows.
    """
    path = Path(path)
    if not path.exists():
        raise MissingTableError(f"{what} {path}: no such file")
    if path.is_dir():
        raise TableError(f"{what} {path} is a folder; give a .csv or .parquet file")
    fmt = table_format(path, what)
    if fmt == "csv" and _magic(path) == _PARQUET_MAGIC:
        raise TableError(
            f"{what} {path}: cannot read as csv: it looks like a Parquet file named .csv; "
            "rename it .parquet"
        )
    try:
        if fmt == "parquet":
            df = pd.read_parquet(path)
        else:
            df = pd.read_csv(path, dtype=dict.fromkeys(text_columns, "string"))
    except Exception as exc:
        first = " ".join(str(exc).split())[:200]
        raise TableError(f"{what} {path}: cannot read as {fmt}: {first}") from None
    if len(df) == 0 and not allow_empty:
        raise TableError(f"{what} {path}: no rows")
    return df


def _magic(path: Path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(4)


# --------------------------------------------------------------------------- writing
def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. Windows
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def backup_path(path: str | Path) -> Path:
    """The newest backup of ``path`` that a write with ``backup=True`` kept (``<name>.bak``,
    then ``<name>.bak.1``, ``<name>.bak.2``, ...); ``<name>.bak`` when there is none."""
    path = Path(path)
    found = [p for p in _backups(path) if p.exists()]
    return found[-1] if found else path.with_name(path.name + ".bak")


def _backups(path: Path):
    """``<name>.bak``, ``<name>.bak.1``, ... up to the first that does not exist."""
    yield path.with_name(path.name + ".bak")
    n = 1
    while True:
        nxt = path.with_name(f"{path.name}.bak.{n}")
        yield nxt
        if not nxt.exists():
            return
        n += 1


def next_backup_path(path: str | Path) -> Path:
    """Where the next backup of ``path`` goes: the first of ``<name>.bak``, ``<name>.bak.1``,
    ... that does not exist (a backup is never overwritten)."""
    path = Path(path)
    return next(p for p in _backups(path) if not p.exists())


def clean_temporary_files(folder: str | Path) -> list[Path]:
    """Remove ``.tmp-*`` files that an interrupted atomic write left in ``folder``; returns
    them. Call only while no writer is active in the folder (e.g. holding its lock)."""
    removed = []
    for f in Path(folder).glob(".tmp-*"):
        try:
            f.unlink()
            removed.append(f)
        except OSError:
            pass
    return removed


def _link_new(src: Path, dest: Path) -> None:
    """Make ``dest`` a copy of ``src`` that never replaces an existing ``dest`` (a hard link;
    a copy where the file system has no hard links)."""
    try:
        os.link(src, dest)
    except FileExistsError:
        raise
    except OSError:  # no hard links here (some network and FUSE file systems)
        with open(src, "rb") as fin, open(dest, "xb") as fout:
            shutil.copyfileobj(fin, fout)
        shutil.copystat(src, dest)


def atomic_write(path: str | Path, write: Callable[[IO[bytes]], None],
                 backup: bool | str = False) -> Path:
    """Write ``path`` atomically with ``write(binary file handle)``.

    A temporary ``.tmp-<name>.*`` file in the same folder is written, flushed and fsynced,
    then renamed over ``path`` (``os.replace``) and the folder fsynced. With ``backup``, an
    existing ``path`` is first copied (atomically too) to :func:`next_backup_path` (never over
    an older backup), or with ``backup="rolling"`` to ``<name>.bak``. On any error
    the temporary file is removed and ``path`` is unchanged.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if backup and path.exists():
        rolling = backup == "rolling"
        bak = path.with_name(path.name + ".bak") if rolling else next_backup_path(path)
        tmp_bak = bak.with_name(f".tmp-{bak.name}")
        shutil.copy2(path, tmp_bak)
        if rolling:
            os.replace(tmp_bak, bak)
        else:
            try:
                _link_new(tmp_bak, bak)
            finally:
                os.unlink(tmp_bak)
    fd, tmp = tempfile.mkstemp(prefix=f".tmp-{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; tables are shared files
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(path.parent)
    return path


def atomic_write_parquet(df: pd.DataFrame, path: str | Path, backup: bool | str = False) -> Path:
    """Write ``df`` to ``path`` as Parquet (no index), atomically (see :func:`atomic_write`)."""
    return atomic_write(path, lambda fh: df.to_parquet(fh, index=False), backup=backup)


def write_table(
    df: pd.DataFrame, path: str | Path, what: str = "--out", backup: bool | str = False
) -> Path:
    """Write ``df`` as ``.csv`` or ``.parquet`` (by suffix, no index), atomically.

    Parameters
    ----------
    df : pandas.DataFrame
    path : str or Path
    what : str
        How the messages name the file.
    backup : bool
        Keep the previous version of ``path`` as :func:`backup_path`.

    Raises
    ------
    TableError
        Unknown suffix or a folder as the path (nothing is written).
    """
    path = Path(path)
    if path.is_dir():
        raise TableError(f"{what} {path} is a folder; give a .csv or .parquet file name")
    if table_format(path, what) == "parquet":
        return atomic_write_parquet(df, path, backup=backup)

    def write_csv(fh: IO[bytes]) -> None:
        df.to_csv(fh, index=False)

    return atomic_write(path, write_csv, backup=backup)
