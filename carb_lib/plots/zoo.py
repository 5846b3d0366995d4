"""Figures of the torchvision zoo evaluation (:mod:`carb_lib.evaluation.zoo`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from carb_lib.plots._style import plt, sns

_TITLES = {"leave_network_out": "Network left out of the fit",
           "zero_zoo": "No zoo network in the fit",
           "flops_only": "Baseline: FLOPs only",
           "operators_summed": "Baseline: operators timed alone, summed",
           "remeasurement": "A second measurement"}
_AXES = {"latency_ms": "latency (ms)", "peak_mem_mib": "peak memory (MiB)"}


def plot_zoo_predictions(predictions: pd.DataFrame, target: str = "latency_ms", *,
                         methods: Sequence[str] = ("leave_network_out", "zero_zoo"),
                         platform: str = "", label_batch: int = 1,
                         label_resolution: int = 224) -> plt.Figure:
    """Predicted against measured cost of every zoo row, one panel per method, coloured by
    network kind; every network is named once (at ``label_batch`` and ``label_resolution``)
    in the first panel. Dashed: ±10 %.

    Parameters
    ----------
    predictions : pandas.DataFrame
        :attr:`carb_lib.evaluation.zoo.ZooEvaluation.predictions`.
    target : {"latency_ms", "peak_mem_mib"}
    methods : sequence of str
        Methods to draw, one panel each (those without rows are left out).
    platform : str
        Named in the title.
    """
    d = predictions[predictions["target"] == target]
    methods = [m for m in methods if (d["method"] == m).any()]
    if not methods:
        raise ValueError(f"no predictions of {target} for the methods asked")
    kinds = sorted(d["kind"].unique())
    palette = dict(zip(kinds, sns.color_palette("tab20", len(kinds)), strict=True))
    ncols = min(2, len(methods))
    nrows = -(-len(methods) // ncols)
    fig, grid = plt.subplots(nrows, ncols, figsize=(6.2 * ncols, 5.6 * nrows), squeeze=False,
                             sharex=True, sharey=True)
    axes = [grid.ravel()[: len(methods)]]
    for ax in grid.ravel()[len(methods):]:
        ax.set_visible(False)
    lo = float(np.nanmin(d[["measured", "predicted"]].to_numpy()))
    hi = float(np.nanmax(d[["measured", "predicted"]].to_numpy()))
    line = np.array([lo / 1.2, hi * 1.2])
    for i, (ax, m) in enumerate(zip(axes[0], methods, strict=True)):
        g = d[d["method"] == m]
        for kind, gk in g.groupby("kind"):
            ax.scatter(gk["measured"], gk["predicted"], s=18, color=palette[kind], label=kind,
                       alpha=0.85, edgecolor="none")
        ax.plot(line, line, color="0.3", lw=1)
        for f in (0.9, 1.1):
            ax.plot(line, line * f, color="0.5", lw=0.8, ls="--")
        ape = np.abs(g["predicted"] - g["measured"]) / g["measured"] * 100
        ax.set_title(f"{_TITLES.get(m, m)}\nmedian error {np.median(ape):.1f} %, "
                     f"{np.mean(ape <= 10) * 100:.0f} % of rows within ±10 %", fontsize=10)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"measured {_AXES.get(target, target)}")
        ax.set_ylabel(f"predicted {_AXES.get(target, target)}")
        if i == 0:
            lab = g[(g["batch"] == label_batch) & (g["resolution"] == label_resolution)]
            for r in lab.drop_duplicates("network").itertuples():
                ax.annotate(r.network, (r.measured, r.predicted), fontsize=5.5, alpha=0.8,
                            xytext=(2, 2), textcoords="offset points")
    axes[0][min(1, len(methods) - 1)].legend(title="network kind", fontsize=7, title_fontsize=8,
                                             loc="upper left", bbox_to_anchor=(1.01, 1.0))
    where = f" on {platform}" if platform else ""
    fig.suptitle(f"torchvision networks{where}: predicted against measured "
                 f"{_AXES.get(target, target)} (names at batch {label_batch}, "
                 f"{label_resolution} px)", fontsize=11)
    fig.tight_layout()
    return fig
