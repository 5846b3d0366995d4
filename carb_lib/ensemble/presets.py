"""Named model sizes of :class:`~carb_lib.ensemble.CARBRegressor`: the one place they are defined.

A preset is a dict of constructor parameters: ``CARBRegressor(**PRESETS[name])`` (plus
``n_jobs``, ``feature_set``, ``random_state``... as needed).

The presets name their learners (``"xgb"``, ``"lgbm"``, ``"et"``) and size them with the
flattened ``*_xgb`` / ``*_lgbm`` / ``*_et`` parameters rather than holding estimator objects:
a dict of plain values can be copied and overridden (``preset("paper", n_estimators_et=100)``,
as the benchmarks and evaluations do) without sharing a mutable estimator, ``random_state`` and
``n_jobs`` reach every learner, and the fits are those of the published tables. A learner of
one's own goes over a preset as a ``(name, estimator)`` pair:
``preset("default", learners=[("hgb", HistGradientBoostingRegressor())])``.

``"default"``
    The constructor defaults, sized for screening: base law + ExtraTrees (30 trees, depth
    <= 14, 2 rows per leaf) on ``log(y / base)``, cascade, LightGBM small-batch corrector (60
    trees), split-conformal intervals. Chosen by ``benchmarks/choose_default.py``: of nine
    learner sets and sizes, the lowest validation MAPE (5 seeds, CPU data) among those that
    predict 1M candidates with intervals in <= 10 s and weigh <= 200 MB
    (``results/benchmarks/default_choice.csv``). Size and speed: ``benchmarks/bench_carb.py``;
    test accuracy beside ``paper``: notebook 03's preset comparison (README).
``"paper"``
    The paper's model sizes, kept to reproduce them: XGBoost 800 trees of depth 9, LightGBM
    800 trees of 127 leaves, ExtraTrees 400 fully grown trees, corrector 200 trees, 5-fold
    OOF, all three learners (with the base law; ``base=False`` is the paper's design). Fit
    ~3.5 min and predict 1M rows ~3 min on 2 cores, ~2.9 GiB saved: not for screening.
``"fast"``
    The three learners at small sizes (XGBoost 100 x depth 6, LightGBM 40 x 15 leaves,
    ExtraTrees 8 trees of depth <= 16, corrector 40 trees).
``"quick"``
    The quick profile's size (``carb fit --quick``, the notebooks with ``quick=True``): the
    default's learners with 20-40 trees, 3 folds, one thread; seconds per fit.
``"screening_quick"``
    Notebook 04's quick profile (40 / 40 / 15 trees, constructor learning rates, 3 folds).
``"test"``
    The unit tests' size: 20 trees of each learner, 3 folds, one thread, and the roofline
    latency law (``latency_law="roofline"``: the default ``"auto"`` would learn the kernel
    law's operator model, seconds per fit, on rows of a platform with a catalogued benchmark);
    well under a second per fit on a few hundred rows. Not for results.

``"default"`` holds every constructor default, ``latency_law="auto"`` among them; ``"test"``
pins ``"roofline"``; the others name no latency law (the constructor's ``"auto"``). The
published tables and figures pin ``latency_law="roofline"``.

Examples
--------
>>> from carb_lib.ensemble.presets import PRESETS
>>> sorted(PRESETS)
['default', 'fast', 'paper', 'quick', 'screening_quick', 'test']
>>> PRESETS["paper"]["learners"], PRESETS["default"]["learners"]
(('xgb', 'lgbm', 'et'), ('et',))
"""

from __future__ import annotations

from typing import Any

from carb_lib.ensemble.estimator import CARBRegressor

__all__ = ["PRESETS", "preset"]

#: Constructor parameters that are not a model size (a preset leaves them to the caller).
_NOT_SIZE = ("targets", "feature_set", "random_state", "n_jobs")

PRESETS: dict[str, dict[str, Any]] = {
    "default": {
        k: v for k, v in CARBRegressor().get_params().items() if k not in _NOT_SIZE
    },
    "paper": {
        "learners": ("xgb", "lgbm", "et"),
        "n_estimators_xgb": 800,
        "max_depth_xgb": 9,
        "learning_rate_xgb": 0.05,
        "n_estimators_lgbm": 800,
        "num_leaves_lgbm": 127,
        "learning_rate_lgbm": 0.05,
        "n_estimators_et": 400,
        "min_samples_leaf_et": 1,
        "max_features_et": 1.0,
        "max_depth_et": None,
        "n_estimators_regime": 200,
        "num_leaves_regime": 31,
        "learning_rate_regime": 0.05,
        "cv": 5,
    },
    "fast": {
        "learners": ("xgb", "lgbm", "et"),
        "n_estimators_xgb": 100,
        "max_depth_xgb": 6,
        "learning_rate_xgb": 0.15,
        "n_estimators_lgbm": 40,
        "num_leaves_lgbm": 15,
        "learning_rate_lgbm": 0.2,
        "n_estimators_et": 8,
        "min_samples_leaf_et": 1,
        "max_features_et": 1.0,
        "max_depth_et": 16,
        "n_estimators_regime": 40,
        "num_leaves_regime": 7,
        "learning_rate_regime": 0.15,
        "cv": 5,
    },
    "quick": {
        "n_estimators_xgb": 40,
        "max_depth_xgb": 5,
        "learning_rate_xgb": 0.2,
        "n_estimators_lgbm": 40,
        "num_leaves_lgbm": 15,
        "learning_rate_lgbm": 0.2,
        "n_estimators_et": 20,
        "max_depth_et": 10,
        "n_estimators_regime": 20,
        "num_leaves_regime": 7,
        "learning_rate_regime": 0.2,
        "cv": 3,
        # one thread: on a shared, loaded 2-core machine the OpenMP threads of XGBoost /
        # LightGBM contend and small fits get 10-100x slower with n_jobs=2
        "n_jobs": 1,
    },
    "screening_quick": {
        "n_estimators_xgb": 40,
        "max_depth_xgb": 5,
        "n_estimators_lgbm": 40,
        "num_leaves_lgbm": 15,
        "n_estimators_et": 15,
        "n_estimators_regime": 15,
        "cv": 3,
    },
    "test": {
        "n_estimators_xgb": 20,
        "max_depth_xgb": 4,
        "learning_rate_xgb": 0.3,
        "n_estimators_lgbm": 20,
        "num_leaves_lgbm": 15,
        "learning_rate_lgbm": 0.3,
        "n_estimators_et": 20,
        "n_estimators_regime": 20,
        "cv": 3,
        "n_jobs": 1,
        "latency_law": "roofline",
    },
}


def preset(name: str, **overrides: Any) -> dict[str, Any]:
    """A copy of ``PRESETS[name]`` updated with ``overrides``; ``ValueError`` for an unknown name.

    Examples
    --------
    >>> preset("test", targets=("latency_ms",))["targets"]
    ('latency_ms',)
    """
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; known: {sorted(PRESETS)}")
    return {**PRESETS[name], **overrides}
