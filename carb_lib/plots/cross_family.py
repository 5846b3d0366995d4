"""Figures of the cross-family evaluation (notebook 05; data from
:mod:`carb_lib.evaluation.cross_family`): accuracy per family and model, predicted against
measured per family."""

from __future__ import annotations

import numpy as np
import pandas as pd

from carb_lib.plots._style import plt, sns
from carb_lib.vocab import TARGET_SHORT, label

__all__ = ["model_label", "plot_cross_family_predictions", "plot_cross_family_summary"]

_NAMES = {"zero_shot": "zero-shot (source model)", "own_model": "family's own model",
          "target_only": "k rows only: ridge", "flops": "k rows only: FLOPs"}


def model_label(model: str, k: int) -> str:
    """``"blend, k=10"``, ``"zero-shot (source model)"``, ``"family's own model"``."""
    if model == "zero_shot":
        return _NAMES[model]
    if model == "own_model":
        return _NAMES[model]
    return f"{_NAMES.get(model, model)}, k={k}"


def plot_cross_family_summary(summary: pd.DataFrame, models: list[tuple[str, int]] | None = None,
                              metrics: tuple[str, ...] = ("mape_pct", "spearman"),
                              platform: str | None = None, source_label: str = "ResNet grid"):
    """Mean +- sd over seeds of each metric, per family (x) and model (bars); one row of panels
    per target.

    Parameters
    ----------
    summary : pandas.DataFrame
        :attr:`CrossFamilyResult.summary`.
    models : list of (model, k), optional
        Bars in this order (default: zero-shot, every few-shot method at every k that is in
        ``summary``, the own model).
    metrics : tuple of str
        ``mape_pct``, ``within_10pct``, ``spearman`` or ``r2``.
    """
    s = summary.copy()
    if models is None:
        order = ["zero_shot", "blend", "ridge", "loglinear", "offset", "target_only", "flops",
                 "own_model"]
        pairs = s[["model", "k"]].drop_duplicates()
        pairs = pairs.assign(o=pairs["model"].map({m: i for i, m in enumerate(order)}))
        models = [(m, int(k)) for m, k in pairs.sort_values(["o", "k"])[["model", "k"]]
                  .itertuples(index=False)]  # fmt: skip
    s["bar"] = [model_label(m, k) for m, k in zip(s["model"], s["k"], strict=True)]
    bars = [model_label(m, k) for m, k in models]
    targets = [t for t in ("peak_mem_mib", "latency_ms", "energy_j") if t in set(s["target"])]
    fams = list(dict.fromkeys(s["family"]))
    fig, axes = plt.subplots(len(targets), len(metrics), figsize=(5.2 * len(metrics),
                                                                  3.4 * len(targets)),
                             squeeze=False)
    palette = dict(zip(bars, sns.color_palette("tab20" if len(bars) > 10 else "tab10",
                                               len(bars)), strict=True))
    width = 0.8 / max(len(bars), 1)
    for i, t in enumerate(targets):
        for j, metric in enumerate(metrics):
            ax = axes[i][j]
            for b, bar in enumerate(bars):
                d = s[(s["target"] == t) & (s["bar"] == bar)].set_index("family").reindex(fams)
                x = np.arange(len(fams)) + (b - (len(bars) - 1) / 2) * width
                ax.bar(x, d[f"{metric}_mean"], width, yerr=d[f"{metric}_sd"].fillna(0),
                       color=palette[bar], label=bar, capsize=2, error_kw={"lw": 0.7})
            ax.set_xticks(np.arange(len(fams)), fams)
            name = {"mape_pct": "MAPE (%)", "within_10pct": "share within ±10 %",
                    "spearman": "Spearman ρ", "r2": "R²"}[metric]
            ax.set_ylabel(name)
            if metric == "mape_pct":
                ax.set_yscale("log")
                ax.axhline(5 if t == "peak_mem_mib" else 10, color="k", ls="--", lw=0.8)
            if metric == "spearman":
                ax.set_ylim(max(0.0, float(np.nanmin(s[f"{metric}_mean"])) - 0.1), 1.0)
                if t == "latency_ms":
                    ax.axhline(0.95, color="k", ls="--", lw=0.8)
            ax.set_title(f"{label(t)}: {name}", fontsize=9)
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    n = int(summary["n_seeds"].max()) if "n_seeds" in summary else 0
    fig.suptitle(f"New families predicted from a {source_label} model — {platform or '?'} "
                 f"(mean ± sd over {n} seeds; dashed: the issue's targets)", fontsize=10)
    fig.tight_layout()
    return fig


def plot_cross_family_predictions(predictions: pd.DataFrame, target: str = "latency_ms",
                                  platform: str | None = None):
    """Predicted against measured ``target`` on the test rows of each new family (panels),
    one colour per model (zero-shot, few-shot, own model), log-log with y = x and +-10 %."""
    from carb_lib.metrics import mape_pct

    d = predictions[predictions["target"] == target].copy()
    d["label"] = [model_label(m, k) for m, k in zip(d["model"], d["k"], strict=True)]
    fams = list(dict.fromkeys(d["family"]))
    fig, axes = plt.subplots(1, len(fams), figsize=(4.4 * len(fams), 4.2), squeeze=False)
    labels = list(dict.fromkeys(d["label"]))
    palette = dict(zip(labels, sns.color_palette("tab10", len(labels)), strict=True))
    for ax, fam in zip(axes[0], fams, strict=True):
        f = d[(d["family"] == fam) & (d["measured"] > 0) & (d["predicted"] > 0)]
        for lab in labels:
            g = f[f["label"] == lab]
            if len(g):
                ax.scatter(g["measured"], g["predicted"], s=7, alpha=0.6, lw=0,
                           color=palette[lab],
                           label=f"{lab}: MAPE {mape_pct(g['measured'], g['predicted']):.1f} %")
        if len(f):
            lo = min(f["measured"].min(), f["predicted"].min()) * 0.8
            hi = max(f["measured"].max(), f["predicted"].max()) * 1.25
            grid = np.geomspace(lo, hi, 50)
            ax.plot(grid, grid, color="k", lw=0.8)
            ax.fill_between(grid, grid * 0.9, grid * 1.1, color="tab:red", alpha=0.1)
            ax.set(xlim=(lo, hi), ylim=(lo, hi))
        ax.set(xscale="log", yscale="log", xlabel=f"measured {label(target)}",
               ylabel=f"predicted {label(target)}")
        ax.set_title(f"{fam} (test architectures, seed 0)", fontsize=9)
        ax.legend(fontsize=6.5, loc="upper left")
    fig.suptitle(f"Cross-family {TARGET_SHORT.get(target, target)} predictions — "
                 f"{platform or '?'}", fontsize=10)
    fig.tight_layout()
    return fig
