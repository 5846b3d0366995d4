"""The CARB estimator, :class:`CARBRegressor` (scikit-learn form), and its feature importances.

The design (base laws, learners on ``log(y / base)``, NNLS blend, cascade, small-batch
corrector, split-conformal intervals) is described in :mod:`carb_lib.ensemble`; the model
matrix is :mod:`~carb_lib.ensemble.matrix`, the learners :mod:`~carb_lib.ensemble.learners`,
the intervals :mod:`~carb_lib.ensemble.conformal`, the named sizes
:mod:`~carb_lib.ensemble.presets`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from numbers import Integral, Real
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.model_selection import GroupKFold, KFold
from sklearn.utils._param_validation import Interval, InvalidParameterError, Options, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from carb_lib.core.vocab import DEFAULT_COVERAGE, SMALL_BATCH_MAX, coverage_value
from carb_lib.ensemble.base_models import base_kind, fit_base_law, with_alloc_column
from carb_lib.ensemble.conformal import (
    MIN_CALIBRATION,
    calibration_mask,
    conformal_quantile,
    half_widths,
)
from carb_lib.ensemble.fitting import fit_target
from carb_lib.ensemble.inputs import (
    check_target_values,
    hash_training_data,
    is_frame_input,
    noise_weights,
    prepare_array,
    prepare_frame,
    warn_outliers,
)
from carb_lib.ensemble.latency_default import estimator_latency_law
from carb_lib.ensemble.learners import LearnerList, learner_components, set_learner_params
from carb_lib.ensemble.matrix import FEATURE_SETS, _model_array, _num
from carb_lib.kernels.law import KernelModel, with_kernel_column

__all__ = ["CASCADE_ORDER", "CARBRegressor"]

#: The estimator's default targets, in cascade order: memory, then energy (given predicted
#: memory), then latency (given both). A permutation of :data:`carb_lib.core.vocab.TARGETS`.
CASCADE_ORDER: tuple[str, ...] = ("peak_mem_mib", "energy_j", "latency_ms")
_COVERAGE = Interval(Real, 0, 1, closed="neither")


class _Names(Options):
    """Parameter constraint: a non-empty tuple or list of strings."""

    def __init__(self):
        super().__init__(str, set())

    def is_satisfied_by(self, val) -> bool:
        return (isinstance(val, (tuple, list)) and bool(val)
                and all(isinstance(v, str) for v in val))

    def __str__(self) -> str:
        return "a non-empty tuple or list of str"


class CARBRegressor(RegressorMixin, BaseEstimator):
    """Characterization-guided, cascade-blended ensemble for CNN inference cost (CARB).

    Per target, a base law from the characterization (:mod:`carb_lib.ensemble.base_models`: NNLS on
    parameter/activation bytes for memory, a roofline-style law with a per-layer overhead for
    latency and energy) carries the scaling; the tree learners model only ``log(y / base)``
    (with ``log(base)`` as one of their inputs), their out-of-fold (OOF) predictions blended by
    NNLS weights; a cascade feeds earlier targets' predictions to later ones; a LightGBM
    corrector refines small batches; split-conformal intervals (Mondrian by batch regime) at
    any requested coverage. (``RegressorMixin`` comes before ``BaseEstimator`` as
    scikit-learn requires for mixins.)

    Parameters
    ----------
    targets : tuple of str, default=CASCADE_ORDER
        Targets in cascade order (each later target gets the earlier predictions as inputs);
        default ``("peak_mem_mib", "energy_j", "latency_ms")``. Frame mode only; targets absent
        or all-NaN in the training data are skipped with a :class:`MissingTargetWarning`
        (energy on CPU); if none is left, one ``ValueError`` says why for each.
    feature_set : {"static", "static+telemetry", "shared"}, default="static"
        Which columns :func:`~carb_lib.ensemble.model_matrix` uses (frame mode).
        ``"shared"``: only what every family has (static features with the family-agnostic
        extras, resolution, batch, precision), so the model predicts rows of families it was
        not fitted on (cross-family, zero-shot).
    base : bool, default=True
        Use the characterization base law (frame mode; array mode has no named features, so
        no base). False: the learners model ``log1p(target)`` directly (the paper's design).
    memory_law : {"allocator", "bytes"}, default="allocator"
        The memory base law: with the allocator model's peak (``alloc_peak_bytes``, exact on
        the project's CPUs; the law learns the platform's oneDNN channel block, 8 or 16) or
        only the parameter and activation bytes (the ablation); :mod:`carb_lib.ensemble.base_models`.
    memory_exact : bool, default=True
        Keep peak memory exact to the byte where the allocator law is (``memory_law=
        "allocator"`` only): the law is refitted on the rows within 2.5 robust scales of it
        (reweighted least squares, ``fit_base_law(reweight=True)``), so a minority of rows
        with residuals (networks whose allocations the model misses) does not move the
        coefficients that are exact for the rest; and a peak-memory correction of the
        learners (and small-batch corrector) smaller than a threshold is set to zero, the
        threshold that minimises the out-of-fold absolute error of the training rows
        (:func:`carb_lib.ensemble.fitting.snap_threshold`; ``correction_floor_``). On the
        measured zoo with each network left out of the fit, nearly every row the allocator
        model predicts exactly stays exact, against almost none with False
        (``results/zoo/scores.csv``, ``docs/zoo.md``). False: the Huber fit alone and every
        correction applied (the behaviour before 2026-12-05).
    latency_law : {"auto", "roofline", "kernel"}, default="auto"
        The latency base law: the roofline law (FLOPs, bytes, layers), the ``kernel`` law (the
        row's summed microbenchmarked kernel time, :data:`~carb_lib.core.vocab.KERNEL_FEATURE`:
        from ``kernel_bench`` when given, else the frames' column), or ``"auto"`` (as ``carb
        fit --latency-law auto``): the kernel law with the catalogued operator benchmark of the
        rows' platform (their ``platform`` column's one value), checked against their
        ``cpu_id`` (another CPU's: ``ValueError``), else the roofline law, and why
        (:func:`~carb_lib.ensemble.latency_default.resolve_latency_law`). The published tables
        pin ``"roofline"``, the default before 2026-12-07.
    kernel_bench : str, pathlib.Path, pandas.DataFrame or None, default=None
        The platform's timed operators (``carb kernels``; a file or its rows), for
        ``latency_law="kernel"`` or ``"auto"`` (checked against the rows' CPU). :meth:`fit` learns a
        :class:`~carb_lib.kernels.law.KernelModel` from them (``kernel_model_``) and adds
        ``kernel_ms`` to every frame it fits or predicts (replacing a column given), so the
        saved model predicts any config, of any family, by itself (``carb fit --latency-law
        kernel --kernel-bench FILE``). Rows of another platform are refused.
    kernel_cache_probe : str, pathlib.Path, pandas.DataFrame or None, default=None
        With ``kernel_bench`` only: the machine's read-bandwidth probe
        (:func:`carb_lib.kernels.cache_probe.read_bandwidth`; a file or its rows). :meth:`fit` reads
        its knee (:func:`~carb_lib.kernels.cache_probe.cache_knee`), and the kernel model then adds, for
        networks whose weights pass it, each weighted operator's weights read from memory to its
        time alone (``KernelModel(cache=knee)``; docs/model.md). ``carb fit --cache-probe FILE``.
    learners : tuple or list, default=("et",)
        The learners of ``log(y / base)``, each a name from ``("xgb", "lgbm", "et")`` (XGBoost,
        LightGBM or ExtraTrees sized by the ``*_xgb`` / ``*_lgbm`` / ``*_et`` parameters below)
        or a ``(name, estimator)`` pair, as scikit-learn composes estimators: any regressor
        with ``fit(X, y, sample_weight=...)`` and ``predict``, cloned for every fit (its
        ``random_state`` and ``n_jobs``, where it leaves them None, are this estimator's). A
        pair's parameters are nested: ``get_params()`` holds ``"<name>__<param>"``,
        ``set_params(et__n_estimators=60)`` sets one, ``set_params(et=estimator)`` replaces the
        learner. Names are distinct, without ``"__"``, and no parameter name. Empty (with
        ``base``) means the base law alone. The default (ExtraTrees alone, 30 trees) won the
        choice of ``benchmarks/choose_default.py``: lowest validation MAPE of nine learner sets
        and sizes among those that predict 1M candidates with intervals in <= 10 s on 2 cores
        (``results/benchmarks/default_choice.csv``).
    blend : {"nnls", "fixed"}, default="nnls"
        NNLS weights on OOF predictions (normalised to sum 1) or the paper's fixed weights.
    cascade : bool, default=True
        Feed earlier targets' predictions to later targets (False: independent models).
    n_estimators_xgb : int, default=150
    max_depth_xgb : int, default=6
    learning_rate_xgb : float, default=0.1
        XGBoost size (subsample and column sample 0.8, ``hist`` trees).
    n_estimators_lgbm : int, default=150
    num_leaves_lgbm : int, default=31
    learning_rate_lgbm : float, default=0.1
        LightGBM size (subsample and column sample 0.8, deterministic).
    n_estimators_et : int, default=30
    min_samples_leaf_et : int, default=2
    max_features_et : float, default=1.0
    max_depth_et : int or None, default=14
        ExtraTrees size (used only with ``"et"`` in ``learners``). These flattened settings size
        the named learners only and stay without a deprecation: the presets, the paper's sizes,
        the saved models' metadata and ``carb fit`` are stated in them, and they reproduce the
        published fits exactly. A learner not named here is a pair in ``learners``, sized by
        its own parameters.
    n_estimators_regime : int, default=60
    num_leaves_regime : int, default=15
    learning_rate_regime : float, default=0.1
        Size of the LightGBM small-batch residual corrector.
    regime_batch_max : int, default=SMALL_BATCH_MAX (8)
        Small-batch regime: ``batch <= regime_batch_max`` (corrector and Mondrian conformal).
    regime_shrink : float, default=0.9
        final = blend + ``regime_shrink`` x predicted small-batch residual; 0 disables it.
    cv : int, default=5
        Folds for the OOF predictions (grouped by ``config_id`` when present). Needs at least
        ``2 * cv`` training rows with a target value.
    log_target : bool, default=True
        Without ``base``: learn ``log1p(target)`` (True) or the raw target (False). With a base
        law the learning scale is always ``log(target)`` (targets must be > 0).
    conformal : {"split", "oof"}, default="split"
        ``"split"``: a calibration fold (``calibration_size`` of the rows, stratified by batch
        regime) is held out of every fit and its absolute log residuals are the conformal
        scores: finite-sample coverage for exchangeable rows. ``"oof"``: scores from the OOF
        residuals of all rows (no rows held out; approximate, jackknife+-after-refit style).
        With fewer than 20 calibration rows ``"split"`` falls back to ``"oof"`` (warning).
    calibration_size : float, default=0.2
        Fraction of rows in the calibration fold (``conformal="split"``), in (0, 0.5].
    coverage : float, default=DEFAULT_COVERAGE (0.9)
        Nominal coverage of :meth:`predict_interval` when it is called without one, and of
        ``conformal_q_``. The fit does not depend on it: the conformal scores are kept, so
        ``predict_interval(X, coverage=c)`` gives the ``c``-level interval for any ``c``.
    conformal_by_regime : bool, default=True
        Separate conformal quantiles for small and large batches (frame mode, when each regime
        has at least 30 calibration scores; otherwise the pooled scores).
    noise_weighting : bool, default=True
        Weight latency/energy rows by their measured noise when the data carry it
        (``latency_window_cv``, the spread of the accepted timing windows): weight
        ``1 / (cv^2 + median(cv)^2)``, normalised to mean 1; rows without it get the median.
    mixed_platforms : bool, default=False
        Accept training rows of several platforms in one model (frame mode; a warning). By
        default they are refused: energy and latency are platform-specific.
    random_state : int, default=0
        Seed of the folds, the calibration draw and every learner.
    n_jobs : int, default=2
        Threads for every learner, in fit and predict (<= 2 on the shared machine).

    Attributes
    ----------
    input_mode_ : {"frame", "array"}
        ``"frame"``: ``X`` was a DataFrame with ``batch`` and ``family`` (the dataset's
        columns); ``"array"``: every column a numeric feature (no base law, no regime
        correction; it exists so that scikit-learn's estimator checks apply).
    targets_, skipped_targets_ : list of str
    feature_names_in_ : ndarray of str
    n_features_in_ : int
    families_ : list of str
        Families seen in training (frame mode).
    base_features_ : list of str
        Columns of the model matrix (before base and cascade inputs).
    base_laws_ : dict
        Target -> fitted :class:`carb_lib.ensemble.base_models.BaseLaw` (empty without ``base``).
    model_features_ : dict
        Target -> feature names of its learners (model matrix, ``base_<t>``, ``cascade_<t>``).
    models_ : dict
        Target -> {learner: fitted model} (refitted on every training row, calibration fold
        excluded).
    blend_weights_ : dict
    correction_floor_ : dict
        Target -> the threshold below which a correction of the base law (learning scale) is
        set to zero (``memory_exact``; 0: every correction applied, ``inf``: none, the base law
        alone, also where the learners were worse than it out of fold).
    regime_models_ : dict
        Target -> fitted LightGBM residual corrector, or None.
    oof_predictions_ : pandas.DataFrame
        Final OOF predictions per target on the learning scale (training rows; calibration
        rows get the fitted model's predictions, as at prediction time).
    cascade_train_inputs_ : pandas.DataFrame
    oof_metrics_ : pandas.DataFrame
        OOF RMSE (learning scale) per target of the base law, each learner, both blends and the
        final prediction; ``base_law_only``: the learners were worse than the base law out of
        fold (mean squared-error increase over 2 standard errors), so the target is predicted
        by the base law alone (``correction_floor_`` inf).
    conformal_scores_ : dict
        Target -> {group: sorted absolute residuals (learning scale)}; groups ``"all"`` and,
        when big enough, ``"small_batch"`` / ``"large_batch"``.
    conformal_q_ : dict
        Target -> {group: conformal half-width at ``coverage``}
        (:meth:`conformal_half_widths` at another coverage).
    conformal_method_ : str
        ``"split"`` or ``"oof"`` (what was actually used).
    calibration_index_ : pandas.Index
        Rows of the calibration fold (empty with ``"oof"``).
    feature_min_, feature_max_ : ndarray
        Training range of every model-matrix column (for :meth:`extrapolated`).
    platform_ : str or None
    latency_law_, latency_law_reason_, latency_law_choice_ : str, str, dict
        The latency law fitted (``"roofline"``, ``"kernel"``), why, and both with the benchmark
        and probe files (the saved model's metadata keys).
    kernel_model_, kernel_bench_ : KernelModel, pandas.DataFrame (with a benchmark)
    training_data_hash_ : str
    n_train_ : int

    See Also
    --------
    carb_lib.ensemble.PRESETS : named parameter sets (``default`` = these defaults, ``paper``,
        ``fast``, ``quick``, ``test``).
    carb_lib.ensemble.save_model, carb_lib.ensemble.load_model : persistence.

    Examples
    --------
    >>> from carb_lib.ensemble import PRESETS, CARBRegressor
    >>> from carb_lib.dataset.synthetic import make_synthetic_dataset  # SYNTHETIC, not measured
    >>> df = make_synthetic_dataset(360, seed=0, with_telemetry=False)
    >>> model = CARBRegressor(**PRESETS["test"]).fit(df)
    >>> model.targets_
    ['peak_mem_mib', 'energy_j', 'latency_ms']
    >>> iv = model.predict_interval(df.head(3), coverage=0.8)
    >>> list(iv.columns[:3])
    ['peak_mem_mib', 'peak_mem_mib_lo', 'peak_mem_mib_hi']

    Learners as components, with nested parameters:

    >>> from sklearn.ensemble import ExtraTreesRegressor, HistGradientBoostingRegressor
    >>> model = CARBRegressor(learners=[("et", ExtraTreesRegressor(n_estimators=20)),
    ...                                 ("hgb", HistGradientBoostingRegressor(max_iter=30))],
    ...                       cv=3, n_jobs=1)
    >>> model.get_params()["et__n_estimators"]
    20
    >>> model = model.set_params(hgb__max_iter=20).fit(df)
    >>> sorted(model.blend_weights_["latency_ms"])
    ['et', 'hgb']
    """

    _parameter_constraints: dict = {
        "targets": [_Names()],
        "feature_set": [StrOptions(set(FEATURE_SETS))],
        "base": ["boolean"],
        "memory_law": [StrOptions({"allocator", "bytes"})],
        "memory_exact": ["boolean"],
        "latency_law": [StrOptions({"auto", "roofline", "kernel"})],
        "kernel_bench": [str, Path, pd.DataFrame, None],
        "kernel_cache_probe": [str, Path, pd.DataFrame, None],
        "learners": [LearnerList()],
        "blend": [StrOptions({"nnls", "fixed"})],
        "cascade": ["boolean"],
        "n_estimators_xgb": [Interval(Integral, 1, None, closed="left")],
        "max_depth_xgb": [Interval(Integral, 1, None, closed="left")],
        "learning_rate_xgb": [Interval(Real, 0, None, closed="neither")],
        "n_estimators_lgbm": [Interval(Integral, 1, None, closed="left")],
        "num_leaves_lgbm": [Interval(Integral, 2, None, closed="left")],
        "learning_rate_lgbm": [Interval(Real, 0, None, closed="neither")],
        "n_estimators_et": [Interval(Integral, 1, None, closed="left")],
        "min_samples_leaf_et": [Interval(Integral, 1, None, closed="left")],
        "max_features_et": [Interval(Real, 0, 1, closed="right")],
        "max_depth_et": [Interval(Integral, 1, None, closed="left"), None],
        "n_estimators_regime": [Interval(Integral, 1, None, closed="left")],
        "num_leaves_regime": [Interval(Integral, 2, None, closed="left")],
        "learning_rate_regime": [Interval(Real, 0, None, closed="neither")],
        "regime_batch_max": [Interval(Real, 0, None, closed="left")],
        "regime_shrink": [Interval(Real, 0, 1, closed="both")],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "log_target": ["boolean"],
        "conformal": [StrOptions({"split", "oof"})],
        "calibration_size": [Interval(Real, 0, 0.5, closed="right")],
        "coverage": [_COVERAGE],
        "conformal_by_regime": ["boolean"],
        "noise_weighting": ["boolean"],
        "mixed_platforms": ["boolean"],
        "random_state": [Interval(Integral, 0, None, closed="left")],
        "n_jobs": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        targets: Sequence[str] = CASCADE_ORDER,
        *,
        feature_set: str = "static",
        base: bool = True,
        memory_law: str = "allocator",
        memory_exact: bool = True,
        latency_law: str = "auto",
        kernel_bench: str | Path | pd.DataFrame | None = None,
        kernel_cache_probe: str | Path | pd.DataFrame | None = None,
        learners: Sequence[str | tuple[str, Any]] = ("et",),
        blend: str = "nnls",
        cascade: bool = True,
        n_estimators_xgb: int = 150,
        max_depth_xgb: int = 6,
        learning_rate_xgb: float = 0.1,
        n_estimators_lgbm: int = 150,
        num_leaves_lgbm: int = 31,
        learning_rate_lgbm: float = 0.1,
        n_estimators_et: int = 30,
        min_samples_leaf_et: int = 2,
        max_features_et: float = 1.0,
        max_depth_et: int | None = 14,
        n_estimators_regime: int = 60,
        num_leaves_regime: int = 15,
        learning_rate_regime: float = 0.1,
        regime_batch_max: int = SMALL_BATCH_MAX,
        regime_shrink: float = 0.9,
        cv: int = 5,
        log_target: bool = True,
        conformal: str = "split",
        calibration_size: float = 0.2,
        coverage: float = DEFAULT_COVERAGE,
        conformal_by_regime: bool = True,
        noise_weighting: bool = True,
        mixed_platforms: bool = False,
        random_state: int = 0,
        n_jobs: int = 2,
    ) -> None:
        self.targets = targets
        self.feature_set = feature_set
        self.base = base
        self.memory_law = memory_law
        self.memory_exact = memory_exact
        self.latency_law = latency_law
        self.kernel_bench = kernel_bench
        self.kernel_cache_probe = kernel_cache_probe
        self.learners = learners
        self.blend = blend
        self.cascade = cascade
        self.n_estimators_xgb = n_estimators_xgb
        self.max_depth_xgb = max_depth_xgb
        self.learning_rate_xgb = learning_rate_xgb
        self.n_estimators_lgbm = n_estimators_lgbm
        self.num_leaves_lgbm = num_leaves_lgbm
        self.learning_rate_lgbm = learning_rate_lgbm
        self.n_estimators_et = n_estimators_et
        self.min_samples_leaf_et = min_samples_leaf_et
        self.max_features_et = max_features_et
        self.max_depth_et = max_depth_et
        self.n_estimators_regime = n_estimators_regime
        self.num_leaves_regime = num_leaves_regime
        self.learning_rate_regime = learning_rate_regime
        self.regime_batch_max = regime_batch_max
        self.regime_shrink = regime_shrink
        self.cv = cv
        self.log_target = log_target
        self.conformal = conformal
        self.calibration_size = calibration_size
        self.coverage = coverage
        self.conformal_by_regime = conformal_by_regime
        self.noise_weighting = noise_weighting
        self.mixed_platforms = mixed_platforms
        self.random_state = random_state
        self.n_jobs = n_jobs

    # -- scikit-learn plumbing ----------------------------------------------------------------
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The parameters; with ``deep``, also every ``(name, estimator)`` learner as ``name``
        and its parameters as ``name__param`` (scikit-learn's composition convention)."""
        out = super().get_params(deep=deep)
        if deep:
            for name, est in learner_components(self.learners).items():
                out[name] = est
                if hasattr(est, "get_params"):
                    out.update({f"{name}__{k}": v for k, v in est.get_params(deep=True).items()})
        return out

    def set_params(self, **params: Any) -> CARBRegressor:
        """Set parameters: this estimator's, a learner (``name=estimator``) or a learner's own
        (``name__param=value``)."""
        if "learners" in params:
            self.learners = params.pop("learners")
        self.learners = set_learner_params(self.learners, params)
        return super().set_params(**params) if params else self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        tags.target_tags.positive_only = bool(self.log_target)
        tags.input_tags.allow_nan = False
        return tags

    def _law_kind(self, target: str) -> str | None:
        """The base law of ``target`` (None: :data:`carb_lib.ensemble.base_models.BASE_KINDS`)."""
        if base_kind(target) == "memory" and self.memory_law == "bytes":
            return "memory_bytes"
        law = getattr(self, "latency_law_", None) or getattr(self, "latency_law", "roofline")
        if target == "latency_ms" and law == "kernel":
            return "kernel"
        return None

    def _snaps(self, target: str) -> bool:
        """Whether ``target``'s law is refitted without outliers and its small corrections
        set to zero (``memory_exact``: the allocator memory law)."""
        return (bool(getattr(self, "memory_exact", False)) and self._uses_base
                and base_kind(target) == "memory" and self._law_kind(target) is None)

    def _check_params(self) -> None:
        """Cross-parameter checks (each parameter alone: ``_parameter_constraints``)."""
        if not tuple(self.learners) and not self.base:
            raise ValueError("learners may be empty only with base=True (the base law alone)")
        clash = sorted(set(learner_components(self.learners)) & set(self._get_param_names()))
        if clash:
            raise ValueError(f"learner name(s) {clash} are parameters of CARBRegressor; rename")
        if self.kernel_bench is not None and self.latency_law == "roofline":
            raise ValueError("kernel_bench is read by latency_law='kernel' only (or 'auto'); got "
                             f"latency_law={self.latency_law!r}")
        if self.kernel_cache_probe is not None and self.kernel_bench is None:
            raise ValueError("kernel_cache_probe is read with kernel_bench only (the kernel "
                             "model it changes is learned from the bench)")

    def _with_kernel_column(self, X, *, fit: bool = False, bench=None, knee=None):
        """``X`` with :data:`~carb_lib.core.vocab.KERNEL_FEATURE` from the kernel model learned on
        ``bench`` (its cache ``knee``) when ``fit``, else ``kernel_model_``; else ``X``."""
        if not is_frame_input(X):
            return X
        if fit:
            for name in ("kernel_model_", "kernel_bench_"):
                self.__dict__.pop(name, None)  # a refit without a bench keeps none
            if bench is not None:
                self.kernel_model_, self.kernel_bench_ = KernelModel(cache=knee).fit(bench), bench
        model = getattr(self, "kernel_model_", None)
        return X if model is None else with_kernel_column(X, model, n_jobs=self.n_jobs)

    @property
    def _uses_base(self) -> bool:
        return bool(self.base) and getattr(self, "input_mode_", None) == "frame"

    def _to_learning(self, y: np.ndarray) -> np.ndarray:
        if self._uses_base:
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.log(y)
        return np.log1p(y) if self.log_target else y

    def _inverse(self, values: np.ndarray) -> np.ndarray:
        if self._uses_base:
            return np.exp(values)
        return np.expm1(values) if self.log_target else values

    # -- fit ----------------------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, rows_file: str | Path | None = None):
        """Fit the base laws, the learners, the cascade and the conformal calibration.

        Parameters
        ----------
        X : pandas.DataFrame or array-like
            Frame mode: config + static feature columns (+ telemetry), and the target columns
            unless ``y`` is given; rows whose ``status`` is not ``"ok"`` are dropped (warning).
            Array mode: numeric features.
        y : pandas.DataFrame, pandas.Series, array-like or None, default=None
            Frame mode: optional targets, positionally aligned with ``X``. Array mode: required.
        rows_file : str or pathlib.Path, optional
            The file ``X`` was read from (``carb fit --data``), for ``latency_law="auto"``:
            where the catalog lists it, the benchmark of its campaign comes first.

        Returns
        -------
        self : CARBRegressor
            The fitted estimator.
        """
        self._check_params()
        choice, bench, knee = estimator_latency_law(self, X, rows_file, is_frame_input(X))
        self.latency_law_, self.latency_law_reason_ = choice.law, choice.reason
        self.latency_law_choice_ = choice.metadata()  # the saved model's metadata keys
        if is_frame_input(X):
            X = self._with_kernel_column(X, fit=True, bench=bench, knee=knee)
            mm, Y, batch, groups, df = prepare_frame(self, X, y)
        else:
            mm, Y = prepare_array(self, X, y)
            batch, groups, df = None, None, None
        index = mm.index
        n = len(mm)
        need = 2 * self.cv
        if n < need:
            raise ValueError(
                f"CARBRegressor(cv={self.cv}) needs at least 2 x cv = {need} training rows for "
                f"its out-of-fold predictions, got n_samples = {n}; lower cv or add rows"
            )
        self.base_features_ = list(mm.columns)
        self.n_train_ = n
        self.training_data_hash_ = hash_training_data(mm, Y)
        Xb = mm.to_numpy(dtype=np.float32)
        self.feature_min_ = Xb.min(axis=0)
        self.feature_max_ = Xb.max(axis=0)
        Yv = Y.to_numpy(dtype=float)
        check_target_values(Y, self._uses_base, self.log_target)
        Z = self._to_learning(Yv)
        regime = (
            np.asarray(batch, float) <= self.regime_batch_max
            if batch is not None
            else np.zeros(n, bool)
        )
        W = noise_weights(df, n, self.targets_, self.noise_weighting)
        cal = self._calibration_fold(regime, need, groups)
        fit_rows = np.flatnonzero(~cal)
        self.calibration_index_ = index[np.flatnonzero(cal)]

        # base laws, fitted on the rows the learners see
        self.base_laws_ = {}
        offsets = np.zeros_like(Z)
        if self._uses_base:
            df = with_alloc_column(df)  # once, not in every law fit and prediction below
            dfit = df.iloc[fit_rows]
            for j, t in enumerate(self.targets_):
                law = fit_base_law(dfit, t, Yv[fit_rows, j], sample_weight=W[fit_rows, j],
                                   kind=self._law_kind(t), reweight=self._snaps(t))
                self.base_laws_[t] = law
                offsets[:, j] = np.log(law.predict(df))

        if self._uses_base:  # residuals from the base law: the neighbourhood's scale
            warn_outliers(Xb, np.log(np.where(Yv > 0, Yv, np.nan)), offsets, self.targets_,
                          index)
        g_fit = None if groups is None else groups[fit_rows]
        if g_fit is not None and pd.Series(g_fit).duplicated().any():
            splitter = GroupKFold(n_splits=self.cv, shuffle=True, random_state=self.random_state)
            folds = list(splitter.split(fit_rows, groups=g_fit))
        else:
            splitter = KFold(n_splits=self.cv, shuffle=True, random_state=self.random_state)
            folds = list(splitter.split(fit_rows))
        folds = [(fit_rows[tr], fit_rows[va]) for tr, va in folds]

        self.models_, self.blend_weights_, self.regime_models_ = {}, {}, {}
        self.model_features_, self.conformal_scores_ = {}, {}
        self.correction_floor_ = {}
        zhat: dict[str, np.ndarray] = {}
        metrics_rows = []
        for j, t in enumerate(self.targets_):
            upstream = self.targets_[:j] if self.cascade else []
            feats = self._features(Xb, offsets[:, j], [zhat[u] for u in upstream])
            self.model_features_[t] = (
                self.base_features_
                + ([f"base_{t}"] if self._uses_base else [])
                + [f"cascade_{u}" for u in upstream]
            )
            zhat[t], row = fit_target(self, t, feats, Z[:, j], W[:, j], offsets[:, j], folds,
                                      regime, cal, batch is not None)
            metrics_rows.append(row)
        self.conformal_q_ = self.conformal_half_widths(self.coverage)
        self.oof_predictions_ = pd.DataFrame(zhat, index=index)
        cascaded = self.targets_[:-1] if self.cascade else []
        self.cascade_train_inputs_ = self.oof_predictions_[list(cascaded)].copy()
        self.oof_metrics_ = pd.DataFrame(metrics_rows).set_index("target")
        return self

    def _calibration_fold(self, regime: np.ndarray, need: int,
                          groups: np.ndarray | None = None) -> np.ndarray:
        """Rows held out for split conformal (stratified by batch regime; repeated
        measurements of one config, ``groups``, held out together); sets the method."""
        n = len(regime)
        self.conformal_method_ = self.conformal
        if self.conformal != "split":
            return np.zeros(n, bool)
        n_cal = int(round(self.calibration_size * n))
        if n_cal < MIN_CALIBRATION or n - n_cal < need:
            warnings.warn(
                f"{n} training rows are too few for a calibration fold of "
                f"{self.calibration_size:.0%} (>= {MIN_CALIBRATION} rows, and 2 x cv left "
                "to fit): conformal scores from out-of-fold residuals instead",
                UserWarning,
                stacklevel=4,
            )
            self.conformal_method_ = "oof"
            return np.zeros(n, bool)
        return calibration_mask(regime, self.calibration_size, self.random_state, groups)

    def _features(self, Xb: np.ndarray, offset: np.ndarray, upstream: list) -> np.ndarray:
        cols = [Xb]
        if self._uses_base:
            cols.append(offset.astype(np.float32)[:, None])
        cols += [u.astype(np.float32)[:, None] for u in upstream]
        return np.column_stack(cols) if len(cols) > 1 else Xb

    def _predict_target(self, t: str, feats: np.ndarray, offset: np.ndarray,
                        regime: np.ndarray) -> np.ndarray:
        out = offset.astype(float).copy()
        for name, model in self.models_[t].items():
            w = self.blend_weights_[t][name]
            if w != 0.0:  # one call per learner, on every row (n_jobs threads)
                out += w * model.predict(feats)
        corrector = self.regime_models_.get(t)
        if corrector is not None and regime.any():
            out[regime] += self.regime_shrink * corrector.predict(feats[regime])
        tau = getattr(self, "correction_floor_", {}).get(t, 0.0)
        if tau > 0:  # memory_exact: corrections below the threshold set to zero
            out = np.where(np.abs(out - offset) < tau, offset, out)
        return out

    # -- predict ------------------------------------------------------------------------------
    def _matrix(self, X) -> tuple[np.ndarray, np.ndarray, Any]:
        """Model matrix (float32), small-batch mask and index of ``X``."""
        check_is_fitted(self)
        if self.input_mode_ == "frame":
            if not isinstance(X, pd.DataFrame):
                raise ValueError(
                    "this model was fitted on a DataFrame; pass a DataFrame of configs"
                )
            # once for every target and learner; the columns the model was fitted on
            Xb = _model_array(X, self.feature_set, self.base_features_)[1]
            regime = _num(X, "batch") <= self.regime_batch_max
            return Xb, regime, X.index
        Xa = validate_data(self, X, reset=False, dtype=np.float64)
        return Xa.astype(np.float32), np.zeros(len(Xa), bool), pd.RangeIndex(len(Xa))

    def _learning_scale(self, X) -> tuple[dict[str, np.ndarray], np.ndarray, Any, np.ndarray]:
        """Predictions on the learning (log) scale, small-batch mask, index, model matrix."""
        Xb, regime, index = self._matrix(X)
        if self._uses_base:
            X = self._with_kernel_column(X)
        preds: dict[str, np.ndarray] = {}
        for j, t in enumerate(self.targets_):
            upstream = self.targets_[:j] if self.cascade else []
            off = (
                np.log(self.base_laws_[t].predict(X))
                if t in getattr(self, "base_laws_", {})
                else np.zeros(len(Xb))
            )
            feats = self._features(Xb, off, [preds[u] for u in upstream])
            preds[t] = self._predict_target(t, feats, off, regime)
        return preds, regime, index, Xb

    def _extrapolated(self, Xb: np.ndarray) -> np.ndarray:
        return ((Xb < self.feature_min_) | (Xb > self.feature_max_)).any(axis=1)

    def extrapolated(self, X) -> pd.Series:
        """Per-row flag: True where any model feature lies outside its training range.

        The range is taken over every row given to :meth:`fit` (after dropping non-ok rows),
        column by column of the model matrix (config features, static features, precision,
        family and block indicators). Such predictions rest on the base law's extrapolation,
        not on measured neighbours.
        """
        Xb, _, index = self._matrix(X)
        return pd.Series(self._extrapolated(Xb), index=index, name="extrapolated")

    def extrapolated_features(self, X) -> pd.DataFrame:
        """Boolean frame (rows x model features): which feature is outside its training range."""
        Xb, _, index = self._matrix(X)
        out = (Xb < self.feature_min_) | (Xb > self.feature_max_)
        return pd.DataFrame(out, index=index, columns=self.base_features_)

    def predict(self, X):
        """Predict every fitted target on the original scale.

        Parameters
        ----------
        X : pandas.DataFrame or array-like
            Frame mode: configs with the columns of :func:`~carb_lib.ensemble.input_columns`.

        Returns
        -------
        pandas.DataFrame or ndarray
            Frame mode: one column per fitted target (``targets_``), index of ``X``.
            Array mode: ndarray, 1-D if ``y`` was 1-D.
        """
        preds, _, index, _ = self._learning_scale(X)
        if self.input_mode_ == "frame":
            return pd.DataFrame({t: self._inverse(preds[t]) for t in self.targets_}, index=index)
        out = np.column_stack([self._inverse(preds[t]) for t in self.targets_])
        return out.ravel() if self.y_ndim_ == 1 else out

    def _coverage(self, coverage: float | None) -> float:
        coverage = self.coverage if coverage is None else coverage
        return coverage_value(coverage, error=InvalidParameterError)

    def conformal_half_widths(self, coverage: float | None = None) -> dict[str, dict[str, float]]:
        """Conformal half-width (learning scale) per target and group at ``coverage``.

        Parameters
        ----------
        coverage : float, optional
            Nominal coverage in (0, 1); default: the estimator's ``coverage``.

        Returns
        -------
        dict
            Target -> {group: half-width}; ``inf`` where too few scores for that coverage.
        """
        c = self._coverage(coverage)
        return {t: {g: conformal_quantile(s, c) for g, s in groups.items()}
                for t, groups in self.conformal_scores_.items()}

    def predict_interval(self, X, coverage: float | None = None) -> pd.DataFrame:
        """Point prediction, split-conformal interval per target, and the extrapolation flag.

        The half-width is the conformal quantile of the absolute calibration residuals on the
        learning (log) scale, so intervals are multiplicative on the original scale; with
        ``conformal_by_regime`` small- and large-batch rows get their own quantile. The scores
        are stored, so any coverage is honoured without refitting.

        Parameters
        ----------
        X : pandas.DataFrame or array-like
        coverage : float, optional
            Nominal coverage in (0, 1); default: the estimator's ``coverage``
            (:data:`carb_lib.core.vocab.DEFAULT_COVERAGE` unless set).

        Returns
        -------
        pandas.DataFrame
            Columns ``{t}``, ``{t}_lo``, ``{t}_hi`` for every fitted target, then
            ``extrapolated`` (see :meth:`extrapolated`).
        """
        coverage = self._coverage(coverage)
        preds, regime, index, Xb = self._learning_scale(X)
        cols: dict[str, np.ndarray] = {}
        for t in self.targets_:
            half = half_widths(self.conformal_scores_[t], regime, coverage)
            f = preds[t]
            cols[t] = self._inverse(f)
            cols[f"{t}_lo"] = self._inverse(f - half)
            cols[f"{t}_hi"] = self._inverse(f + half)
        cols["extrapolated"] = self._extrapolated(Xb)
        return pd.DataFrame(cols, index=index)

    def base_constants(self) -> pd.DataFrame:
        """The fitted base laws' constants (no CIs; :mod:`carb_lib.evaluation` bootstraps)."""
        check_is_fitted(self)
        frames = [law.constants() for law in self.base_laws_.values()]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def score(self, X, y=None, sample_weight=None) -> float:
        """Mean R^2 over the fitted targets (original scale).

        Frame mode reads the targets from ``X`` when ``y`` is None and ignores rows where a
        target is NaN.
        """
        if getattr(self, "input_mode_", None) != "frame":
            return super().score(X, y, sample_weight=sample_weight)
        from sklearn.metrics import r2_score

        pred = self.predict(X)
        Y = X if y is None else (y.to_frame() if isinstance(y, pd.Series) else y).set_axis(X.index)
        scores = []
        for t in self.targets_:
            yt = pd.to_numeric(Y[t], errors="coerce").to_numpy(dtype=float)
            m = np.isfinite(yt)
            sw = None if sample_weight is None else np.asarray(sample_weight)[m]
            scores.append(r2_score(yt[m], pred[t].to_numpy()[m], sample_weight=sw))
        return float(np.mean(scores))
