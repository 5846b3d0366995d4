"""Figures of the deployment screening (notebook 04, ``carb screen --fig-dir``): the front with
budgets and shortlist, the elimination funnel, predicted against measured for the shortlist."""

from __future__ import annotations

from carb_lib.plots._style import plt, sns
from carb_lib.screening.budgets import BUDGET_METRICS, QUALITY_PROXY
from carb_lib.vocab import label

__all__ = ["plot_screening_front", "plot_screening_funnel", "plot_screening_validation"]


def _screen_label(col: str) -> str:
    """Axis label: the capacity proxy is named as such, other columns as in the vocabulary."""
    return "parameters (capacity proxy)" if col == QUALITY_PROXY else label(col)


def _axis_label(col: str) -> str:
    """``predicted ...`` for a predicted cost, the plain label otherwise."""
    return ("predicted " if col in BUDGET_METRICS else "") + _screen_label(col)


def plot_screening_front(result, x: str | None = None, y: str | None = None,
                         title: str | None = None, max_background: int = 20_000, seed: int = 0,
                         hue: str | None = None):
    """Predicted costs of the screened candidates: eliminated (grey), within budget (blue), the
    Pareto front (orange), the shortlist (red, with conformal intervals) and budget lines.

    Parameters
    ----------
    result : carb_lib.screening.ScreeningResult
    x, y : str, optional
        Columns on the axes (default: the first two objectives).
    max_background : int
        At most this many eliminated / surviving points are drawn (seeded subsample).
    hue : str, optional
        Colour the front by this column (e.g. ``"family"`` for candidates of several
        families: one front across families).
    """
    import numpy as np

    objs = [o.column for o in result.spec.objectives]
    if x is None:
        x = objs[0]
    if y is None:
        y = objs[1] if len(objs) > 1 else next(c for c in ("peak_mem_mib", "latency_ms")
                                               if c != x and c in result.table.columns)
    tab = result.table
    rng = np.random.default_rng(seed)
    fig, ax = plt.subplots(figsize=(7.5, 5.5))

    def _sub(d):
        return d if len(d) <= max_background else d.iloc[rng.choice(len(d), max_background,
                                                                    replace=False)]

    out_b = tab[~tab["within_budget"]]
    surv = tab[tab["within_budget"]]
    ax.scatter(_sub(out_b)[x], _sub(out_b)[y], s=4, color="0.75", alpha=0.4, lw=0,
               label=f"eliminated in stage 1 ({len(out_b):,})")
    ax.scatter(_sub(surv)[x], _sub(surv)[y], s=6, color="tab:blue", alpha=0.35, lw=0,
               label=f"within budget ({len(surv):,})")
    front = result.front.sort_values(x)
    if hue is not None and hue in front.columns and front[hue].nunique() > 1:
        markers = "osD^vP"
        for i, (v, g) in enumerate(front.groupby(hue, sort=True)):
            ax.scatter(g[x], g[y], s=22, marker=markers[i % len(markers)],
                       color=sns.color_palette("Set2", 8)[i % 8], edgecolor="black", lw=0.3,
                       label=f"Pareto front: {v} ({len(g):,})", zorder=3)
    else:
        ax.scatter(front[x], front[y], s=18, color="tab:orange", edgecolor="black", lw=0.3,
                   label=f"Pareto front ({len(front):,})", zorder=3)
    sl = result.shortlist
    if len(sl):
        xerr = yerr = None
        if f"{x}_lo" in sl.columns:
            xerr = np.vstack([sl[x] - sl[f"{x}_lo"], sl[f"{x}_hi"] - sl[x]])
        if f"{y}_lo" in sl.columns:
            yerr = np.vstack([sl[y] - sl[f"{y}_lo"], sl[f"{y}_hi"] - sl[y]])
        ax.errorbar(sl[x], sl[y], xerr=xerr, yerr=yerr, fmt="*", ms=11, color="tab:red",
                    mec="black", mew=0.4, elinewidth=0.7, ecolor=(0.84, 0.15, 0.16, 0.35),
                    capsize=2, zorder=4,
                    label=f"shortlist (k={len(sl)}, {result.spec.coverage:.0%} intervals)")
    for b in result.spec.budgets:
        if b.metric == x:
            ax.axvline(b.limit, color="tab:red", ls="--", lw=1.0)
            ax.annotate(f"budget {b.label}", (b.limit, 1), xycoords=("data", "axes fraction"),
                        rotation=90, va="top", ha="right", fontsize=8, color="tab:red")
        elif b.metric == y:
            ax.axhline(b.limit, color="tab:red", ls="--", lw=1.0)
            ax.annotate(f"budget {b.label}", (1, b.limit), xycoords=("axes fraction", "data"),
                        va="bottom", ha="right", fontsize=8, color="tab:red")
    from matplotlib.ticker import FuncFormatter

    plain = FuncFormatter(lambda v, _: f"{v:g}")
    for col, axis in ((x, ax.xaxis), (y, ax.yaxis)):
        v = tab[col].to_numpy(dtype=float)
        v = v[np.isfinite(v)]
        if len(v) and v.min() > 0 and v.max() / v.min() > 20:  # log only over > ~1 decade
            (ax.set_xscale if axis is ax.xaxis else ax.set_yscale)("log")
            axis.set_major_formatter(plain)
    ax.set_xlabel(_axis_label(x))
    ax.set_ylabel(_axis_label(y))
    plat = result.platform or "?"
    if result.platform_a:
        plat = f"{result.platform_a} -> {plat}"
    ax.set_title(title or f"Screening on {plat}: {result.counts['candidates']:,} candidates, "
                 f"front of {len(objs)} objectives")
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def plot_screening_funnel(result, title: str | None = None):
    """The elimination funnel (left) and the eliminations per budget (right)."""
    c = result.counts
    stages = [("candidates", c["candidates"])]
    if result.platform_a:
        stages.append((f"top-N by {result.platform_a}", c["after_cross_platform"]))
    stages += [("within budgets", c["survivors"]), ("Pareto front", c["front"]),
               ("shortlist", c["shortlist"])]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    ax = axes[0]
    names, vals = zip(*stages, strict=True)
    floor = 0.8  # zero-count stages drawn as a stub on the log axis, labelled 0
    ax.barh(range(len(vals)), [max(v, floor) for v in vals],
            color=sns.color_palette("viridis", len(vals)))
    ax.set_yticks(range(len(vals)), names)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlim(floor * 0.9, max(vals) * 4)
    for i, v in enumerate(vals):
        ax.annotate(f"{v:,}", (max(v, floor), i), xytext=(3, 0), textcoords="offset points",
                    va="center", fontsize=9)
    ax.set_xlabel("configurations (log scale)")
    ax.set_title("Elimination funnel")
    ax = axes[1]
    rep = result.budget_report
    if len(rep):
        ypos = list(range(len(rep)))
        h = 0.27
        for j, (col, lab) in enumerate([("n_fail", "fail (any order)"),
                                        ("n_first_fail", "first failing"),
                                        ("n_only_fail", "fail only this")]):
            ax.barh([p + (j - 1) * h for p in ypos], rep[col], height=h, label=lab)
            for p, v in zip(ypos, rep[col], strict=True):
                ax.annotate(f"{int(v):,}", (v, p + (j - 1) * h), xytext=(2, 0),
                            textcoords="offset points", va="center", fontsize=7)
        ax.set_xlim(0, max(1, float(rep["n_fail"].max())) * 1.2)
        ax.set_yticks(list(ypos), list(rep.index))
        ax.invert_yaxis()
        ax.set_xlabel("candidates eliminated (upper bound over budget)")
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "no budgets", ha="center", va="center", transform=ax.transAxes)
    ax.set_title(f"Stage 1 at {result.spec.coverage:.0%} coverage")
    fig.suptitle(title or f"Screening funnel, {result.platform or '?'}")
    fig.tight_layout()
    return fig


def plot_screening_validation(table, budgets=(), title: str = "Shortlist: predicted vs measured"):
    """Predicted (with intervals) against measured cost per target for shortlisted configs.

    ``table`` has ``{t}_pred``, ``{t}_lo``, ``{t}_hi``, ``{t}_meas`` columns (from
    :func:`carb_lib.screening.validate_on_hardware` or the ``shortlist_table`` of
    :func:`carb_lib.screening.validate_against_measured`); ``budgets`` are
    :class:`carb_lib.screening.Budget` drawn as lines where they bound a target.
    """
    import numpy as np

    targets = [c.removesuffix("_meas") for c in table.columns if c.endswith("_meas")]
    fig, axes = plt.subplots(1, max(1, len(targets)), figsize=(4.2 * max(1, len(targets)), 4.0),
                             squeeze=False)
    for ax, t in zip(axes[0], targets, strict=False):
        d = table[np.isfinite(table[f"{t}_meas"].to_numpy(dtype=float))]
        err = np.vstack([d[f"{t}_pred"] - d[f"{t}_lo"], d[f"{t}_hi"] - d[f"{t}_pred"]])
        inside = (d[f"{t}_lo"] <= d[f"{t}_meas"]) & (d[f"{t}_meas"] <= d[f"{t}_hi"])
        ax.errorbar(d[f"{t}_meas"], d[f"{t}_pred"], yerr=err, fmt="none", ecolor="0.6", lw=0.8)
        ax.scatter(d[f"{t}_meas"], d[f"{t}_pred"], c=np.where(inside, "tab:green", "tab:red"),
                   s=25, zorder=3, edgecolor="black", lw=0.3)
        if len(d):
            lo = float(np.nanmin(d[[f"{t}_meas", f"{t}_lo"]].to_numpy()))
            hi = float(np.nanmax(d[[f"{t}_meas", f"{t}_hi"]].to_numpy()))
            ax.plot([lo, hi], [lo, hi], color="black", lw=0.8, ls="--")
        for b in budgets:
            if b.metric == t:
                ax.axvline(b.limit, color="tab:red", ls=":", lw=1)
                ax.axhline(b.limit, color="tab:red", ls=":", lw=1)
        ax.set_xlabel("measured " + _screen_label(t))
        ax.set_ylabel("predicted " + _screen_label(t))
        ax.set_title(f"{t}: {int(inside.sum())}/{len(d)} inside interval")
    fig.suptitle(title)
    fig.tight_layout()
    return fig
