"""CARB's figure style and :func:`save_figure` (shared by every figure module).

Importing this module selects matplotlib's non-interactive ``Agg`` backend unless one is
already chosen.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable
from pathlib import Path

import matplotlib

from carb_lib.core.vocab import AXIS_LABELS

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

__all__ = ["DPI", "FONT", "OKABE_ITO", "STYLE", "apply_style", "colours", "legend_outside",
           "legend_overlaps", "note", "plain_log_ticks", "plain_number", "plt", "raw_names", "save_figure", "sns",
           "words"]

STYLE = {"context": "notebook", "style": "whitegrid", "palette": "colorblind"}
DPI = 150
#: Smallest font (points) of any text in a figure: legends, annotations, notes. Figures are
#: drawn at the size they are published (docs pages show PNGs at their width).
FONT = 9
#: Okabe and Ito's colour-blind-safe palette (black last), one colour per family, learner or
#: platform; :func:`colours` cycles it with markers told apart by shape beyond eight names.
OKABE_ITO: tuple[str, ...] = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9",
                              "#D55E00", "#F0E442", "#000000")
#: Words for columns and codes that are not in :data:`carb_lib.core.vocab.AXIS_LABELS`.
_WORDS: dict[str, str] = {
    "r2": "R²", "r2_log": "R² of log values", "r2_mean": "R²", "r2_log_mean": "R² of log values",
    "mape_pct": "mean absolute percentage error (%)",
    "mape_pct_mean": "mean absolute percentage error (%)",
    "within_10pct": "share within ±10 %", "within_10pct_mean": "share within ±10 %",
    "spearman": "Spearman rank correlation", "spearman_mean": "Spearman rank correlation",
    "early_downsample": "early downsampling", "precision": "precision", "block": "block",
    "platform": "platform", "family": "family", "config_id": "configuration",
}
# a snake_case token (latency_ms, r2_log_mean, paper_style): a column or code name, not words
_RAW = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")


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
    """Apply CARB's seaborn style (idempotent): white grid, the colour-blind-safe
    :data:`OKABE_ITO` cycle, no text smaller than :data:`FONT` points."""
    from cycler import cycler

    sns.set_theme(context=STYLE["context"], style=STYLE["style"], palette=list(OKABE_ITO))
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": DPI, "savefig.bbox": "tight",
                         "axes.prop_cycle": cycler(color=list(OKABE_ITO)),
                         "font.size": FONT + 1, "axes.titlesize": FONT + 2,
                         "axes.labelsize": FONT + 1, "xtick.labelsize": FONT,
                         "ytick.labelsize": FONT, "legend.fontsize": FONT,
                         "legend.title_fontsize": FONT, "figure.titlesize": FONT + 3})


def words(column: str) -> str:
    """A column or code name in words with its unit (:func:`carb_lib.core.vocab.label`, then
    :data:`_WORDS`, then the name with spaces for underscores)."""
    c = str(column)
    return AXIS_LABELS.get(c) or _WORDS.get(c) or c.replace("_", " ")


def colours(names: Iterable) -> dict:
    """One colour-blind-safe colour per name, in the order given (:data:`OKABE_ITO`, cycled)."""
    return {n: OKABE_ITO[i % len(OKABE_ITO)] for i, n in enumerate(dict.fromkeys(names))}


def note(fig: plt.Figure, text: str, width: int = 120) -> None:
    """A grey caption line under the figure (what is not shown and why), never an empty panel."""
    fig.text(0.01, -0.01, textwrap.fill(text, width), fontsize=FONT, color="dimgray",
             va="top", ha="left")


def plain_number(v: float, _pos=None) -> str:
    """A tick value as a plain number (0.0001, 6, 20, 100, 5000), never ``6×10⁰``; from 10⁴
    up and under 10⁻⁴ as a power of ten (``10⁵``, ``2×10⁵``), which stays short."""
    import math

    if not math.isfinite(v) or v == 0:
        return "0" if v == 0 else ""
    if 1e-4 * (1 - 1e-9) <= abs(v) < 1e4:
        return f"{v:.6g}"
    e = math.floor(math.log10(abs(v)) + 1e-9)
    m = v / 10.0**e
    if abs(m - round(m)) < 1e-6 and round(m) in (1, -1):
        return f"$10^{{{e}}}$" if m > 0 else f"$-10^{{{e}}}$"
    return f"${m:.2g}\\times10^{{{e}}}$"


def _log_subs(decades: float) -> tuple[float, ...]:
    """Labelled multiples of each power of ten for an axis spanning ``decades``: few enough
    that labels never crowd (1, 2, 5 over one or two decades; powers of ten beyond)."""
    if decades <= 1.0:
        return (1.0, 2.0, 3.0, 5.0)
    if decades <= 2.6:
        return (1.0, 2.0, 5.0)
    return (1.0,)


def plain_log_ticks(ax, which: str = "both") -> None:
    """Label the log axes of ``ax`` with plain numbers (:func:`plain_number`), at 1, 2 and 5
    times powers of ten over short spans and at powers of ten over long ones; minor ticks
    stay unlabelled. The ticks follow the limits at draw time (zoom, shared axes)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    class _Locator(LogLocator):
        def tick_values(self, vmin, vmax):
            import numpy as np

            lo, hi = sorted((abs(vmin) or 1e-300, abs(vmax) or 1e-300))
            self.set_params(subs=_log_subs(float(np.log10(hi / lo))))
            return super().tick_values(vmin, vmax)

    for name in ("x", "y") if which == "both" else (which,):
        axis = ax.xaxis if name == "x" else ax.yaxis
        if axis.get_scale() != "log":
            continue
        axis.set_major_locator(_Locator(base=10.0, numticks=12))
        axis.set_major_formatter(FuncFormatter(plain_number))
        axis.set_minor_formatter(NullFormatter())


def legend_outside(ax, where: str = "right", handles=None, labels=None, **kw):
    """The legend of ``ax`` outside its data area: right of the axes (``"right"``) or under
    its tick labels and axis label (``"below"``). Call it after the axes are labelled; the
    figure's ``tight_layout`` and ``savefig(bbox_inches="tight")`` make room for it.
    Returns the legend (None when there is nothing to show)."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    if ax.get_legend() is not None:
        ax.get_legend().remove()
    if where == "right":
        return ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                         borderaxespad=0.0, **kw)
    if where != "below":
        raise ValueError(f"where must be 'right' or 'below', got {where!r}")
    fig = ax.figure
    tight = ax.get_tightbbox(fig.canvas.get_renderer())
    under_pt = max(0.0, ax.bbox.y0 - tight.y0) * 72.0 / fig.dpi  # tick labels + axis label
    size = float(kw.get("fontsize", FONT)) if not isinstance(kw.get("fontsize"), str) else FONT
    return ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                     borderaxespad=under_pt / size + 0.4, **kw)


def legend_overlaps(fig: plt.Figure) -> list[str]:
    """Legends of ``fig`` whose box overlaps the data area of an axes (after a draw); empty
    when every legend lies outside the data."""
    fig.canvas.draw()
    bad = []
    legends = [a.get_legend() for a in fig.axes] + list(fig.legends)
    for leg in filter(None, legends):
        lb = leg.get_window_extent()
        for a in fig.axes:
            b = a.bbox
            w = min(lb.x1, b.x1) - max(lb.x0, b.x0)
            h = min(lb.y1, b.y1) - max(lb.y0, b.y0)
            if w > 1 and h > 1:
                bad.append(f"legend {[t.get_text() for t in leg.get_texts()][:3]} over "
                           f"axes {a.get_title()!r}")
    return bad


def raw_names(fig: plt.Figure, allow: Iterable[str] = ()) -> list[str]:
    """Titles, axis labels and colour-bar labels of ``fig`` that contain a raw column or code
    name (a snake_case token such as ``latency_ms``); empty when every one is in words.

    ``allow``: proper names that may appear (platform names such as ``cpu_epyc_zen3_2c``,
    which name the data files).
    """
    texts = [fig._suptitle.get_text() if getattr(fig, "_suptitle", None) else ""]
    for ax in fig.axes:
        texts += [ax.get_title(), ax.get_title(loc="left"), ax.get_title(loc="right"),
                  ax.get_xlabel(), ax.get_ylabel()]
    names = sorted(map(str, allow), key=len, reverse=True)
    bad = []
    for t in texts:
        clean = t
        for n in names:
            clean = clean.replace(n, " ")
        if clean and _RAW.search(clean):
            bad.append(t)
    return bad


def save_figure(fig: plt.Figure, name: str, fig_dir: str | Path = "figures", *,
                pdf: bool = True) -> list[Path]:
    """Save ``fig`` as ``<fig_dir>/<name>.png`` (for pages) and, with ``pdf``, ``.pdf`` (for
    papers); return the paths written.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    name : str
        Stable file stem, e.g. ``"00_static_features"`` (no extension, no folder).
    fig_dir : str or Path
        Output folder, created if missing.
    pdf : bool
        Also write the PDF.
    """
    if not isinstance(pdf, bool):
        raise TypeError(f"pdf must be True or False, got {pdf!r}")
    if not name or "/" in name or name.endswith((".png", ".pdf")):
        raise ValueError(f"figure name must be a bare stem like '01_scaling', got {name!r}")
    out = Path(fig_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.png"] + ([out / f"{name}.pdf"] if pdf else [])
    for p in paths:
        fig.savefig(p)
    return paths


def save_and_show(fig: plt.Figure, name: str, fig_dir: str | Path = "figures", *,
                  pdf: bool = True) -> list[Path]:
    """:func:`save_figure`, then show ``fig`` in the notebook's output (an image in the
    executed notebook and its HTML page) and close it. Returns the saved paths.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    name : str
        Stable file stem (see :func:`save_figure`).
    fig_dir : str or Path
        Output folder, created if missing.
    pdf : bool
        Also write the PDF.
    """
    from IPython.display import display

    paths = save_figure(fig, name, fig_dir, pdf=pdf)
    display(fig)
    plt.close(fig)
    return paths
