"""CARB's learners and their blend: XGBoost, LightGBM, ExtraTrees, the LightGBM small-batch
corrector, NNLS blend weights and the paper's fixed weights.

A :class:`~carb_lib.ensemble.CARBRegressor`'s ``learners`` lists its learners, each either a
name of :data:`LEARNERS` or a ``(name, estimator)`` pair, as scikit-learn composes estimators
(:class:`sklearn.pipeline.Pipeline`, :class:`sklearn.ensemble.VotingRegressor`). A named learner
is built from the estimator's flattened parameters (``n_estimators_xgb``, ``num_leaves_lgbm``...
and ``random_state``, ``n_jobs``; :func:`make_learner`), its library imported when it is made;
a pair's estimator is cloned for every fit, so any scikit-learn regressor with
``fit(X, y, sample_weight=...)`` and ``predict`` is a learner without a change here.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils._param_validation import Options
from sklearn.utils.validation import check_is_fitted

# In a Jupyter kernel (papermill runs of the notebooks), scikit-learn 1.9 with joblib 1.6 warns
# once per tree that its `delayed` ran outside its own Parallel while ExtraTrees fit and predict
# with n_jobs > 1: thousands of identical lines per notebook, nothing to act on. A filter is not
# enough: each of scikit-learn's worker threads resets and rebuilds the process's filter list
# (sklearn.utils.parallel._FuncWrapper: catch_warnings + resetwarnings, not thread-safe), so two
# threads can leave it without this filter, and the next Parallel then passes no filters at all
# (which is itself what makes it warn). The message is also dropped where warnings are shown.
_SKLEARN_DELAYED = r"`sklearn\.utils\.parallel\.delayed` should be used"
warnings.filterwarnings("ignore", message=_SKLEARN_DELAYED, category=UserWarning)


def _drop_sklearn_delayed(show: Any) -> Any:
    """``warnings.showwarning`` that drops scikit-learn's ``delayed`` warning, else ``show``."""
    import re

    pattern = re.compile(_SKLEARN_DELAYED)

    def showwarning(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, UserWarning) and pattern.match(str(message)):
            return None
        return show(message, category, filename, lineno, file, line)

    showwarning.carb_drops_sklearn_delayed = True  # type: ignore[attr-defined]
    return showwarning


if not getattr(warnings.showwarning, "carb_drops_sklearn_delayed", False):
    warnings.showwarning = _drop_sklearn_delayed(warnings.showwarning)

__all__ = ["LEARNERS", "PAPER_BLEND_WEIGHTS", "LearnerList", "feature_importances",
           "fixed_weights", "learner_components", "learner_names", "make_corrector",
           "make_learner", "nnls_weights", "set_learner_params"]

#: Learner names, in the order of the paper.
LEARNERS: tuple[str, ...] = ("xgb", "lgbm", "et")

#: Fixed blend weights XGB / LGBM / ET reported by the paper (per target).
PAPER_BLEND_WEIGHTS: dict[str, dict[str, float]] = {
    "peak_mem_mib": {"xgb": 0.3, "lgbm": 0.4, "et": 0.3},
    "energy_j": {"xgb": 0.3, "lgbm": 0.5, "et": 0.2},
    "latency_ms": {"xgb": 0.2, "lgbm": 0.3, "et": 0.5},
}


def _is_pair(item: Any) -> bool:
    return isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str)


def learner_names(learners: Sequence[Any]) -> tuple[str, ...]:
    """The names of a ``learners`` list (a name, or a pair's first element), in order.

    Examples
    --------
    >>> from sklearn.ensemble import HistGradientBoostingRegressor
    >>> learner_names(["et", ("hgb", HistGradientBoostingRegressor())])
    ('et', 'hgb')
    """
    return tuple(item[0] if _is_pair(item) else item for item in learners)


def learner_components(learners: Sequence[Any]) -> dict[str, Any]:
    """The ``(name, estimator)`` pairs of a ``learners`` list, as a dict (names alone, or a
    value that is no list, as the parameter checks will say: none)."""
    if not isinstance(learners, (tuple, list)):
        return {}
    return {item[0]: item[1] for item in learners if _is_pair(item)}


def set_learner_params(learners: Sequence[Any], params: dict[str, Any]) -> Sequence[Any]:
    """``learners`` with the pairs named in ``params`` given the estimators there (a tuple stays
    a tuple); ``params`` loses those keys (scikit-learn's ``_BaseComposition`` convention)."""
    if not set(learner_components(learners)) & set(params):
        return learners
    new = [(item[0], params.pop(item[0])) if _is_pair(item) and item[0] in params else item
           for item in learners]
    return tuple(new) if isinstance(learners, tuple) else new


class LearnerList(Options):
    """Parameter constraint of ``learners``: a tuple or list whose items are names from
    :data:`LEARNERS` or ``(name, estimator)`` pairs (``estimator`` with ``fit`` and
    ``predict``); names distinct, not empty, without ``"__"``."""

    def __init__(self):
        super().__init__(str, set(LEARNERS))

    def is_satisfied_by(self, val) -> bool:
        if not isinstance(val, (tuple, list)):
            return False
        for item in val:
            if _is_pair(item):
                est = item[1]
                if not (hasattr(est, "fit") and hasattr(est, "predict")):
                    return False
                if "__" in item[0] or not item[0]:
                    return False
            elif not (isinstance(item, str) and item in LEARNERS):
                return False
        names = learner_names(val)
        return len(set(names)) == len(names)

    def __str__(self) -> str:
        return (f"a tuple or list of distinct names from {LEARNERS} or (name, estimator) pairs "
                "(an estimator with fit and predict, a name without '__')")


def make_learner(item: Any, p: Any):
    """An unfitted learner: a name of :data:`LEARNERS` sized by the estimator ``p``'s
    flattened parameters, or a clone of a ``(name, estimator)`` pair's estimator whose
    ``random_state`` and ``n_jobs``, where it has them and leaves them None, are ``p``'s."""
    if _is_pair(item):
        from sklearn.base import clone

        model = clone(item[1])
        have = model.get_params(deep=False) if hasattr(model, "get_params") else {}
        inherit = {k: getattr(p, k) for k in ("random_state", "n_jobs")
                   if k in have and have[k] is None}
        return model.set_params(**inherit) if inherit else model
    name = item
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
    ``"blend"``). A learner without ``feature_importances_`` (a component such as
    :class:`~sklearn.ensemble.HistGradientBoostingRegressor`) has no rows and adds nothing to
    the blend's.

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
            if not hasattr(m, "feature_importances_"):
                continue
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
