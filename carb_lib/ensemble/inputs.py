"""Training inputs of :class:`~carb_lib.ensemble.CARBRegressor`: the two input modes, target
checks, measured-noise row weights and the training-data hash.

``"frame"``
    ``X`` is a DataFrame with the dataset's config columns (``batch`` and ``family`` at least),
    the static feature columns (and telemetry with ``feature_set="static+telemetry"``), and in
    ``fit`` the target columns (or ``y`` as a DataFrame). Rows whose ``status`` is not ``"ok"``
    are dropped; targets absent or too sparse are skipped (:class:`MissingTargetWarning`).
``"array"``
    Anything else: every column is a numeric feature and ``y`` is 1-D or 2-D (scikit-learn's
    estimator checks use this mode).

The ``prepare_*`` functions set the estimator's input attributes (``input_mode_``,
``targets_``, ``skipped_targets_``, ``feature_names_in_``, ``n_features_in_``, ``platform_``...)
as scikit-learn's ``validate_data`` does.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils.validation import validate_data

from carb_lib.core.vocab import TARGETS
from carb_lib.dataset.schema import check_costs, check_repeats
from carb_lib.ensemble.matrix import _num, input_columns, model_matrix

__all__ = ["MissingTargetWarning", "OutlierWarning", "check_target_values",
           "hash_training_data", "is_frame_input", "noise_weights", "prepare_array",
           "prepare_frame", "warn_outliers"]

_NOISY_TARGETS = ("latency_ms", "energy_j")  # weighted by the measured timing noise
# warnings point at the caller of fit: past this module, fit and scikit-learn's fit wrapper
_STACK = 4


class MissingTargetWarning(UserWarning):
    """A requested target is absent or all-NaN in the training data and is skipped."""


class OutlierWarning(UserWarning):
    """Training rows whose cost is far (> :data:`OUTLIER_FACTOR` x) from their config
    neighbourhood's (a unit slip, a broken measurement)."""


#: A training row is flagged when its cost is this many times off its neighbourhood's.
OUTLIER_FACTOR = 10.0
#: Nearest configs (in static-feature space) that make a row's neighbourhood.
OUTLIER_NEIGHBOURS = 8


def _duplicate_rows(df: pd.DataFrame) -> None:
    """Refuse rows that repeat a config of one campaign (:func:`carb_lib.dataset.schema.check_repeats`,
    key ``platform``, ``campaign`` if present, ``config_id``). Repeats across campaigns are
    allowed (held out together)."""
    check_repeats(df, "training data")


def warn_outliers(Xb: np.ndarray, logy: np.ndarray, offsets: np.ndarray,
                  targets: list[str], index: pd.Index) -> list[Any]:
    """Warn (:class:`OutlierWarning`) about training rows whose cost is more than
    :data:`OUTLIER_FACTOR` times off their neighbourhood's, robustly: the residual from the
    base law (``log y - offset``) against the median residual of the
    :data:`OUTLIER_NEIGHBOURS` nearest configs in log static-feature space. Returns the
    flagged row labels."""
    n = len(Xb)
    if n < OUTLIER_NEIGHBOURS + 2:
        return []
    from sklearn.neighbors import NearestNeighbors

    Z = np.sign(Xb) * np.log1p(np.abs(Xb.astype(float)))
    sd = Z.std(axis=0)
    Z = (Z[:, sd > 0] - Z[:, sd > 0].mean(axis=0)) / sd[sd > 0]
    if Z.shape[1] == 0:
        return []
    _, nb = NearestNeighbors(n_neighbors=OUTLIER_NEIGHBOURS + 1).fit(Z).kneighbors(Z)
    nb = nb[:, 1:]
    flagged: dict[Any, list[str]] = {}
    for j, t in enumerate(targets):
        r = logy[:, j] - offsets[:, j]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            med = np.nanmedian(r[nb], axis=1)
        off = np.abs(r - med) > np.log(OUTLIER_FACTOR)
        for i in np.flatnonzero(off):
            flagged.setdefault(index[i], []).append(t)
    if flagged:
        shown = ", ".join(f"{label} ({'/'.join(ts)})" for label, ts in list(flagged.items())[:10])
        more = f" and {len(flagged) - 10} more" if len(flagged) > 10 else ""
        warnings.warn(
            f"{len(flagged)} training row(s) are more than {OUTLIER_FACTOR:g}x off the cost of "
            f"their nearest configs (a unit slip or a broken measurement?): rows {shown}{more}",
            OutlierWarning, stacklevel=_STACK)
    return list(flagged)


def is_frame_input(X: Any) -> bool:
    """True when ``X`` is a DataFrame with the dataset's ``batch`` and ``family`` columns."""
    return isinstance(X, pd.DataFrame) and "batch" in X.columns and "family" in X.columns


def _fittable_targets(est, Y: pd.DataFrame) -> tuple[list[str], list[str]]:
    """Targets with at least ``2 * cv`` values, and the skipped ones (one warning each)."""
    fitted, skipped, reasons = [], [], []
    for t in est.targets:
        count = int(pd.to_numeric(Y[t], errors="coerce").notna().sum()) if t in Y else 0
        if count >= 2 * est.cv:
            fitted.append(t)
            continue
        skipped.append(t)
        if t not in Y.columns:
            why = "is absent from the training data"
        elif count == 0:
            why = "is all-NaN in the training data"
        else:
            why = (
                f"has only {count} value(s) in the training data (< 2 x cv = "
                f"{2 * est.cv}: too few rows for cv={est.cv})"
            )
        reasons.append(f"{t!r} {why}")
        warnings.warn(
            f"target {t!r} {why} (energy is not measured on CPU); it is skipped and will "
            "not be predicted",
            MissingTargetWarning,
            stacklevel=_STACK + 1,
        )
    if not fitted:
        raise ValueError(
            f"none of the targets {list(est.targets)} can be fitted: " + "; ".join(reasons)
        )
    return fitted, skipped


def prepare_frame(est, X: pd.DataFrame, y):
    """Frame-mode training data: ``(model matrix, targets, batch, config_id groups, rows)``."""
    df = X
    if y is not None:
        Y = y.to_frame() if isinstance(y, pd.Series) else y
        if not isinstance(Y, pd.DataFrame):
            raise ValueError("in frame mode y must be a DataFrame (or Series) with target columns")
        if len(Y) != len(df):
            raise ValueError(f"X has {len(df)} rows but y has {len(Y)}")
        Y = Y.set_axis(df.index)
    else:
        Y = df
    if "status" in df.columns:
        ok = (df["status"] == "ok").fillna(False).to_numpy(dtype=bool)
        if not ok.all():
            warnings.warn(
                f"dropping {int((~ok).sum())} of {len(df)} row(s) whose status is not 'ok'",
                UserWarning,
                stacklevel=_STACK,
            )
            df, Y = df.loc[ok], Y.loc[ok]
    _duplicate_rows(df)
    fitted, skipped = _fittable_targets(est, Y)

    costs = [t for t in fitted if t in TARGETS]  # a skipped target's gaps do not matter
    info = [c for c in ("platform", "config_id", "energy_reason")
            if c in df.columns and c not in costs]
    check_costs(pd.concat([df[info], Y[costs]], axis=1), "training data")
    est.input_mode_ = "frame"
    est.targets_, est.skipped_targets_ = fitted, skipped
    mm = model_matrix(df, est.feature_set)
    est.feature_names_in_ = np.asarray(input_columns(est.feature_set), dtype=object)
    est.n_features_in_ = len(est.feature_names_in_)
    if "platform" in df.columns and df["platform"].notna().any():
        plats = sorted(df["platform"].dropna().astype(str).unique())
        if len(plats) > 1 and not getattr(est, "mixed_platforms", False):
            raise ValueError(
                f"training rows of several platforms {plats}: energy and latency are "
                "platform-specific; fit one model per platform (or pass mixed_platforms=True)")
        if len(plats) > 1:
            warnings.warn(
                f"training on several platforms {plats}: energy and latency are "
                "platform-specific, fit one model per platform",
                UserWarning,
                stacklevel=_STACK,
            )
        est.platform_ = "+".join(plats)
    else:
        est.platform_ = None
    est.families_ = sorted(df["family"].dropna().astype(str).unique())
    Yt = Y[fitted].apply(pd.to_numeric, errors="coerce").astype(float)
    groups = df["config_id"].astype(str).to_numpy() if "config_id" in df.columns else None
    return mm, Yt, _num(df, "batch"), groups, df


def prepare_array(est, X, y) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Array-mode training data: ``(features as float32 frame, targets)``."""
    if y is None:
        raise ValueError(
            f"{type(est).__name__} requires y to be passed, but the target y is None "
            "(frame mode reads the targets from a DataFrame with 'batch' and 'family')"
        )
    X, y = validate_data(est, X, y, multi_output=True, y_numeric=True, dtype=np.float64)
    y = np.asarray(y, dtype=float)
    est.y_ndim_ = y.ndim
    Y = y.reshape(len(y), -1)
    names = ["y"] if y.ndim == 1 else [f"y{i}" for i in range(Y.shape[1])]
    est.input_mode_ = "array"
    est.targets_, est.skipped_targets_ = names, []
    est.platform_ = None
    mm = pd.DataFrame(X.astype(np.float32), columns=[f"x{i}" for i in range(X.shape[1])])
    return mm, pd.DataFrame(Y, columns=names)


def check_target_values(Y: pd.DataFrame, uses_base: bool, log_target: bool) -> None:
    """Refuse targets the learning scale cannot take (``<= 0`` with a base law, ``<= -1`` log1p)."""
    Yv = Y.to_numpy(dtype=float)
    if uses_base:
        bad = np.isfinite(Yv) & (Yv <= 0)
        if bad.any():
            j = int(np.flatnonzero(bad.any(axis=0))[0])
            raise ValueError(
                f"target {Y.columns[j]!r} has {int(bad[:, j].sum())} value(s) <= 0; the "
                "base law works on log(target) (costs are positive; use base=False and "
                "log_target=False for other data)"
            )
    elif log_target:
        low = Y.min(axis=0, skipna=True)
        if (low <= -1).any():
            t = low.index[int(np.argmax((low <= -1).to_numpy()))]
            raise ValueError(
                f"target {t!r} has values <= -1 (min {float(low[t])!r}); log1p needs > -1 "
                "(costs are positive; use log_target=False for other data)"
            )


def noise_weights(
    df: pd.DataFrame | None, n: int, targets: list[str], enabled: bool
) -> np.ndarray:
    """Row weights per target, shape (rows, targets): measured-noise weights for latency/energy.

    Weight ``1 / (cv^2 + median(cv)^2)`` of ``latency_window_cv``, normalised to mean 1 (rows
    without it get the median); 1 everywhere when disabled or without that column.
    """
    W = np.ones((n, len(targets)))
    if not enabled or df is None or "latency_window_cv" not in df.columns:
        return W
    cv = _num(df, "latency_window_cv")
    good = np.isfinite(cv) & (cv >= 0)
    if not good.any():
        return W
    med = float(np.median(cv[good]))
    cv = np.where(good, cv, med)
    w = 1.0 / (cv**2 + max(med, 1e-4) ** 2)
    w = w / w.mean()
    for j, t in enumerate(targets):
        if t in _NOISY_TARGETS:
            W[:, j] = w
    return W


def hash_training_data(mm: pd.DataFrame, Y: pd.DataFrame) -> str:
    """SHA-256 of the model matrix and targets (column names and float64 values)."""
    h = hashlib.sha256()
    h.update(json.dumps(list(mm.columns) + list(Y.columns)).encode())
    h.update(np.ascontiguousarray(mm.to_numpy(dtype=np.float64)).tobytes())
    h.update(np.ascontiguousarray(Y.to_numpy(dtype=np.float64)).tobytes())
    return h.hexdigest()
