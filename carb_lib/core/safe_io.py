"""The one rule for every file a command writes (``--out``, ``merge``'s OUT, ``publish --dest``,
``audit --out``, ``kernels --out``).

* An output is never the same file as an input of the command (:func:`check_output` refuses
  ``carb fit --data d.parquet --out d.parquet``).
* An existing file is replaced only if it is a previous output of the same command (the
  caller's ``own`` test, e.g. a CARB model file for ``fit``); anything else is refused unless
  ``--force`` is given, and then the previous file is kept as ``<name>.bak``.
* Writes go to a temporary file in the same folder, renamed over the target
  (:func:`carb_lib.core.tables.atomic_write`): a crash or a full disk leaves the old file or the new
  one, never half a file.
* Outputs are checked before any measurement or fit starts, so that a bad path never throws
  work away.

:func:`check_folder` is the same rule for an output folder, and :func:`swap_folder` puts a
freshly written folder in place of an old one.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from carb_lib.core.tables import backup_path

__all__ = [
    "PUBLISHED", "OutputError", "check_folder", "check_output", "check_publish_dest",
    "publish_fresh", "same_file", "swap_folder", "table_columns", "table_with",
]


class OutputError(ValueError):
    """An output path breaks the rule; the message names the option, the path and why."""


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether ``a`` and ``b`` are one file (the same inode when both exist, else the same
    resolved path)."""
    a, b = Path(a), Path(b)
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def check_output(
    path: str | Path,
    option: str = "--out",
    *,
    inputs: Iterable[tuple[str, str | Path | None]] = (),
    own: Callable[[Path], bool] | None = None,
    force: bool = False,
    command: str = "this command",
) -> bool:
    """Check an output file before any work starts.

    Parameters
    ----------
    path : str or Path
        The file the command will write.
    option : str
        How messages name it (``--out``).
    inputs : iterable of (option, path)
        The command's input files; ``None`` paths are skipped.
    own : callable, optional
        ``own(path)`` is True when an existing ``path`` is a previous output of the same
        command (replaced without ``--force``).
    force : bool
        Replace an existing file that is not the command's own (the caller keeps a
        ``.bak``).
    command : str
        The command's name in messages.

    Returns
    -------
    bool
        Whether the write must keep a backup (``--force`` over a file that was not the
        command's own).

    Raises
    ------
    OutputError
        Same file as an input, a folder, a missing or read-only parent, or an existing foreign
        file without ``force``.
    """
    path = Path(path)
    for in_option, in_path in inputs:
        if in_path is not None and same_file(path, in_path):
            raise OutputError(f"{option} {path} is the same file as {in_option} {in_path}: "
                              "CARB never writes over its input; choose another name")
    if path.is_dir():
        raise OutputError(f"{option} {path} is a folder; give a file name")
    parent = path.parent if str(path.parent) else Path(".")
    existing_parent = next((p for p in (parent, *parent.parents) if p.exists()), Path("."))
    if not existing_parent.is_dir():
        raise OutputError(f"{option} {path}: {existing_parent} is a file, not a folder")
    if not os.access(existing_parent, os.W_OK | os.X_OK):
        raise OutputError(f"{option} {path}: folder {existing_parent} is not writable")
    if not path.exists():
        return False
    if own is not None and _is_own(own, path):
        return False
    if not force:
        raise OutputError(
            f"{option} {path} already exists and is not an output of {command}; refusing to "
            f"replace it (pass --force to replace it, keeping {backup_path(path).name})")
    return True


def _is_own(own: Callable[[Path], bool], path: Path) -> bool:
    try:
        return bool(own(path))
    except Exception:  # an unreadable file is not the command's own
        return False


def check_folder(
    folder: str | Path,
    option: str = "--out",
    *,
    inputs: Iterable[tuple[str, str | Path | None]] = (),
) -> Path:
    """Check an output folder before any work starts: not an input (nor inside one, nor
    holding one), not a file, and writable (created if missing). Returns the folder."""
    folder = Path(folder)
    for in_option, in_path in inputs:
        if in_path is None:
            continue
        a, b = folder.resolve(), Path(in_path).resolve()
        if a == b or b in a.parents or a in b.parents:
            raise OutputError(f"{option} {folder} overlaps {in_option} {in_path}: CARB never "
                              "writes into its input; choose another folder")
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"{option} {folder} is a file; give a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{option} {folder}: cannot create the folder ({exc.strerror})") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{option} {folder} is not writable")
    return folder


def swap_folder(fresh: str | Path, dest: str | Path) -> Path:
    """Put the freshly written folder ``fresh`` in place of ``dest`` (two renames in one
    parent folder: ``dest`` is never left empty or half written). Returns ``dest``."""
    fresh, dest = Path(fresh), Path(dest)
    old = None
    if dest.exists():
        old = Path(tempfile.mkdtemp(prefix=f".old-{dest.name}.", dir=dest.parent))
        os.replace(dest, old / dest.name)
    try:
        os.replace(fresh, dest)
    except BaseException:
        if old is not None:
            os.replace(old / dest.name, dest)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return dest


def table_columns(path: str | Path) -> list[str]:
    """The column names of a ``.csv`` or ``.parquet`` file, read from its header only."""
    path = Path(path)
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic == b"PAR1":
        import pyarrow.parquet as pq

        return list(pq.read_schema(path).names)
    import csv

    with open(path, newline="", encoding="utf-8", errors="replace") as fh:
        return next(csv.reader(fh), [])


def table_with(*columns: str) -> Callable[[Path], bool]:
    """An ``own`` test for :func:`check_output`: the existing file is a table holding all of
    ``columns`` (the marks of the command's own output)."""

    def own(path: Path) -> bool:
        return set(columns) <= set(table_columns(path))

    return own


#: What ``carb publish`` writes into ``--dest`` (an existing folder holding anything else is
#: refused).
PUBLISHED: tuple[str, ...] = ("*.html", "summary.json", "pages.json", "claims_vs_paper.csv",
                               "claims_vs_paper_synthetic.csv")


def check_publish_dest(dest: str | Path, run_dir: str | Path) -> None:
    """``publish --dest``: not the run folder (nor inside it, nor holding it), and either new
    or holding only pages an earlier publish wrote (:data:`PUBLISHED`).

    Raises
    ------
    OutputError
        Naming the folder and, for a folder of other files, the first of them.
    """
    dest, run_dir = Path(dest), Path(run_dir)
    a, b = dest.resolve(), run_dir.resolve()
    if a == b or b in a.parents or a in b.parents:
        raise OutputError(f"--dest {dest} overlaps the run folder {run_dir}: publish never "
                          "writes into the run it publishes; choose another folder")
    if dest.exists() and not dest.is_dir():
        raise OutputError(f"--dest {dest} is a file; give a folder")
    if dest.is_dir():
        foreign = sorted(str(p.relative_to(dest)) for p in dest.rglob("*")
                         if not (p.is_file() and p.parent == dest
                                 and any(p.match(g) for g in PUBLISHED)))
        if foreign:
            raise OutputError(
                f"--dest {dest} holds files publish did not write ({', '.join(foreign[:3])}"
                f"{', ...' if len(foreign) > 3 else ''}); refusing to replace it: choose an "
                "empty or new folder")


def publish_fresh(run_dir: str | Path, dest: str | Path,
                  write: Callable[[Path], list[Path]]) -> list[Path]:
    """Publish into a fresh folder beside ``dest`` with ``write(folder)`` and swap it in
    (:func:`swap_folder`): ``dest`` is checked first (:func:`check_publish_dest`) and a
    failing write leaves it as it was. Returns the written paths, under ``dest``."""
    run_dir, dest = Path(run_dir), Path(dest)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"RUN_DIR {run_dir}: no such run folder")
    check_publish_dest(dest, run_dir)
    check_folder(dest.parent, "--dest")
    fresh = Path(tempfile.mkdtemp(prefix=f".new-{dest.name}.", dir=dest.parent))
    try:
        written = write(fresh / "pages")
        swap_folder(fresh / "pages", dest)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
    return [dest / Path(p).name for p in written]
