"""Figures of the cross-platform transfer study (notebook 02; data from
:mod:`carb_lib.transfer.pairwise`): pairwise-transfer and slope matrices, few-shot curves, the comparison
with HELP's reported values."""

from __future__ import annotations

from carb_lib.plots._style import FONT, OKABE_ITO, colours, legend_outside, plt, sns

__all__ = ["plot_fewshot_curves", "plot_help_comparison", "plot_slope_matrix",
           "plot_transfer_matrix"]

# labels of metrics (not of columns): they stay here
_TRANSFER_METRIC_LABELS = {"spearman": "Spearman rank correlation", "mape_pct": "MAPE (%)",
                           "r2": "R$^2$", "slope": "slope of log-log fit"}


def _setting_label(s: str) -> str:
    return str(s).replace("help_", "")


def plot_transfer_matrix(pairwise, metric: str = "spearman", dataset_label: str = "HELP NB201"):
    """Heatmap of a pairwise-transfer metric: rows = source (train) setting, columns = target.

    The diagonal holds the setting-specific model on a holdout split of the target.
    """
    import numpy as np

    tab = pairwise.pivot_table(index="source", columns="target", values=metric)
    names = sorted(set(tab.index) | set(tab.columns))
    tab = tab.reindex(index=names, columns=names)
    n = len(names)
    fig, ax = plt.subplots(figsize=(max(5, 0.42 * n + 2.5), max(4, 0.38 * n + 1.8)))
    sns.heatmap(tab, ax=ax, cmap="viridis", annot=n <= 12, fmt=".2f", square=True,
                cbar_kws={"label": _TRANSFER_METRIC_LABELS.get(metric, metric)},
                vmin=None if metric != "spearman" else max(0.0, float(np.nanmin(tab.values))),
                vmax=None if metric != "spearman" else 1.0)
    ax.set_xticklabels([_setting_label(t.get_text()) for t in ax.get_xticklabels()], rotation=90)
    ax.set_yticklabels([_setting_label(t.get_text()) for t in ax.get_yticklabels()], rotation=0)
    ax.set_xlabel("target setting (tested on)")
    ax.set_ylabel("source setting (trained on)")
    ax.set_title(f"Train on A, test on B ({dataset_label}):\n"
                 f"{_TRANSFER_METRIC_LABELS.get(metric, metric)}; diagonal = B-specific model",
                 fontsize=10)
    fig.tight_layout()
    return fig


def plot_slope_matrix(slopes, dataset_label: str = "HELP NB201"):
    """Heatmap of the OLS slope of log latency on B against log latency on A."""
    tab = slopes.pivot_table(index="source", columns="target", values="slope")
    names = sorted(set(tab.index) | set(tab.columns))
    tab = tab.reindex(index=names, columns=names)
    n = len(names)
    fig, ax = plt.subplots(figsize=(max(5, 0.42 * n + 2.5), max(4, 0.38 * n + 1.8)))
    sns.heatmap(tab, ax=ax, cmap="vlag", center=1.0, annot=n <= 12, fmt=".2f", square=True,
                cbar_kws={"label": "slope of log latency on B against A"})
    ax.set_xticklabels([_setting_label(t.get_text()) for t in ax.get_xticklabels()], rotation=90)
    ax.set_yticklabels([_setting_label(t.get_text()) for t in ax.get_yticklabels()], rotation=0)
    ax.set_xlabel("B (response)")
    ax.set_ylabel("A (predictor)")
    ax.set_title(f"Latency scaling between settings ({dataset_label}):\n"
                 "OLS slope of log latency on B vs log latency on A", fontsize=10)
    fig.tight_layout()
    return fig


def plot_fewshot_curves(summary, metric: str = "spearman", help_reported=None,
                        dataset_label: str = "HELP NB201"):
    """Few-shot accuracy vs k: one panel per device kind, one line per method.

    Lines are the mean over target settings of the per-setting mean over draws; bands are
    +- one standard deviation across settings. ``help_reported`` (a number, or a mapping
    device kind -> number) draws HELP's reported Spearman at k=10 as a star, labelled
    "reported by HELP" (its devices are not ours).
    """
    col = f"{metric}_mean"
    present = set(summary["device_kind"])
    kinds = [k for k in ("desktop_gpu", "desktop_cpu", "mobile") if k in present]
    kinds += sorted(set(summary["device_kind"]) - set(kinds))
    fig, axes = plt.subplots(1, len(kinds), figsize=(4.2 * len(kinds), 3.8), sharey=True,
                             squeeze=False)
    methods = list(dict.fromkeys(summary["method"]))
    colors = colours(methods)
    lows, highs = [], []
    for ax, kind in zip(axes[0], kinds, strict=True):
        sub = summary[summary["device_kind"] == kind]
        for m in methods:
            g = sub[sub["method"] == m].groupby("k")[col].agg(["mean", "std"]).reset_index()
            if g.empty:
                continue
            sd = g["std"].fillna(0)
            ax.plot(g["k"], g["mean"], marker="o", ms=4, label=m, color=colors[m])
            ax.fill_between(g["k"], g["mean"] - sd, g["mean"] + sd, alpha=0.12, color=colors[m])
            lows.append(float((g["mean"] - sd).min()))
            highs.append(float((g["mean"] + sd).max()))
        ref = help_reported.get(kind) if isinstance(help_reported, dict) else help_reported
        if ref is not None and metric == "spearman":
            ax.scatter([10], [ref], marker="*", s=140, color="crimson", zorder=5,
                       label="reported by HELP (its devices)")
        ax.set_xscale("log")
        ax.minorticks_off()
        ks = sorted(sub["k"].unique())
        ax.set_xticks(ks)
        ax.set_xticklabels([str(k) for k in ks])
        ax.set_xlabel("k target samples")
        ax.set_title(f"{kind.replace('_', ' ')} ({sub['target'].nunique()} settings)",
                     fontsize=10)
    if metric == "spearman" and lows:
        axes[0][0].set_ylim(max(0.0, min(lows) - 0.02), 1.005)
    elif lows:
        axes[0][0].set_ylim(0, max(highs) * 1.05)
    axes[0][0].set_ylabel(_TRANSFER_METRIC_LABELS.get(metric, metric))
    axes[0][-1].legend(loc="lower right" if metric == "spearman" else "upper right")
    fig.suptitle(f"Few-shot transfer to an unseen device ({dataset_label}, leave-one-device-out)",
                 fontsize=11)
    fig.tight_layout()
    return fig


def plot_help_comparison(comparison, dataset_label: str = "HELP NB201"):
    """Bars: our few-shot Spearman (k=10) beside the values reported by HELP (Table 3).

    The bars start at 0 (their lengths compare) and carry their values; a group HELP did not
    report says so; the legend lies under the axes, outside the bars.
    """
    import numpy as np

    fig, ax = plt.subplots(figsize=(9.0, 4.2))
    x = np.arange(len(comparison))
    ax.bar(x - 0.2, comparison["help_reported"], width=0.4, label="reported by HELP "
           "(its unseen devices)", color=OKABE_ITO[1])
    ax.bar(x + 0.2, comparison["ours"], width=0.4, label="ours (shipped devices)",
           color=OKABE_ITO[0])
    for xi, (h, o) in enumerate(zip(comparison["help_reported"], comparison["ours"], strict=True)):
        if np.isfinite(h):
            ax.text(xi - 0.2, h + 0.01, f"{h:.3f}", ha="center", va="bottom", fontsize=FONT)
        else:
            ax.text(xi - 0.2, 0.03, "not reported by HELP", ha="center", va="bottom",
                    rotation=90, fontsize=FONT, color="dimgray")
        if np.isfinite(o):
            ax.text(xi + 0.2, o + 0.01, f"{o:.3f}", ha="center", va="bottom", fontsize=FONT)
    ax.set_xticks(x)
    ax.set_xticklabels(comparison["group"], fontsize=FONT, rotation=30, ha="right")
    ax.set_ylabel("Spearman, k = 10 target samples\n(bars from 0)")
    ax.set_ylim(0.0, 1.1)
    ax.set_yticks(np.arange(0.0, 1.01, 0.2))
    ax.set_title(f"Few-shot latency ranking vs HELP ({dataset_label}; different devices)",
                 fontsize=10)
    legend_outside(ax, "below", ncol=2)
    fig.tight_layout()
    return fig
