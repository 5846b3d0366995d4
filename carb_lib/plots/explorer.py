"""The figure of the interactive scaling explorer (:mod:`carb_lib.app.explore`)."""

from __future__ import annotations

from carb_lib.plots._style import legend_outside, plain_log_ticks, plt
from carb_lib.plots.characterization import (
    _char_label,
    _char_note,
    _char_ok,
    _char_scatter,
    _char_title,
)

__all__ = ["plot_explorer"]


def plot_explorer(df, target: str, x: str, hue: str | None = None, facet: str | None = None,
                  fits=None, logx: bool = True, logy: bool = True, platform=None,
                  dataset_label: str = "measured", max_facets: int = 6):
    """``target`` against ``x`` for the rows of ``df`` (already filtered), one panel per value
    of ``facet`` (at most ``max_facets``, the most frequent), coloured by ``hue``.

    ``fits`` (from :func:`carb_lib.characterize.scaling.fit_scaling` with ``by=(None, facet)``) draws the
    fitted power law of each panel's rows and shades the curves whose exponent is at the ends
    of its 95 % CI, pivoted at the geometric mean of ``x`` (the uncertainty of the slope).
    Panels without positive data say why. Each panel's legend lies under it, outside the
    data; log axes are labelled with plain numbers (6, 20, 100).
    """
    import numpy as np

    data = _char_ok(df)
    if facet:
        counts = data[facet].astype(str).value_counts()
        panels = sorted(counts.index[:max_facets], key=str)
    else:
        panels = ["all"]
    n_pan = max(1, len(panels))
    # shared axes: panels compare at a glance (same decades on every facet)
    fig, axes = plt.subplots(1, n_pan, figsize=(min(5.0 * n_pan, 16.0), 4.4), squeeze=False,
                             sharex=True, sharey=True)
    for ax, pan in zip(axes[0], panels, strict=False):
        d = data if not facet else data.loc[data[facet].astype(str) == pan]
        d = d.assign(**{x: _float_col(d[x]), target: _float_col(d[target])}) if len(d) else d
        if len(d):
            keep = np.isfinite(d[x]) & np.isfinite(d[target])
            if logx:
                keep &= d[x] > 0
            if logy:
                keep &= d[target] > 0
            d = d.loc[keep]
        title = _char_label(target).split(" (")[0] if not facet else \
            f"{_char_label(facet)}: {pan}"
        if d.empty:
            ax.set_title(title, fontsize=10)
            _char_note(ax, f"no rows with finite{' positive' if logx or logy else ''} "
                           f"{_char_label(target)} and {_char_label(x)} in this selection")
            continue
        _char_scatter(fig, ax, d, x, target, hue, show_colorbar=pan == panels[-1])
        if fits is not None and len(fits):
            f = fits[(fits["target"] == target) & (fits["x"] == x)
                     & (fits["group_by"] == (facet or "all"))
                     & (fits["group"].astype(str) == str(pan))
                     & (fits["testable"] == True)]  # noqa: E712
            if len(f):
                r = f.iloc[0]
                lx = np.log(d[x].to_numpy(dtype=float))
                xs = np.exp(np.linspace(lx.min(), lx.max(), 100))
                x0 = float(np.exp(lx.mean()))
                y0 = np.exp(r["intercept"]) * x0 ** r["exponent"]
                ax.plot(xs, np.exp(r["intercept"]) * xs ** r["exponent"], color="black",
                        lw=1.4, label=(f"b = {r['exponent']:.3f} [{r['ci_low']:.3f}, "
                                       f"{r['ci_high']:.3f}]\nR² = {r['r2']:.2f}, n = {r['n']:,}"))
                lo, hi = y0 * (xs / x0) ** r["ci_low"], y0 * (xs / x0) ** r["ci_high"]
                ax.fill_between(xs, np.minimum(lo, hi), np.maximum(lo, hi), color="black",
                                alpha=0.15, lw=0, label="95 % CI of the exponent")
        if logx:
            ax.set_xscale("log")
        if logy:
            ax.set_yscale("log")
        ax.set_xlabel(_char_label(x))
        ax.set_ylabel(_char_label(target))
        ax.set_title(f"{title} (n={len(d):,})")
        plain_log_ticks(ax)
        hue_title = ax.get_legend().get_title().get_text() if ax.get_legend() else None
        legend_outside(ax, "below", title=hue_title or None, markerscale=2)
    fig.suptitle(_char_title(f"{_char_label(target)} vs {_char_label(x)}", platform,
                             dataset_label))
    fig.tight_layout()
    return fig


def _float_col(s):
    """``s`` as float64 (nullable numbers, text numbers; junk -> NaN)."""
    import pandas as pd

    return pd.to_numeric(s, errors="coerce").astype("float64")
