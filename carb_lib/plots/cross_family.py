"""Figures of the cross-family evaluation (notebook 05; data from
:mod:`carb_lib.evaluation.cross_family`): accuracy per family and model, predicted against
measured per family."""

from __future__ import annotations

import numpy as np
import pandas as pd

from carb_lib.core.metrics import mape_pct
from carb_lib.core.vocab import TARGET_SHORT, label
from carb_lib.plots._style import colours, legend_outside, note, plain_log_ticks, plain_number, plt

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


_METRIC_NAMES = {"mape_pct": "MAPE (%, log scale)", "within_10pct": "share within ±10 %",
                 "spearman": "Spearman rank correlation", "r2": "R²"}
#: MAPE below this is drawn at it (a model that saw the rows can reach 1e-13 %)
MAPE_FLOOR = 0.1


def plot_cross_family_summary(summary: pd.DataFrame, models: list[tuple[str, int]] | None = None,
                              metrics: tuple[str, ...] = ("mape_pct", "spearman"),
                              platform: str | None = None, source_label: str = "ResNet grid"):
    """Dot plot: mean +- sd over seeds of each metric, one row per model (zero-shot, few-shot
    at each k, the family's own model), one colour per family; one row of panels per target.

    MAPE is drawn on a log axis from :data:`MAPE_FLOOR` %: smaller values (a model that saw
    the rows reaches 0) are drawn at the floor as open left-pointing triangles, the floor's
    tick reads "≤ 0.1" and a note under the figure counts them; the dashed lines are the
    accuracy goals (MAPE 5 % for memory and 10 % for latency, Spearman 0.95 for latency).

    Parameters
    ----------
    summary : pandas.DataFrame
        :attr:`CrossFamilyResult.summary`.
    models : list of (model, k), optional
        Rows in this order (default: zero-shot, every few-shot method at every k that is in
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
    s["row"] = [model_label(m, k) for m, k in zip(s["model"], s["k"], strict=True)]
    rows = list(dict.fromkeys(model_label(m, k) for m, k in models))
    targets = [t for t in ("peak_mem_mib", "latency_ms", "energy_j") if t in set(s["target"])]
    fams = list(dict.fromkeys(s["family"]))
    pal = colours(fams)
    fig, axes = plt.subplots(len(targets), len(metrics),
                             figsize=(4.6 * len(metrics) + 1.8, 0.3 * len(rows) * len(targets)
                                      + 1.2 * len(targets) + 0.6),
                             squeeze=False, sharey=True)
    step = 0.6 / max(len(fams), 1)
    clipped, smallest, low_panels = 0, np.inf, set()  # MAPE below the floor, drawn at it
    for i, t in enumerate(targets):
        for j, metric in enumerate(metrics):
            ax = axes[i][j]
            for f, fam in enumerate(fams):
                d = s[(s["target"] == t) & (s["family"] == fam)].set_index("row").reindex(rows)
                y = np.arange(len(rows)) + (f - (len(fams) - 1) / 2) * step
                v = d[f"{metric}_mean"].to_numpy(dtype=float)
                sd = d[f"{metric}_sd"].fillna(0).to_numpy(dtype=float)
                lo = v - sd
                low = np.zeros(len(v), dtype=bool)
                if metric == "mape_pct":
                    low = v < MAPE_FLOOR
                    clipped += int(low.sum())
                    smallest = min(smallest, float(np.nanmin(v, initial=np.inf)))
                    if low.any():
                        low_panels.add((i, j))
                    v = np.maximum(v, MAPE_FLOOR)
                    lo = np.maximum(lo, MAPE_FLOOR)
                shown = np.where(low, np.nan, v)
                ax.errorbar(shown, y, xerr=np.vstack([np.maximum(v - lo, 0), sd]), fmt="o",
                            ms=5, capsize=2, lw=0.9, color=pal[fam], label=fam)
                if low.any():
                    ax.plot(v[low], y[low], ls="none", marker="<", ms=6, mfc="white",
                            mec=pal[fam], mew=1.2, zorder=3)
            ax.set_yticks(range(len(rows)), rows)
            ax.set_ylim(len(rows) - 0.5, -0.5)
            name = _METRIC_NAMES[metric]
            ax.set_xlabel(name)
            if metric == "mape_pct":
                from matplotlib.ticker import FuncFormatter

                ax.set_xscale("log")
                hi = float(np.nanmax(s.loc[s["target"] == t, "mape_pct_mean"]
                                     + s.loc[s["target"] == t, "mape_pct_sd"].fillna(0)))
                ax.set_xlim(MAPE_FLOOR * 0.7, max(hi, 20.0) * 1.5)
                floor = "≤ " if (i, j) in low_panels else ""
                ax.xaxis.set_major_formatter(FuncFormatter(
                    lambda v, _, f=floor: f"{f}{v:g}" if np.isclose(v, MAPE_FLOOR)
                    else plain_number(v)))
                ax.axvline(5 if t == "peak_mem_mib" else 10, color="k", ls="--", lw=0.8)
            if metric == "spearman":
                ax.set_xlim(max(-1.0, float(np.nanmin(s[f"{metric}_mean"])) - 0.1), 1.02)
                if t == "latency_ms":
                    ax.axvline(0.95, color="k", ls="--", lw=0.8)
            ax.set_title(f"{TARGET_SHORT.get(t, label(t))}: {name.split(' (')[0]}")
    handles, labels = axes[0][0].get_legend_handles_labels()
    if clipped:
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], ls="none", marker="<", ms=6, mfc="white", mec="0.3",
                              mew=1.2))
        labels.append(f"MAPE below {MAPE_FLOOR:g} %,\ndrawn at {MAPE_FLOOR:g} %")
        least = ("0 %" if smallest <= 0 else f"{smallest:.1g} %, exact to rounding"
                 if smallest < 1e-6 else f"{smallest:.2g} %")
        note(fig, f"{clipped} MAPE value{'s' if clipped > 1 else ''} below {MAPE_FLOOR:g} % "
                  f"(down to {least}) drawn at {MAPE_FLOOR:g} % as open triangles: a log axis "
                  "cannot show 0.", width=150)
    axes[0][-1].legend(handles, labels, title="family", loc="upper left",
                       bbox_to_anchor=(1.01, 1.0))
    n = int(summary["n_seeds"].max()) if "n_seeds" in summary else 0
    fig.suptitle(f"New families predicted from a {source_label} model, {platform or '?'} "
                 f"(mean ± sd over {n} seeds; dashed: accuracy goal)")
    fig.tight_layout()
    return fig


def plot_cross_family_predictions(predictions: pd.DataFrame, target: str = "latency_ms",
                                  platform: str | None = None):
    """Predicted against measured ``target`` on the test rows of each new family (panels),
    one colour per model (zero-shot, few-shot, own model), log-log with y = x and +-10 %."""
    d = predictions[predictions["target"] == target].copy()
    d["label"] = [model_label(m, k) for m, k in zip(d["model"], d["k"], strict=True)]
    fams = list(dict.fromkeys(d["family"]))
    fig, axes = plt.subplots(1, len(fams), figsize=(4.4 * len(fams), 4.2), squeeze=False)
    labels = list(dict.fromkeys(d["label"]))
    palette = colours(labels)
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
        ax.set_title(f"{fam} (test architectures, seed 0)")
        plain_log_ticks(ax)
        legend_outside(ax, "below")
    fig.suptitle(f"Cross-family {TARGET_SHORT.get(target, label(target))} predictions, "
                 f"{platform or '?'}")
    fig.tight_layout()
    return fig
