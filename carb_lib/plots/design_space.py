"""Figures of the design space (notebook 00): static-feature distributions, analytic against
measured features."""

from __future__ import annotations

from carb_lib.core.vocab import label
from carb_lib.plots._style import OKABE_ITO, plt, sns, words

__all__ = ["plot_feature_check", "plot_static_feature_distributions"]


def plot_static_feature_distributions(features, dataset_label: str = "paper grid"):
    """Histograms (log x) of the main static features, one panel each, coloured by block."""
    import numpy as np

    cols = ["flops", "params", "activation_bytes", "arith_intensity_flop_per_byte"]
    fig, axes = plt.subplots(1, len(cols), figsize=(4.2 * len(cols), 3.6))
    for ax, col in zip(axes, cols, strict=True):
        vals = features[col].astype(float)
        bins = np.logspace(np.log10(vals[vals > 0].min()), np.log10(vals.max()), 40)
        sns.histplot(data=features, x=col, hue="block" if "block" in features else None,
                     bins=bins, ax=ax, element="step", stat="count", legend=ax is axes[-1])
        ax.set_xscale("log")
        ax.set_xlabel(label(col))
    fig.suptitle(f"Static features of the {dataset_label} (n={len(features):,}), analytic")
    fig.tight_layout()
    return fig


def plot_feature_check(comparison, dataset_label: str = "paper grid sample"):
    """Analytic against measured (FlopCounterMode / hooks) features, log-log, identity line."""
    cols = ["flops", "params", "activation_bytes", "n_conv"]
    cmp = comparison[comparison["column"].isin(cols)]
    fig, axes = plt.subplots(1, len(cols), figsize=(4.0 * len(cols), 3.8))
    for ax, col in zip(axes, cols, strict=True):
        d = cmp[cmp["column"] == col]
        ok = d["match"].all()
        ax.scatter(d["measured"], d["analytic"], s=10, alpha=0.6,
                   color=OKABE_ITO[2] if ok else OKABE_ITO[5])
        lo, hi = d[["measured", "analytic"]].min().min(), d[["measured", "analytic"]].max().max()
        ax.plot([lo, hi], [lo, hi], color="black", lw=0.8, ls="--")
        if col != "n_conv":
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.set_xlabel(f"measured {label(col)}")
        ax.set_ylabel(f"analytic {label(col)}")
        ax.set_title(f"{words(col).split(' (')[0]}: {int(d['match'].sum())}/{len(d)} exact")
    n = comparison["config_id"].nunique()
    fig.suptitle(f"Analytic vs measured static features, {dataset_label} (n={n} configs)")
    fig.tight_layout()
    return fig
