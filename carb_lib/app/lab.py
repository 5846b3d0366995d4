"""The project's Jupyter kernel, "CARB (.venv)": an IPython kernel started in the repository root.

Jupyter starts a kernel in the notebook's folder (``notebooks/``), but the notebooks name
``data/``, ``figures/`` and ``results/`` relative to the repository root, as ``carb reproduce``
runs them. This kernel changes to the repository root first (when ``carb_lib`` is used from a
checkout: the folder above the package holds ``papermill_runs.yaml``), so a notebook opened
in JupyterLab reads and writes the same files as ``make reproduce``.

``python -m carb_lib.app.lab install [--prefix P | --user]`` registers the kernel (``make lab``
does it with the virtual environment's prefix); ``python -m carb_lib.app.lab -f CONNECTION_FILE``
is what Jupyter runs.

A notebook started by any other kernel (a plain ``python3`` one in ``notebooks/``) calls
:func:`enter_repo_root` first: it walks up from the working folder to the checkout's root and
changes to it. :func:`require_files` stops a notebook with one line when its measured data are
missing (the SYNTHETIC demo runs only when asked for with ``synthetic_demo=True``).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)

KERNEL_NAME = "carb"
DISPLAY_NAME = "CARB (.venv)"
REPO_ROOT = Path(__file__).resolve().parents[2]


def repo_root() -> Path | None:
    """The checkout's root if ``carb_lib`` runs from one, else None."""
    return REPO_ROOT if (REPO_ROOT / "papermill_runs.yaml").is_file() else None


#: Files that mark the checkout's root.
ROOT_MARKERS = ("pyproject.toml", "papermill_runs.yaml")


class NotebookSetupError(RuntimeError):
    """A notebook cannot start (no checkout root, missing data). IPython shows the message as
    one line instead of a traceback (``_render_traceback_``)."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


class MissingDataError(NotebookSetupError, FileNotFoundError):
    """Measured data a notebook needs are not there."""


def find_repo_root(start: str | Path | None = None) -> Path | None:
    """The first of ``start`` (default: the working folder) and its parents that holds every
    file of :data:`ROOT_MARKERS`, or None."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if all((folder / m).is_file() for m in ROOT_MARKERS):
            return folder
    return None


def enter_repo_root(start: str | Path | None = None) -> Path:
    """Change the working folder to the checkout's root (see :func:`find_repo_root`): the
    notebooks name ``data/``, ``figures/``, ``results/`` relative to it, wherever the kernel
    started. Returns the root.

    Raises
    ------
    NotebookSetupError
        If neither the working folder nor a parent is the root.
    """
    root = find_repo_root(start)
    if root is None:
        raise NotebookSetupError(
            f"no CARB checkout above {Path(start or Path.cwd()).resolve()} (a folder with "
            f"{' and '.join(ROOT_MARKERS)}): start the notebook inside the repository")
    os.chdir(root)
    return root


def require_files(paths, what: str = "measured data") -> list[Path]:
    """Return ``paths`` as Paths if there is at least one and each is a file.

    Raises
    ------
    MissingDataError
        Naming the first missing file (or saying none was given), and how to get the
        SYNTHETIC demo instead.
    """
    paths = [Path(p) for p in ([paths] if isinstance(paths, (str, Path)) else list(paths or []))]
    hint = "(run with synthetic_demo=True for the SYNTHETIC demo)"
    if not paths:
        raise MissingDataError(f"no {what} found under {Path.cwd().name}/data {hint}")
    for p in paths:
        if not p.is_file():
            raise MissingDataError(f"{what} {p} does not exist {hint}")
    return paths


def kernel_spec(python: str | None = None) -> dict:
    """The ``kernel.json`` of the CARB kernel for interpreter ``python`` (default: this one)."""
    return {
        "argv": [python or sys.executable, "-m", "carb_lib.app.lab", "-f", "{connection_file}"],
        "display_name": DISPLAY_NAME,
        "language": "python",
        "metadata": {"debugger": True},
    }


def install_kernel(prefix: str | None = None, user: bool = False) -> str:
    """Register the kernel (in ``prefix``, the user's folder, or this environment's prefix)
    and return the folder it was written to."""
    from jupyter_client.kernelspec import KernelSpecManager

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "kernel.json").write_text(json.dumps(kernel_spec(), indent=1))
        return KernelSpecManager().install_kernel_spec(
            tmp, KERNEL_NAME, user=user, prefix=None if user else (prefix or sys.prefix))


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["install"]:
        user = "--user" in argv
        prefix = argv[argv.index("--prefix") + 1] if "--prefix" in argv else None
        logging.basicConfig(level=logging.INFO, format="%(message)s")
        logger.info("installed kernel %r (%s) in %s", KERNEL_NAME, DISPLAY_NAME,
                    install_kernel(prefix=prefix, user=user))
        return
    root = repo_root()
    if root is not None:
        os.chdir(root)
    from ipykernel.kernelapp import launch_new_instance

    sys.argv = [sys.argv[0], *argv]
    launch_new_instance()


if __name__ == "__main__":
    main()


#: Cell metadata keys JupyterLab adds while a notebook runs (timings, scroll state).
_RUN_CELL_METADATA = ("execution", "scrolled", "collapsed", "jupyter")


def strip_on_save(model: dict, path: str, contents_manager=None, **kwargs) -> None:
    """A JupyterLab pre-save hook (``make lab`` passes it): a notebook saved into the checkout's
    ``notebooks/`` folder is written without outputs and execution counts, without the cell
    metadata a run adds, and with the notebook metadata it already had on disk (kernel name,
    widget state), so that opening and running notebooks in JupyterLab leaves ``git status``
    clean. Other files, and notebooks elsewhere, are saved as they are."""
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    try:
        os_path = Path(contents_manager._get_os_path(path)).resolve()
    except (AttributeError, OSError, ValueError):
        return
    root = repo_root()
    if root is None or os_path.parent != (root / "notebooks").resolve():
        return
    nb = model["content"]
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        meta = cell.get("metadata", {})
        for key in _RUN_CELL_METADATA:
            meta.pop(key, None)
    try:
        on_disk = json.loads(os_path.read_text(encoding="utf-8")).get("metadata")
    except (OSError, ValueError):
        on_disk = None
    if isinstance(on_disk, dict):
        nb["metadata"] = on_disk
