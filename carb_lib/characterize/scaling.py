"""Workload characterization: how energy, latency and peak memory scale with the workload.

Every function takes a dataset in the CARB schema (``carb_lib.dataset.schema``, data/README.md), keeps only rows
with ``status == "ok"``, works per ``platform`` (results carry a ``platform`` column) and
returns a tidy DataFrame. Nothing here plots (see :mod:`carb_lib.plots`). Loading, row
selection and pairing live in :mod:`carb_lib.characterize.scaling_data`, the paper's characterization
claims in :mod:`carb_lib.characterize.scaling_claims` (their names are importable from here too).

A question a dataset cannot answer (``energy_j`` all NaN on a CPU platform, no FP16 rows, no
telemetry) gives a row with ``testable=False`` and a ``reason``, never an exception.

Definitions
-----------
* Scaling exponent: slope ``b`` of the OLS fit ``log(target) = a + b log(x)`` (natural logs;
  the slope does not depend on the base), heteroscedasticity-robust HC3 standard errors,
  Student-t 95% confidence interval.
* Demand: ``flops`` (2 x MAC of conv + linear layers for the *whole batch*; it already
  includes the batch size, so it is not multiplied by ``batch`` again).
* Demand tiers (:func:`divergence`): low = rows with ``flops <= quantile(q_low)``, high = rows
  with ``flops >= quantile(q_high)`` (defaults 10% / 90%) of the platform's ok rows. Growth
  factor = median target in the high tier / median in the low tier.
* Paired effects (:func:`paired_effects`): rows that share every config column except the
  factor studied are paired; the effect is the median of the per-pair ratios.
* Confidence intervals of growth factors, ratios and breakpoints: percentile bootstrap.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.characterize.scaling_claims import CLAIM_COLUMNS, PAPER_CLAIMS, claims_table  # noqa: F401
from carb_lib.characterize.scaling_data import (  # noqa: F401  (re-exported: the old home of these names)
    CONFIG_COLS,
    load_measured,
    ok_rows,
    untestable_reason,
)
from carb_lib.characterize.scaling_data import as_float as _float
from carb_lib.characterize.scaling_data import fmt_num as _fmt_num
from carb_lib.characterize.scaling_data import pair_frame as _pair_frame
from carb_lib.characterize.scaling_data import per_platform as _per_platform
from carb_lib.characterize.scaling_data import percentile_ci as _percentile_ci
from carb_lib.characterize.scaling_data import positive_rows as _positive
from carb_lib.core.metrics import spearman
from carb_lib.core.vocab import TARGETS

DEFAULT_X: tuple[str, ...] = ("flops", "batch", "activation_bytes", "params")


# --------------------------------------------------------------------------- scaling fits


_SCALING_COLS = [
    "target",
    "x",
    "model",
    "group_by",
    "group",
    "n",
    "exponent",
    "ci_low",
    "ci_high",
    "se",
    "intercept",
    "r2",
    "testable",
    "reason",
]


def _ols_loglog(y: np.ndarray, X: np.ndarray, alpha: float):
    import statsmodels.api as sm

    design = sm.add_constant(np.log(X), has_constant="add")
    return sm.OLS(np.log(y), design).fit(cov_type="HC3"), design


def fit_scaling(
    df: pd.DataFrame,
    targets: Sequence[str] = TARGETS,
    x_cols: Sequence[str] = DEFAULT_X,
    by: Sequence[str | None] = (None, "block", "precision"),
    joint: bool = False,
    min_n: int = 5,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Fit log-log power laws ``target ~ x**exponent`` per platform, target, x and group.

    Parameters
    ----------
    df : pandas.DataFrame
        Dataset in the CARB schema (only ``status == "ok"`` rows are used).
    targets : sequence of str
        Target columns. A target that is NaN everywhere (energy on a CPU) yields rows with
        ``testable=False`` and the reason.
    x_cols : sequence of str
        Workload features. Each is fitted alone (``joint=False``: one univariate fit per x)
        or all together (``joint=True``: one multiple regression; exponents are partial
        elasticities holding the other x fixed).
    by : sequence of str or None
        Groupings: ``None`` fits all rows (``group_by="all"``), a column name fits each of
        its values separately.
    joint : bool
        See ``x_cols``.
    min_n : int
        Fewest rows (with finite, positive target and x) to fit.
    alpha : float
        1 - confidence level of the interval (0.05 -> 95%).

    Returns
    -------
    pandas.DataFrame
        Columns ``platform, target, x, model, group_by, group, n, exponent, ci_low, ci_high,
        se, intercept, r2, testable, reason``; ``se`` is the HC3 standard error.

    Raises
    ------
    KeyError
        If an x column or a ``by`` column is not in the dataset.
    """
    for col in list(x_cols) + [b for b in by if b is not None]:
        if col not in df.columns:
            raise KeyError(f"column {col!r} not in dataset")
    model = "joint" if joint else "univariate"

    def one_platform(sub: pd.DataFrame) -> pd.DataFrame:
        rows: list[dict] = []
        for target in targets:
            reason = untestable_reason(sub, target)
            if reason is not None:
                rows += [
                    dict(target=target, x=x, model=model, group_by="all", group="all", n=0,
                         testable=False, reason=reason)
                    for x in x_cols
                ]
                continue
            for by_col in by:
                if by_col is None:
                    groups = [("all", sub)]
                else:
                    groups = [(str(k), g) for k, g in sub.groupby(by_col, dropna=True, sort=True)]
                for gname, g in groups:
                    rows += _fit_group(g, target, x_cols, joint, min_n, alpha, model,
                                       by_col or "all", gname)
        return pd.DataFrame(rows, columns=_SCALING_COLS)

    return _per_platform(df, one_platform)


def _fit_group(g, target, x_cols, joint, min_n, alpha, model, by_name, gname) -> list[dict]:
    base = dict(target=target, model=model, group_by=by_name, group=gname)
    fits = [list(x_cols)] if joint else [[x] for x in x_cols]
    rows = []
    for xs in fits:
        data = _positive(g, [target] + xs)
        n = len(data)
        varying = [x for x in xs if data[x].nunique() > 1]
        constant = [x for x in xs if x not in varying]
        rows += [dict(base, x=x, n=n, testable=False, reason=f"{x} is constant in this group")
                 for x in constant]
        if not varying:
            continue
        if n < max(min_n, len(varying) + 2):
            rows += [dict(base, x=x, n=n, testable=False,
                          reason=f"only {n} rows with finite positive {target} and {x}")
                     for x in varying]
            continue
        res, _ = _ols_loglog(data[target].to_numpy(), data[varying].to_numpy(), alpha)
        ci = np.asarray(res.conf_int(alpha))
        for i, x in enumerate(varying, start=1):
            rows.append(dict(base, x=x, n=n, exponent=float(res.params[i]),
                             ci_low=float(ci[i, 0]), ci_high=float(ci[i, 1]),
                             se=float(res.bse[i]), intercept=float(res.params[0]),
                             r2=float(res.rsquared), testable=True, reason=None))
    return rows


# --------------------------------------------------------------------------- segmented fit
#: Fewest rows on each side of a two-segment law's break (:func:`fit_segmented`).
MIN_SEGMENT_N = 10


def _hinge_sse(u: np.ndarray, v: np.ndarray, c: float) -> tuple[float, np.ndarray]:
    X = np.column_stack([np.ones_like(u), u, np.maximum(0.0, u - c)])
    beta, *_ = np.linalg.lstsq(X, v, rcond=None)
    r = v - X @ beta
    return float(r @ r), beta


def _best_hinge(u: np.ndarray, v: np.ndarray, n_grid: int, q_range: tuple[float, float]):
    """Grid search over quantiles of ``u`` then bounded refinement; (c, beta, sse)."""
    from scipy.optimize import minimize_scalar

    grid = np.unique(np.quantile(u, np.linspace(q_range[0], q_range[1], n_grid)))
    if len(grid) < 2:
        return math.nan, np.full(3, math.nan), math.nan
    sses = np.array([_hinge_sse(u, v, c)[0] for c in grid])
    i = int(np.argmin(sses))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    c = grid[i]
    if hi > lo:
        opt = minimize_scalar(lambda c_: _hinge_sse(u, v, c_)[0], bounds=(lo, hi),
                              method="bounded", options={"xatol": 1e-4})
        if opt.fun <= sses[i]:
            c = float(opt.x)
    sse, beta = _hinge_sse(u, v, c)
    return float(c), beta, sse


def fit_segmented(
    df: pd.DataFrame,
    target: str,
    x: str = "flops",
    n_boot: int = 200,
    n_grid: int = 40,
    q_range: tuple[float, float] = (0.05, 0.95),
    min_n: int = 20,
    alpha: float = 0.05,
    seed: int = 0,
    min_segment_n: int = MIN_SEGMENT_N,
) -> pd.DataFrame:
    """Fit a continuous two-segment line in log10-log10 space and find its breakpoint.

    Model: ``log10 y = a + s1 * u + (s2 - s1) * max(0, u - c)`` with ``u = log10 x``. The
    breakpoint ``c`` is found by a grid search over quantiles ``q_range`` of ``u`` followed by
    a bounded 1-D refinement; its CI (and the slopes') come from a percentile bootstrap of
    rows (the whole search is repeated in each resample).

    Parameters
    ----------
    df : pandas.DataFrame
        Dataset (ok rows are used), split per platform.
    target, x : str
        Response and workload columns (positive values only).
    n_boot : int
        Bootstrap resamples (0 disables the CIs).
    n_grid : int
        Grid points for the breakpoint search.
    q_range : (float, float)
        Quantile range of ``log10 x`` where a breakpoint may lie.
    min_n : int
        Fewest rows to attempt a fit.
    alpha : float
        1 - confidence level.
    seed : int
        Bootstrap seed.
    min_segment_n : int, default :data:`MIN_SEGMENT_N`
        Fewest rows on each side of a breakpoint: the breakpoint is searched only between the
        ``min_segment_n``-th smallest and largest ``x``; with fewer than ``2 * min_segment_n``
        rows no two-segment law is fitted (``testable`` False, the reason says a single law).

    Returns
    -------
    pandas.DataFrame
        One row per platform: ``breakpoint_x`` (in x units) and ``log10_breakpoint`` with CIs,
        ``slope_below`` / ``slope_above`` with CIs, ``r2``, ``n``, ``bic_linear``,
        ``bic_segmented``, ``delta_bic`` (linear - segmented; > 10 strongly favours a
        breakpoint), ``testable``, ``reason``.
    """
    if x not in df.columns:
        raise KeyError(f"column {x!r} not in dataset")

    def one_platform(sub: pd.DataFrame) -> pd.DataFrame:
        base = dict(target=target, x=x, n_boot=n_boot)
        reason = untestable_reason(sub, target)
        data = _positive(sub, [target, x]) if reason is None else None
        if reason is None and len(data) < min_n:
            reason = f"only {len(data)} rows with finite positive {target} and {x} (< {min_n})"
        if reason is None and data[x].nunique() < 4:
            reason = f"{x} has fewer than 4 distinct values"
        if reason is None and len(data) < 2 * min_segment_n:
            reason = (f"{len(data)} rows: a two-segment law needs >= {min_segment_n} on each "
                      "side of its break; a single law is fitted")
        if reason is not None:
            return pd.DataFrame([dict(base, n=0 if data is None else len(data), testable=False,
                                      reason=reason)])
        u = np.log10(data[x].to_numpy())
        v = np.log10(data[target].to_numpy())
        n = len(u)
        edge = min_segment_n / n  # each segment keeps at least min_segment_n rows
        qr = (max(q_range[0], edge), min(q_range[1], 1 - edge))
        c, beta, sse = _best_hinge(u, v, n_grid, qr)
        tss = float(((v - v.mean()) ** 2).sum())
        lin = np.polyfit(u, v, 1)
        sse_lin = float(((v - np.polyval(lin, u)) ** 2).sum())
        bic_seg = n * math.log(max(sse, 1e-300) / n) + 4 * math.log(n)
        bic_lin = n * math.log(max(sse_lin, 1e-300) / n) + 2 * math.log(n)
        rng = np.random.default_rng(seed)
        boots = []
        for _ in _progress(range(n_boot), desc=f"segmented {target}"):
            idx = rng.integers(0, n, n)
            cb, bb, _ = _best_hinge(u[idx], v[idx], max(10, n_grid // 2), qr)
            boots.append((cb, bb[1], bb[1] + bb[2]))
        boots_arr = np.array(boots, dtype=float).reshape(-1, 3)
        c_ci = _percentile_ci(boots_arr[:, 0], alpha)
        s1_ci = _percentile_ci(boots_arr[:, 1], alpha)
        s2_ci = _percentile_ci(boots_arr[:, 2], alpha)
        return pd.DataFrame([dict(
            base, n=n,
            breakpoint_x=10**c, breakpoint_ci_low=10 ** c_ci[0], breakpoint_ci_high=10 ** c_ci[1],
            log10_breakpoint=c, log10_breakpoint_ci_low=c_ci[0], log10_breakpoint_ci_high=c_ci[1],
            slope_below=float(beta[1]), slope_below_ci_low=s1_ci[0], slope_below_ci_high=s1_ci[1],
            slope_above=float(beta[1] + beta[2]), slope_above_ci_low=s2_ci[0],
            slope_above_ci_high=s2_ci[1], intercept=float(beta[0]),
            r2=1 - sse / tss if tss > 0 else math.nan,
            bic_linear=bic_lin, bic_segmented=bic_seg, delta_bic=bic_lin - bic_seg,
            testable=True, reason=None,
        )])

    return _per_platform(df, one_platform)


def segmented_curve(row: Mapping[str, Any], x_min: float, x_max: float, n: int = 100):
    """Points ``(x, y)`` of a fitted :func:`fit_segmented` row between ``x_min`` and ``x_max``."""
    u = np.linspace(math.log10(x_min), math.log10(x_max), n)
    c, s1, s2 = row["log10_breakpoint"], row["slope_below"], row["slope_above"]
    v = row["intercept"] + s1 * u + (s2 - s1) * np.maximum(0.0, u - c)
    return 10**u, 10**v


def _progress(it, desc: str):
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return it
    return tqdm(it, desc=desc, leave=False, mininterval=5.0, disable=len(it) < 500)


# --------------------------------------------------------------------------- divergence


def _tier_growth(demand: np.ndarray, values: np.ndarray, q_low: float, q_high: float):
    """Median of each column of ``values`` in the high tier / in the low tier."""
    lo_thr, hi_thr = np.quantile(demand, [q_low, q_high])
    low, high = demand <= lo_thr, demand >= hi_thr
    with np.errstate(all="ignore"):
        med_low = np.array([np.nanmedian(c[low]) if np.isfinite(c[low]).any() else np.nan
                            for c in values.T])
        med_high = np.array([np.nanmedian(c[high]) if np.isfinite(c[high]).any() else np.nan
                             for c in values.T])
        return med_high / med_low, med_low, med_high, lo_thr, hi_thr, low, high


def divergence(
    df: pd.DataFrame,
    targets: Sequence[str] = TARGETS,
    demand: str = "flops",
    q_low: float = 0.10,
    q_high: float = 0.90,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> pd.DataFrame:
    """Growth of each target from the low- to the high-demand tier, and energy vs latency.

    Demand is ``flops`` (whole-batch compute, batch already included). Tiers: low =
    ``demand <= quantile(q_low)``, high = ``demand >= quantile(q_high)`` of the platform's ok
    rows with finite positive demand. Growth factor = median target (high) / median target
    (low), NaN targets ignored. ``energy_over_latency`` = growth(energy) / growth(latency):
    how much faster energy grows than latency (> 1: energy diverges upward). The bootstrap
    resamples rows and recomputes tier thresholds, medians and the ratio together.

    Returns
    -------
    pandas.DataFrame
        Columns ``platform, quantity, growth, ci_low, ci_high, median_low, median_high, n_low,
        n_high, low_threshold, high_threshold, demand, q_low, q_high, n_boot, testable,
        reason``; ``quantity`` is a target or ``energy_over_latency``.
    """
    if not 0 < q_low < q_high < 1:
        raise ValueError(f"need 0 < q_low < q_high < 1, got q_low={q_low}, q_high={q_high}")
    if demand not in df.columns:
        raise KeyError(f"demand column {demand!r} not in dataset")
    targets = list(targets)

    def one_platform(sub: pd.DataFrame) -> pd.DataFrame:
        base = dict(demand=demand, q_low=q_low, q_high=q_high, n_boot=n_boot)
        d = _float(sub[demand]).to_numpy()
        keep = np.isfinite(d) & (d > 0)
        sub, d = sub.loc[keep], d[keep]
        reasons = {t: untestable_reason(sub, t) for t in targets}
        vals = np.column_stack([
            _float(sub[t]).to_numpy()
            if t in sub.columns else np.full(len(sub), np.nan)
            for t in targets
        ]) if len(sub) else np.empty((0, len(targets)))
        rows = []
        if len(sub) < 10 or len(np.unique(d)) < 3:
            why = f"only {len(sub)} ok rows with positive {demand} ({len(np.unique(d))} distinct)"
            for q in targets + ["energy_over_latency"]:
                rows.append(dict(base, quantity=q, testable=False, reason=why))
            return pd.DataFrame(rows)
        growth, med_lo, med_hi, lo_thr, hi_thr, low, high = _tier_growth(d, vals, q_low, q_high)
        rng = np.random.default_rng(seed)
        boot = np.full((n_boot, len(targets)), np.nan)
        for b in _progress(range(n_boot), desc="divergence"):
            idx = rng.integers(0, len(d), len(d))
            boot[b] = _tier_growth(d[idx], vals[idx], q_low, q_high)[0]
        for j, t in enumerate(targets):
            n_lo = int(np.isfinite(vals[low, j]).sum())
            n_hi = int(np.isfinite(vals[high, j]).sum())
            ok = reasons[t] is None and n_lo > 0 and n_hi > 0
            lo_ci, hi_ci = _percentile_ci(boot[:, j], alpha) if ok else (math.nan, math.nan)
            rows.append(dict(
                base, quantity=t, growth=float(growth[j]) if ok else math.nan,
                ci_low=lo_ci, ci_high=hi_ci, median_low=float(med_lo[j]),
                median_high=float(med_hi[j]), n_low=n_lo, n_high=n_hi,
                low_threshold=float(lo_thr), high_threshold=float(hi_thr), testable=ok,
                reason=None if ok else (reasons[t] or "no finite values in a tier"),
            ))
        by_t = {r["quantity"]: r for r in rows}
        e, lat = by_t.get("energy_j"), by_t.get("latency_ms")
        ratio_row = dict(base, quantity="energy_over_latency", low_threshold=float(lo_thr),
                         high_threshold=float(hi_thr))
        if e is not None and lat is not None and e["testable"] and lat["testable"]:
            je, jl = targets.index("energy_j"), targets.index("latency_ms")
            lo_ci, hi_ci = _percentile_ci(boot[:, je] / boot[:, jl], alpha)
            ratio_row.update(growth=e["growth"] / lat["growth"], ci_low=lo_ci, ci_high=hi_ci,
                             n_low=min(e["n_low"], lat["n_low"]),
                             n_high=min(e["n_high"], lat["n_high"]), testable=True, reason=None)
        else:
            missing = [r["reason"] for r in (e, lat) if r is not None and not r["testable"]]
            ratio_row.update(testable=False, reason="; ".join(missing)
                             or "needs energy_j and latency_ms among targets")
        rows.append(ratio_row)
        return pd.DataFrame(rows)

    return _per_platform(df, one_platform)


# --------------------------------------------------------------------------- paired effects

#: effect name -> (factor column, numerator value, denominator value, description)
EFFECTS: dict[str, tuple[str, Any, Any, str]] = {
    "precision": ("precision", "fp32", "fp16", "fp32 / fp16"),
    "batch": ("batch", "small", "large", "batch small / batch large"),
    "early_downsample": ("early_downsample", False, True, "downsampling off / on"),
}



def paired_effects(
    df: pd.DataFrame,
    targets: Sequence[str] = TARGETS,
    effects: Sequence[str] = ("precision", "batch", "early_downsample"),
    small_batch: int = 1,
    large_batch: int | None = None,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> pd.DataFrame:
    """Effect of one factor on identical configs that differ only in that factor.

    * ``precision``: ratio = target(fp32) / target(fp16) per pair (> 1: FP16 saves).
    * ``batch``: ratio = efficiency at ``small_batch`` / at ``large_batch`` (default: the largest
      batch among the platform's ok rows) for ``energy_j_per_gflop`` (J/GFLOP) and
      ``latency_ms_per_gflop`` (ms/GFLOP), GFLOP = ``flops`` / 1e9 of the whole batch
      (> 1: small batches cost more per unit of compute). Pairs exist only where the large
      batch ran (did not run out of memory), which favours small models.
    * ``early_downsample``: ratio = target(off) / target(on) (> 1: downsampling saves).

    Each effect is the median of the per-pair ratios with a percentile bootstrap CI over pairs;
    ``geo_mean_ratio`` is the geometric mean.

    Returns
    -------
    pandas.DataFrame
        Columns ``platform, effect, metric, comparison, median_ratio, ci_low, ci_high,
        geo_mean_ratio, n_pairs, testable, reason``.
    """
    unknown = set(effects) - set(EFFECTS)
    if unknown:
        raise ValueError(f"unknown effects {sorted(unknown)}; choose from {sorted(EFFECTS)}")

    def one_platform(sub: pd.DataFrame) -> pd.DataFrame:
        rows = []
        rng = np.random.default_rng(seed)
        for effect in effects:
            factor, a, b, comparison = EFFECTS[effect]
            if effect == "batch":
                metrics = [f"{t}_per_gflop" for t in targets if t in ("energy_j", "latency_ms")]
            else:
                metrics = list(targets)
            base = dict(effect=effect, comparison=comparison)
            if factor not in sub.columns:
                rows += [dict(base, metric=m, n_pairs=0, testable=False,
                              reason=f"column {factor!r} not in dataset") for m in metrics]
                continue
            data = sub.copy()
            if effect == "batch":
                batches = _float(data["batch"])
                big = large_batch if large_batch is not None else batches.max()
                a, b = small_batch, big
                base["comparison"] = f"batch {a} / batch {_fmt_num(big)}"
                if "flops" not in data.columns:
                    rows += [dict(base, metric=m, n_pairs=0, testable=False,
                                  reason="column 'flops' not in dataset") for m in metrics]
                    continue
                gflop = _float(data["flops"]) / 1e9
                for t in ("energy_j", "latency_ms"):
                    col = _float(data[t]) if t in data.columns else np.nan
                    data[f"{t}_per_gflop"] = col / gflop
                if not (np.isfinite(big) and big > small_batch):
                    rows += [dict(base, metric=m, n_pairs=0, testable=False,
                                  reason=f"no batch larger than {small_batch} among ok rows")
                             for m in metrics]
                    continue
            for m in metrics:
                if m not in data.columns:
                    data[m] = np.nan
            absent = [v for v in (a, b) if not (data[factor] == v).fillna(False).any()]
            if absent:
                rows += [dict(base, metric=m, n_pairs=0, testable=False,
                              reason=f"no ok rows with {factor} == {absent[0]!r}")
                         for m in metrics]
                continue
            pairs = _pair_frame(data, factor, a, b, metrics)
            for m in metrics:
                r = ((_float(pairs[f"{m}_num"]) / _float(pairs[f"{m}_den"])).to_numpy()
                     if len(pairs) else np.array([]))
                r = r[np.isfinite(r) & (r > 0)]
                if len(r) == 0:
                    src = m.replace("_per_gflop", "")
                    why = untestable_reason(data, src) or (
                        f"no pairs ({comparison}) with finite {m} among ok rows")
                    rows.append(dict(base, metric=m, n_pairs=0, testable=False, reason=why))
                    continue
                boot = np.median(r[rng.integers(0, len(r), (n_boot, len(r)))], axis=1) \
                    if n_boot > 0 else np.array([])
                lo, hi = _percentile_ci(boot, alpha)
                rows.append(dict(base, metric=m, median_ratio=float(np.median(r)), ci_low=lo,
                                 ci_high=hi, geo_mean_ratio=float(np.exp(np.log(r).mean())),
                                 n_pairs=len(r), testable=True, reason=None))
        cols = ["effect", "metric", "comparison", "median_ratio", "ci_low", "ci_high",
                "geo_mean_ratio", "n_pairs", "testable", "reason"]
        return pd.DataFrame(rows, columns=cols)

    return _per_platform(df, one_platform)


# --------------------------------------------------------------------------- telemetry, noise


def power_vs_utilisation(
    df: pd.DataFrame,
    power: str = "avg_power_w",
    util: str = "sm_util_pct",
    min_n: int = 5,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Relation of mean power to SM utilisation, where the telemetry exists.

    Returns
    -------
    pandas.DataFrame
        One row per platform: ``n``, ``spearman_rho``, ``pearson_r``, ``slope_w_per_pct``
        (OLS, HC3 CI), ``intercept_w`` (power extrapolated to 0% utilisation),
        ``power_median_w``, ``testable``, ``reason`` (e.g. no telemetry on a CPU).
    """

    def one_platform(sub: pd.DataFrame) -> pd.DataFrame:
        reason = untestable_reason(sub, power) or untestable_reason(sub, util)
        data = None
        if reason is None:
            data = sub[[power, util]].apply(_float).dropna()
            if len(data) < min_n:
                reason = f"only {len(data)} rows with both {power} and {util}"
            elif data[util].nunique() < 2:
                reason = f"{util} is constant"
        if reason is not None:
            return pd.DataFrame([dict(power=power, util=util, n=0 if data is None else len(data),
                                      testable=False, reason=reason)])
        import statsmodels.api as sm

        res = sm.OLS(data[power], sm.add_constant(data[util])).fit(cov_type="HC3")
        ci = np.asarray(res.conf_int(alpha))
        return pd.DataFrame([dict(
            power=power, util=util, n=len(data),
            spearman_rho=spearman(data[util], data[power]),
            pearson_r=float(np.corrcoef(data[util], data[power])[0, 1]),
            slope_w_per_pct=float(res.params.iloc[1]), slope_ci_low=float(ci[1, 0]),
            slope_ci_high=float(ci[1, 1]), intercept_w=float(res.params.iloc[0]),
            power_median_w=float(data[power].median()), testable=True, reason=None,
        )])

    return _per_platform(df, one_platform)


def noise_measures(df: pd.DataFrame) -> dict[str, tuple[str, pd.Series]]:
    """Per-row noise measures present in ``df``: ``{measure: (target, values)}``.

    Every ``<prefix>_cv`` column (``latency_cv``, and e.g. ``energy_cv`` if a campaign adds
    it), ``latency_p90_p10_rel`` = (p90 - p10) / median latency, and ``latency_drift_rel`` =
    |latency_norm_ms / latency_ms - 1| (drift correction applied to the row).
    """
    out: dict[str, tuple[str, pd.Series]] = {}
    num = lambda c: _float(df[c])  # noqa: E731
    for col in sorted(c for c in df.columns if c.endswith("_cv")):
        prefix = col[: -len("_cv")]
        target = next((t for t in TARGETS if t.startswith(prefix)), prefix)
        out[col] = (target, num(col))
    if {"latency_p10_ms", "latency_p90_ms", "latency_ms"} <= set(df.columns):
        out["latency_p90_p10_rel"] = (
            "latency_ms", (num("latency_p90_ms") - num("latency_p10_ms")) / num("latency_ms"))
    if {"latency_norm_ms", "latency_ms"} <= set(df.columns):
        out["latency_drift_rel"] = (
            "latency_ms", (num("latency_norm_ms") / num("latency_ms") - 1).abs())
    return out


def noise_summary(df: pd.DataFrame, targets: Sequence[str] = TARGETS) -> pd.DataFrame:
    """Distribution of the measured noise per target (median, mean, p10, p90, max).

    Targets with no noise measure in the dataset get a row with ``available=False`` and the
    reason (e.g. energy is read once per window; peak memory is a single allocator reading).

    Returns
    -------
    pandas.DataFrame
        Columns ``platform, target, measure, n, median, mean, p10, p90, max, available,
        reason``.
    """
    no_measure = {
        "energy_j": "no repeated energy readings recorded (one counter difference per window)",
        "peak_mem_mib": "single allocator peak reading per config; no spread recorded",
    }

    def one_platform(sub: pd.DataFrame) -> pd.DataFrame:
        rows = []
        measures = noise_measures(sub)
        for name, (target, values) in measures.items():
            v = _float(values).to_numpy()
            v = v[np.isfinite(v)]
            if len(v) == 0:
                rows.append(dict(target=target, measure=name, n=0, available=False,
                                 reason=untestable_reason(sub, name) or f"{name} is NaN"))
                continue
            rows.append(dict(target=target, measure=name, n=len(v), median=float(np.median(v)),
                             mean=float(v.mean()), p10=float(np.quantile(v, 0.1)),
                             p90=float(np.quantile(v, 0.9)), max=float(v.max()),
                             available=True, reason=None))
        covered = {t for t, _ in measures.values()}
        for t in targets:
            if t not in covered:
                rows.append(dict(target=t, measure=None, n=0, available=False,
                                 reason=untestable_reason(sub, t)
                                 or no_measure.get(t, f"no noise measure for {t}")))
        cols = ["target", "measure", "n", "median", "mean", "p10", "p90", "max", "available",
                "reason"]
        return pd.DataFrame(rows, columns=cols)

    return _per_platform(df, one_platform)
