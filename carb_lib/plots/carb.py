"""Figures of the CARB estimator (notebook 03; data from :mod:`carb_lib.ensemble` and
:mod:`carb_lib.evaluation`): predicted against measured, feature importance, model comparison."""

from __future__ import annotations

import matplotlib

from carb_lib.plots._style import plt, sns
from carb_lib.vocab import label

__all__ = ["plot_carb_feature_importance", "plot_carb_model_comparison",
           "plot_carb_pred_vs_measured"]


def _carb_title(what: str, platform, dataset_label: str) -> str:
    return f"{what} — {platform or 'all platforms'} ({dataset_label})"


def plot_carb_pred_vs_measured(truth, pred, target: str, platform=None,
                               dataset_label: str = "measured", intervals=None, hue=None):
    """Predicted against measured ``target`` on log-log axes, with y = x and a +-10 % band.

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

    from carb_lib.metrics import regression_metrics

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
        fig.colorbar(sc, ax=ax, label=hue.name or "")
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
            transform=ax.transAxes, va="top", fontsize=8,
            bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none"})
    ax.legend(loc="lower right", fontsize=7)
    ax.set_title(_carb_title(f"CARB test set: {target}", platform, dataset_label), fontsize=9)
    fig.tight_layout()
    return fig


def plot_carb_feature_importance(importances, target: str, top_n: int = 15, platform=None,
                                 dataset_label: str = "measured", learner: str = "blend"):
    """Horizontal bars of the ``top_n`` features of ``target`` (tidy frame from
    :func:`carb_lib.ensemble.feature_importances`; ``learner="blend"`` = weight-averaged)."""
    sub = importances[(importances["target"] == target) & (importances["learner"] == learner)]
    sub = sub.sort_values("importance", ascending=False).head(top_n)
    fig, ax = plt.subplots(figsize=(6, 0.28 * max(len(sub), 3) + 1.2))
    sns.barplot(data=sub, x="importance", y="feature", ax=ax,
                color=sns.color_palette("viridis", 3)[1])
    ax.set_xlabel("normalised importance (gain / impurity, blend-weighted)")
    ax.set_ylabel("")
    ax.set_title(_carb_title(f"CARB feature importance: {target}", platform, dataset_label),
                 fontsize=9)
    fig.tight_layout()
    return fig


def plot_carb_model_comparison(metrics, metric: str = "r2_log", platform=None,
                               dataset_label: str = "measured"):
    """Grouped bars of ``metric`` per model and target (tidy frame from
    :func:`carb_lib.evaluation.compare_models`)."""
    fig, ax = plt.subplots(figsize=(8, 4.2))
    sns.barplot(data=metrics, x="model", y=metric, hue="target", ax=ax, palette="viridis")
    ax.set_ylim(min(0.0, float(metrics[metric].min())), 1.0)
    ax.set_xlabel("")
    ax.set_ylabel({"r2_log": "R² (log scale)", "r2": "R²"}.get(metric, metric))
    ax.tick_params(axis="x", rotation=40)
    for tick in ax.get_xticklabels():
        tick.set_horizontalalignment("right")
    ax.set_title(_carb_title("Baselines and ablations (test set)", platform, dataset_label),
                 fontsize=9)
    fig.tight_layout()
    return fig
