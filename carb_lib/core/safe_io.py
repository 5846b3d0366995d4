"""The one rule for every file a command writes (``--out``, ``merge``'s OUT, ``publish --dest``,
``audit --out``, ``kernels --out``).

* An output is never the same file as an input of the command (:func:`check_output` refuses
  ``carb fit --data d.parquet --out d.parquet``).
* An existing file is replaced only if it is a previous output of the same command (the
  caller's ``own`` test, e.g. a CARB model file for ``fit``); anything else is refused unless
  ``--force`` is given, and then the previous file is kept as a numbered backup
  (``<name>.bak``, ``<name>.bak.1``, ...), never written over an older backup.
* The checkout's ``data/``, ``results/`` and ``figures/`` (:data:`PROTECTED`) hold what the
  study ships; a command writes there only if it owns the folder (``owns``): ``reproduce``
  owns ``results/`` and ``figures/``; ``merge``, ``kernels`` and ``convert-help`` own
  ``data/`` (their output path is always named by the user). Every other command refuses a
  path inside them, whatever ``--force``.
* A command that writes several files (a shortlist, its ``_front`` and ``_summary.json``)
  checks all of them first, prepares every byte, then renames them in
  (:func:`write_set`): an error in the inputs leaves none of them written.
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
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO

from carb_lib.core.tables import _fsync_dir, _link_new, _umask, next_backup_path, table_format

__all__ = [
    "PROTECTED", "PUBLISHED", "OutputError", "check_area", "check_folder", "check_output",
    "check_outputs", "check_publish_dest", "checkout_root", "publish_fresh", "same_file",
    "swap_folder", "table_bytes", "table_columns", "table_with", "write_set",
]

#: Folders of the checkout that hold what the study ships (refused to commands that do not
#: own them: :func:`check_area`).
PROTECTED: tuple[str, ...] = ("data", "results", "figures")


class OutputError(ValueError):
    """An output path breaks the rule; the message names the option, the path and why."""


def checkout_root() -> Path | None:
    """The repository checkout CARB runs from (the folder holding ``pyproject.toml`` and
    ``carb_lib/``), or None for an installed package."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "carb_lib").is_dir() else None


def check_area(path: str | Path, option: str = "--out", *, owns: Iterable[str] = (),
               command: str = "this command") -> None:
    """Refuse ``path`` inside the checkout's ``data/``, ``results/`` or ``figures/`` unless
    ``command`` owns that folder (``owns``, e.g. ``("data",)`` for ``carb merge``).

    Raises
    ------
    OutputError
        Naming the option, the path and the folder.
    """
    root = checkout_root()
    if root is None:
        return
    target = Path(path).resolve()
    for area in PROTECTED:
        base = (root / area).resolve()
        if area not in owns and (target == base or base in target.parents):
            raise OutputError(
                f"{option} {path} is inside the checkout's {area}/, which holds what the study "
                f"ships and {command} does not write; choose a path outside data/, results/ "
                "and figures/")


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
    owns: Iterable[str] = (),
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
    owns : iterable of str
        The :data:`PROTECTED` folders the command may write into (:func:`check_area`).

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
    check_area(path, option, owns=owns, command=command)
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
            f"replace it (pass --force to replace it, keeping {next_backup_path(path).name})")
    return True


def check_outputs(
    paths: Iterable[str | Path],
    option: str = "--out",
    **kw,
) -> set[Path]:
    """:func:`check_output` for each file of a set a command writes together; returns the
    files whose write must keep a backup (for :func:`write_set`)."""
    return {Path(p) for p in paths if check_output(p, option, **kw)}


def table_bytes(df, path: str | Path) -> Callable[[IO[bytes]], None]:
    """A writer of ``df`` as ``path``'s format (``.csv``/``.parquet``, no index) for
    :func:`write_set`; an unknown suffix is refused now."""
    if table_format(path, "--out") == "parquet":
        return lambda fh: df.to_parquet(fh, index=False)
    return lambda fh: df.to_csv(fh, index=False)


def write_set(files: Mapping[str | Path, Callable[[IO[bytes]], None] | bytes | str],
              backup: Iterable[str | Path] | bool = ()) -> list[Path]:
    """Write a command's set of files all or none: every file is first written in full to a
    temporary file beside it (an error there removes them all and leaves every target as it
    was), then each is renamed over its target, keeping a numbered backup of the targets in
    ``backup`` (or of every existing target with ``backup=True``). Returns the paths."""
    items = [(Path(p), w) for p, w in files.items()]
    keep = ({p for p, _ in items} if backup is True else
            set() if backup is False else {Path(b) for b in backup})
    temps: list[Path] = []
    try:
        for path, w in items:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".tmp-{path.name}.", dir=path.parent)
            temps.append(Path(tmp))
            with os.fdopen(fd, "wb") as fh:
                if callable(w):
                    w(fh)
                else:
                    fh.write(w.encode() if isinstance(w, str) else w)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o666 & ~_umask())
        for (path, _), tmp in zip(items, temps, strict=True):
            if path in keep and path.exists():
                _link_new(path, next_backup_path(path))
            os.replace(tmp, path)
    except BaseException:
        for tmp in temps:
            try:
                tmp.unlink()
            except OSError:
                pass
        raise
    for folder in {p.parent for p, _ in items}:
        _fsync_dir(folder)
    return [p for p, _ in items]


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
    owns: Iterable[str] = (),
    command: str = "this command",
    create: bool = True,
) -> Path:
    """Check an output folder before any work starts: not an input (nor inside one, nor
    holding one), not inside a :data:`PROTECTED` folder the command does not own, not a
    file, and writable (created if missing, unless ``create`` is False). Returns the
    folder."""
    folder = Path(folder)
    check_area(folder, option, owns=owns, command=command)
    for in_option, in_path in inputs:
        if in_path is None:
            continue
        a, b = folder.resolve(), Path(in_path).resolve()
        if a == b or b in a.parents or a in b.parents:
            raise OutputError(f"{option} {folder} overlaps {in_option} {in_path}: CARB never "
                              "writes into its input; choose another folder")
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"{option} {folder} is a file; give a folder")
    if not create and not folder.exists():
        existing = next((p for p in folder.parents if p.exists()), Path("."))
        if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
            raise OutputError(f"{option} {folder}: cannot create the folder in {existing}")
        return folder
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
        pages = _published_pages(dest)
        foreign = sorted(str(p.relative_to(dest)) for p in dest.rglob("*")
                         if not (p.is_file() and p.parent == dest
                                 and any(p.match(g) for g in PUBLISHED)
                                 and (p.suffix != ".html" or p.name in pages)))
        if foreign:
            raise OutputError(
                f"--dest {dest} holds files publish did not write ({', '.join(foreign[:3])}"
                f"{', ...' if len(foreign) > 3 else ''}); refusing to replace it: choose an "
                "empty or new folder")


def _published_pages(dest: Path) -> set[str]:
    """The pages an earlier publish wrote into ``dest``: ``index.html`` and the pages its
    ``pages.json`` lists (none without a readable ``pages.json``: a user's ``*.html``)."""
    import json

    try:
        listed = json.loads((dest / "pages.json").read_text())
        names = {str(p.get("page") or f"{p['name']}.html") for p in listed}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return set()
    return names | {"index.html"}


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
