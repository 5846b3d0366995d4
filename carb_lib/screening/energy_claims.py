"""The paper's energy claims judged on one GPU's measured rows (every family it holds).

On repeated random splits of the ok rows with energy (``n_splits``, ``test_fraction`` held
out), each split redrawing the rows and the model seed:

* CARB (:class:`~carb_lib.ensemble.CARBRegressor`, ``energy_j`` its only target): test-set R²
  and MAPE on ``energy_j``;
* B1, FLOPs only, and B2, measured latency as the energy proxy: linear regressions on the raw
  values (never in log space: ``energy_dynamic_j``, the energy above idle, can be <= 0 where a
  config draws little more than idle; such rows are kept, counted and flagged), test-set R²
  on ``energy_j`` and ``energy_dynamic_j``;
* energy as predicted latency x predicted average power (:func:`_power_x_latency`): the
  decomposition energy = power x time, beside CARB fitted on energy directly and B2;
* leave-one-batch-tier-out: CARB fitted on batch > 8, tested on batch <= 8 (one split; the
  model seed redrawn);
* energy-budget screening: a test row is accepted when CARB's upper bound (``coverage``) is
  within the budget; accuracy (accepted = measured within) and false accepts (accepted,
  measured over) at fixed budgets in joules;
* CARB's energy MAPE per window policy of the rows (:func:`window_policy_s`), for the
  comparison with the energy re-measurement noise of the same window length
  (:func:`energy_noise`, :func:`noise_comparison`): a comparison, not a pass mark.

Every value is a mean over the splits with a 95 % t interval; ``n`` is the test rows of one
split. Claim rows (:mod:`carb_lib.core.claims`) are judged by its ``RULES`` against the paper's
number; claim ids end in ``_all_families`` so that they stand beside notebook 03's (one
dataset file) for the same platform.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.metrics import mape_pct, r2
from carb_lib.core.vocab import DEFAULT_COVERAGE, SMALL_BATCH_MAX
from carb_lib.ensemble import preset as model_preset
from carb_lib.evaluation.claims import PAPER_R2
from carb_lib.evaluation.models import fit_quiet
from carb_lib.screening.scenarios import PAPER_SCREENING

__all__ = ["ENERGY_COLUMNS", "PAPER", "energy_claim_rows", "energy_noise", "energy_rows",
           "energy_scores", "noise_comparison", "window_policy_s"]

#: Energy columns judged: the whole energy and the energy above idle.
ENERGY_COLUMNS: tuple[str, ...] = ("energy_j", "energy_dynamic_j")
#: The paper's reported numbers (claim id prefix -> (statement, value)), from the tables
#: that carry them for notebooks 03 and 04.
PAPER: dict[str, tuple[str, float]] = {
    **{k: PAPER_R2[k] for k in ("carb_r2_energy_j", "lobto_r2_energy_j")},
    "b1_flops_r2": PAPER_R2["b1_flops_r2_energy_j"],
    "b2_latency_proxy_r2": PAPER_R2["b2_latency_proxy_r2_energy_j"],
    **{k: PAPER_SCREENING[k] for k in ("screening_budget_accuracy",
                                       "screening_false_accept_rate")},
}
SUFFIX = "_all_families"


def window_policy_s(rows: pd.DataFrame) -> pd.Series:
    """The timing-window policy of each row, in seconds: the shortest ``window_s`` of the row's
    campaign (``campaign`` column; all rows one campaign without it), rounded to 0.1 s.

    A window is at least the policy's length and longer when the iterations it must hold take
    longer, so a campaign's shortest window is its policy (0.5 s or 3 s on the shipped H200
    rows). NaN where ``window_s`` is absent."""
    w = pd.to_numeric(rows.get("window_s", pd.Series(np.nan, rows.index)), errors="coerce")
    camp = rows["campaign"].astype(str) if "campaign" in rows.columns else \
        pd.Series("", rows.index)
    return w.groupby(camp).transform("min").round(1)


def energy_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The ok rows with a finite ``energy_j`` > 0, with ``dynamic_nonpositive`` flagging the
    rows whose ``energy_dynamic_j`` is <= 0 (kept: judged on the raw scale) and
    ``window_policy_s`` (:func:`window_policy_s`)."""
    ok = rows["status"].astype(str).eq("ok") if "status" in rows.columns else \
        pd.Series(True, rows.index)
    y = pd.to_numeric(rows.get("energy_j"), errors="coerce")
    out = rows[ok & np.isfinite(y) & (y > 0)].reset_index(drop=True)
    dyn = pd.to_numeric(out.get("energy_dynamic_j", pd.Series(np.nan, out.index)),
                        errors="coerce")
    return out.assign(energy_dynamic_j=dyn, dynamic_nonpositive=dyn <= 0,
                      window_policy_s=window_policy_s(out))


def _linear(train: pd.DataFrame, test: pd.DataFrame, x: str, y: str) -> tuple[np.ndarray, np.ndarray]:
    """Measured and predicted ``y`` of ``test`` from a raw-scale linear fit on ``x``."""
    from sklearn.linear_model import LinearRegression

    tr = train[np.isfinite(train[y]) & np.isfinite(train[x])]
    te = test[np.isfinite(test[y]) & np.isfinite(test[x])]
    if len(tr) < 3 or len(te) < 2:
        return np.array([]), np.array([])
    fit = LinearRegression().fit(tr[[x]].to_numpy(float), tr[y].to_numpy(float))
    return te[y].to_numpy(float), fit.predict(te[[x]].to_numpy(float))


def _carb(train: pd.DataFrame, test: pd.DataFrame, preset: str, seed: int, coverage: float):
    model = fit_quiet(model_preset(preset, targets=("energy_j",), random_state=seed,
                                   latency_law="roofline"), train)  # the published law
    return model.predict_interval(test, coverage=coverage)


#: Static features of the average-power model of :func:`_power_x_latency` (log scale).
POWER_FEATURES: tuple[str, ...] = ("flops", "batch", "activation_bytes", "params")


def _power_x_latency(train: pd.DataFrame, test: pd.DataFrame, preset: str,
                     seed: int) -> np.ndarray:
    """Energy of ``test`` as predicted latency x predicted average power: CARB on
    ``latency_ms`` and a linear model of log ``avg_power_w`` on the log of
    :data:`POWER_FEATURES` (the rows' own telemetry as the power target). NaN where the train
    rows hold fewer than 10 power readings."""
    from sklearn.linear_model import LinearRegression

    cols = [c for c in POWER_FEATURES if c in train.columns]
    power = pd.to_numeric(train.get("avg_power_w"), errors="coerce")
    ok = np.isfinite(power) & (power > 0)
    if ok.sum() < 10 or not cols:
        return np.full(len(test), np.nan)

    def x(frame):
        return np.log(frame[cols].astype(float).clip(lower=1.0).to_numpy())

    watts = np.exp(LinearRegression().fit(x(train[ok]), np.log(power[ok])).predict(x(test)))
    lat = fit_quiet(model_preset(preset, targets=("latency_ms",), random_state=seed,
                                 latency_law="roofline"), train)  # the published law
    return lat.predict(test)["latency_ms"].to_numpy(float) / 1000.0 * watts


def energy_scores(rows: pd.DataFrame, budgets_j: Sequence[float], *, n_splits: int = 5,
                  test_fraction: float = 0.3, preset: str = "fast", seed: int = 0,
                  coverage: float = DEFAULT_COVERAGE) -> pd.DataFrame:
    """One row per split x measure: ``split``, ``measure`` (e.g. ``carb_r2_energy_j``,
    ``b1_flops_r2_energy_dynamic_j``, ``screening_budget_accuracy@0.903``), ``value``, ``n``
    (test rows with the measure's column)."""
    if n_splits < 2:
        raise ValueError(f"n_splits must be >= 2 (an interval over splits), got {n_splits}")
    rows = energy_rows(rows)
    if len(rows) < 20:
        raise ValueError(f"{len(rows)} ok rows with energy_j; need >= 20")
    out: list[dict[str, Any]] = []
    small = rows["batch"].astype(int) <= SMALL_BATCH_MAX
    for s in range(n_splits):
        rng = np.random.default_rng(seed + s)
        test_idx = rng.permutation(len(rows))[: max(2, round(test_fraction * len(rows)))]
        is_test = np.zeros(len(rows), bool)
        is_test[test_idx] = True
        train, test = rows[~is_test], rows[is_test].reset_index(drop=True)
        pred = _carb(train, test, preset, seed + s, coverage)
        y = test["energy_j"].to_numpy(float)
        p = pred["energy_j"].to_numpy(float)
        hi = pred["energy_j_hi"].to_numpy(float)
        out += [{"split": s, "measure": "carb_r2_energy_j", "value": r2(y, p), "n": len(y)},
                {"split": s, "measure": "carb_mape_energy_j", "value": mape_pct(y, p),
                 "n": len(y)}]
        pxl = _power_x_latency(train, test, preset, seed + s)
        if np.isfinite(pxl).all():
            out += [{"split": s, "measure": "power_x_latency_r2_energy_j", "value": r2(y, pxl),
                     "n": len(y)},
                    {"split": s, "measure": "power_x_latency_mape_energy_j",
                     "value": mape_pct(y, pxl), "n": len(y)}]
        policy = test["window_policy_s"].to_numpy(float)
        for w in np.unique(policy[np.isfinite(policy)]):
            at = policy == w
            if at.sum() >= 2:
                out.append({"split": s, "measure": f"carb_mape_energy_j@window{w:g}s",
                            "value": mape_pct(y[at], p[at]), "n": int(at.sum())})
        for col in ENERGY_COLUMNS:
            for name, x in (("b1_flops_r2", "flops"), ("b2_latency_proxy_r2", "latency_ms")):
                yt, yp = _linear(train, test, x, col)
                out.append({"split": s, "measure": f"{name}_{col}",
                            "value": r2(yt, yp) if len(yt) else np.nan, "n": len(yt)})
        for b in budgets_j:
            accept, within = hi <= b, y <= b
            out += [{"split": s, "measure": f"screening_budget_accuracy@{b:g}",
                     "value": float(np.mean(accept == within)), "n": len(y)},
                    {"split": s, "measure": f"screening_false_accept_rate@{b:g}",
                     "value": float(np.mean(accept & ~within)), "n": len(y)}]
        if small.any() and (~small).sum() >= 20:
            lt = rows[small].reset_index(drop=True)
            pl = _carb(rows[~small], lt, preset, seed + s, coverage)
            out.append({"split": s, "measure": "lobto_r2_energy_j",
                        "value": r2(lt["energy_j"].to_numpy(float),
                                    pl["energy_j"].to_numpy(float)), "n": len(lt)})
    return pd.DataFrame(out)


def _t_interval(values: np.ndarray) -> tuple[float, float, float]:
    from scipy import stats

    v = values[np.isfinite(values)]
    if len(v) < 2:
        return (float(v.mean()) if len(v) else np.nan), np.nan, np.nan
    m, se = float(v.mean()), float(v.std(ddof=1) / np.sqrt(len(v)))
    h = float(stats.t.ppf(0.975, len(v) - 1) * se)
    return m, m - h, m + h


def energy_claim_rows(scores: pd.DataFrame, rows: pd.DataFrame, platform: str,
                      dataset: str = "") -> pd.DataFrame:
    """Claim rows (:data:`carb_lib.core.claims.CLAIM_COLUMNS`) from :func:`energy_scores`: the
    mean over splits with a 95 % t interval, the paper's number, the split count and the
    rows with ``energy_dynamic_j`` <= 0 said in ``reason``."""
    er = energy_rows(rows)
    n_dyn = int(er["energy_dynamic_j"].notna().sum())
    n_nonpos = int(er["dynamic_nonpositive"].sum())
    n_splits = scores["split"].nunique()
    mape = _t_interval(scores.loc[scores["measure"] == "carb_mape_energy_j", "value"].to_numpy())
    out = []
    for measure, g in scores.groupby("measure", sort=False):
        if measure == "carb_mape_energy_j":
            continue
        base, _, budget = measure.partition("@")
        key = next((k for k in PAPER if base.startswith(k)), None)
        if key is None:
            continue
        claim, paper = PAPER[key]
        m, lo, hi = _t_interval(g["value"].to_numpy(float))
        how = (f"one split (train batch > {SMALL_BATCH_MAX}, test <= {SMALL_BATCH_MAX}), mean "
               f"of {n_splits} model seeds (n = test rows), 95% CI: t interval over the seeds"
               if base.startswith("lobto") else
               f"mean of {n_splits} random splits (n = test rows of one split), 95% CI: t "
               "interval over the splits")
        reason = f"all {len(er)} ok rows of {platform} with energy (every family); {how}"
        if base.startswith("carb_r2"):
            reason += f"; test MAPE {mape[0]:.1f} % [{mape[1]:.1f}, {mape[2]:.1f}]"
        if base.endswith("energy_dynamic_j"):
            claim += " (energy above idle)"
            reason += (f"; energy above idle measured on {n_dyn} rows, {n_nonpos} of them <= 0 "
                       "(kept, raw scale, never log)")
        if base.startswith(("b1_", "b2_")):
            reason += "; linear regression on raw values"
        if budget:
            claim = f"{claim}; here at a budget of {float(budget):.3g} J"
            reason += f"; budget {budget} J fixed beforehand (a quantile of the rows' energy)"
        cid = (f"{base}_{float(budget):g}j" if budget else base).replace(".", "p") + SUFFIX
        out.append({"claim_id": cid, "claim": claim, "paper_value": paper, "our_value": m,
                    "our_ci_low": lo, "our_ci_high": hi, "platform": platform,
                    "dataset": dataset, "n": int(g["n"].median()),
                    "testable": bool(np.isfinite(m)), "reason": reason,
                    "method": "energy_claims"})
    return pd.DataFrame(out)


def summary(scores: pd.DataFrame) -> pd.DataFrame:
    """Mean, 95 % t interval and n per measure (for display)."""
    rows: list[Mapping[str, Any]] = []
    for measure, g in scores.groupby("measure", sort=False):
        m, lo, hi = _t_interval(g["value"].to_numpy(float))
        rows.append({"measure": measure, "mean": m, "ci_low": lo, "ci_high": hi,
                     "n": int(g["n"].median()), "splits": g["split"].nunique()})
    return pd.DataFrame(rows)


def energy_noise(noise: Sequence[pd.DataFrame], *, n_boot: int = 2000,
                 seed: int = 0) -> pd.DataFrame:
    """The energy re-measurement noise of repeated measurements, one row per window policy.

    Each frame holds configs measured several times (``config_id``, ``energy_j``, ``window_s``;
    ``carb noise``). Every ordered pair of measurements of one config is scored as a prediction
    of the other (APE relative to the one predicted, as a model's error is): per config the mean
    APE, then the mean over configs, with a 95 % percentile-bootstrap interval over configs.
    ``energy_cv_pct`` is the median over configs of the coefficient of variation. A model that
    knew each config's true mean carries the noise once, a re-measurement twice: for equal,
    independent noise it scores about 1/sqrt(2) of this.

    Returns
    -------
    pandas.DataFrame
        ``window_policy_s``, ``n_configs``, ``n_rows``, ``energy_cv_pct``,
        ``remeasurement_mape_pct``, ``ci_low``, ``ci_high``.

    Examples
    --------
    >>> import pandas as pd
    >>> rows = pd.DataFrame({"config_id": ["a", "a", "b", "b"], "window_s": [0.5] * 4,
    ...                      "energy_j": [1.0, 1.1, 2.0, 2.0], "status": ["ok"] * 4})
    >>> energy_noise([rows], n_boot=10)[["window_policy_s", "n_configs", "n_rows"]]
       window_policy_s  n_configs  n_rows
    0              0.5          2       4
    """
    out: list[dict[str, Any]] = []
    rng = np.random.default_rng(seed)
    for frame in noise:
        rows = energy_rows(frame)
        for w, g in rows.groupby("window_policy_s", sort=True):
            per_cfg, cvs = [], []
            for _, c in g.groupby("config_id", sort=True):
                e = c["energy_j"].to_numpy(float)
                if len(e) < 2:
                    continue
                ape = np.abs(e[None, :] - e[:, None]) / e[:, None]
                per_cfg.append(ape[~np.eye(len(e), dtype=bool)].mean() * 100)
                cvs.append(e.std(ddof=1) / e.mean() * 100)
            if not per_cfg:
                continue
            v = np.asarray(per_cfg)
            boot = rng.choice(v, size=(n_boot, len(v))).mean(axis=1)
            out.append({"window_policy_s": float(w), "n_configs": len(v),
                        "n_rows": len(g),
                        "energy_cv_pct": float(np.median(cvs)),
                        "remeasurement_mape_pct": float(v.mean()),
                        "ci_low": float(np.percentile(boot, 2.5)),
                        "ci_high": float(np.percentile(boot, 97.5))})
    cols = ["window_policy_s", "n_configs", "n_rows", "energy_cv_pct",
            "remeasurement_mape_pct", "ci_low", "ci_high"]
    return pd.DataFrame(out, columns=cols)


def noise_comparison(scores: pd.DataFrame, noise: pd.DataFrame) -> pd.DataFrame:
    """CARB's energy MAPE per window policy (from :func:`energy_scores`: mean over splits, 95 %
    t interval) beside the energy re-measurement noise of the same policy
    (:func:`energy_noise`), and their ratio. A policy without a noise file keeps NaN there.

    Returns
    -------
    pandas.DataFrame
        ``window_policy_s``, ``model_mape_pct``, ``model_ci_low``, ``model_ci_high``,
        ``model_n_test`` (test rows of that policy in one split, median), ``splits``,
        ``noise_mape_pct``, ``noise_ci_low``, ``noise_ci_high``, ``noise_n_configs``,
        ``model_over_noise``.
    """
    rows: list[dict[str, Any]] = []
    prefix = "carb_mape_energy_j@window"
    for measure, g in scores[scores["measure"].str.startswith(prefix)].groupby("measure"):
        w = float(measure[len(prefix):].rstrip("s"))
        m, lo, hi = _t_interval(g["value"].to_numpy(float))
        hit = noise[np.isclose(noise["window_policy_s"], w)] if len(noise) else noise
        nz = hit.iloc[0] if len(hit) else None
        rows.append({"window_policy_s": w, "model_mape_pct": m, "model_ci_low": lo,
                     "model_ci_high": hi, "model_n_test": int(g["n"].median()),
                     "splits": g["split"].nunique(),
                     "noise_mape_pct": np.nan if nz is None else nz["remeasurement_mape_pct"],
                     "noise_ci_low": np.nan if nz is None else nz["ci_low"],
                     "noise_ci_high": np.nan if nz is None else nz["ci_high"],
                     "noise_n_configs": 0 if nz is None else int(nz["n_configs"])})
    out = pd.DataFrame(rows, columns=["window_policy_s", "model_mape_pct", "model_ci_low",
                                      "model_ci_high", "model_n_test", "splits",
                                      "noise_mape_pct", "noise_ci_low", "noise_ci_high",
                                      "noise_n_configs"])
    out["model_over_noise"] = out["model_mape_pct"] / out["noise_mape_pct"]
    return out.sort_values("window_policy_s").reset_index(drop=True)
