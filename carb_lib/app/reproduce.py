"""The reproduce runner: execute the study's notebooks with papermill, in order.

``papermill_runs.yaml`` lists, for each named profile (``quick``, ``full``, ``gpu``), the
notebooks in order with their parameters; a ``defaults:`` block (top level, or in a profile)
gives shared parameters once (see :func:`load_runs`). Executed notebooks go to a run folder
(never over the sources).

Where figures and tables go (:data:`OUTPUT_DIRS`): every notebook that has a ``fig_dir`` or
``results_dir`` parameter gets it set by the runner, under one output root. Only the ``full``
profile without parameter overrides writes the shipped ``figures/`` and ``results/``; any other
run (the ``quick`` profile, ``-p name=value`` overrides) writes ``figures/`` and ``results/``
inside its own run folder (``runs/<profile>-<time>/``, gitignored), and ``out_root`` puts them
anywhere. A ``summary.json`` in the run folder holds every value each notebook recorded with
:func:`carb_lib.app.record.glue`, and under ``"_run"`` the commit, the profile, the overrides and
each notebook's parameters.

Each executed notebook is also written as a self-contained HTML page (nbconvert, images
inline with alt texts; no progress bars or recorded-value printouts) beside it, with an
``index.html`` that leads with the commit and the paper's claims against ours
(``claims_vs_paper.csv``, see :mod:`carb_lib.core.claims`) and links the pages: the results can
be read in a browser without running anything (the pages and the index are written by
:mod:`carb_lib.app.reproduce_html`). :func:`publish_run` copies a run's pages into the
repository (``docs/run/``), shrinking the images so that the pages stay small;
:func:`publication_state` says whether the published pages still match the checkout's notebooks
and library.

Each kernel writes its process's own output (its log, and what libraries write to its file
descriptors) to ``<notebook>.kernel.log`` beside the executed notebook
(:func:`kernel_manager_class`), not to the terminal; a run ends with one line
(:func:`closing_line`).

During a run the environment (:data:`RUN_ENV`) tells interactive cells
(:mod:`carb_lib.app.explore`) to show static figures, as an executed notebook has no widget
front-end, and tqdm to draw no progress bar.
"""

from __future__ import annotations

import ast
import fnmatch
import glob as globlib
import json
import logging
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from carb_lib.app.record import read_glued
from carb_lib.app.reproduce_html import (  # noqa: F401 - names of this module before the split
    PROGRESS,
    clean_outputs,
    page_images,
    shrink_images,
    write_html,
    write_index,
)
from carb_lib.dataset.catalog import dataset_name, load_catalog

logger = logging.getLogger("carb.reproduce")

REPO_ROOT = Path(__file__).resolve().parents[2]
#: Output-folder parameters and the folder each names under the output root. The runner sets
#: them for every notebook that has them (a notebook's own default is a scratch folder,
#: ``runs/lab/...``, for runs in JupyterLab).
OUTPUT_DIRS = {"fig_dir": "figures", "results_dir": "results"}
#: The profile whose run (without overrides) writes the shipped figures/ and results/.
SHIPPED_PROFILE = "full"
STATIC_ENV = "CARB_STATIC"  # carb_lib.app.explore.STATIC_ENV (not imported: explore is heavier)
#: Environment of the notebooks' kernels during a run (static explorers, no tqdm bars).
RUN_ENV = {STATIC_ENV: "1", "TQDM_DISABLE": "1"}
#: Suffix of the file, beside each executed notebook, that holds its kernel's own output
#: (:func:`kernel_manager_class`).
KERNEL_LOG = ".kernel.log"
#: A routine log record of a kernel application ("[IPKernelApp] WARNING | ...").
_APP_LOG = re.compile(r"\s*\[\w+\] (DEBUG|INFO|WARNING) \|")


class ReproduceError(RuntimeError):
    """A notebook failed or the run list is invalid; the message names notebook and cell."""


@dataclass(frozen=True)
class NotebookRun:
    """One entry of a profile: the notebook and its parameters.

    ``label`` names a run of an entry expanded over several files (``each``): the notebook's
    stem and the file's, e.g. ``04_screening-gpu_a100``; its figures and tables go to a
    subfolder ``subdir`` (the file's stem) of the output folders.
    """

    notebook: Path
    parameters: dict[str, Any]
    label: str | None = None
    subdir: str | None = None

    @property
    def name(self) -> str:
        return self.label or self.notebook.stem


def notebook_parameters(notebook: str | Path) -> dict[str, Any]:
    """The names and default values of the cell tagged ``parameters`` of ``notebook``.

    A default that is not a Python literal is given as its source text; a notebook without
    such a cell has none.

    Raises
    ------
    ReproduceError
        If that cell is not valid Python.
    """
    import nbformat

    path = Path(notebook)
    if not path.is_absolute():
        path = REPO_ROOT / path
    nb = nbformat.read(str(path), as_version=4)
    cells = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if not cells:
        return {}
    try:
        tree = ast.parse(cells[0].source)
    except SyntaxError as exc:
        raise ReproduceError(f"notebook {notebook}: parameters cell line {exc.lineno}: "
                             f"{exc.msg}") from None
    out: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                out[node.targets[0].id] = ast.get_source_segment(cells[0].source, node.value)
    return out


def parse_overrides(items: list[str] | None) -> dict[str, Any]:
    """Parse ``name=value`` strings (papermill's ``-p``; the value read as YAML, so ``0.25`` is
    a float, ``[5, 10]`` a list, ``null`` None and ``abc`` a string).

    Raises
    ------
    ReproduceError
        If an item has no ``=``, an empty or non-identifier name, or a value that is not YAML.
    """
    out: dict[str, Any] = {}
    for item in items or []:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise ReproduceError(f"-p {item!r}: expected name=value (a parameter name, '=', "
                                 "a YAML value)")
        try:
            out[name] = yaml.safe_load(text) if text.strip() else ""
        except yaml.YAMLError as exc:
            raise ReproduceError(f"-p {item!r}: the value is not YAML: "
                                 f"{' '.join(str(exc).split())[:200]}") from None
    return out


def _expand_glob(pattern: str) -> list[str]:
    """Files matching ``pattern`` (relative to the repository root unless absolute), sorted;
    paths under the root are given relative to it."""
    base = Path(pattern) if Path(pattern).is_absolute() else REPO_ROOT / pattern
    found = sorted(Path(p) for p in globlib.glob(str(base)) if Path(p).is_file())
    return [_display_path(p) for p in found]


def _display_path(path: Path) -> str:
    """``path`` relative to the repository root when inside it (pages name no machine path)."""
    path = Path(path)
    try:
        return path.resolve().relative_to(REPO_ROOT.resolve()).as_posix() or "."
    except ValueError:
        return str(path)


def _is_listing(value: Any) -> bool:
    """``{glob: PATTERN}`` (files) or ``{platforms: PATTERN}`` (catalogued platforms)."""
    return isinstance(value, dict) and len(value) == 1 and set(value) <= {"glob", "platforms"}


def _expand_platforms(pattern: str) -> list[str]:
    """The catalogued platforms (the shipped catalog and the user catalogs) whose name matches
    the shell-style ``pattern``, sorted."""
    return sorted(fnmatch.filter(load_catalog().platforms(), pattern))


def _resolve_value(value: Any) -> Any:
    """A parameter value as written in the yaml: ``{glob: PATTERN}`` becomes the list of files,
    ``{platforms: PATTERN}`` the list of catalogued platforms whose name matches."""
    if _is_listing(value):
        if "platforms" in value:
            return _expand_platforms(str(value["platforms"]))
        return _expand_glob(str(value["glob"]))
    return value


def _run_name(value: Any) -> str:
    """The name of one item of an ``each`` list: a platform (``platform/campaign`` as
    ``platform_campaign``) as written; a file as :func:`~carb_lib.dataset.catalog.dataset_name`
    names it (``/`` as ``_``)."""
    text = str(value)
    plat, _, camp = text.partition("/")
    if plat in load_catalog().platforms() and "/" not in camp:
        return f"{plat}_{camp}" if camp else plat
    return dataset_name(text).replace("/", "_")


def load_runs(profile: str, runs_file: str | Path | None = None) -> list[NotebookRun]:
    """Read the ordered notebook list of ``profile`` from ``runs_file``.

    ``runs_file`` defaults to the repository's ``papermill_runs.yaml``; a relative path given
    is read from the current working folder, as every other file a command is given.

    The file has ``profiles: {name: ...}``; a profile is a list of entries, or a mapping with
    ``notebooks:`` (that list) and ``defaults:``. Each entry has ``notebook:`` and optional
    ``parameters:``. Shared parameters are written once: the top-level ``defaults:`` and the
    profile's ``defaults:`` (which wins) are given to every entry whose notebook's parameters
    cell names them; an entry's own parameters win over both.

    A parameter written ``{platforms: "gpu_*"}`` becomes the sorted list of catalogued
    platforms whose name matches (the shipped catalog and the user catalogs), ``{glob:
    "runs/*.parquet"}`` the sorted list of matching files (paths relative to the repository
    root). An entry with ``each: NAME`` runs once per item of its parameter ``NAME`` (a list,
    or either form above): ``NAME`` is then one item, ``{stem}`` in any other string parameter
    is its name (a platform as written; a catalogued file as its platform; another file as its
    stem), and the run is labelled ``<notebook>-<name>``, its outputs in a subfolder
    ``<name>``. An entry whose list is empty is skipped with a warning (a machine without that
    data).

    Raises
    ------
    ReproduceError
        If the file, the profile or a notebook does not exist or an entry is malformed.
    """
    path = REPO_ROOT / "papermill_runs.yaml" if runs_file is None else Path(runs_file)
    if not path.exists():
        raise ReproduceError(f"--runs-file {path}: the run list does not exist")
    if not path.is_file():
        raise ReproduceError(f"--runs-file {path}: the run list is a folder, not a file")
    try:
        spec = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        first = " ".join(str(exc).split())[:300]
        raise ReproduceError(f"run list {path} is not valid YAML: {first}") from None
    if not isinstance(spec, dict):
        raise ReproduceError(f"run list {path} must be a mapping with 'profiles', got "
                             f"{type(spec).__name__}")  # fmt: skip
    profiles = spec.get("profiles") or {}
    if profile not in profiles:
        raise ReproduceError(f"profile {profile!r} is not in {path.name}; profiles: {sorted(profiles)}")
    body = profiles[profile]
    defaults = dict(_mapping(spec.get("defaults"), f"{path.name}: 'defaults'"))
    if isinstance(body, dict):
        defaults.update(_mapping(body.get("defaults"), f"{path.name}: profile {profile!r} 'defaults'"))
        entries = body.get("notebooks") or []
    else:
        entries = body or []
    if not isinstance(entries, list):
        raise ReproduceError(f"{path.name}: profile {profile!r} must list its notebooks")
    runs = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or "notebook" not in entry:
            raise ReproduceError(f"{path.name}: entry {i} of profile {profile!r} has no 'notebook'")
        nb = Path(entry["notebook"])
        if not (REPO_ROOT / nb).exists():
            raise ReproduceError(f"{path.name}: notebook {nb} (profile {profile!r}) does not exist")
        declared = notebook_parameters(nb)
        own = _mapping(entry.get("parameters"), f"{path.name}: {nb} 'parameters'")
        params = {k: v for k, v in defaults.items() if k in declared}
        params.update(own)
        params = {k: _resolve_value(v) for k, v in params.items()}
        empty = [k for k, v in params.items() if _is_listing(own.get(k, defaults.get(k))) and not v]
        if empty:
            logger.warning("%s: profile %r: nothing matches %s of %s: notebook skipped",
                           path.name, profile, ", ".join(
                               f"{k}={next(iter(own.get(k, defaults.get(k)).values()))!r}" for k in empty),
                           nb.stem)
            continue
        each = entry.get("each")
        if each is None:
            runs.append(NotebookRun(nb, params))
            continue
        files = params.get(each)
        if each not in params or not isinstance(files, list):
            raise ReproduceError(f"{path.name}: {nb} (profile {profile!r}): 'each: {each}' needs "
                                 f"a parameter {each!r} given as a glob or a list")
        for file in files:
            stem = _run_name(file)
            one = {k: (v.replace("{stem}", stem) if isinstance(v, str) else v)
                   for k, v in params.items()}
            one[each] = file
            runs.append(NotebookRun(nb, one, label=f"{nb.stem}-{stem}", subdir=stem))
    return runs


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ReproduceError(f"{where} must be a mapping of parameter: value")
    return dict(value)


def output_parameters(run: NotebookRun, out_root: Path, keep: set[str] = frozenset()) -> dict[str, Any]:
    """``run``'s parameters with every output folder (:data:`OUTPUT_DIRS`) its notebook has
    placed under ``out_root``: an entry's relative value (or the default folder name) goes
    under it, in the run's ``subdir`` if any; names in ``keep`` (explicit overrides) stay."""
    declared = notebook_parameters(run.notebook)
    out = dict(run.parameters)
    for key, default in OUTPUT_DIRS.items():
        if key not in declared or key in keep:
            continue
        given = Path(str(out.get(key) or default))
        target = given if given.is_absolute() else Path(out_root) / given
        if run.subdir:
            target = target / run.subdir
        out[key] = _display_path(target)
    return out


def git_state(root: str | Path = REPO_ROOT, paths: tuple[str, ...] = ()) -> dict[str, Any]:
    """The checkout's commit and whether tracked files (under ``paths``, default all) differ
    from it (None when no git)."""
    def git(*args: str) -> str | None:
        try:
            return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                                  check=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no", "--", *paths)
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def _cell_head(notebook: Path, exec_count: int) -> str:
    """First line of the cell with ``exec_count`` (for error messages), or '' if unreadable."""
    try:
        import nbformat

        for cell in nbformat.read(str(notebook), as_version=4).cells:
            if cell.get("execution_count") == exec_count:
                return cell.source.splitlines()[0]
    except Exception:  # noqa: BLE001 - best effort only
        pass
    return ""


def run_profile(
    profile: str = "full",
    runs_file: str | Path | None = None,
    only: list[str] | None = None,
    run_dir: str | Path | None = None,
    out_root: str | Path | None = None,
    kernel_name: str = "python3",
    overrides: dict[str, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """Execute every notebook of ``profile`` (or those whose name contains one of ``only``).

    Parameters
    ----------
    profile, runs_file, only
        Which notebooks: a profile of the run list, optionally filtered by name.
    run_dir : str or Path, optional
        Folder for the executed notebooks, their pages and ``summary.json`` (default
        ``runs/<profile>-<UTC time>``).
    out_root : str or Path, optional
        Folder under which every notebook writes its figures and tables (``figures/``,
        ``results/``). Default: the repository root for the ``full`` profile without
        ``overrides`` (the shipped results), else ``run_dir``.
    overrides : dict, optional
        ``{parameter: value}`` given to every notebook of the run whose parameters cell names
        the parameter (``carb reproduce -p name=value``).

    Returns
    -------
    dict
        ``{notebook name: {glued name: value}}``, also written to ``<run_dir>/summary.json``
        with the run's provenance under ``"_run"``.

    Raises
    ------
    ReproduceError
        Naming the notebook, the cell and the error when a notebook fails (after writing
        ``summary.json``, the pages and ``index.html`` of the notebooks that ran before it, the
        failure named in both), or the parameter
        when an override names no parameter of the run's notebooks.
    """
    started = time.perf_counter()
    runs = load_runs(profile, runs_file)
    if only:
        runs = [r for r in runs if any(o in r.name for o in only)]
        if not runs:
            raise ReproduceError(f"no notebook of profile {profile!r} matches {only}")
    overrides = dict(overrides or {})
    declared = {r.name: notebook_parameters(r.notebook) for r in runs}
    for key in overrides:
        if not any(key in d for d in declared.values()):
            raise ReproduceError(f"-p {key}: no notebook of this run has a parameter {key!r} "
                                 f"(notebooks: {', '.join(declared)})")
    runs = [NotebookRun(r.notebook, {**r.parameters,
                                     **{k: v for k, v in overrides.items() if k in declared[r.name]}},
                        r.label, r.subdir) for r in runs]
    for opt, folder in (("--out-root", out_root), ("--run-dir", run_dir)):
        if folder is not None and Path(folder).exists() and not Path(folder).is_dir():
            raise ReproduceError(f"{opt} {folder}: is a file, not a folder")
    if run_dir is None:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        run_dir = REPO_ROOT / "runs" / f"{profile}-{stamp}"
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    out_root, shipped = output_root(profile, overrides, out_root, run_dir)
    logger.info("figures and tables go under %s", _display_path(out_root))
    summary: dict[str, dict[str, Any]] = {}
    pages: list[dict[str, Any]] = []
    executed: dict[str, dict[str, Any]] = {}
    # the kernel inherits these: explorers show static figures, tqdm draws no progress bar
    # the code the run executes, read before it writes its outputs (results/, figures/, pages)
    state = git_state(paths=PUBLISHED_SOURCES)
    saved_env = {k: os.environ.get(k) for k in RUN_ENV}
    os.environ.update(RUN_ENV)
    failure: dict[str, Any] | None = None
    try:
        for k, run in enumerate(runs, 1):
            params = output_parameters(run, out_root, keep=set(overrides))
            executed[run.name] = params
            try:
                pages.append(_run_one(run, params, k, len(runs), run_dir, kernel_name, summary))
            except ReproduceError as exc:  # the notebooks that ran still get their pages
                failure = {"notebook": run.name, "error": str(exc),
                           "not_run": [r.name for r in runs[k:]]}
                logger.error("%s failed; writing the index of the %d notebook(s) that ran",
                             run.name, len(pages))
                break
    finally:
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    meta = {**state, "profile": profile, "only": list(only or []),
            "overrides": overrides, "shipped_results": shipped,
            "out_root": _display_path(out_root), "parameters": executed,
            "failed": failure,
            "written": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    (run_dir / "summary.json").write_text(json.dumps({"_run": meta, **summary}, indent=2,
                                                     default=str))
    _collect_claims(out_root / OUTPUT_DIRS["results_dir"], run_dir)
    index = write_index(run_dir, pages, profile=profile)
    line = closing_line(len(pages), time.perf_counter() - started, index, failure)
    (logger.info if failure is None else logger.error)(line)
    if failure is not None:
        rest = (f"; not run: {', '.join(failure['not_run'])}" if failure["not_run"] else "")
        raise ReproduceError(f"{failure['error']};\nthe {len(pages)} notebook(s) that ran before "
                             f"it have their pages, index.html and summary.json in "
                             f"{_display_path(run_dir)}{rest}")
    return summary


def output_root(profile: str, overrides: dict[str, Any] | None, out_root: str | Path | None,
                run_dir: str | Path) -> tuple[Path, bool]:
    """Where a run writes its figures and tables, and whether that is the shipped results:
    ``out_root`` if given; else the repository root for the ``full`` profile without
    overrides; else the run folder."""
    shipped = out_root is None and profile == SHIPPED_PROFILE and not overrides
    if out_root is None:
        out_root = REPO_ROOT if shipped else run_dir
    return Path(out_root).resolve(), shipped


def _collect_claims(results_dir: Path, run_dir: Path) -> list[Path]:
    """Rebuild the claims tables of ``results_dir`` (:func:`carb_lib.core.claims.build_claims`) and
    copy the reviewer tables (``claims_vs_paper*.csv``) into the run folder for its index.

    Claims of runs expanded over files (``each``: ``results/<stem>/claims/<notebook>.csv``)
    join the run's table as ``claims/<notebook>-<stem>.csv``, their ``source`` that label."""
    import pandas as pd

    from carb_lib.core.claims import CLAIMS_DIR, build_claims
    from carb_lib.core.tables import atomic_write

    copied = []
    for synthetic in (False, True):
        tag = "_synthetic" if synthetic else ""
        for part in sorted(results_dir.glob(f"*/{CLAIMS_DIR + tag}/*.csv")):
            sub = part.parent.parent.name
            target = results_dir / (CLAIMS_DIR + tag) / f"{part.stem}-{sub}.csv"
            target.parent.mkdir(parents=True, exist_ok=True)
            rows = pd.read_csv(part)
            if "source" in rows.columns:  # the run's label names the rows' source
                rows = rows.assign(source=target.stem)
            atomic_write(target, lambda fh, rows=rows: rows.to_csv(fh, index=False))
        if not (results_dir / (CLAIMS_DIR + tag)).is_dir():
            continue
        build_claims(results_dir, synthetic=synthetic)
        src = results_dir / f"claims_vs_paper{tag}.csv"
        copied.append(Path(shutil.copy2(src, run_dir / src.name)))
    return copied


def _run_one(run: NotebookRun, params: dict[str, Any], k: int, n: int, run_dir: Path,
             kernel_name: str, summary: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Execute one notebook into ``run_dir``, record its glued values, write its HTML page."""
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    out_nb = run_dir / f"{run.name}.ipynb"
    logger.info("[%d/%d] %s -> %s", k, n, run.notebook, out_nb)
    fig_dir = Path(params["fig_dir"]) if params.get("fig_dir") else None
    if fig_dir is not None and not fig_dir.is_absolute():
        fig_dir = REPO_ROOT / fig_dir
    before = _pngs(fig_dir)
    t0 = time.perf_counter()
    kernel_log = run_dir / f"{run.name}{KERNEL_LOG}"
    try:
        with open(kernel_log, "wb") as log:
            pm.execute_notebook(
                str(REPO_ROOT / run.notebook), str(out_nb), parameters=params,
                kernel_name=kernel_name, cwd=str(REPO_ROOT), progress_bar=False,
                kernel_manager_class=kernel_manager_class(log),
            )
    except PapermillExecutionError as exc:
        raise ReproduceError(
            f"notebook {run.notebook} failed in cell {exc.cell_index} of the executed "
            f"notebook (execution count {exc.exec_count}; source: "
            f"{_cell_head(out_nb, exc.exec_count)!r}): {exc.ename}: {exc.evalue}\n"
            f"executed notebook with the traceback: {out_nb}"
        ) from exc
    except Exception as exc:  # kernel death, missing kernel, bad parameters
        raise ReproduceError(f"notebook {run.notebook} could not run: {exc}"
                             f"{_last_line(kernel_log)}") from exc
    summary[run.name] = read_glued(out_nb)
    seconds = time.perf_counter() - t0
    after = _pngs(fig_dir)
    saved = sorted(name for name, mtime in after.items() if before.get(name) != mtime)
    page = write_html(out_nb, out_nb.with_suffix(".html"))
    images = page_images(page)
    logger.info("      done in %.0f s; recorded %d values; %d figures saved, %d shown; page %s",
                seconds, len(summary[run.name]), len(saved), images, page.name)
    if images < len(saved):
        logger.warning("      %s saves %d figures but its page shows %d", run.name, len(saved),
                       images)
    return {"name": run.name, "notebook": str(run.notebook), "page": page.name,
            "seconds": round(seconds, 1), "n_values": len(summary[run.name]),
            "figures_saved": saved, "images": images, "parameters": params}


def kernel_manager_class(log: BinaryIO) -> type:
    """A kernel manager class (:class:`jupyter_client.AsyncKernelManager`) whose kernels
    write their process's standard output and error to the open binary file ``log``.

    A kernel writes there its own log (ipykernel warns on every start that it runs over TCP
    without encryption) and a copy of what code writes to the process's file descriptors (C
    libraries, worker processes), which the notebook's outputs also hold. Cell outputs, errors
    and tracebacks reach the notebook as before; the terminal shows only the runner's lines.
    """
    from jupyter_client import AsyncKernelManager

    class RunKernelManager(AsyncKernelManager):
        async def start_kernel(self, **kw: Any) -> None:
            kw.setdefault("stdout", log)
            kw.setdefault("stderr", log)
            await super().start_kernel(**kw)

    return RunKernelManager


def _last_line(kernel_log: Path) -> str:
    """Where a kernel that did not start or died wrote its output, with its last line that is
    not a log record of the kernel application (a start-up traceback, a fatal error)."""
    try:
        lines = [ln.strip() for ln in kernel_log.read_text(errors="replace").splitlines()
                 if ln.strip() and not _APP_LOG.match(ln)]
    except OSError:
        return ""
    where = f"(the kernel's own output is in {_display_path(kernel_log)})"
    return f"; the kernel's last output line: {lines[-1][:300]!r} {where}" if lines else f" {where}"


def closing_line(n_ran: int, seconds: float, index: str | Path,
                 failure: dict[str, Any] | None = None) -> str:
    """The last line of a run: how many notebooks ran, which one failed and how many were
    not run after it, the wall time and where the index page is, e.g. ``"reproduce: 8
    notebooks ran, none failed, in 25 min 3 s; index: runs/quick-x/index.html"``."""
    def count(n: int) -> str:
        return f"{n} notebook{'' if n == 1 else 's'}"

    if failure is None:
        what = f"{count(n_ran)} ran, none failed"
    else:
        not_run = len(failure.get("not_run") or [])
        what = (f"{count(n_ran)} ran, 1 failed ({failure['notebook']})"
                + (f", {not_run} not run" if not_run else ""))
    total = round(seconds)
    took = (f"{total} s" if total < 60 else f"{total // 60} min {total % 60} s" if total < 3600
            else f"{total // 3600} h {total % 3600 // 60} min")
    return f"reproduce: {what}, in {took}; index: {_display_path(Path(index))}"


def _pngs(folder: Path | None) -> dict[str, float]:
    """``{file name: modification time}`` of the PNG files in ``folder`` (recursively)."""
    if folder is None or not folder.is_dir():
        return {}
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime for p in folder.rglob("*.png")}


def publish_run(run_dir: str | Path, dest: str | Path = "docs/run",
                max_image_width: int = 900, max_mb: float = 10.0) -> list[Path]:
    """Copy a run's pages into ``dest`` (replacing what is there): every executed notebook as a
    self-contained HTML page with PNG outputs shrunk to ``max_image_width`` pixels, the index
    and ``summary.json``.

    Raises
    ------
    ReproduceError
        If the run has no executed notebook, a page shows fewer images than its notebook
        saved figures, or the pages exceed ``max_mb`` megabytes.
    """
    run_dir, dest = Path(run_dir), Path(dest)
    notebooks = sorted(run_dir.glob("*.ipynb"))
    if not notebooks:
        raise ReproduceError(f"{run_dir} has no executed notebook")
    pages_path = run_dir / "pages.json"
    pages = json.loads(pages_path.read_text()) if pages_path.exists() else [
        {"name": nb.stem, "page": nb.with_suffix(".html").name} for nb in notebooks]
    short = [f"{p['name']} ({p['images']} of {len(p['figures_saved'])})" for p in pages
             if "figures_saved" in p and p.get("images", 0) < len(p["figures_saved"])]
    if short:
        raise ReproduceError("pages show fewer images than their notebooks save: "
                             + ", ".join(short))
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    written = [write_html(nb, dest / nb.with_suffix(".html").name, max_image_width)
               for nb in notebooks]
    for name in ("summary.json", "claims_vs_paper.csv", "claims_vs_paper_synthetic.csv"):
        if (run_dir / name).exists():
            shutil.copy2(run_dir / name, dest / name)
    profile = run_dir.name.split("-", 1)[0]
    written.append(write_index(dest, pages, profile=profile, run_name=run_dir.name))
    size = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file()) / 1e6
    if size > max_mb:
        raise ReproduceError(f"published pages take {size:.1f} MB > {max_mb} MB; "
                             f"lower max_image_width ({max_image_width})")
    return written


#: What a published run must match: the notebooks and the library that made its numbers.
PUBLISHED_SOURCES = ("notebooks", "carb_lib", "papermill_runs.yaml")


def publication_state(dest: str | Path = "docs/run", root: str | Path = REPO_ROOT) -> str | None:
    """Why the published pages in ``dest`` are not those of the checkout's notebooks and
    library, or None when they are: the pages name no commit, were run from uncommitted
    changes, name a commit this checkout lacks, or a commit whose :data:`PUBLISHED_SOURCES`
    differ from ``HEAD``'s."""
    dest = Path(dest) if Path(dest).is_absolute() else Path(root) / dest
    path = dest / "summary.json"
    if not path.is_file():
        return f"{dest.name}/summary.json does not exist"
    meta = json.loads(path.read_text()).get("_run") or {}
    commit = meta.get("commit")
    if not commit:
        return f"{dest.name}/summary.json names no commit"
    if meta.get("dirty"):
        return f"the pages were run at {commit[:12]} with uncommitted changes"
    try:
        diff = subprocess.run(["git", "diff", "--name-only", commit, "HEAD", "--",
                               *PUBLISHED_SOURCES], cwd=root, capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"git cannot compare {commit[:12]} with HEAD: {exc}"
    if diff.returncode != 0:
        return f"commit {commit[:12]} of the pages is not in this checkout"
    changed = diff.stdout.split()
    if changed:
        more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
        return (f"the pages were run at {commit[:12]}; since then {', '.join(changed[:3])}{more} "
                "changed (make reproduce, then carb publish)")
    return None
