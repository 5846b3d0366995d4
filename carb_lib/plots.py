"""Figures for every stage, in one consistent seaborn style.

Every figure is saved through :func:`save_figure` as PNG and PDF under a stable name in the
figure folder. Axis labels carry units; the platform and the dataset are named in titles.
Functions take tidy DataFrames (from the analysis modules) and return a matplotlib Figure.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

STYLE = {"context": "notebook", "style": "whitegrid", "palette": "viridis"}
DPI = 150


def _figures_as_png_in_kernel() -> bool:
    """In a Jupyter kernel, show ``display(fig)`` (and a cell ending in ``fig``) as a PNG image.

    The Agg backend set above replaces the kernel's inline backend, which is what registers
    IPython's PNG formatter for figures; without it JupyterLab, papermill runs and their HTML
    pages showed only "<Figure size ...>" text. Figures still appear only where a notebook
    displays them (no automatic display of every open figure at the end of a cell). A PNG
    formatter the user registered already is kept. Returns True if one was registered now.
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        return False
    from functools import partial

    from IPython.core.pylabtools import print_figure
    from matplotlib.figure import Figure

    png = shell.display_formatter.formatters["image/png"]
    try:
        png.lookup_by_type(Figure)
        return False
    except KeyError:
        png.for_type(Figure, partial(print_figure, fmt="png", base64=True))
        return True


_figures_as_png_in_kernel()


def apply_style() -> None:
    """Apply CARB's seaborn style (idempotent)."""
    sns.set_theme(context=STYLE["context"], style=STYLE["style"])
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": DPI, "savefig.bbox": "tight"})


def save_figure(fig: plt.Figure, name: str, fig_dir: str | Path = "figures") -> list[Path]:
    """Save ``fig`` as ``<fig_dir>/<name>.png`` and ``.pdf`` and return both paths.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    name : str
        Stable file stem, e.g. ``"00_static_features"`` (no extension, no folder).
    fig_dir : str or Path
        Output folder, created if missing.
    """
    if not name or "/" in name or name.endswith((".png", ".pdf")):
        raise ValueError(f"figure name must be a bare stem like '01_scaling', got {name!r}")
    out = Path(fig_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.png", out / f"{name}.pdf"]
    for p in paths:
        fig.savefig(p)
    return paths


# --- design space ---------------------------------------------------------------------------
_FEATURE_LABELS = {
    "flops": "FLOPs per batch (2 x MAC)",
    "params": "parameters",
    "activation_bytes": "activation bytes per batch (B)",
    "peak_act_bytes": "peak activation estimate (B)",
    "arith_intensity_flop_per_byte": "arithmetic intensity (FLOP/B)",
    "param_bytes": "parameter bytes (B)",
}


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
        ax.set_xlabel(_FEATURE_LABELS.get(col, col))
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
                   color="tab:green" if ok else "tab:red")
        lo, hi = d[["measured", "analytic"]].min().min(), d[["measured", "analytic"]].max().max()
        ax.plot([lo, hi], [lo, hi], color="black", lw=0.8, ls="--")
        if col != "n_conv":
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.set_xlabel(f"measured {_FEATURE_LABELS.get(col, col)}")
        ax.set_ylabel(f"analytic {_FEATURE_LABELS.get(col, col)}")
        ax.set_title(f"{col}: {int(d['match'].sum())}/{len(d)} exact")
    n = comparison["config_id"].nunique()
    fig.suptitle(f"Analytic vs measured static features, {dataset_label} (n={n} configs)")
    fig.tight_layout()
    return fig


apply_style()


# --- screening ---------------------------------------------------------------------------------
_SCREEN_LABELS = {
    "energy_j": "energy per batch (J)", "latency_ms": "latency per batch (ms)",
    "peak_mem_mib": "peak memory (MiB)", "energy_j_per_sample": "energy per sample (J)",
    "latency_ms_per_sample": "latency per sample (ms)", "params": "parameters (capacity proxy)",
}


def _screen_label(col: str) -> str:
    return _SCREEN_LABELS.get(col, col)


def plot_screening_front(result, x: str | None = None, y: str | None = None,
                         title: str | None = None, max_background: int = 20_000, seed: int = 0):
    """Predicted costs of the screened candidates: eliminated (grey), within budget (blue), the
    Pareto front (orange), the shortlist (red, with conformal intervals) and budget lines.

    Parameters
    ----------
    result : carb_lib.screening.ScreeningResult
    x, y : str, optional
        Columns on the axes (default: the first two objectives).
    max_background : int
        At most this many eliminated / surviving points are drawn (seeded subsample).
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
    ax.set_xlabel("predicted " + _screen_label(x) if x in _SCREEN_LABELS and x != "params"
                  else _screen_label(x))
    ax.set_ylabel("predicted " + _screen_label(y) if y in _SCREEN_LABELS and y != "params"
                  else _screen_label(y))
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


# --- workload characterization (issue 4; data from carb_lib.scaling) ------------------------
_CHAR_LABELS = {
    "energy_j": "energy per batch (J)",
    "latency_ms": "latency per batch (ms)",
    "peak_mem_mib": "peak memory (MiB)",
    "energy_j_per_gflop": "energy per GFLOP (J/GFLOP)",
    "latency_ms_per_gflop": "latency per GFLOP (ms/GFLOP)",
    "energy_over_latency": "energy growth / latency growth",
    "flops": "FLOPs per batch (2 x MAC)",
    "batch": "batch size",
    "activation_bytes": "activation bytes per batch (B)",
    "params": "parameters",
    "param_bytes": "parameter bytes (B)",
    "peak_act_bytes": "peak activation estimate (B)",
    "arith_intensity_flop_per_byte": "arithmetic intensity (FLOP/B)",
    "avg_power_w": "mean power (W)",
    "sm_util_pct": "SM utilisation (%)",
    "latency_cv": "latency CV (std / mean)",
    "latency_p90_p10_rel": "(p90 - p10) / median latency",
    "latency_drift_rel": "|drift-normalised / raw latency - 1|",
}
_CHAR_TARGETS = ("energy_j", "latency_ms", "peak_mem_mib")


def _char_label(col: str) -> str:
    return _CHAR_LABELS.get(col, col)


def _char_title(what: str, platform, dataset_label: str) -> str:
    """``what - platform (dataset)``; a synthetic platform is always called SYNTHETIC."""
    label = dataset_label or "dataset"
    plat = "all platforms" if platform is None else str(platform)
    if plat.lower().startswith("synthetic") and "synthetic" not in label.lower():
        label = f"{label}, SYNTHETIC"
    return f"{what} - {plat} ({label})"


def _char_ok(df):
    return df.loc[df["status"] == "ok"] if "status" in df.columns else df


def _char_note(ax, text: str) -> None:
    import textwrap

    ax.text(0.5, 0.5, textwrap.fill(text, 40), ha="center", va="center", transform=ax.transAxes,
            fontsize=9, color="dimgray")
    ax.set_xticks([])
    ax.set_yticks([])


def _char_scatter(fig, ax, data, x, y, hue, show_colorbar=True):
    """Log-log scatter of ``y`` vs ``x`` coloured by ``hue`` (continuous or categorical)."""
    import matplotlib.colors as mcolors
    import numpy as np
    import pandas as pd

    if hue is None or hue not in data.columns:
        ax.scatter(data[x], data[y], s=8, alpha=0.6, color="tab:blue", linewidths=0)
        return
    h = data[hue]
    numeric = pd.api.types.is_numeric_dtype(h) and not pd.api.types.is_bool_dtype(h)
    if numeric and h.nunique() > 2:
        hv = h.astype("float64").to_numpy()
        pos = hv[np.isfinite(hv) & (hv > 0)]
        log = len(pos) == len(hv) and pos.max() / pos.min() > 20
        norm = (mcolors.LogNorm(pos.min(), pos.max()) if log
                else mcolors.Normalize(np.nanmin(hv), np.nanmax(hv)))
        sc = ax.scatter(data[x], data[y], c=hv, norm=norm, cmap="viridis", s=8, alpha=0.7,
                        linewidths=0)
        if show_colorbar:
            fig.colorbar(sc, ax=ax, label=_char_label(hue), pad=0.01)
    else:
        cats = sorted(h.dropna().astype(str).unique())
        colors = sns.color_palette("colorblind", len(cats))
        for cat, col in zip(cats, colors, strict=True):
            d = data.loc[h.astype(str) == cat]
            ax.scatter(d[x], d[y], s=8, alpha=0.6, color=col, linewidths=0, label=f"{hue}={cat}")
        ax.legend(fontsize=8, markerscale=2, loc="best")


def plot_scaling(
    df,
    targets=_CHAR_TARGETS,
    x: str = "flops",
    hue: str | None = "batch",
    platform=None,
    dataset_label: str = "measured",
    fits=None,
    segmented=None,
):
    """Each target against a workload feature (log-log), one panel per target, coloured by
    ``hue``; optional power-law lines (``fits`` from :func:`carb_lib.scaling.fit_scaling`,
    univariate, ``group_by == "all"``) and two-segment lines (``segmented`` from
    :func:`carb_lib.scaling.fit_segmented`). Targets without data get a panel with the reason.
    """
    import numpy as np

    from carb_lib.scaling import segmented_curve, untestable_reason

    data = _char_ok(df)
    targets = list(targets)
    fig, axes = plt.subplots(1, len(targets), figsize=(5.0 * len(targets), 4.0), squeeze=False)
    for ax, t in zip(axes[0], targets, strict=True):
        why = untestable_reason(data, t) or untestable_reason(data, x)
        if why is None:
            d = data.copy()
            d[x] = d[x].astype("float64")
            d[t] = d[t].astype("float64")
            d = d.loc[np.isfinite(d[x]) & np.isfinite(d[t]) & (d[x] > 0) & (d[t] > 0)]
            if d.empty:
                why = f"no rows with positive {t} and {x}"
        if why is not None:
            ax.set_title(_char_label(t), fontsize=10)
            _char_note(ax, f"not shown: {why}")
            continue
        _char_scatter(fig, ax, d, x, t, hue)
        xs = np.logspace(np.log10(d[x].min()), np.log10(d[x].max()), 100)
        if fits is not None and len(fits):
            f = fits[(fits["target"] == t) & (fits["x"] == x) & (fits["group_by"] == "all")
                     & (fits["testable"] == True)]  # noqa: E712
            if "model" in f.columns:
                f = f[f["model"] == "univariate"]
            if platform is not None and "platform" in f.columns:
                f = f[f["platform"].astype(str) == str(platform)]
            if len(f):
                r = f.iloc[0]
                ax.plot(xs, np.exp(r["intercept"]) * xs ** r["exponent"], color="black", lw=1.2,
                        label=(f"power law b={r['exponent']:.2f} "
                               f"[{r['ci_low']:.2f}, {r['ci_high']:.2f}], R2={r['r2']:.2f}"))
        if segmented is not None and len(segmented):
            s = segmented[(segmented["target"] == t) & (segmented["x"] == x)
                          & (segmented["testable"] == True)]  # noqa: E712
            if platform is not None and "platform" in s.columns:
                s = s[s["platform"].astype(str) == str(platform)]
            if len(s):
                r = s.iloc[0]
                sx, sy = segmented_curve(r, xs[0], xs[-1])
                ax.plot(sx, sy, color="tab:red", lw=1.2, ls="--",
                        label=(f"segmented: {r['slope_below']:.2f} / {r['slope_above']:.2f}, "
                               f"break {r['breakpoint_x']:.2g}"))
                ax.axvline(r["breakpoint_x"], color="tab:red", lw=0.8, ls=":")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(_char_label(x))
        ax.set_ylabel(_char_label(t))
        ax.set_title(f"{_char_label(t)} (n={len(d):,})", fontsize=10)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(_char_title(f"Cost vs {_char_label(x)}", platform, dataset_label))
    fig.tight_layout()
    return fig


def plot_divergence(div, platform=None, dataset_label: str = "measured", paper=None):
    """Growth factors (high / low demand tier, log scale, 95% CI) of each target and the
    energy / latency growth ratio. ``paper`` (optional ``{quantity: value}``) draws the
    paper's *reported* values as black crosses. Untestable quantities (energy on a CPU) are
    listed with the reason."""
    import numpy as np

    d = div
    if platform is not None and "platform" in d.columns:
        d = d[d["platform"].astype(str) == str(platform)]
    paper = paper or {}
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4.2), gridspec_kw={"width_ratios": [3, 1]})
    growth = d[d["quantity"] != "energy_over_latency"]
    ok = growth[growth["testable"] == True]  # noqa: E712
    notes = [f"{r['quantity']}: {r['reason']}" for _, r in d.iterrows() if not r["testable"]]
    xs = np.arange(len(ok))
    if len(ok):
        vals = ok["growth"].to_numpy(dtype=float)
        err = np.vstack([vals - ok["ci_low"].to_numpy(dtype=float),
                         ok["ci_high"].to_numpy(dtype=float) - vals])
        colors = sns.color_palette("colorblind", len(ok))
        for i, (v, c) in enumerate(zip(vals, colors, strict=True)):
            ax.errorbar([i], [v], yerr=np.nan_to_num(err[:, i : i + 1]), fmt="o", ms=8,
                        capsize=5, color=c)
            ax.annotate(f"x{v:.3g}", (i, v), xytext=(10, 0), textcoords="offset points",
                        va="center", fontsize=9)
        labelled = False
        for i, q in enumerate(ok["quantity"]):
            if q in paper:
                ax.scatter([i], [paper[q]], marker="x", color="black", zorder=5,
                           label=None if labelled else "paper (reported, other hardware)")
                labelled = True
        ax.set_xticks(xs, [_char_label(q) for q in ok["quantity"]], fontsize=8)
        ax.set_xlim(-0.5, len(ok) - 0.5)
        ax.set_yscale("log")
        r0 = ok.iloc[0]
        ax.set_ylabel("growth factor, median high / median low tier")
        ax.set_title(f"demand tiers: {r0['demand']} <= q{r0['q_low']:.2f} vs "
                     f">= q{r0['q_high']:.2f}", fontsize=9)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    else:
        _char_note(ax, "no growth factor testable")
    ratio = d[(d["quantity"] == "energy_over_latency") & (d["testable"] == True)]  # noqa: E712
    if len(ratio):
        r = ratio.iloc[0]
        ax2.errorbar([0], [r["growth"]], yerr=[[r["growth"] - r["ci_low"]],
                                               [r["ci_high"] - r["growth"]]],
                     fmt="o", color="tab:purple", capsize=5)
        ax2.axhline(1.0, color="gray", lw=0.8, ls="--")
        if "energy_over_latency" in paper:
            ax2.scatter([0], [paper["energy_over_latency"]], marker="x", color="black",
                        label="paper (reported)")
            ax2.set_xlim(-0.5, 0.5)
            ax2.legend(fontsize=8)
        ax2.set_xticks([0], ["energy / latency"])
        ax2.set_ylabel("growth(energy) / growth(latency)")
        ax2.set_title(f"x{r['growth']:.3g} [{r['ci_low']:.3g}, {r['ci_high']:.3g}]", fontsize=9)
    else:
        _char_note(ax2, "energy vs latency divergence not testable"
                   + (": energy not measured on this platform" if notes else ""))
    if notes:
        import textwrap

        fig.text(0.01, -0.02, textwrap.fill("Not testable - " + "; ".join(notes), 140),
                 fontsize=8, color="dimgray", va="top")
    fig.suptitle(_char_title("Growth from low to high demand", platform, dataset_label))
    fig.tight_layout()
    return fig


def plot_effects(effects, platform=None, dataset_label: str = "measured"):
    """Paired effects (median per-pair ratio, 95% CI, log scale; > 1 means the numerator
    configuration costs more), one row per effect x metric; untestable ones listed below."""
    import textwrap

    import numpy as np

    e = effects
    if platform is not None and "platform" in e.columns:
        e = e[e["platform"].astype(str) == str(platform)]
    ok = e[e["testable"] == True]  # noqa: E712
    bad = e[e["testable"] != True]  # noqa: E712
    fig, ax = plt.subplots(figsize=(8, 0.45 * max(len(ok), 3) + 1.6))
    if len(ok):
        ys = np.arange(len(ok))[::-1]
        vals = ok["median_ratio"].to_numpy(dtype=float)
        lo, hi = ok["ci_low"].to_numpy(dtype=float), ok["ci_high"].to_numpy(dtype=float)
        pal = dict(zip(sorted(ok["effect"].unique()),
                       sns.color_palette("colorblind", ok["effect"].nunique()), strict=True))
        for y, v, a, b, (_, r) in zip(ys, vals, lo, hi, ok.iterrows(), strict=True):
            ax.errorbar([v], [y], xerr=np.nan_to_num([[v - a], [b - v]]), fmt="o", capsize=3,
                        color=pal[r["effect"]])
            ax.annotate(f"x{v:.3g} [{a:.3g}, {b:.3g}] n={int(r['n_pairs'])}", (v, y),
                        xytext=(0, 7), textcoords="offset points", fontsize=7, ha="center")
        ax.set_ylim(-0.6, len(ok) - 0.2)
        ax.set_yticks(ys, [f"{r['comparison']}: {_char_label(r['metric'])}"
                           for _, r in ok.iterrows()], fontsize=8)
        ax.axvline(1.0, color="gray", lw=0.8, ls="--")
        ax.set_xscale("log")
        ax.set_xlabel("median ratio over paired configs (numerator / denominator)")
    else:
        _char_note(ax, "no paired effect testable")
    if len(bad):
        lines = "; ".join(f"{r['effect']}/{r['metric']}: {r['reason']}" for _, r in bad.iterrows())
        fig.text(0.01, -0.02, textwrap.fill("Not testable - " + lines, 130), fontsize=8,
                 color="dimgray", va="top")
    fig.suptitle(_char_title("Precision, batch and downsampling effects", platform,
                             dataset_label), fontsize=11)
    fig.tight_layout()
    return fig


def plot_target_distributions(df, targets=_CHAR_TARGETS, hue: str | None = "precision",
                              platform=None, dataset_label: str = "measured"):
    """Histogram (log x) of each target, split by ``hue``; missing targets noted."""
    import numpy as np

    from carb_lib.scaling import untestable_reason

    data = _char_ok(df)
    targets = list(targets)
    fig, axes = plt.subplots(1, len(targets), figsize=(4.6 * len(targets), 3.6), squeeze=False)
    for ax, t in zip(axes[0], targets, strict=True):
        why = untestable_reason(data, t)
        v = data[t].astype("float64") if why is None else None
        if v is not None and not (v > 0).any():
            why = f"no positive {t}"
        if why is not None:
            ax.set_title(_char_label(t), fontsize=10)
            _char_note(ax, f"not shown: {why}")
            continue
        d = data.loc[v > 0].copy()
        d[t] = d[t].astype("float64")
        bins = np.logspace(np.log10(d[t].min()), np.log10(d[t].max()) + 1e-9, 40)
        use_hue = hue if hue in d.columns and d[hue].nunique() > 1 else None
        if use_hue is not None:
            d[use_hue] = d[use_hue].astype(str)
        sns.histplot(data=d, x=t, hue=use_hue, bins=bins, element="step", ax=ax)
        ax.set_xscale("log")
        ax.set_xlabel(_char_label(t))
        ax.set_ylabel("configurations")
        ax.set_title(f"median {d[t].median():.3g}, n={len(d):,}", fontsize=10)
    fig.suptitle(_char_title("Distribution of each target", platform, dataset_label))
    fig.tight_layout()
    return fig


def plot_noise(df, platform=None, dataset_label: str = "measured"):
    """Measured noise: distribution of each per-row noise measure (log x) and latency CV
    against latency (short runs are noisier). Targets without a noise measure are named."""
    import numpy as np

    from carb_lib.scaling import noise_measures

    data = _char_ok(df)
    measures = {k: (t, v) for k, (t, v) in noise_measures(data).items()
                if np.isfinite(v.astype("float64")).any()}
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    if measures:
        for name, (_, v) in measures.items():
            v = v.astype("float64")
            v = v[np.isfinite(v) & (v > 0)]
            if len(v):
                bins = np.logspace(np.log10(v.min()), np.log10(v.max()) + 1e-9, 40)
                ax.hist(v, bins=bins, histtype="step", lw=1.4,
                        label=f"{name} (median {np.median(v):.3g})")
        ax.set_xscale("log")
        ax.set_xlabel("relative spread (dimensionless)")
        ax.set_ylabel("configurations")
        ax.legend(fontsize=8)
    else:
        _char_note(ax, "no noise measure in the dataset")
    if {"latency_cv", "latency_ms"} <= set(data.columns) and np.isfinite(
            data["latency_cv"].astype("float64")).any():
        d = data.copy()
        d["latency_cv"] = d["latency_cv"].astype("float64")
        d["latency_ms"] = d["latency_ms"].astype("float64")
        d = d.loc[(d["latency_cv"] > 0) & (d["latency_ms"] > 0)]
        _char_scatter(fig, ax2, d, "latency_ms", "latency_cv",
                      "batch" if "batch" in d.columns else None)
        ax2.set_xscale("log")
        ax2.set_yscale("log")
        ax2.set_xlabel(_char_label("latency_ms"))
        ax2.set_ylabel(_char_label("latency_cv"))
    else:
        _char_note(ax2, "no latency_cv")
    covered = {t for t, _ in measures.values()}
    missing = [t for t in _CHAR_TARGETS if t not in covered]
    if missing:
        fig.text(0.01, -0.02, "No repeated-measurement spread recorded for: "
                 + ", ".join(missing), fontsize=8, color="dimgray", va="top")
    fig.suptitle(_char_title("Measurement noise", platform, dataset_label))
    fig.tight_layout()
    return fig


def plot_power_vs_utilisation(df, platform=None, dataset_label: str = "measured",
                              power: str = "avg_power_w", util: str = "sm_util_pct"):
    """Mean power against SM utilisation (GPU telemetry), coloured by batch; a note if the
    platform has no telemetry."""
    from carb_lib.scaling import untestable_reason

    data = _char_ok(df)
    fig, ax = plt.subplots(figsize=(6, 4.2))
    why = untestable_reason(data, power) or untestable_reason(data, util)
    if why is None:
        d = data.copy()
        d[power] = d[power].astype("float64")
        d[util] = d[util].astype("float64")
        d = d.dropna(subset=[power, util])
        _char_scatter(fig, ax, d, util, power, "batch" if "batch" in d.columns else None)
        ax.set_xlabel(_char_label(util))
        ax.set_ylabel(_char_label(power))
    else:
        _char_note(ax, f"not shown: {why}")
    ax.set_title(_char_title("Power vs utilisation", platform, dataset_label), fontsize=10)
    fig.tight_layout()
    return fig


# --- transfer ---------------------------------------------------------------------------------
# (issue 6; data from carb_lib.transfer)
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
                cbar_kws={"label": "slope d log y_B / d log y_A"})
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
    kinds = [k for k in ("desktop_gpu", "desktop_cpu", "mobile") if k in set(summary["device_kind"])]
    kinds += sorted(set(summary["device_kind"]) - set(kinds))
    fig, axes = plt.subplots(1, len(kinds), figsize=(4.2 * len(kinds), 3.8), sharey=True,
                             squeeze=False)
    methods = list(dict.fromkeys(summary["method"]))
    colors = dict(zip(methods, sns.color_palette("viridis", len(methods)), strict=True))
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
    axes[0][-1].legend(fontsize=8, loc="lower right" if metric == "spearman" else "upper right")
    fig.suptitle(f"Few-shot transfer to an unseen device ({dataset_label}, leave-one-device-out)",
                 fontsize=11)
    fig.tight_layout()
    return fig


def plot_help_comparison(comparison, dataset_label: str = "HELP NB201"):
    """Bars: our few-shot Spearman (k=10) beside the values reported by HELP (Table 3)."""
    import numpy as np

    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    x = np.arange(len(comparison))
    ax.bar(x - 0.2, comparison["help_reported"], width=0.4, label="reported by HELP "
           "(its unseen devices)", color=sns.color_palette("viridis", 2)[0])
    ax.bar(x + 0.2, comparison["ours"], width=0.4, label="ours (shipped devices)",
           color=sns.color_palette("viridis", 2)[1])
    for xi, (h, o) in enumerate(zip(comparison["help_reported"], comparison["ours"], strict=True)):
        ax.text(xi - 0.2, h + 0.005, f"{h:.3f}", ha="center", va="bottom", fontsize=7)
        if np.isfinite(o):
            ax.text(xi + 0.2, o + 0.005, f"{o:.3f}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(x)
    ax.set_xticklabels(comparison["group"], fontsize=9)
    ax.set_ylabel("Spearman, k = 10 target samples")
    ax.set_ylim(0.5, 1.05)
    ax.legend(fontsize=8, loc="lower left")
    ax.set_title(f"Few-shot latency ranking vs HELP ({dataset_label}; different devices)",
                 fontsize=10)
    fig.tight_layout()
    return fig


# --- carb ---------------------------------------------------------------------------------------
# Figures of the CARB ensemble (issue 5; data from carb_lib.ensemble / carb_lib.evaluation).
_CARB_UNITS = {"peak_mem_mib": "peak memory (MiB)", "energy_j": "energy (J / batch)",
               "latency_ms": "latency (ms / batch)"}


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

    from carb_lib.evaluation import regression_metrics

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
    sc = ax.scatter(y, p, c=c, s=9, cmap="viridis", norm=matplotlib.colors.LogNorm() if c is not None else None,
                    alpha=0.8, zorder=2, edgecolors="none")
    if c is not None:
        fig.colorbar(sc, ax=ax, label=hue.name or "")
    lim = [min(y.min(), p.min()) * 0.8, max(y.max(), p.max()) * 1.25] if len(y) else [0.1, 10]
    grid = np.geomspace(lim[0], lim[1], 50)
    ax.plot(grid, grid, color="k", lw=1, label="y = x")
    ax.fill_between(grid, grid * 0.9, grid * 1.1, color="tab:red", alpha=0.12, label="±10 %")
    ax.set(xscale="log", yscale="log", xlim=lim, ylim=lim,
           xlabel=f"measured {_CARB_UNITS.get(target, target)}",
           ylabel=f"predicted {_CARB_UNITS.get(target, target)}")
    m = regression_metrics(y, p)
    ax.text(0.03, 0.97, f"R² = {m['r2']:.3f} (log: {m['r2_log']:.3f})\nMAPE = {m['mape_pct']:.1f} %"
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
    sns.barplot(data=sub, x="importance", y="feature", ax=ax, color=sns.color_palette("viridis", 3)[1])
    ax.set_xlabel("normalised importance (gain / impurity, blend-weighted)")
    ax.set_ylabel("")
    ax.set_title(_carb_title(f"CARB feature importance: {target}", platform, dataset_label), fontsize=9)
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
    for label in ax.get_xticklabels():
        label.set_horizontalalignment("right")
    ax.set_title(_carb_title("Baselines and ablations (test set)", platform, dataset_label), fontsize=9)
    fig.tight_layout()
    return fig


# --- interactive scaling explorer (issue 16; data from carb_lib.explore) --------------------
def plot_explorer(df, target: str, x: str, hue: str | None = None, facet: str | None = None,
                  fits=None, logx: bool = True, logy: bool = True, platform=None,
                  dataset_label: str = "measured", max_facets: int = 6):
    """``target`` against ``x`` for the rows of ``df`` (already filtered), one panel per value
    of ``facet`` (at most ``max_facets``, the most frequent), coloured by ``hue``.

    ``fits`` (from :func:`carb_lib.scaling.fit_scaling` with ``by=(None, facet)``) draws the
    fitted power law of each panel's rows and shades the curves whose exponent is at the ends
    of its 95 % CI, pivoted at the geometric mean of ``x`` (the uncertainty of the slope).
    Panels without positive data say why.
    """
    import numpy as np

    data = _char_ok(df)
    if facet:
        counts = data[facet].astype(str).value_counts()
        panels = sorted(counts.index[:max_facets], key=str)
    else:
        panels = ["all"]
    n_pan = max(1, len(panels))
    fig, axes = plt.subplots(1, n_pan, figsize=(min(5.0 * n_pan, 16.0), 4.2), squeeze=False,
                             sharey=True)
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
        title = _char_label(target) if not facet else f"{facet} = {pan}"
        if d.empty:
            ax.set_title(title, fontsize=10)
            _char_note(ax, f"no rows with finite{' positive' if logx or logy else ''} "
                           f"{target} and {x} in this selection")
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
                                       f"{r['ci_high']:.3f}], R2 = {r['r2']:.2f}, n = {r['n']:,}"))
                lo, hi = y0 * (xs / x0) ** r["ci_low"], y0 * (xs / x0) ** r["ci_high"]
                ax.fill_between(xs, np.minimum(lo, hi), np.maximum(lo, hi), color="black",
                                alpha=0.15, lw=0, label="95 % CI of the exponent")
        if logx:
            ax.set_xscale("log")
        if logy:
            ax.set_yscale("log")
        ax.set_xlabel(_char_label(x))
        ax.set_ylabel(_char_label(target))
        ax.set_title(f"{title} (n={len(d):,})", fontsize=10)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(_char_title(f"{_char_label(target)} vs {_char_label(x)}", platform,
                             dataset_label), fontsize=11)
    fig.tight_layout()
    return fig


def _float_col(s):
    """``s`` as float64 (nullable numbers, text numbers; junk -> NaN)."""
    import pandas as pd

    return pd.to_numeric(s, errors="coerce").astype("float64")
