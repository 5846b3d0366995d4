"""CARB's figure style and :func:`save_figure` (shared by every figure module).

Importing this module selects matplotlib's non-interactive ``Agg`` backend unless one is
already chosen.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

__all__ = ["DPI", "STYLE", "apply_style", "plt", "save_figure", "sns"]

STYLE = {"context": "notebook", "style": "whitegrid", "palette": "viridis"}
DPI = 150


def _figures_as_png_in_kernel() -> bool:
    """In a Jupyter kernel, show ``display(fig)`` (and a cell ending in ``fig``) as a PNG image.

    The Agg backend set above replaces the kernel's inline backend, which is what registers
    IPython's PNG formatter for figures; without it JupyterLab, papermill runs and their HTML
    pages showed only "<Figure size ...>" text. Figures still appear only where a notebook
    displays them (no automatic display of every open figure at the end of a cell). A PNG
    formatter the user registered already is kept. Returns True if one was registered now.
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        return False
    from functools import partial

    from IPython.core.pylabtools import print_figure
    from matplotlib.figure import Figure

    png = shell.display_formatter.formatters["image/png"]
    try:
        png.lookup_by_type(Figure)
        return False
    except KeyError:
        png.for_type(Figure, partial(print_figure, fmt="png", base64=True))
        return True


_figures_as_png_in_kernel()


def apply_style() -> None:
    """Apply CARB's seaborn style (idempotent)."""
    sns.set_theme(context=STYLE["context"], style=STYLE["style"])
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": DPI, "savefig.bbox": "tight"})


def save_figure(fig: plt.Figure, name: str, fig_dir: str | Path = "figures") -> list[Path]:
    """Save ``fig`` as ``<fig_dir>/<name>.png`` and ``.pdf`` and return both paths.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    name : str
        Stable file stem, e.g. ``"00_static_features"`` (no extension, no folder).
    fig_dir : str or Path
        Output folder, created if missing.
    """
    if not name or "/" in name or name.endswith((".png", ".pdf")):
        raise ValueError(f"figure name must be a bare stem like '01_scaling', got {name!r}")
    out = Path(fig_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.png", out / f"{name}.pdf"]
    for p in paths:
        fig.savefig(p)
    return paths
