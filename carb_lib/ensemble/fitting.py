"""The fit of one target of :class:`~carb_lib.ensemble.CARBRegressor`.

Out-of-fold (OOF) learner predictions of ``log(y / base)``, blend weights (NNLS on the OOF
predictions, or the paper's fixed ones), the small-batch corrector of the OOF residual, the
refit on every fitting row, and the conformal scores (:mod:`~carb_lib.ensemble.conformal`).
The OOF predictions are what the cascade passes to the next target, so a downstream model sees
inputs as noisy as those it gets at prediction time.
"""

from __future__ import annotations

import warnings

import numpy as np

from carb_lib.ensemble.conformal import score_groups
from carb_lib.ensemble.learners import (
    fixed_weights,
    learner_names,
    make_corrector,
    make_learner,
    nnls_weights,
)

__all__ = ["fit_target", "snap_threshold"]

_MIN_REGIME_ROWS = 10  # fewer training rows in the small-batch regime: no corrector


def snap_threshold(c: np.ndarray, r: np.ndarray, w: np.ndarray) -> float:
    """Correction threshold chosen on out-of-fold predictions: the ``tau`` that minimises the
    weighted absolute error ``sum w |r - c 1{|c| >= tau}|`` (corrections below ``tau`` set to
    zero).

    ``c`` are the out-of-fold corrections of the base law (learning scale), ``r`` what they
    should have been. Rows are snapped in order of ``|c|``; the threshold lies halfway
    between the largest snapped and the smallest kept ``|c|`` (``inf`` when snapping every
    row is best: no correction helped; 0 when none is, the smallest tie first).

    Examples
    --------
    >>> import numpy as np
    >>> # tiny corrections where the law is exact, one real one of 0.2
    >>> snap_threshold(np.array([1e-6, -2e-6, 0.15]), np.array([0.0, 0.0, 0.2]), np.ones(3))
    0.075001
    """
    c, r, w = (np.asarray(v, float) for v in (c, r, w))
    ok = np.isfinite(c) & np.isfinite(r) & np.isfinite(w)
    c, r, w = c[ok], r[ok], w[ok]
    if not len(c):
        return 0.0
    order = np.argsort(np.abs(c), kind="stable")
    a = np.abs(c[order])
    gain = w[order] * (np.abs(r[order]) - np.abs(r[order] - c[order]))  # cost of snapping a row
    loss = np.concatenate([[0.0], np.cumsum(gain)])  # loss[j]: the j smallest snapped
    # only between distinct |c| (rows of one |c| are snapped together)
    cut = np.concatenate([[True], a[1:] > a[:-1], [True]])
    j = int(np.flatnonzero(cut)[np.argmin(loss[cut])])
    if j == 0:
        return 0.0
    if j == len(a):
        return float("inf")
    return float(0.5 * (a[j - 1] + a[j]))


def fit_target(est, t, feats, zt, wt, off, folds, regime, cal, has_batch):
    """OOF learners, blend, corrector, refit and conformal scores of target ``t``.

    Sets ``est``'s ``blend_weights_``, ``regime_models_``, ``models_`` and
    ``conformal_scores_`` entries of ``t``.

    Parameters
    ----------
    est : CARBRegressor
        The estimator being fitted (its parameters size the learners).
    t : str
        Target name.
    feats : ndarray
        Learner inputs of every training row (model matrix, base and cascade columns).
    zt, wt, off : ndarray
        Target on the learning scale (NaN where missing), row weights, base-law offset.
    folds : list of (train, validation) row arrays
        The OOF folds over the fitting rows (calibration rows excluded).
    regime, cal : ndarray of bool
        Small-batch rows; calibration rows.
    has_batch : bool
        Whether the rows have a batch column (frame mode).

    Returns
    -------
    (ndarray, dict)
        Final OOF predictions (learning scale; calibration rows: the fitted model's) and the
        ``oof_metrics_`` row.
    """
    n = len(zt)
    items = tuple(est.learners)
    learners = learner_names(items)
    r = zt - off  # what the learners model
    has_y = np.isfinite(zt)
    fit_rows = np.flatnonzero(~cal)
    cal_rows = np.flatnonzero(cal)

    # out-of-fold learner predictions of the residual on the fitting rows
    P = np.full((n, len(learners)), np.nan)
    for tr, va in folds:
        tr = tr[has_y[tr]]
        for k, item in enumerate(items):
            model = make_learner(item, est).fit(feats[tr], r[tr], sample_weight=wt[tr])
            P[va, k] = model.predict(feats[va])
    fy = fit_rows[has_y[fit_rows]]
    if learners:
        w_fixed = fixed_weights(t, learners)
        w_nnls = nnls_weights(P[fy] * np.sqrt(wt[fy, None]), r[fy] * np.sqrt(wt[fy]))
        w = w_nnls if est.blend == "nnls" else w_fixed
    else:
        w_fixed = w_nnls = w = np.zeros(0)
    blend_oof = off + (P @ w if learners else 0.0)
    est.blend_weights_[t] = dict(zip(learners, map(float, w), strict=True))

    # small-batch corrector of the OOF residual
    corr_oof = np.zeros(n)
    corrector = None
    reg_train = regime & has_y & ~cal
    if est.regime_shrink > 0 and reg_train.sum() >= _MIN_REGIME_ROWS:
        resid = zt - blend_oof
        for tr, va in folds:
            tr = tr[reg_train[tr]]
            va = va[regime[va]]
            if len(tr) >= 2 and len(va):
                corr_oof[va] = (
                    make_corrector(est)
                    .fit(feats[tr], resid[tr], sample_weight=wt[tr])
                    .predict(feats[va])
                )
        corrector = make_corrector(est).fit(
            feats[reg_train], resid[reg_train], sample_weight=wt[reg_train]
        )
    elif est.regime_shrink > 0 and has_batch:
        warnings.warn(
            f"{int(reg_train.sum())} training row(s) of {t!r} with batch <= "
            f"{est.regime_batch_max} (< {_MIN_REGIME_ROWS}): no regime correction",
            UserWarning,
            stacklevel=4,
        )
    est.regime_models_[t] = corrector
    final = blend_oof + est.regime_shrink * corr_oof

    # corrections too small to help out of fold are set to zero (memory_exact)
    tau = snap_threshold(final[fy] - off[fy], r[fy], wt[fy]) if est._snaps(t) else 0.0
    if tau > 0:
        final = np.where(np.abs(final - off) < tau, off, final)

    # learners that are worse than the base law out of fold are not used: the base law alone
    # (every correction set to zero, as memory_exact does for small ones), so that a model
    # fitted on few rows is not worse than its own base law on its validation folds. "Worse":
    # the mean increase of the squared OOF error over the rows exceeds twice its standard
    # error (the same 2 SE rule as host calibration's), so noise alone does not switch it.
    def rmse(pred):
        return float(np.sqrt(np.mean((zt[fy] - pred[fy]) ** 2)))

    base_only = False
    if est._uses_base and len(fy) > 2:
        d = (zt[fy] - final[fy]) ** 2 - (zt[fy] - off[fy]) ** 2
        base_only = bool(d.mean() > 2 * d.std(ddof=1) / np.sqrt(len(d)))
    if base_only:
        tau, final = float("inf"), off.astype(float).copy()
    est.correction_floor_[t] = tau

    # refit the learners on every fitting row with a target value
    est.models_[t] = {
        name: make_learner(item, est).fit(feats[fy], r[fy], sample_weight=wt[fy])
        for name, item in zip(learners, items, strict=True)
    }
    if len(cal_rows):  # calibration rows: exactly what predict() gives
        final[cal_rows] = est._predict_target(t, feats[cal_rows], off[cal_rows],
                                               regime[cal_rows])

    # conformal scores, Mondrian by batch regime
    score_rows = (cal if est.conformal_method_ == "split" else ~cal) & has_y
    est.conformal_scores_[t] = score_groups(
        np.abs(zt - final), score_rows, regime if has_batch else None,
        est.conformal_by_regime,
    )

    row = {"target": t, "n": len(fy), "n_calibration": int((cal & has_y).sum())}
    if est._uses_base:
        row["rmse_base"] = rmse(off)
        row["base_law_only"] = base_only
    row.update({f"rmse_{nm}": rmse(off + P[:, k]) for k, nm in enumerate(learners)})
    if learners:
        row["rmse_blend_nnls"] = rmse(off + P @ w_nnls)
        row["rmse_blend_fixed"] = rmse(off + P @ w_fixed)
    row["rmse_final"] = rmse(final)
    return final, row

