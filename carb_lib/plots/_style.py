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
