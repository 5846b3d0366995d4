"""Figures of the deployment screening (notebook 04, ``carb screen --fig-dir``): the front with
budgets and shortlist, the elimination funnel, predicted against measured for the shortlist."""

from __future__ import annotations

from carb_lib.core.vocab import TARGET_SHORT, TARGET_UNITS, label
from carb_lib.plots._style import FONT, OKABE_ITO, colours, legend_outside, plt
from carb_lib.screening.budgets import BUDGET_METRICS, QUALITY_PROXY

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

    The axes span the candidates inside the model's training range (and the front and
    shortlist); candidates whose prediction extrapolates (the table's ``extrapolated`` column)
    are drawn pale and counted in the legend, with how many lie beyond the axes. The title
    names every objective of the front, those not on an axis too.

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
    import pandas as pd

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

    extr = (tab["extrapolated"].fillna(False).astype(bool) if "extrapolated" in tab.columns
            else np.zeros(len(tab), dtype=bool))
    inside = tab[~np.asarray(extr)]
    outside = tab[np.asarray(extr)]
    out_b = inside[~inside["within_budget"]]
    surv = inside[inside["within_budget"]]
    blue, orange, red = OKABE_ITO[0], OKABE_ITO[1], OKABE_ITO[5]
    ax.scatter(_sub(out_b)[x], _sub(out_b)[y], s=5, color="0.55", alpha=0.45, lw=0,
               label=f"eliminated in stage 1 ({len(out_b):,})")
    ax.scatter(_sub(surv)[x], _sub(surv)[y], s=7, color=blue, alpha=0.45, lw=0,
               label=f"within budget ({len(surv):,})")
    front = result.front.sort_values(x)
    if hue is not None and hue in front.columns and front[hue].nunique() > 1:
        markers = "osD^vP"
        pal = colours(sorted(front[hue].astype(str).unique()))
        for i, (v, g) in enumerate(front.groupby(hue, sort=True)):
            ax.scatter(g[x], g[y], s=26, marker=markers[i % len(markers)],
                       color=pal[str(v)], edgecolor="black", lw=0.4,
                       label=f"Pareto front: {v} ({len(g):,})", zorder=3)
    else:
        ax.scatter(front[x], front[y], s=22, color=orange, edgecolor="black", lw=0.4,
                   label=f"Pareto front ({len(front):,})", zorder=3)
    sl = result.shortlist
    if len(sl):
        xerr = yerr = None
        if f"{x}_lo" in sl.columns:
            xerr = np.vstack([sl[x] - sl[f"{x}_lo"], sl[f"{x}_hi"] - sl[x]])
        if f"{y}_lo" in sl.columns:
            yerr = np.vstack([sl[y] - sl[f"{y}_lo"], sl[f"{y}_hi"] - sl[y]])
        ax.errorbar(sl[x], sl[y], xerr=xerr, yerr=yerr, fmt="*", ms=12, color=red,
                    mec="black", mew=0.4, elinewidth=0.8, ecolor=red, alpha=0.9,
                    capsize=2, zorder=4,
                    label=f"shortlist (k={len(sl)}, {result.spec.coverage:.0%} intervals)")
    shown = [inside[[x, y]], front[[x, y]], sl[[x, y]] if len(sl) else None]
    parts = [d for d in shown if d is not None and len(d)]
    box = (pd.concat(parts) if parts else pd.DataFrame(columns=[x, y])).astype(float)
    box = box[np.isfinite(box[x]) & np.isfinite(box[y])]
    if len(outside):
        o = outside[[x, y]].astype(float)
        beyond = 0
        if len(box):
            beyond = int((~(o[x].between(box[x].min(), box[x].max())
                            & o[y].between(box[y].min(), box[y].max()))).sum())
        ax.scatter(_sub(outside)[x], _sub(outside)[y], s=5, color="0.8", alpha=0.5, lw=0,
                   zorder=0, label=(f"extrapolated, outside the training range "
                                    f"({len(outside):,}; {beyond:,} beyond the axes)"))
    for b in result.spec.budgets:
        if b.metric == x:
            ax.axvline(b.limit, color=red, ls="--", lw=1.0)
            ax.annotate(f"budget {_budget_words(b.label)}", (b.limit, 1), xycoords=("data", "axes fraction"),
                        rotation=90, va="top", ha="right", fontsize=FONT, color=red)
        elif b.metric == y:
            ax.axhline(b.limit, color=red, ls="--", lw=1.0)
            ax.annotate(f"budget {_budget_words(b.label)}", (1, b.limit), xycoords=("axes fraction", "data"),
                        va="bottom", ha="right", fontsize=FONT, color=red)
    from matplotlib.ticker import FuncFormatter

    plain = FuncFormatter(lambda v, _: f"{v:g}")
    for col, axis in ((x, ax.xaxis), (y, ax.yaxis)):
        v = box[col].to_numpy(dtype=float) if len(box) else tab[col].to_numpy(dtype=float)
        v = v[np.isfinite(v)]
        setlim = ax.set_xlim if axis is ax.xaxis else ax.set_ylim
        if len(v) and v.min() > 0 and v.max() / v.min() > 20:  # log only over > ~1 decade
            (ax.set_xscale if axis is ax.xaxis else ax.set_yscale)("log")
            axis.set_major_formatter(plain)
            setlim(v.min() / 1.3, v.max() * 1.3)
        elif len(v):
            pad = 0.05 * (v.max() - v.min()) or abs(v.max()) * 0.05 or 1.0
            setlim(v.min() - pad, v.max() + pad)
    ax.set_xlabel(_axis_label(x))
    ax.set_ylabel(_axis_label(y))
    plat = result.platform or "?"
    if result.platform_a:
        plat = f"{result.platform_a} -> {plat}"
    names = [_axis_label(o) for o in objs]
    both = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
    ax.set_title((_words_title(title, keep=(result.platform, result.platform_a))
                   or f"Screening on {plat}: {result.counts['candidates']:,} candidates")
                 + f"\nPareto front over {both}", fontsize=FONT + 1)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, markerscale=1.5)
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
            color=OKABE_ITO[0])
    ax.set_yticks(range(len(vals)), names)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlim(floor * 0.9, max(vals) * 4)
    for i, v in enumerate(vals):
        ax.annotate(f"{v:,}", (max(v, floor), i), xytext=(3, 0), textcoords="offset points",
                    va="center", fontsize=FONT)
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
            ax.barh([p + (j - 1) * h for p in ypos], rep[col], height=h, label=lab,
                    color=OKABE_ITO[j])
            for p, v in zip(ypos, rep[col], strict=True):
                ax.annotate(f"{int(v):,}", (v, p + (j - 1) * h), xytext=(2, 0),
                            textcoords="offset points", va="center", fontsize=FONT)
        ax.set_xlim(0, max(1, float(rep["n_fail"].max())) * 1.2)
        ax.set_yticks(list(ypos), [_budget_words(b) for b in rep.index])
        ax.invert_yaxis()
        ax.set_xlabel("candidates eliminated (upper bound over budget)")
        ax.legend()
    else:
        ax.text(0.5, 0.5, "no budgets", ha="center", va="center", transform=ax.transAxes)
    ax.set_title(f"Stage 1 at {result.spec.coverage:.0%} coverage")
    fig.suptitle(_words_title(title, keep=(result.platform, result.platform_a))
                 or f"Screening funnel, {result.platform or '?'}")
    fig.tight_layout()
    return fig


def plot_screening_validation(table, budgets=(), title: str = "Shortlist: predicted vs measured"):
    """Predicted (with intervals) against measured cost per target for shortlisted configs.

    ``table`` has ``{t}_pred``, ``{t}_lo``, ``{t}_hi``, ``{t}_meas`` columns (from
    :func:`carb_lib.screening.validate_on_hardware` or the ``shortlist_table`` of
    :func:`carb_lib.screening.validate_against_measured`); ``budgets`` are
    :class:`carb_lib.screening.Budget` drawn as lines where they bound a target. Points whose
    measurement lies inside their interval are green circles, outside red crosses; a legend
    under each panel names them, the interval, y = x and each budget line.
    """
    import numpy as np
    from matplotlib.lines import Line2D

    green, red = OKABE_ITO[2], OKABE_ITO[5]
    targets = [c.removesuffix("_meas") for c in table.columns if c.endswith("_meas")]
    fig, axes = plt.subplots(1, max(1, len(targets)), figsize=(4.4 * max(1, len(targets)), 4.6),
                             squeeze=False)
    for ax, t in zip(axes[0], targets, strict=False):
        d = table[np.isfinite(table[f"{t}_meas"].to_numpy(dtype=float))]
        err = np.vstack([d[f"{t}_pred"] - d[f"{t}_lo"], d[f"{t}_hi"] - d[f"{t}_pred"]])
        inside = (d[f"{t}_lo"] <= d[f"{t}_meas"]) & (d[f"{t}_meas"] <= d[f"{t}_hi"])
        ax.errorbar(d[f"{t}_meas"], d[f"{t}_pred"], yerr=err, fmt="none", ecolor="0.6", lw=0.8)
        for sel, colour, marker in ((inside, green, "o"), (~inside, red, "X")):
            ax.scatter(d.loc[sel, f"{t}_meas"], d.loc[sel, f"{t}_pred"], color=colour,
                       marker=marker, s=30 if marker == "o" else 45, zorder=3,
                       edgecolor="black", lw=0.3)
        handles = [Line2D([], [], ls="none", marker="o", color=green, mec="black", mew=0.3,
                          label=f"measured inside the interval ({int(inside.sum())})"),
                   Line2D([], [], ls="none", marker="X", ms=7, color=red, mec="black", mew=0.3,
                          label=f"measured outside the interval ({int((~inside).sum())})"),
                   Line2D([], [], color="0.6", lw=0.8, label="prediction interval")]
        if len(d):
            lo = float(np.nanmin(d[[f"{t}_meas", f"{t}_lo"]].to_numpy()))
            hi = float(np.nanmax(d[[f"{t}_meas", f"{t}_hi"]].to_numpy()))
            ax.plot([lo, hi], [lo, hi], color="black", lw=0.8, ls="--")
            handles.append(Line2D([], [], color="black", lw=0.8, ls="--",
                                  label="y = x (prediction = measurement)"))
        for b in budgets:
            if b.metric == t:
                text = f"budget {_budget_words(b.label)}"
                ax.axvline(b.limit, color="0.25", ls="-.", lw=1, label=text)
                ax.axhline(b.limit, color="0.25", ls="-.", lw=1)
                handles.append(Line2D([], [], color="0.25", ls="-.", lw=1, label=text))
                for get, put in ((ax.get_xlim, ax.set_xlim), (ax.get_ylim, ax.set_ylim)):
                    lo, hi = get()  # the line inside the axes, not on its frame
                    if hi < b.limit + 0.04 * (b.limit - lo):
                        put(lo, b.limit + 0.04 * (b.limit - lo))
        ax.set_xlabel("measured " + _screen_label(t))
        ax.set_ylabel("predicted " + _screen_label(t))
        ax.set_title(f"{_screen_label(t)}: {int(inside.sum())}/{len(d)} inside interval")
        legend_outside(ax, "below", handles=handles, labels=[h.get_label() for h in handles])
    fig.suptitle(_words_title(title))
    fig.tight_layout()
    return fig


def _budget_words(name) -> str:
    """A budget's label with its column names in words (``latency_ms <= 5`` -> ``latency
    per batch (ms) <= 5``)."""
    import re

    m = re.fullmatch(r"\s*([a-z][a-z0-9_]*)\s*(<=|<)\s*(\S+)\s*", str(name))
    if m and m.group(1) in TARGET_SHORT:
        col, op, lim = m.groups()
        return (f"{TARGET_SHORT[col]} {'≤' if op == '<=' else '<'} {lim} "
                f"{TARGET_UNITS.get(col, '')}").strip()
    return re.sub(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+", lambda m: _screen_label(m.group(0)),
                  str(name))


def _words_title(title, keep=()):
    """A title with scenario names (``paper_style``) as words (``paper style``); the platform
    names in ``keep`` stay as they are."""
    import re

    if title is None:
        return None
    keep = {str(k) for k in keep if k}

    def _sub(m):
        w = m.group(0)
        if w in keep or w.startswith(("cpu_", "gpu_", "synthetic_")):  # platform names
            return w
        return _screen_label(w) if w in BUDGET_METRICS else w.replace("_", " ")

    return re.sub(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b", _sub, str(title))
