"""CARB: the characterization-guided, cascade-blended ensemble for memory, energy and latency.

:class:`CARBRegressor` follows the reported design of the CARB paper (see the project's shared
paper notes, outside the repository; the paper's numbers are not ours), made
*characterization-guided*:

* per target a base law from the characterization (:mod:`carb_lib.ensemble.base_models`): peak memory
  by NNLS on parameter and activation bytes per precision; latency and energy by a
  roofline-style law (FLOPs / throughput + bytes / bandwidth + layers x per-layer overhead +
  batch and constant terms), fitted by relative NNLS with interpretable constants;
* learners (XGBoost, LightGBM, ExtraTrees by name, which ones: :data:`PRESETS`; or any
  scikit-learn regressor as a ``(name, estimator)`` pair of ``learners``) model only
  ``log(measured / base)``, with ``log(base)`` among their inputs, so the scaling the trees
  cannot extrapolate comes from the law;
* their predictions blended with NNLS weights learned on out-of-fold (OOF) predictions (or the
  paper's fixed weights);
* a cascade: memory = f(x); energy = f(x, predicted memory); latency = f(x, predicted memory,
  predicted energy). During training the cascade inputs are OOF predictions, never in-sample
  ones, so a downstream model sees inputs as noisy as those it gets at prediction time;
* a regime correction: a LightGBM model of the OOF residual, used only where
  ``batch <= regime_batch_max`` (:data:`carb_lib.core.vocab.SMALL_BATCH_MAX`); final = blend +
  ``regime_shrink`` x predicted residual;
* split-conformal intervals on a held-out calibration fold (log scale, Mondrian by batch
  regime) at any requested coverage (default :data:`carb_lib.core.vocab.DEFAULT_COVERAGE`); a
  per-row ``extrapolated`` flag where a candidate's features leave the training range;
* rows weighted by their measured timing noise (``latency_window_cv``) when the data carry it.

Modules
-------
:mod:`~carb_lib.ensemble.matrix`
    The model matrix (:func:`model_matrix`, :func:`validate_features`, :func:`input_columns`).
:mod:`~carb_lib.ensemble.estimator`
    :class:`CARBRegressor` (scikit-learn form: keyword-only parameters, declarative
    validation); :mod:`~carb_lib.ensemble.inputs` (the two input modes),
    :mod:`~carb_lib.ensemble.fitting` (the fit of one target),
    :mod:`~carb_lib.ensemble.learners` (learners, blend, :func:`feature_importances`),
    :mod:`~carb_lib.ensemble.conformal` (the intervals).
:mod:`~carb_lib.ensemble.presets`
    :data:`PRESETS`, the one place for model sizes (``default``, ``paper``, ``fast``,
    ``quick``, ``test``).
:mod:`~carb_lib.ensemble.io`
    :func:`save_model` / :func:`load_model` (a skops file, loaded without pickle, plus a JSON
    sidecar with the feature list, feature set, platform, library versions and a hash of the
    training data).
"""

from carb_lib.core.vocab import STATIC_FEATURES, TARGETS, TELEMETRY_FEATURES
from carb_lib.ensemble.conformal import conformal_quantile
from carb_lib.ensemble.estimator import CASCADE_ORDER, CARBRegressor
from carb_lib.ensemble.inputs import MissingTargetWarning
from carb_lib.ensemble.io import (
    TRUSTED_TYPES,
    ModelFileError,
    is_model_file,
    load_model,
    save_model,
)
from carb_lib.ensemble.learners import LEARNERS, PAPER_BLEND_WEIGHTS, feature_importances
from carb_lib.ensemble.matrix import (
    CONFIG_COLUMNS,
    FEATURE_SETS,
    NB201_OPS,
    input_columns,
    model_matrix,
    model_matrix_columns,
    validate_features,
)
from carb_lib.ensemble.presets import PRESETS, preset

__all__ = [
    "CARBRegressor",
    "CASCADE_ORDER",
    "CONFIG_COLUMNS",
    "FEATURE_SETS",
    "LEARNERS",
    "MissingTargetWarning",
    "NB201_OPS",
    "PAPER_BLEND_WEIGHTS",
    "PRESETS",
    "STATIC_FEATURES",
    "TARGETS",
    "TELEMETRY_FEATURES",
    "conformal_quantile",
    "feature_importances",
    "input_columns",
    "load_model",
    "is_model_file",
    "ModelFileError",
    "TRUSTED_TYPES",
    "model_matrix",
    "model_matrix_columns",
    "preset",
    "save_model",
    "validate_features",
]
