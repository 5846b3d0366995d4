"""The models the evaluation compares: baselines, CARB variants, and the quiet fit.

* Baseline: B1 FLOPs-only linear regression (log-log and raw).
* CARB variants: overrides of the evaluated parameters, for the ablation of the protocol
  (:data:`ABLATION_VARIANTS`).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.ensemble import CARBRegressor, MissingTargetWarning

__all__ = [
    "ABLATION_VARIANTS",
    "QUICK_VARIANTS",
    "fit_quiet",
    "flops_baseline",
]

_ALONE = {"cascade": False, "regime_shrink": 0.0}
#: Ablation variants of the protocol: overrides of the evaluated parameters (``carb`` is the
#: model itself).
ABLATION_VARIANTS: dict[str, dict[str, Any]] = {
    "carb": {},
    "base_only": {"learners": (), "regime_shrink": 0.0},
    "xgb_alone": {"learners": ("xgb",), **_ALONE},
    "lgbm_alone": {"learners": ("lgbm",), **_ALONE},
    "et_alone": {"learners": ("et",), **_ALONE},
    "blend_no_cascade": {"cascade": False},
    "no_corrector": {"regime_shrink": 0.0},
    "no_base": {"base": False},
    "bytes_law": {"memory_law": "bytes"},
    "three_learners": {"learners": ("xgb", "lgbm", "et")},
}
#: The variants of a quick run (tests, ``make reproduce``): the model, its base law alone, one
#: learner alone, the paper's design without a base law and the memory law without the
#: allocator model.
QUICK_VARIANTS: dict[str, dict[str, Any]] = {
    k: ABLATION_VARIANTS[k] for k in ("carb", "base_only", "et_alone", "no_base", "bytes_law")
}
#: Warnings expected when fitting variants on evaluation splits (skipped targets on CPU,
#: dropped rows, no small batches to correct, too few rows for a calibration fold).
_EXPECTED_WARNINGS = (".*status is not 'ok'.*", ".*no regime correction.*",
                      ".*calibration fold.*")


def fit_quiet(params: Mapping[str, Any], train: pd.DataFrame) -> CARBRegressor:
    """``CARBRegressor(**params).fit(train)`` without the warnings expected on evaluation splits."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MissingTargetWarning)
        for message in _EXPECTED_WARNINGS:
            warnings.filterwarnings("ignore", message=message)
        return CARBRegressor(**params).fit(train)


def flops_baseline(
    train: pd.DataFrame, test: pd.DataFrame, target: str, mode: str = "loglog"
) -> pd.Series:
    """B1: linear regression of ``target`` on FLOPs alone.

    Parameters
    ----------
    train, test : pandas.DataFrame
        Rows with ``flops`` (and ``target`` in ``train``).
    target : str
    mode : {"loglog", "raw"}, default="loglog"
        ``"loglog"`` fits log1p(target) on log1p(FLOPs) and returns expm1; ``"raw"`` fits the
        raw values.

    Returns
    -------
    pandas.Series
        Predictions for ``test`` (its index), named ``target``.
    """
    from sklearn.linear_model import LinearRegression

    if mode not in ("loglog", "raw"):
        raise ValueError(f"mode must be 'loglog' or 'raw', got {mode!r}")
    tr = train[np.isfinite(pd.to_numeric(train[target], errors="coerce"))]
    x_tr = tr[["flops"]].to_numpy(float)
    x_te = test[["flops"]].to_numpy(float)
    y_tr = tr[target].to_numpy(float)
    if mode == "loglog":
        lr = LinearRegression().fit(np.log1p(x_tr), np.log1p(y_tr))
        pred = np.expm1(lr.predict(np.log1p(x_te)))
    else:
        pred = LinearRegression().fit(x_tr, y_tr).predict(x_te)
    return pd.Series(pred, index=test.index, name=target)
