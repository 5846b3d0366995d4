"""Figures of the CARB estimator (notebook 03; data from :mod:`carb_lib.ensemble` and
:mod:`carb_lib.evaluation`): predicted against measured, model comparison."""

from __future__ import annotations

import matplotlib

from carb_lib.core.metrics import regression_metrics
from carb_lib.core.vocab import TARGET_SHORT, label
from carb_lib.plots._style import (
    FONT,
    colours,
    legend_outside,
    note,
    plain_log_ticks,
    plain_number,
    plt,
    words,
)

__all__ = ["ERROR_FLOOR", "plot_carb_model_comparison", "plot_carb_pred_vs_measured"]

#: Errors below this are drawn at it on the log axis of :func:`plot_carb_model_comparison`
#: (an exact memory law reaches 1e-13 %), as open triangles with a note.
ERROR_FLOOR = 1e-4


def _carb_title(what: str, platform, dataset_label: str) -> str:
    return f"{what} — {platform or 'all platforms'} ({dataset_label})"


def plot_carb_pred_vs_measured(truth, pred, target: str, platform=None,
                               dataset_label: str = "measured", intervals=None, hue=None):
    """Predicted against measured ``target`` on log-log axes, with y = x and a +-10 % band;
    ticks are plain numbers that never crowd (:func:`carb_lib.plots._style.plain_log_ticks`),
    the legend lies under the axes.

    Parameters
    ----------
    truth, pred : pandas.DataFrame
        Index-aligned frames with a ``target`` column (measured / predicted).
    intervals : pandas.DataFrame, optional
        ``{target}_lo`` / ``{target}_hi`` columns: drawn as vertical error bars.
    hue : pandas.Series, optional
        Colour the points (e.g. batch).
    """
    import numpy as np

    y = truth[target].astype("float64")
    p = pred[target].reindex(truth.index).astype("float64")
    ok = np.isfinite(y) & np.isfinite(p) & (y > 0) & (p > 0)
    y, p = y[ok], p[ok]
    fig, ax = plt.subplots(figsize=(5.2, 4.8))
    if intervals is not None:
        lo = intervals[f"{target}_lo"].reindex(y.index).astype("float64")
        hi = intervals[f"{target}_hi"].reindex(y.index).astype("float64")
        ax.vlines(y, lo.clip(lower=1e-12), hi, color="0.75", lw=0.6, zorder=1,
                  label="conformal interval")
    c = None if hue is None else hue.reindex(y.index).astype("float64")
    norm = matplotlib.colors.LogNorm() if c is not None else None
    sc = ax.scatter(y, p, c=c, s=9, cmap="viridis", norm=norm,
                    alpha=0.8, zorder=2, edgecolors="none")
    if c is not None:
        cbar = fig.colorbar(sc, ax=ax, label=words(hue.name) if hue.name else "")
        plain_log_ticks(cbar.ax)
    lim = [min(y.min(), p.min()) * 0.8, max(y.max(), p.max()) * 1.25] if len(y) else [0.1, 10]
    grid = np.geomspace(lim[0], lim[1], 50)
    ax.plot(grid, grid, color="k", lw=1, label="y = x")
    ax.fill_between(grid, grid * 0.9, grid * 1.1, color="tab:red", alpha=0.12, label="±10 %")
    ax.set(xscale="log", yscale="log", xlim=lim, ylim=lim,
           xlabel=f"measured {label(target)}",
           ylabel=f"predicted {label(target)}")
    m = regression_metrics(y, p)
    ax.text(0.03, 0.97, f"R² = {m['r2']:.3f} (log: {m['r2_log']:.3f})"
            f"\nMAPE = {m['mape_pct']:.1f} %"
            f"\nwithin ±10 %: {100 * m['within_10pct']:.0f} %\nn = {m['n']}",
            transform=ax.transAxes, va="top", fontsize=FONT,
            bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none"})
    plain_log_ticks(ax)
    ax.set_title(_carb_title(f"Test set: {TARGET_SHORT.get(target, words(target))}", platform,
                             dataset_label))
    legend_outside(ax, "below", ncol=3)
    fig.tight_layout()
    return fig


def plot_carb_model_comparison(metrics, metric: str | None = None, platform=None,
                               dataset_label: str = "measured"):
    """Each model variant's test error, one row per variant and one colour per target, on a
    log axis where the variants differ (a tidy ablation table,
    :meth:`carb_lib.evaluation.ProtocolResult.ablation`).

    ``metric`` is an error (``mape_pct``, ``mape_pct_mean``) or an R² column (``r2``,
    ``r2_log``, ``r2_log_mean``); R² is drawn as the unexplained share ``1 - R²``, since
    values near 1 hide every difference. A ``<metric>_sd`` column draws +- one sd. Default:
    the first of ``mape_pct_mean``, ``mape_pct``, ``r2_log_mean``, ``r2_log`` in the table.
    """
    import numpy as np

    if metric is None:
        metric = next((m for m in ("mape_pct_mean", "mape_pct", "r2_log_mean", "r2_log")
                       if m in metrics.columns), "mape_pct_mean")
    if metric not in metrics.columns:
        raise ValueError(f"metric {metric!r} is not a column of the metrics table "
                         f"(columns: {', '.join(map(str, metrics.columns))})")
    d = metrics.copy()
    r2 = metric.startswith("r2")
    base = metric.removesuffix("_mean")
    sd_col = f"{base}_sd" if f"{base}_sd" in d.columns and metric.endswith("_mean") else None
    d["_v"] = d[metric].astype(float)
    d["_sd"] = d[sd_col].astype(float).fillna(0.0) if sd_col else 0.0
    if r2:
        d["_v"] = 1.0 - d["_v"]
    d["_low"] = d["_v"] < ERROR_FLOOR
    smallest = float(d["_v"].min()) if len(d) else np.nan
    d["_v"] = d["_v"].clip(lower=ERROR_FLOOR)
    models = list(dict.fromkeys(d["model"]))
    targets = list(dict.fromkeys(d["target"]))
    pal = colours(targets)
    fig, ax = plt.subplots(figsize=(7.5, 0.42 * len(models) + 1.6))
    step = 0.6 / max(len(targets), 1)
    for j, t in enumerate(targets):
        g = d[d["target"] == t].set_index("model").reindex(models)
        y = np.arange(len(models)) + (j - (len(targets) - 1) / 2) * step
        v = g["_v"].to_numpy(dtype=float)
        sd = g["_sd"].to_numpy(dtype=float)
        low = g["_low"].fillna(False).to_numpy(dtype=bool)
        ax.errorbar(np.where(low, np.nan, v), y, xerr=np.vstack([np.minimum(sd, v * 0.999), sd]),
                    fmt="o", ms=6, capsize=2, lw=1, color=pal[t],
                    label=TARGET_SHORT.get(t, words(t)))
        ax.plot(v[low], y[low], ls="none", marker="<", ms=7, mfc="white", mec=pal[t], mew=1.2)
    ax.set_yticks(range(len(models)), [str(m).replace("_", " ") for m in models])
    ax.invert_yaxis()
    ax.set_xscale("log")
    plain_log_ticks(ax, "x")
    n_low = int(d["_low"].sum())
    if n_low:
        from matplotlib.lines import Line2D
        from matplotlib.ticker import FuncFormatter

        ax.xaxis.set_major_formatter(FuncFormatter(
            lambda v, _: ("≤ " if np.isclose(v, ERROR_FLOOR) else "") + plain_number(v)))
        floor = f"{ERROR_FLOOR:g}"
        least = ("0" if smallest <= 0 else f"{smallest:.1g}, exact to rounding"
                 if smallest < 1e-6 else f"{smallest:.2g}")
        note(fig, f"{n_low} value{'s' if n_low > 1 else ''} below {floor} (down to {least}) "
                  f"drawn at {floor} as open triangles: a log axis cannot show 0.", width=110)
    what = ("1 - R² of log values (unexplained share, log scale)" if base == "r2_log"
            else "1 - R² (unexplained share, log scale)" if r2
            else "mean absolute percentage error (%, log scale)" if base == "mape_pct"
            else f"{words(base)} (log scale)")
    ax.set_xlabel(what + (" — mean ± sd over seeds" if sd_col else ""))
    ax.set_ylabel("")
    handles, labels = ax.get_legend_handles_labels()
    if n_low:
        handles.append(Line2D([], [], ls="none", marker="<", ms=7, mfc="white", mec="0.3",
                              mew=1.2))
        labels.append(f"below {floor},\ndrawn at {floor}")
    legend_outside(ax, "right", handles=handles, labels=labels, title="target")
    ax.set_title(_carb_title("Model variants on the test set (lower is better)", platform,
                             dataset_label))
    fig.tight_layout()
    return fig
