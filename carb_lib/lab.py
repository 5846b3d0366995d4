"""The project's Jupyter kernel, "CARB (.venv)": an IPython kernel started in the repository root.

Jupyter starts a kernel in the notebook's folder (``notebooks/``), but the notebooks name
``data/``, ``figures/`` and ``results/`` relative to the repository root, as ``carb reproduce``
runs them. This kernel changes to the repository root first (when ``carb_lib`` is used from a
checkout: the folder above the package holds ``papermill_runs.yaml``), so a notebook opened
in JupyterLab reads and writes the same files as ``make reproduce``.

``python -m carb_lib.lab install [--prefix P | --user]`` registers the kernel (``make lab``
does it with the virtual environment's prefix); ``python -m carb_lib.lab -f CONNECTION_FILE``
is what Jupyter runs.
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
REPO_ROOT = Path(__file__).resolve().parents[1]


def repo_root() -> Path | None:
    """The checkout's root if ``carb_lib`` runs from one, else None."""
    return REPO_ROOT if (REPO_ROOT / "papermill_runs.yaml").is_file() else None


def kernel_spec(python: str | None = None) -> dict:
    """The ``kernel.json`` of the CARB kernel for interpreter ``python`` (default: this one)."""
    return {
        "argv": [python or sys.executable, "-m", "carb_lib.lab", "-f", "{connection_file}"],
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
