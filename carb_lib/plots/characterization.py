"""Figures of the workload characterization (notebook 01; data from :mod:`carb_lib.characterize.scaling`):
cost against workload, growth between demand tiers, paired effects, target distributions,
measurement noise, power against utilisation."""

from __future__ import annotations

from carb_lib.characterize.scaling import noise_measures, segmented_curve, untestable_reason
from carb_lib.core.vocab import TARGETS
from carb_lib.plots._style import FONT, colours, legend_outside, note, plain_log_ticks, plt, words

__all__ = ["plot_divergence", "plot_effects", "plot_noise", "plot_power_vs_utilisation",
           "plot_scaling", "plot_target_distributions"]

_CHAR_TARGETS = TARGETS


def _char_label(col: str) -> str:
    return words(col)


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
            fontsize=FONT, color="dimgray")
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
            plain_log_ticks(fig.colorbar(sc, ax=ax, label=_char_label(hue), pad=0.01).ax)
    else:
        cats = sorted(h.dropna().astype(str).unique())
        pal = colours(cats)
        for cat in cats:
            d = data.loc[h.astype(str) == cat]
            ax.scatter(d[x], d[y], s=8, alpha=0.6, color=pal[cat], linewidths=0, label=cat)
        ax.legend(title=_char_label(hue), markerscale=2, loc="best")


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
    ``hue``; optional power-law lines (``fits`` from :func:`carb_lib.characterize.scaling.fit_scaling`,
    univariate, ``group_by == "all"``) and two-segment lines (``segmented`` from
    :func:`carb_lib.characterize.scaling.fit_segmented`). Targets without data get a panel with the reason.
    """
    import numpy as np

    data = _char_ok(df)
    shown, missing, segment_notes = [], [], []
    for t in targets:
        why = untestable_reason(data, t) or untestable_reason(data, x)
        if why is None:
            d = data.copy()
            d[x] = d[x].astype("float64")
            d[t] = d[t].astype("float64")
            d = d.loc[np.isfinite(d[x]) & np.isfinite(d[t]) & (d[x] > 0) & (d[t] > 0)]
            if d.empty:
                why = f"no rows with positive {_char_label(t)} and {_char_label(x)}"
        (missing.append((t, why)) if why is not None else shown.append((t, d)))
    fig, axes = plt.subplots(1, max(len(shown), 1), figsize=(5.4 * max(len(shown), 1), 4.4),
                             squeeze=False)
    if not shown:
        _char_note(axes[0][0], "no target measured on this platform")
    for ax, (t, d) in zip(axes[0], shown, strict=False):
        _char_scatter(fig, ax, d, x, t, hue)
        xs = np.logspace(np.log10(d[x].min()), np.log10(d[x].max()), 100)
        if fits is not None and len(fits):
            f = fits[(fits["target"] == t) & (fits["x"] == x)
                     & (fits["testable"] == True)]  # noqa: E712
            if "model" in f.columns:
                f = f[f["model"] == "univariate"]
            if platform is not None and "platform" in f.columns:
                f = f[f["platform"].astype(str) == str(platform)]
            per = f[f["group_by"] == "precision"] if "precision" in d.columns else f.iloc[:0]
            per = per[per["group"].astype(str).isin(d["precision"].astype(str).unique())] \
                if len(per) else per
            if len(per) > 1:  # one power law per precision: the bands do not mix
                pal = colours(sorted(per["group"].astype(str)))
                for _, r in per.sort_values("group").iterrows():
                    g = d[d["precision"].astype(str) == str(r["group"])]
                    gx = np.logspace(np.log10(g[x].min()), np.log10(g[x].max()), 50)
                    ax.plot(gx, np.exp(r["intercept"]) * gx ** r["exponent"],
                            color=pal[str(r["group"])], lw=1.6,
                            label=(f"{r['group']}: b = {r['exponent']:.2f} "
                                   f"[{r['ci_low']:.2f}, {r['ci_high']:.2f}], "
                                   f"R² = {r['r2']:.2f}"))
            else:
                f = f[f["group_by"] == "all"]
                if len(f):
                    r = f.iloc[0]
                    ax.plot(xs, np.exp(r["intercept"]) * xs ** r["exponent"], color="black",
                            lw=1.2, label=(f"power law b = {r['exponent']:.2f} "
                                           f"[{r['ci_low']:.2f}, {r['ci_high']:.2f}], "
                                           f"R² = {r['r2']:.2f}"))
        if segmented is not None and len(segmented):
            s = segmented[(segmented["target"] == t) & (segmented["x"] == x)
                          & (segmented["testable"] == True)]  # noqa: E712
            if platform is not None and "platform" in s.columns:
                s = s[s["platform"].astype(str) == str(platform)]
            single = segmented[(segmented["target"] == t) & (segmented["x"] == x)
                               & (segmented["testable"] == False)  # noqa: E712
                               & segmented["reason"].astype(str).str.contains("single law")]
            if platform is not None and "platform" in single.columns:
                single = single[single["platform"].astype(str) == str(platform)]
            if len(single) and not len(s):
                segment_notes.append(f"{_char_label(t).split(' (')[0]}: no two-segment law "
                                     f"({_plain_reason(single.iloc[0]['reason'])})")
            if len(s):
                r = s.iloc[0]
                sx, sy = segmented_curve(r, xs[0], xs[-1])
                ax.plot(sx, sy, color="#D55E00", lw=1.2, ls="--",
                        label=(f"two segments: {r['slope_below']:.2f} / "
                               f"{r['slope_above']:.2f}, break {r['breakpoint_x']:.2g}"))
                ax.axvline(r["breakpoint_x"], color="#D55E00", lw=0.8, ls=":")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(_char_label(x))
        ax.set_ylabel(_char_label(t))
        ax.set_title(f"{_char_label(t).split(' (')[0]} (n={len(d):,})")
        plain_log_ticks(ax)
        hue_title = ax.get_legend().get_title().get_text() if ax.get_legend() else None
        legend_outside(ax, "below", title=hue_title or None, markerscale=2)
    lines = []
    if missing:
        lines.append("Not shown: " + "; ".join(f"{_char_label(t)}: {_plain_reason(why)}"
                                               for t, why in missing))
    lines += segment_notes
    if lines:
        note(fig, "\n".join(lines))
    fig.suptitle(_char_title(f"Cost vs {_char_label(x)}", platform, dataset_label))
    fig.tight_layout()
    return fig


def _plain_reason(why) -> str:
    """A reason with column names in words; "not measured on this platform" for a missing
    or all-empty column."""
    import re

    text = str(why)
    if re.search(r"not in dataset|not (in the data|measured)|is NaN for all|no (non-missing|"
                 r"finite)", text):
        return "not measured on this platform"
    return re.sub(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b", lambda m: _char_label(m.group(0)), text)


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
    ratio = d[(d["quantity"] == "energy_over_latency") & (d["testable"] == True)]  # noqa: E712
    if len(ratio):
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4.4),
                                      gridspec_kw={"width_ratios": [3, 1]})
    else:  # no empty panel: the caption says why the ratio is missing
        fig, ax = plt.subplots(figsize=(7.5, 4.4))
        ax2 = None
    growth = d[d["quantity"] != "energy_over_latency"]
    ok = growth[growth["testable"] == True]  # noqa: E712
    notes = [f"{_char_label(r['quantity'])}: {_plain_reason(r['reason'])}"
             for _, r in d.iterrows() if not r["testable"]]
    xs = np.arange(len(ok))
    if len(ok):
        vals = ok["growth"].to_numpy(dtype=float)
        err = np.vstack([vals - ok["ci_low"].to_numpy(dtype=float),
                         ok["ci_high"].to_numpy(dtype=float) - vals])
        colors = list(colours(ok["quantity"]).values())
        for i, (v, c) in enumerate(zip(vals, colors, strict=True)):
            ax.errorbar([i], [v], yerr=np.nan_to_num(err[:, i : i + 1]), fmt="o", ms=8,
                        capsize=5, color=c)
            ax.annotate(f"x{v:.3g}", (i, v), xytext=(10, 0), textcoords="offset points",
                        va="center", fontsize=FONT)
        labelled = False
        for i, q in enumerate(ok["quantity"]):
            if q in paper:
                ax.scatter([i], [paper[q]], marker="x", color="black", zorder=5,
                           label=None if labelled else "paper (reported, other hardware)")
                labelled = True
        ax.set_xticks(xs, [_char_label(q) for q in ok["quantity"]])
        ax.set_xlim(-0.5, len(ok) - 0.5)
        ax.set_yscale("log")
        r0 = ok.iloc[0]
        ax.set_ylabel("growth factor, median high / median low tier")
        ax.set_title(f"demand tiers: {_char_label(r0['demand'])} at or below its "
                     f"{100 * r0['q_low']:.0f}th percentile vs at or above its "
                     f"{100 * r0['q_high']:.0f}th", fontsize=FONT + 1)
        if ax.get_legend_handles_labels()[0]:
            ax.legend()
    else:
        _char_note(ax, "no growth factor testable")
    if len(ratio):
        r = ratio.iloc[0]
        ax2.errorbar([0], [r["growth"]], yerr=[[r["growth"] - r["ci_low"]],
                                               [r["ci_high"] - r["growth"]]],
                     fmt="o", color="#CC79A7", capsize=5)
        ax2.axhline(1.0, color="gray", lw=0.8, ls="--")
        if "energy_over_latency" in paper:
            ax2.scatter([0], [paper["energy_over_latency"]], marker="x", color="black",
                        label="paper (reported)")
            ax2.set_xlim(-0.5, 0.5)
            ax2.legend()
        ax2.set_xticks([0], ["energy / latency"])
        ax2.set_ylabel("growth of energy / growth of latency")
        ax2.set_title(f"x{r['growth']:.3g} [{r['ci_low']:.3g}, {r['ci_high']:.3g}]")
    if notes:
        note(fig, "Not testable: " + "; ".join(notes))
    fig.suptitle(_char_title("Growth from low to high demand", platform, dataset_label))
    fig.tight_layout()
    return fig


def plot_effects(effects, platform=None, dataset_label: str = "measured"):
    """Paired effects (median per-pair ratio, 95% CI, log scale; > 1 means the numerator
    configuration costs more), one row per effect x metric; untestable ones listed below.

    Each interval is drawn from its own ends: a percentile bootstrap of few resamples
    (``n_boot``) can leave the median outside its interval, which the figure then shows."""
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
        pal = colours(sorted(ok["effect"].unique()))
        for y, v, a, b, (_, r) in zip(ys, vals, lo, hi, ok.iterrows(), strict=True):
            c = pal[r["effect"]]
            ax.plot([a, b], [y, y], "-|", color=c, ms=8, lw=1.2)  # the CI, NaN: not drawn
            ax.plot([v], [y], "o", color=c)
            ax.annotate(f"x{v:.3g} [{a:.3g}, {b:.3g}] n={int(r['n_pairs'])}", (v, y),
                        xytext=(0, 7), textcoords="offset points", fontsize=FONT - 1,
                        ha="center")
        ax.set_ylim(-0.6, len(ok) - 0.2)
        ax.set_yticks(ys, [f"{r['comparison']}: {_char_label(r['metric'])}"
                           for _, r in ok.iterrows()])
        ax.axvline(1.0, color="gray", lw=0.8, ls="--")
        ax.set_xscale("log")
        ax.set_xlabel("median ratio over paired configs (numerator / denominator)")
    else:
        _char_note(ax, "no paired effect testable")
    if len(bad):
        lines = "; ".join(f"{str(r['effect']).replace('_', ' ')}, {_char_label(r['metric'])}: "
                          f"{_plain_reason(r['reason'])}" for _, r in bad.iterrows())
        note(fig, "Not testable: " + lines)
    fig.suptitle(_char_title("Precision, batch and downsampling effects", platform,
                             dataset_label))
    fig.tight_layout()
    return fig


def plot_target_distributions(df, targets=_CHAR_TARGETS, hue: str | None = "precision",
                              platform=None, dataset_label: str = "measured"):
    """Histogram (log x) of each target, split by ``hue``; missing targets noted."""
    import numpy as np

    data = _char_ok(df)
    shown, missing, segment_notes = [], [], []
    for t in targets:
        why = untestable_reason(data, t)
        v = data[t].astype("float64") if why is None else None
        if v is not None and not (v > 0).any():
            why = f"no positive {_char_label(t)}"
        (missing.append((t, why)) if why is not None else shown.append((t, v)))
    fig, axes = plt.subplots(1, max(len(shown), 1), figsize=(4.8 * max(len(shown), 1), 3.8),
                             squeeze=False)
    if not shown:
        _char_note(axes[0][0], "no target measured on this platform")
    for ax, (t, v) in zip(axes[0], shown, strict=False):
        d = data.loc[v > 0].copy()
        d[t] = d[t].astype("float64")
        bins = np.logspace(np.log10(d[t].min()), np.log10(d[t].max()) + 1e-9, 40)
        use_hue = hue if hue in d.columns and d[hue].nunique() > 1 else None
        if use_hue is not None:
            d[use_hue] = d[use_hue].astype(str)
            pal = colours(sorted(d[use_hue].unique()))
            for cat, col in pal.items():
                ax.hist(d.loc[d[use_hue] == cat, t], bins=bins, histtype="step", lw=1.5,
                        color=col, label=cat)
            ax.legend(title=_char_label(use_hue))
        else:
            ax.hist(d[t], bins=bins, histtype="step", lw=1.5, color=colours([t])[t])
        ax.set_xscale("log")
        ax.set_xlabel(_char_label(t))
        ax.set_ylabel("configurations")
        ax.set_title(f"median {d[t].median():.3g}, n={len(d):,}")
    lines = []
    if missing:
        lines.append("Not shown: " + "; ".join(f"{_char_label(t)}: {_plain_reason(why)}"
                                               for t, why in missing))
    lines += segment_notes
    if lines:
        note(fig, "\n".join(lines))
    fig.suptitle(_char_title("Distribution of each target", platform, dataset_label))
    fig.tight_layout()
    return fig


def plot_noise(df, platform=None, dataset_label: str = "measured"):
    """Measured noise: distribution of each per-row noise measure (log x) and latency CV
    against latency (short runs are noisier). Targets without a noise measure are named."""
    import numpy as np

    data = _char_ok(df)
    measures = {k: (t, v) for k, (t, v) in noise_measures(data).items()
                if np.isfinite(v.astype("float64")).any()}
    has_cv = {"latency_cv", "latency_ms"} <= set(data.columns) and bool(np.isfinite(
        data["latency_cv"].astype("float64")).any()) if "latency_cv" in data.columns else False
    fig, axes = plt.subplots(1, 2 if has_cv else 1, figsize=(10.5 if has_cv else 5.8, 4.0),
                             squeeze=False)
    ax, ax2 = axes[0][0], (axes[0][1] if has_cv else None)
    if measures:
        for name, (_, v) in measures.items():
            v = v.astype("float64")
            v = v[np.isfinite(v) & (v > 0)]
            if len(v):
                bins = np.logspace(np.log10(v.min()), np.log10(v.max()) + 1e-9, 40)
                ax.hist(v, bins=bins, histtype="step", lw=1.5,
                        label=f"{_char_label(name)} (median {np.median(v):.3g})")
        ax.set_xscale("log")
        ax.set_xlabel("relative spread (dimensionless)")
        ax.set_ylabel("configurations")
        ax.legend()
    else:
        _char_note(ax, "no noise measure in the dataset")
    if has_cv:
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
    covered = {t for t, _ in measures.values()}
    missing = [t for t in _CHAR_TARGETS if t not in covered]
    if missing:
        note(fig, "No repeated-measurement spread recorded for: "
             + ", ".join(_char_label(t) for t in missing))
    fig.suptitle(_char_title("Measurement noise", platform, dataset_label))
    fig.tight_layout()
    return fig


def plot_power_vs_utilisation(df, platform=None, dataset_label: str = "measured",
                              power: str = "avg_power_w", util: str = "sm_util_pct"):
    """Mean power against SM utilisation (GPU telemetry), coloured by batch; a note if the
    platform has no telemetry."""
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
