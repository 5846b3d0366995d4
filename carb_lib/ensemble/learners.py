"""CARB's learners and their blend: XGBoost, LightGBM, ExtraTrees, the LightGBM small-batch
corrector, NNLS blend weights and the paper's fixed weights.

The learners are built from a :class:`~carb_lib.ensemble.CARBRegressor`'s parameters
(``n_estimators_xgb``, ``num_leaves_lgbm``... and ``random_state``, ``n_jobs``); the libraries
are imported when a learner is made.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_is_fitted

# In a Jupyter kernel (papermill runs of the notebooks), scikit-learn 1.9 with joblib 1.6 warns
# once per tree that its `delayed` ran outside its own Parallel while ExtraTrees fit and predict
# with n_jobs > 1: thousands of identical lines per notebook, nothing to act on.
warnings.filterwarnings("ignore", message=r"`sklearn\.utils\.parallel\.delayed` should be used",
                        category=UserWarning)

__all__ = ["LEARNERS", "PAPER_BLEND_WEIGHTS", "feature_importances", "fixed_weights",
           "make_corrector", "make_learner", "nnls_weights"]

#: Learner names, in the order of the paper.
LEARNERS: tuple[str, ...] = ("xgb", "lgbm", "et")

#: Fixed blend weights XGB / LGBM / ET reported by the paper (per target).
PAPER_BLEND_WEIGHTS: dict[str, dict[str, float]] = {
    "peak_mem_mib": {"xgb": 0.3, "lgbm": 0.4, "et": 0.3},
    "energy_j": {"xgb": 0.3, "lgbm": 0.5, "et": 0.2},
    "latency_ms": {"xgb": 0.2, "lgbm": 0.3, "et": 0.5},
}


def make_learner(name: str, p: Any):
    """An unfitted learner ``name`` (one of :data:`LEARNERS`) sized by the estimator ``p``."""
    if name == "xgb":
        from xgboost import XGBRegressor

        return XGBRegressor(
            n_estimators=p.n_estimators_xgb,
            max_depth=p.max_depth_xgb,
            learning_rate=p.learning_rate_xgb,
            subsample=0.8,
            colsample_bytree=0.8,
            tree_method="hist",
            random_state=p.random_state,
            n_jobs=p.n_jobs,
            verbosity=0,
        )
    if name == "lgbm":
        from lightgbm import LGBMRegressor

        return LGBMRegressor(
            n_estimators=p.n_estimators_lgbm,
            num_leaves=p.num_leaves_lgbm,
            learning_rate=p.learning_rate_lgbm,
            subsample=0.8,
            subsample_freq=1,
            colsample_bytree=0.8,
            min_child_samples=5,
            importance_type="gain",
            random_state=p.random_state,
            n_jobs=p.n_jobs,
            deterministic=True,
            force_row_wise=True,
            verbose=-1,
        )
    if name == "et":
        from sklearn.ensemble import ExtraTreesRegressor

        return ExtraTreesRegressor(
            n_estimators=p.n_estimators_et,
            min_samples_leaf=p.min_samples_leaf_et,
            max_features=p.max_features_et,
            max_depth=p.max_depth_et,
            random_state=p.random_state,
            n_jobs=p.n_jobs,
        )
    raise ValueError(f"unknown learner {name!r}; known: {LEARNERS}")


def make_corrector(p: Any):
    """The unfitted LightGBM small-batch residual corrector sized by the estimator ``p``."""
    from lightgbm import LGBMRegressor

    return LGBMRegressor(
        n_estimators=p.n_estimators_regime,
        num_leaves=p.num_leaves_regime,
        learning_rate=p.learning_rate_regime,
        min_child_samples=5,
        random_state=p.random_state,
        n_jobs=p.n_jobs,
        deterministic=True,
        force_row_wise=True,
        verbose=-1,
    )


def fixed_weights(target: str, learners: tuple[str, ...]) -> np.ndarray:
    """The paper's weights of ``learners`` for ``target`` (1 for an unknown target), sum 1."""
    table = PAPER_BLEND_WEIGHTS.get(target, {})
    w = np.array([table.get(name, 1.0) for name in learners], dtype=float)
    return w / w.sum()


def nnls_weights(P: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-negative least-squares blend weights, normalised to sum 1 (equal if degenerate)."""
    from scipy.optimize import nnls

    w, _ = nnls(P, y)
    s = w.sum()
    return w / s if s > 0 else np.full(P.shape[1], 1.0 / P.shape[1])


def feature_importances(model: Any) -> pd.DataFrame:
    """Tidy feature importances of a fitted model.

    Each learner's importances (gain for XGBoost and LightGBM, impurity decrease for
    ExtraTrees) are normalised to sum 1, then averaged with the blend weights (learner
    ``"blend"``).

    Parameters
    ----------
    model : carb_lib.ensemble.CARBRegressor
        A fitted model.

    Returns
    -------
    pandas.DataFrame
        Columns ``target``, ``learner``, ``feature``, ``importance``.
    """
    check_is_fitted(model)
    rows = []
    for t in model.targets_:
        names = model.model_features_[t]
        blended = np.zeros(len(names))
        for learner, m in model.models_[t].items():
            imp = np.asarray(m.feature_importances_, dtype=float)
            imp = imp / imp.sum() if imp.sum() > 0 else imp
            blended += model.blend_weights_[t][learner] * imp
            rows += [
                {"target": t, "learner": learner, "feature": f, "importance": v}
                for f, v in zip(names, imp, strict=True)
            ]
        rows += [
            {"target": t, "learner": "blend", "feature": f, "importance": v}
            for f, v in zip(names, blended, strict=True)
        ]
    return pd.DataFrame(rows)
