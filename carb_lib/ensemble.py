"""CARB: the cascade-blended ensemble that predicts peak memory, energy and latency.

:class:`CARBRegressor` follows the reported design of the CARB paper (see
``/work/shared/reference/paper-notes.md``; the paper's numbers are not ours):

* per target three learners, XGBoost, LightGBM and ExtraTrees, on ``log1p(target)``;
* their predictions blended with fixed weights (the paper's) or with non-negative least squares
  (NNLS) weights learned on out-of-fold (OOF) predictions (the default);
* a cascade: memory = f(x); energy = f(x, predicted memory); latency = f(x, predicted memory,
  predicted energy). During training the cascade inputs are OOF predictions, never in-sample
  ones, so a downstream model sees inputs as noisy as those it gets at prediction time;
* a regime correction: a LightGBM model of the OOF residual, used only where
  ``batch <= regime_batch_max``; final = blend + ``regime_shrink`` x predicted residual;
* split-conformal intervals from the OOF residuals on the log scale (CV+ style, Mondrian by
  batch regime when both regimes are large enough).

Two input modes:

``"frame"``
    ``X`` is a DataFrame with the dataset's config columns (``batch`` and ``family`` at least),
    the static feature columns (and telemetry with ``feature_set="static+telemetry"``), and in
    :meth:`~CARBRegressor.fit` the target columns (or ``y`` as a DataFrame). :func:`model_matrix`
    builds the numeric model matrix. ``predict`` returns a DataFrame, one column per target.
``"array"``
    Anything else (a numeric array, a DataFrame without the dataset's columns): every column is a
    numeric feature and ``y`` is 1-D or 2-D. ``predict`` returns an ndarray. There is no batch
    column, so no regime correction. This mode exists so that scikit-learn's estimator checks
    apply; CARB itself uses the frame mode.

Persistence: :func:`save_model` / :func:`load_model` (joblib payload plus a JSON sidecar with the
feature list, feature set, platform, library versions and a hash of the training data).
"""

from __future__ import annotations

import hashlib
import json
import math
import platform as _py_platform
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.model_selection import GroupKFold, KFold
from sklearn.utils.validation import check_is_fitted, validate_data

from carb_lib.nb201 import OPS, arch_ops

__all__ = [
    "CARBRegressor",
    "CONFIG_COLUMNS",
    "FEATURE_SETS",
    "MissingTargetWarning",
    "PAPER_BLEND_WEIGHTS",
    "PRESETS",
    "STATIC_FEATURES",
    "TARGETS",
    "TELEMETRY_FEATURES",
    "feature_importances",
    "input_columns",
    "load_model",
    "model_matrix",
    "save_model",
    "validate_features",
]

TARGETS: tuple[str, ...] = ("peak_mem_mib", "energy_j", "latency_ms")
LEARNERS: tuple[str, ...] = ("xgb", "lgbm", "et")
FEATURE_SETS: tuple[str, ...] = ("static", "static+telemetry")

#: Fixed blend weights XGB / LGBM / ET reported by the paper (per target).
PAPER_BLEND_WEIGHTS: dict[str, dict[str, float]] = {
    "peak_mem_mib": {"xgb": 0.3, "lgbm": 0.4, "et": 0.3},
    "energy_j": {"xgb": 0.3, "lgbm": 0.5, "et": 0.2},
    "latency_ms": {"xgb": 0.2, "lgbm": 0.3, "et": 0.5},
}

#: Named model sizes: ``CARBRegressor(**PRESETS[name])`` (plus ``n_jobs``, ``feature_set``...).
#:
#: Measured with ``benchmarks/bench_carb.py`` (2 cores, ``n_jobs=2``, 3 targets, SYNTHETIC
#: 17,280-row grid; ``results/benchmarks/carb.csv``):
#:
#: ``"paper"``
#:     The paper's sizes and the estimator's defaults: XGBoost 800 trees of depth 9, LightGBM
#:     800 trees of 127 leaves, ExtraTrees 400 fully grown trees, residual corrector 200 trees,
#:     5-fold OOF. Fit 17k rows ~3.5 min; predict 1M rows ~3 min; saved model ~2.9 GiB (the
#:     fully grown ExtraTrees).
#: ``"fast"``
#:     XGBoost 100 trees of depth 6, LightGBM 40 trees of 15 leaves (higher learning rates),
#:     ExtraTrees 8 trees of depth <= 16, corrector 40 trees of 7 leaves; the same 5-fold OOF,
#:     cascade, regime correction and conformal intervals. Fit 17k rows ~6 s; predict 1M rows
#:     ~3.6 s; model ~34 MiB. For screening large candidate sets and for repeated fits
#:     (ablations, leave-one-out). On the measured CPU data (3 stratified splits) its test
#:     accuracy is close to "paper": memory MAPE ~2.8 % vs ~2.0 %, latency MAPE ~15.0 % vs
#:     ~15.8 % (latency is limited by the measurement noise, not the model size).
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {
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
}

CONFIG_COLUMNS: tuple[str, ...] = (
    "family",
    "block",
    "depth",
    "width",
    "early_downsample",
    "arch",
    "resolution",
    "batch",
    "precision",
    "num_classes",
)
#: Config columns every row needs, and those a family needs in addition.
_COMMON_CONFIG = ("family", "resolution", "batch", "precision", "num_classes")
_FAMILY_CONFIG = {"resnet": ("block", "depth", "width", "early_downsample"), "nb201": ("arch",)}

STATIC_FEATURES: tuple[str, ...] = (
    "n_conv",
    "n_bn",
    "n_act",
    "n_fc",
    "max_channels",
    "flops",
    "params",
    "param_bytes",
    "activation_bytes",
    "peak_act_bytes",
    "arith_intensity_flop_per_byte",
)
TELEMETRY_FEATURES: tuple[str, ...] = (
    "sm_util_pct",
    "mem_util_pct",
    "temp_c_before",
    "kernel_launches",
)
#: Heavy-tailed static features, entered as log1p.
_LOG_FEATURES = (
    "max_channels",
    "flops",
    "params",
    "param_bytes",
    "activation_bytes",
    "peak_act_bytes",
    "arith_intensity_flop_per_byte",
)
NB201_OPS: tuple[str, ...] = OPS  # the NB201 family's operation list, in its order
_PRECISIONS = ("fp32", "fp16")
_BLOCKS = ("basic", "bottleneck")
_NOT_APPLICABLE = -1.0  # value of a config feature that does not apply to the row's family
_MIN_REGIME_ROWS = 10  # fewer training rows in the small-batch regime: no corrector
_MIN_CONFORMAL_GROUP = 30  # smaller regime group: use the pooled conformal scores
_REGIMES = ("small_batch", "large_batch")


class MissingTargetWarning(UserWarning):
    """A requested target is absent or all-NaN in the training data and is skipped."""


# ---------------------------------------------------------------------------------------------
# features
# ---------------------------------------------------------------------------------------------
def input_columns(feature_set: str = "static") -> list[str]:
    """Return the dataset columns a model with ``feature_set`` reads (config + features)."""
    _check_feature_set(feature_set)
    cols = list(CONFIG_COLUMNS) + list(STATIC_FEATURES)
    if feature_set == "static+telemetry":
        cols += list(TELEMETRY_FEATURES)
    return cols


def _check_feature_set(feature_set: str) -> None:
    if feature_set not in FEATURE_SETS:
        raise ValueError(f"feature_set must be one of {FEATURE_SETS}, got {feature_set!r}")


def _row_label(df: pd.DataFrame, pos: int) -> str:
    idx = df.index[pos]
    label = f"row {idx.item() if isinstance(idx, np.generic) else idx!r}"
    if "config_id" in df.columns:
        label += f" (config_id={df['config_id'].iloc[pos]!r})"
    return label


def _raise_missing(df: pd.DataFrame, column: str, bad: np.ndarray, why: str) -> None:
    pos = np.flatnonzero(bad)
    if len(pos):
        raise ValueError(
            f"feature column {column!r} is missing (NaN/None) in {_row_label(df, pos[0])}"
            f"{f' and {len(pos) - 1} other row(s)' if len(pos) > 1 else ''}; {why}"
        )


def validate_features(df: pd.DataFrame, feature_set: str = "static") -> None:
    """Raise ``ValueError`` naming the column and the first row where a needed feature is missing.

    A column that does not apply to a row's family (``depth`` for ``nb201``, ``arch`` for
    ``resnet``) may be NaN or absent.

    Parameters
    ----------
    df : pandas.DataFrame
        Config columns plus the static features (and telemetry for ``"static+telemetry"``).
    feature_set : {"static", "static+telemetry"}
    """
    _check_feature_set(feature_set)
    if len(df) == 0:
        raise ValueError("no rows: the input DataFrame is empty")
    if "family" not in df.columns:
        raise ValueError("feature column 'family' is absent from the input (needed by every row)")
    family = df["family"]
    _raise_missing(df, "family", family.isna().to_numpy(), "every row needs its family")
    unknown = sorted({str(v) for v in family.dropna().unique()} - set(_FAMILY_CONFIG))
    if unknown:
        first = int(np.flatnonzero(family.astype(str).isin(unknown).to_numpy())[0])
        raise ValueError(
            f"column 'family' has unknown value {unknown[0]!r} in {_row_label(df, first)}; "
            f"known: {sorted(_FAMILY_CONFIG)}"
        )
    needs: list[tuple[str, np.ndarray, str]] = [
        (c, np.ones(len(df), bool), "every row needs it") for c in _COMMON_CONFIG[1:]
    ]
    for fam, cols in _FAMILY_CONFIG.items():
        rows = _is(family, fam)
        needs += [(c, rows, f"family {fam!r} needs it") for c in cols]
    feats = list(STATIC_FEATURES)
    if feature_set == "static+telemetry":
        feats += list(TELEMETRY_FEATURES)
    hint = "static features come from carb_lib.features.static_features(df)"
    needs += [
        (
            c,
            np.ones(len(df), bool),
            f"feature_set={feature_set!r} needs it"
            + (f" ({hint})" if c in STATIC_FEATURES else " (telemetry is measured on GPUs only)"),
        )
        for c in feats
    ]
    for col, rows, why in needs:
        if not rows.any():
            continue
        if col not in df.columns:
            raise ValueError(
                f"feature column {col!r} is absent from the input ({why}); "
                f"first affected: {_row_label(df, int(np.flatnonzero(rows)[0]))}"
            )
        _raise_missing(df, col, rows & df[col].isna().to_numpy(), why)
    for col, allowed in (("precision", _PRECISIONS), ("block", _BLOCKS)):
        if col not in df.columns:
            continue
        vals = df[col]
        bad = (vals.notna() & ~vals.isin(allowed)).to_numpy(dtype=bool)
        if col == "block":
            bad = bad & _is(family, "resnet")
        if bad.any():
            pos = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"column {col!r} has unknown value {vals.iloc[pos]!r} in {_row_label(df, pos)}; "
                f"known: {list(allowed)}"
            )


def _per_unique(values: pd.Series, table_of, na_value) -> np.ndarray:
    """Map a column through a function of its *distinct* values (no Python loop over rows).

    ``table_of(uniques)`` returns a 1-D array with one entry per distinct non-missing value;
    missing values get ``na_value``. ``pandas.factorize`` does the hashing in C, so the cost is
    O(rows) in C plus O(distinct values) in Python, whatever the dtype (object, arrow string,
    categorical).
    """
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    table = np.asarray(table_of(uniques))
    table = np.append(table, np.asarray([na_value], dtype=table.dtype))
    return table[codes]  # code -1 (missing) -> the appended na_value


def _is(values: pd.Series, value: str) -> np.ndarray:
    """Boolean array ``values == value`` (missing -> False)."""
    if isinstance(values.dtype, (pd.StringDtype, pd.ArrowDtype)):
        return (values == value).to_numpy(dtype=bool, na_value=False)  # vectorised already
    return _per_unique(
        values, lambda u: np.array([v == value for v in u], dtype=bool), False
    ).astype(bool)


def _num(df: pd.DataFrame, col: str) -> np.ndarray:
    if col not in df.columns:
        return np.full(len(df), np.nan)
    return pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float, na_value=np.nan)


_FLAG_STRINGS = {"true": True, "false": False, "1": True, "0": False}


def _flag(df: pd.DataFrame, col: str) -> np.ndarray:
    """0/1 of a boolean-like column, NaN where missing.

    Strings ``"true"``/``"false"``/``"1"``/``"0"`` (any case) are accepted; the conversion is
    done once per distinct value.
    """
    if col not in df.columns:
        return np.full(len(df), np.nan)
    s = df[col]
    if s.dtype == object or str(s.dtype).startswith(("str", "string")):

        def table(uniques):
            vals = [
                _FLAG_STRINGS.get(v.lower(), v) if isinstance(v, str) else v for v in uniques
            ]
            return pd.array(vals, dtype="boolean").to_numpy(dtype=float, na_value=np.nan)

        return _per_unique(s, table, np.nan).astype(float)
    return pd.array(s, dtype="boolean").to_numpy(dtype=float, na_value=np.nan)


def _nb201_op_counts(arch: pd.Series) -> np.ndarray:
    """Counts of each :data:`NB201_OPS` operation per arch string, shape (rows, ops)."""

    def table(uniques):
        # one parse per distinct arch string, with the family's own (validating) parser
        rows = [[ops.count(op) for op in NB201_OPS] for ops in map(arch_ops, uniques)]
        return np.asarray(rows, dtype=float).reshape(len(uniques), len(NB201_OPS))

    codes, uniques = pd.factorize(arch, use_na_sentinel=True)
    counts = table(uniques)
    counts = np.vstack([counts, np.zeros((1, len(NB201_OPS)))])  # missing -> "nan": 0 ops
    return counts[codes]


def _model_array(df: pd.DataFrame, feature_set: str) -> tuple[list[str], np.ndarray]:
    """Validated model matrix as (column names, C-contiguous float32 array)."""
    validate_features(df, feature_set)
    n = len(df)
    resnet = _is(df["family"], "resnet")
    nb201 = _is(df["family"], "nb201")
    cols: list[tuple[str, Any]] = [("family_nb201", nb201)]
    bottleneck = _is(df["block"], "bottleneck") if "block" in df.columns else np.zeros(n, bool)
    cols.append(("block_bottleneck", np.where(resnet, bottleneck.astype(float), _NOT_APPLICABLE)))
    for col, values in (
        ("depth", _num(df, "depth")),
        ("width", _num(df, "width")),
        ("early_downsample", _flag(df, "early_downsample")),
    ):
        cols.append((col, np.where(resnet, values, _NOT_APPLICABLE)))
    batch = _num(df, "batch")
    cols += [
        ("resolution", _num(df, "resolution")),
        ("batch", batch),
        ("num_classes", _num(df, "num_classes")),
        ("precision_fp16", _is(df["precision"], "fp16")),
    ]
    cols += [(col, _num(df, col)) for col in ("n_conv", "n_bn", "n_act", "n_fc")]
    logs = {col: np.log1p(np.clip(_num(df, col), 0.0, None)) for col in _LOG_FEATURES}
    cols += [(f"log1p_{col}", v) for col, v in logs.items()]
    cols.append(("log1p_flops_per_sample", np.log1p(np.clip(_num(df, "flops"), 0.0, None) / batch)))
    cols.append(
        (
            "log1p_activation_bytes_per_sample",
            np.log1p(np.clip(_num(df, "activation_bytes"), 0.0, None) / batch),
        )
    )
    counts = np.zeros((n, len(NB201_OPS)))
    if nb201.any():
        counts[nb201] = _nb201_op_counts(df["arch"][nb201])
    cols += [(f"nb201_n_{op}", counts[:, k]) for k, op in enumerate(NB201_OPS)]
    if feature_set == "static+telemetry":
        sm, mem = _num(df, "sm_util_pct"), _num(df, "mem_util_pct")
        act_mib = np.clip(_num(df, "activation_bytes"), 0.0, None) / 2**20
        cols += [
            ("sm_util_pct", sm),
            ("mem_util_pct", mem),
            ("temp_c_before", _num(df, "temp_c_before")),
            ("log1p_kernel_launches", np.log1p(np.clip(_num(df, "kernel_launches"), 0.0, None))),
            ("batch_x_sm_util", batch * sm),
            ("log1p_flops_x_sm_util", logs["flops"] * sm),
            ("log1p_activation_mib_x_mem_util", np.log1p(act_mib) * mem),
            ("sm_util_x_mem_util", sm * mem),
        ]
    # float64 values rounded once to float32, column by column, into one row-major array
    arr = np.empty((n, len(cols)), dtype=np.float32)
    for k, (_, values) in enumerate(cols):
        arr[:, k] = values
    finite = np.isfinite(arr)
    if not finite.all():
        r, c = np.argwhere(~finite)[0]
        raise ValueError(
            f"model feature {cols[c][0]!r} is not finite in {_row_label(df, int(r))} "
            "(check batch > 0 and the numeric config/feature columns)"
        )
    return [name for name, _ in cols], arr


def model_matrix(df: pd.DataFrame, feature_set: str = "static") -> pd.DataFrame:
    """Build CARB's numeric model matrix from config, static feature (and telemetry) columns.

    The columns are the same for every input (fixed category lists), so a model fitted on one
    frame can predict another. Config features that do not apply to a row's family are
    ``-1``; NB201 architectures enter as counts of each operation. The encoding is vectorised
    (string columns are factorised, each distinct value converted once): about 0.2-1 s for
    1,000,000 rows.

    Parameters
    ----------
    df : pandas.DataFrame
        Rows to encode; validated with :func:`validate_features` (``ValueError`` naming the
        column and row of a missing feature).
    feature_set : {"static", "static+telemetry"}
        ``"static+telemetry"`` adds ``sm_util_pct``, ``mem_util_pct``, ``temp_c_before``,
        ``log1p_kernel_launches`` and the paper's interactions (batch x SM util,
        log1p(FLOPs) x SM util, log1p(activation MiB) x memory util, SM util x memory util).

    Returns
    -------
    pandas.DataFrame
        float32 columns, index aligned with ``df``.
    """
    names, arr = _model_array(df, feature_set)
    return pd.DataFrame(arr, index=df.index, columns=names, copy=False)


# ---------------------------------------------------------------------------------------------
# the estimator
# ---------------------------------------------------------------------------------------------
def _is_frame_input(X: Any) -> bool:
    return isinstance(X, pd.DataFrame) and "batch" in X.columns and "family" in X.columns


def _conformal_quantile(scores: np.ndarray, coverage: float) -> float:
    """Split-conformal quantile: the ceil((n+1) coverage)-th smallest score (inf if beyond n)."""
    n = len(scores)
    k = math.ceil((n + 1) * coverage)
    return float(scores[k - 1]) if 1 <= k <= n else math.inf


class CARBRegressor(RegressorMixin, BaseEstimator):
    """Cascade-blended, regime-corrected ensemble for CNN inference cost (CARB).

    (``RegressorMixin`` comes before ``BaseEstimator`` as scikit-learn requires for mixins.)

    Parameters
    ----------
    targets : tuple of str
        Targets in cascade order (each later target gets the earlier predictions as inputs).
        Frame mode only; targets absent or all-NaN in the training data are skipped with a
        :class:`MissingTargetWarning` (energy on CPU).
    feature_set : {"static", "static+telemetry"}
        Which columns :func:`model_matrix` uses (frame mode).
    blend : {"nnls", "fixed"}
        Blend weights learned by NNLS on OOF predictions (normalised to sum 1) or the paper's
        fixed weights (:data:`PAPER_BLEND_WEIGHTS`; equal weights for other targets).
    learners : tuple of str
        Subset of ``("xgb", "lgbm", "et")`` (ablations: one learner alone).
    cascade : bool
        Feed earlier targets' predictions to later targets (False: independent models).
    n_estimators_xgb, max_depth_xgb, learning_rate_xgb : XGBoost size.
    n_estimators_lgbm, num_leaves_lgbm, learning_rate_lgbm : LightGBM size.
    n_estimators_et : int
        ExtraTrees size.
    min_samples_leaf_et, max_features_et, max_depth_et : ExtraTrees leaf size, features per
        split and depth limit (defaults: fully grown trees on all features, as in scikit-learn;
        larger leaves, a depth limit or fewer features make fitting, prediction and the saved
        model much cheaper: fully grown trees on 17k rows have ~35k nodes each).
    n_estimators_regime, num_leaves_regime, learning_rate_regime : residual corrector size.
    regime_batch_max : int
        The corrector is trained on and applied to rows with ``batch <= regime_batch_max``.
    regime_shrink : float
        final = blend + ``regime_shrink`` x predicted residual; 0 disables the correction.
    cv : int
        Folds for the OOF predictions (grouped by ``config_id`` when present).
    log_target : bool
        Learn ``log1p(target)`` and return ``expm1`` (targets must be > -1).
    conformal_by_regime : bool
        Separate conformal quantiles for small and large batches (frame mode, when each regime
        has at least 30 OOF residuals).
    random_state : int
    n_jobs : int
        Threads for every learner, in fit and predict (<= 2 on the shared machine).

    Notes
    -----
    The defaults are the paper's model sizes (:data:`PRESETS` ``["paper"]``). For screening
    many candidates, or when fitting time matters, use the smaller ``"fast"`` preset:
    ``CARBRegressor(**PRESETS["fast"], n_jobs=2)``. A preset is only a dict of constructor
    parameters (scikit-learn convention); any of them can be overridden.

    Attributes
    ----------
    input_mode_ : {"frame", "array"}
    targets_ : list of str
        Fitted targets in cascade order.
    skipped_targets_ : list of str
    feature_names_in_ : ndarray of str
        Input columns read (frame: :func:`input_columns`; array: the DataFrame's columns).
    n_features_in_ : int
    base_features_ : list of str
        Columns of the model matrix (before cascade inputs).
    model_features_ : dict
        Target -> feature names of its learners (model matrix + ``cascade_<target>`` inputs).
    models_ : dict
        Target -> {learner: fitted model} (refitted on all training rows).
    blend_weights_ : dict
        Target -> {learner: weight}.
    regime_models_ : dict
        Target -> fitted LightGBM residual corrector, or None.
    oof_predictions_ : pandas.DataFrame
        Final (blend + correction) OOF predictions per target, on the learning (log) scale.
    cascade_train_inputs_ : pandas.DataFrame
        The cascade inputs the downstream learners were trained on (OOF, learning scale).
    oof_metrics_ : pandas.DataFrame
        OOF RMSE (learning scale) per target of each learner, the NNLS and the fixed blend,
        and the corrected blend: which blend wins on OOF.
    conformal_scores_ : dict
        Target -> {group: sorted absolute OOF residuals (learning scale)}.
    conformal_q_ : dict
        Target -> {group: conformal half-width at 90% coverage (learning scale)}.
    platform_ : str or None
        The training data's ``platform`` (``"a+b"`` if several, None if absent).
    training_data_hash_ : str
        SHA-256 of the training model matrix and targets.
    n_train_ : int
    """

    def __init__(
        self,
        targets: Sequence[str] = TARGETS,
        feature_set: str = "static",
        blend: str = "nnls",
        learners: Sequence[str] = LEARNERS,
        cascade: bool = True,
        n_estimators_xgb: int = 800,
        max_depth_xgb: int = 9,
        learning_rate_xgb: float = 0.05,
        n_estimators_lgbm: int = 800,
        num_leaves_lgbm: int = 127,
        learning_rate_lgbm: float = 0.05,
        n_estimators_et: int = 400,
        min_samples_leaf_et: int = 1,
        max_features_et: float = 1.0,
        max_depth_et: int | None = None,
        n_estimators_regime: int = 200,
        num_leaves_regime: int = 31,
        learning_rate_regime: float = 0.05,
        regime_batch_max: int = 8,
        regime_shrink: float = 0.9,
        cv: int = 5,
        log_target: bool = True,
        conformal_by_regime: bool = True,
        random_state: int = 0,
        n_jobs: int = 2,
    ) -> None:
        self.targets = targets
        self.feature_set = feature_set
        self.blend = blend
        self.learners = learners
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
        self.conformal_by_regime = conformal_by_regime
        self.random_state = random_state
        self.n_jobs = n_jobs

    # -- scikit-learn plumbing ----------------------------------------------------------------
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        tags.target_tags.positive_only = bool(self.log_target)
        tags.input_tags.allow_nan = False
        return tags

    def _check_params(self) -> None:
        _check_feature_set(self.feature_set)
        if self.blend not in ("nnls", "fixed"):
            raise ValueError(f"blend must be 'nnls' or 'fixed', got {self.blend!r}")
        learners = tuple(self.learners)
        if not learners or len(set(learners)) != len(learners) or set(learners) - set(LEARNERS):
            raise ValueError(
                f"learners must be distinct names from {LEARNERS}, got {self.learners!r}"
            )
        if isinstance(self.targets, str) or not len(self.targets):
            raise ValueError(f"targets must be a non-empty sequence of names, got {self.targets!r}")
        if not isinstance(self.cv, (int, np.integer)) or self.cv < 2:
            raise ValueError(f"cv must be an int >= 2, got {self.cv!r}")
        if not 0.0 <= float(self.regime_shrink) <= 1.0:
            raise ValueError(f"regime_shrink must be in [0, 1], got {self.regime_shrink!r}")

    def _make_learner(self, name: str):
        if name == "xgb":
            from xgboost import XGBRegressor

            return XGBRegressor(
                n_estimators=self.n_estimators_xgb,
                max_depth=self.max_depth_xgb,
                learning_rate=self.learning_rate_xgb,
                subsample=0.8,
                colsample_bytree=0.8,
                tree_method="hist",
                random_state=self.random_state,
                n_jobs=self.n_jobs,
                verbosity=0,
            )
        if name == "lgbm":
            from lightgbm import LGBMRegressor

            return LGBMRegressor(
                n_estimators=self.n_estimators_lgbm,
                num_leaves=self.num_leaves_lgbm,
                learning_rate=self.learning_rate_lgbm,
                subsample=0.8,
                subsample_freq=1,
                colsample_bytree=0.8,
                importance_type="gain",
                random_state=self.random_state,
                n_jobs=self.n_jobs,
                deterministic=True,
                force_row_wise=True,
                verbose=-1,
            )
        from sklearn.ensemble import ExtraTreesRegressor

        return ExtraTreesRegressor(
            n_estimators=self.n_estimators_et,
            min_samples_leaf=self.min_samples_leaf_et,
            max_features=self.max_features_et,
            max_depth=self.max_depth_et,
            random_state=self.random_state,
            n_jobs=self.n_jobs,
        )

    def _make_corrector(self):
        from lightgbm import LGBMRegressor

        return LGBMRegressor(
            n_estimators=self.n_estimators_regime,
            num_leaves=self.num_leaves_regime,
            learning_rate=self.learning_rate_regime,
            min_child_samples=5,
            random_state=self.random_state,
            n_jobs=self.n_jobs,
            deterministic=True,
            force_row_wise=True,
            verbose=-1,
        )

    def _fixed_weights(self, target: str) -> np.ndarray:
        table = PAPER_BLEND_WEIGHTS.get(target, {})
        w = np.array([table.get(name, 1.0) for name in self.learners], dtype=float)
        return w / w.sum()

    # -- fit ----------------------------------------------------------------------------------
    def fit(self, X, y=None):
        """Fit the cascade.

        Parameters
        ----------
        X : pandas.DataFrame or array-like
            Frame mode: config + static feature columns (+ telemetry), and the target columns
            unless ``y`` is given; rows whose ``status`` is not ``"ok"`` are dropped (warning).
            Array mode: numeric features.
        y : pandas.DataFrame, pandas.Series, array-like or None
            Frame mode: optional targets (columns named like ``targets``), positionally aligned
            with ``X``. Array mode: required, 1-D or 2-D.

        Returns
        -------
        self
        """
        self._check_params()
        if _is_frame_input(X):
            mm, Y, batch, groups = self._prepare_frame_fit(X, y)
        else:
            mm, Y = self._prepare_array_fit(X, y)
            batch, groups = None, None
        index = mm.index
        n = len(mm)
        if n < self.cv:
            raise ValueError(
                f"CARBRegressor needs at least cv={self.cv} training rows for its out-of-fold "
                f"predictions, got n_samples = {n}"
            )
        self.base_features_ = list(mm.columns)
        self.n_train_ = n
        self.training_data_hash_ = _hash_training_data(mm, Y)
        Xb = mm.to_numpy(dtype=np.float32)
        if self.log_target:
            low = Y.min(axis=0, skipna=True)
            if (low <= -1).any():
                t = low.index[int(np.argmax((low <= -1).to_numpy()))]
                raise ValueError(
                    f"target {t!r} has values <= -1 (min {low[t]!r}); log1p needs > -1 "
                    "(costs are positive; use log_target=False for other data)"
                )
            Yl = np.log1p(Y.to_numpy(dtype=float))
        else:
            Yl = Y.to_numpy(dtype=float)

        if groups is not None and pd.Series(groups).duplicated().any():
            splitter = GroupKFold(n_splits=self.cv, shuffle=True, random_state=self.random_state)
            folds = list(splitter.split(Xb, groups=groups))
        else:
            splitter = KFold(n_splits=self.cv, shuffle=True, random_state=self.random_state)
            folds = list(splitter.split(Xb))
        regime = (
            np.asarray(batch, float) <= self.regime_batch_max
            if batch is not None
            else np.zeros(n, bool)
        )

        learners = tuple(self.learners)
        self.models_, self.blend_weights_, self.regime_models_ = {}, {}, {}
        self.model_features_, self.conformal_scores_, self.conformal_q_ = {}, {}, {}
        oof_final: dict[str, np.ndarray] = {}
        metrics_rows = []
        for j, t in enumerate(self.targets_):
            upstream = self.targets_[:j] if self.cascade else []
            feats = np.column_stack([Xb] + [oof_final[u].astype(np.float32) for u in upstream])
            self.model_features_[t] = self.base_features_ + [f"cascade_{u}" for u in upstream]
            yl = Yl[:, j]
            has_y = np.isfinite(yl)

            # out-of-fold base-learner predictions (every row gets one: rows without a target
            # value are predicted by models that never saw them, too)
            P = np.full((n, len(learners)), np.nan)
            for tr, va in folds:
                tr = tr[has_y[tr]]
                for k, name in enumerate(learners):
                    P[va, k] = self._make_learner(name).fit(feats[tr], yl[tr]).predict(feats[va])
            w_fixed = self._fixed_weights(t)
            w = _nnls_weights(P[has_y], yl[has_y]) if self.blend == "nnls" else w_fixed
            blend_oof = P @ w
            self.blend_weights_[t] = dict(zip(learners, map(float, w), strict=True))

            # regime correction: residual model on the small-batch rows, from OOF residuals
            corr_oof = np.zeros(n)
            corrector = None
            reg_train = regime & has_y
            if self.regime_shrink > 0 and reg_train.sum() >= _MIN_REGIME_ROWS:
                resid = yl - blend_oof
                for tr, va in folds:
                    tr = tr[reg_train[tr]]
                    va = va[regime[va]]
                    if len(tr) >= 2 and len(va):
                        corr_oof[va] = (
                            self._make_corrector().fit(feats[tr], resid[tr]).predict(feats[va])
                        )
                corrector = self._make_corrector().fit(feats[reg_train], resid[reg_train])
            elif self.regime_shrink > 0 and batch is not None:
                warnings.warn(
                    f"{int(reg_train.sum())} training row(s) of {t!r} with batch <= "
                    f"{self.regime_batch_max} (< {_MIN_REGIME_ROWS}): no regime correction",
                    UserWarning,
                    stacklevel=2,
                )
            self.regime_models_[t] = corrector
            final_oof = blend_oof + self.regime_shrink * corr_oof
            oof_final[t] = final_oof

            # refit the learners on every row with a target value
            self.models_[t] = {
                name: self._make_learner(name).fit(feats[has_y], yl[has_y]) for name in learners
            }

            # conformal scores (CV+ style, from OOF residuals), Mondrian by batch regime
            scores = np.abs(yl - final_oof)
            groups_t = {"all": np.sort(scores[has_y])}
            if self.conformal_by_regime and batch is not None:
                for g, rows in zip(_REGIMES, (regime, ~regime), strict=True):
                    s = scores[has_y & rows]
                    if len(s) >= _MIN_CONFORMAL_GROUP:
                        groups_t[g] = np.sort(s)
            self.conformal_scores_[t] = groups_t
            self.conformal_q_[t] = {g: _conformal_quantile(s, 0.9) for g, s in groups_t.items()}

            def rmse(pred, _yl=yl, _m=has_y):
                return float(np.sqrt(np.mean((_yl[_m] - pred[_m]) ** 2)))

            row = {"target": t, "n": int(has_y.sum())}
            row.update({f"rmse_{name}": rmse(P[:, k]) for k, name in enumerate(learners)})
            row["rmse_blend_nnls"] = rmse(P @ _nnls_weights(P[has_y], yl[has_y]))
            row["rmse_blend_fixed"] = rmse(P @ w_fixed)
            row["rmse_final"] = rmse(final_oof)
            metrics_rows.append(row)

        self.oof_predictions_ = pd.DataFrame(oof_final, index=index)
        cascaded = self.targets_[:-1] if self.cascade else []
        self.cascade_train_inputs_ = self.oof_predictions_[list(cascaded)].copy()
        self.oof_metrics_ = pd.DataFrame(metrics_rows).set_index("target")
        return self

    def _prepare_frame_fit(self, X: pd.DataFrame, y):
        df = X
        if y is not None:
            Y = y.to_frame() if isinstance(y, pd.Series) else y
            if not isinstance(Y, pd.DataFrame):
                raise ValueError(
                    "in frame mode y must be a DataFrame (or Series) with target columns"
                )
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
                    stacklevel=3,
                )
                df, Y = df.loc[ok], Y.loc[ok]
        fitted, skipped = [], []
        for t in self.targets:
            count = int(pd.to_numeric(Y[t], errors="coerce").notna().sum()) if t in Y else 0
            if count >= 2 * self.cv:
                fitted.append(t)
                continue
            skipped.append(t)
            if t not in Y.columns:
                why = "is absent from the training data"
            elif count == 0:
                why = "is all-NaN in the training data"
            else:
                why = f"has only {count} value(s) in the training data (< 2 x cv = {2 * self.cv})"
            warnings.warn(
                f"target {t!r} {why} (energy is not measured on CPU); it is skipped and will "
                "not be predicted",
                MissingTargetWarning,
                stacklevel=3,
            )
        if not fitted:
            raise ValueError(
                f"none of the targets {list(self.targets)} has a value in the training data"
            )
        self.input_mode_ = "frame"
        self.targets_, self.skipped_targets_ = fitted, skipped
        mm = model_matrix(df, self.feature_set)
        self.feature_names_in_ = np.asarray(input_columns(self.feature_set), dtype=object)
        self.n_features_in_ = len(self.feature_names_in_)
        if "platform" in df.columns and df["platform"].notna().any():
            plats = sorted(df["platform"].dropna().astype(str).unique())
            if len(plats) > 1:
                warnings.warn(
                    f"training on several platforms {plats}: energy and latency are "
                    "platform-specific, fit one model per platform",
                    UserWarning,
                    stacklevel=3,
                )
            self.platform_ = "+".join(plats)
        else:
            self.platform_ = None
        Yt = Y[fitted].apply(pd.to_numeric, errors="coerce").astype(float)
        groups = df["config_id"].astype(str).to_numpy() if "config_id" in df.columns else None
        return mm, Yt, _num(df, "batch"), groups

    def _prepare_array_fit(self, X, y):
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None "
                "(frame mode reads the targets from a DataFrame with 'batch' and 'family')"
            )
        X, y = validate_data(self, X, y, multi_output=True, y_numeric=True, dtype=np.float64)
        y = np.asarray(y, dtype=float)
        self.y_ndim_ = y.ndim
        Y = y.reshape(len(y), -1)
        names = ["y"] if y.ndim == 1 else [f"y{i}" for i in range(Y.shape[1])]
        self.input_mode_ = "array"
        self.targets_, self.skipped_targets_ = names, []
        self.platform_ = None
        mm = pd.DataFrame(X.astype(np.float32), columns=[f"x{i}" for i in range(X.shape[1])])
        return mm, pd.DataFrame(Y, columns=names)

    # -- predict ------------------------------------------------------------------------------
    def _learning_scale(self, X) -> tuple[dict[str, np.ndarray], np.ndarray, Any]:
        """Predictions on the learning (log) scale, the small-batch mask and the index."""
        check_is_fitted(self)
        if self.input_mode_ == "frame":
            if not isinstance(X, pd.DataFrame):
                raise ValueError(
                    "this model was fitted on a DataFrame; pass a DataFrame of configs"
                )
            Xb = _model_array(X, self.feature_set)[1]  # once for every target and learner
            regime = _num(X, "batch") <= self.regime_batch_max
            index = X.index
        else:
            Xa = validate_data(self, X, reset=False, dtype=np.float64)
            Xb = Xa.astype(np.float32)
            regime = np.zeros(len(Xb), bool)
            index = pd.RangeIndex(len(Xb))
        preds: dict[str, np.ndarray] = {}
        for j, t in enumerate(self.targets_):
            upstream = self.targets_[:j] if self.cascade else []
            feats = (
                np.column_stack([Xb] + [preds[u].astype(np.float32) for u in upstream])
                if upstream
                else Xb
            )
            w = self.blend_weights_[t]
            out = np.zeros(len(Xb))
            for name, model in self.models_[t].items():
                if w[name] != 0.0:  # one call per learner, on every row (n_jobs threads)
                    out += w[name] * model.predict(feats)
            corrector = self.regime_models_[t]
            if corrector is not None and regime.any():
                out[regime] += self.regime_shrink * corrector.predict(feats[regime])
            preds[t] = out
        return preds, regime, index

    def _inverse(self, values: np.ndarray) -> np.ndarray:
        return np.expm1(values) if self.log_target else values

    def predict(self, X):
        """Predict every fitted target on the original scale.

        Returns
        -------
        pandas.DataFrame or ndarray
            Frame mode: one column per fitted target (``targets_``), index of ``X``.
            Array mode: ndarray, 1-D if ``y`` was 1-D.
        """
        preds, _, index = self._learning_scale(X)
        if self.input_mode_ == "frame":
            return pd.DataFrame({t: self._inverse(preds[t]) for t in self.targets_}, index=index)
        out = np.column_stack([self._inverse(preds[t]) for t in self.targets_])
        return out.ravel() if self.y_ndim_ == 1 else out

    def predict_interval(self, X, coverage: float = 0.9) -> pd.DataFrame:
        """Point prediction and split-conformal interval per target.

        The half-width is the conformal quantile of the absolute OOF residuals on the learning
        (log) scale, so intervals are multiplicative on the original scale. With
        ``conformal_by_regime`` the small-batch and large-batch rows get their own quantile.

        Parameters
        ----------
        X : pandas.DataFrame or array-like
        coverage : float
            Target marginal coverage in (0, 1).

        Returns
        -------
        pandas.DataFrame
            Columns ``{t}``, ``{t}_lo``, ``{t}_hi`` for every fitted target.
        """
        if not 0.0 < coverage < 1.0:
            raise ValueError(f"coverage must be in (0, 1), got {coverage!r}")
        preds, regime, index = self._learning_scale(X)
        cols: dict[str, np.ndarray] = {}
        for t in self.targets_:
            scores = self.conformal_scores_[t]
            half = np.full(len(regime), _conformal_quantile(scores["all"], coverage))
            for g, rows in zip(_REGIMES, (regime, ~regime), strict=True):
                if g in scores:
                    half[rows] = _conformal_quantile(scores[g], coverage)
            f = preds[t]
            cols[t] = self._inverse(f)
            cols[f"{t}_lo"] = self._inverse(f - half)
            cols[f"{t}_hi"] = self._inverse(f + half)
        return pd.DataFrame(cols, index=index)

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


def _nnls_weights(P: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-negative least-squares blend weights, normalised to sum 1 (equal if degenerate)."""
    from scipy.optimize import nnls

    w, _ = nnls(P, y)
    s = w.sum()
    return w / s if s > 0 else np.full(P.shape[1], 1.0 / P.shape[1])


def _hash_training_data(mm: pd.DataFrame, Y: pd.DataFrame) -> str:
    h = hashlib.sha256()
    h.update(json.dumps(list(mm.columns) + list(Y.columns)).encode())
    h.update(np.ascontiguousarray(mm.to_numpy(dtype=np.float64)).tobytes())
    h.update(np.ascontiguousarray(Y.to_numpy(dtype=np.float64)).tobytes())
    return h.hexdigest()


def feature_importances(model: CARBRegressor) -> pd.DataFrame:
    """Tidy feature importances of a fitted model.

    Each learner's importances (gain for XGBoost and LightGBM, impurity decrease for
    ExtraTrees) are normalised to sum 1, then averaged with the blend weights (learner
    ``"blend"``).

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


# ---------------------------------------------------------------------------------------------
# persistence
# ---------------------------------------------------------------------------------------------
def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    import joblib
    import lightgbm
    import sklearn
    import xgboost

    try:
        carb_version = version("carb_lib")
    except PackageNotFoundError:  # pragma: no cover - source checkout without install
        carb_version = "unknown"

    return {
        "carb_lib": carb_version,
        "python": _py_platform.python_version(),
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "scikit-learn": sklearn.__version__,
        "xgboost": xgboost.__version__,
        "lightgbm": lightgbm.__version__,
        "joblib": joblib.__version__,
    }


def _metadata(model: CARBRegressor) -> dict[str, Any]:
    return {
        "format": "carb-model/1",
        "class": type(model).__name__,
        "input_mode": model.input_mode_,
        "feature_set": model.feature_set,
        "feature_names_in": [str(c) for c in model.feature_names_in_]
        if hasattr(model, "feature_names_in_")
        else None,
        "base_features": list(model.base_features_),
        "targets": list(model.targets_),
        "skipped_targets": list(model.skipped_targets_),
        "platform": model.platform_,
        "training_data_hash": model.training_data_hash_,
        "n_train": int(model.n_train_),
        "blend": model.blend,
        "blend_weights": model.blend_weights_,
        "params": {
            k: (list(v) if isinstance(v, tuple) else v) for k, v in model.get_params().items()
        },
        "versions": _versions(),
    }


def _meta_path(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def save_model(model: CARBRegressor, path: str | Path) -> Path:
    """Save a fitted model to ``path`` (joblib) and its metadata to ``<path>.json``.

    Returns
    -------
    pathlib.Path
        The model path.
    """
    import joblib

    check_is_fitted(model)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = _metadata(model)
    joblib.dump({"metadata": meta, "model": model}, path)
    _meta_path(path).write_text(json.dumps(meta, indent=2, default=str) + "\n")
    return path


def load_model(
    path: str | Path,
    expected_features: Sequence[str] | None = None,
    expected_platform: str | None = None,
) -> CARBRegressor:
    """Load a model saved by :func:`save_model` and refuse one whose features do not match.

    Checks, each a ``ValueError`` with the difference spelled out:

    * the JSON sidecar (if present) agrees with the metadata inside the model file;
    * the stored model-matrix columns equal what this version of :func:`model_matrix` builds
      for the model's feature set (the feature construction has not changed since saving);
    * ``expected_features`` (if given) equals the model's input columns
      (``feature_names_in_``) or its model-matrix columns (``base_features_``);
    * ``expected_platform`` (if given) equals the model's ``platform_``.

    Library versions that differ from the saving ones give a warning.

    Parameters
    ----------
    path : str or Path
    expected_features : sequence of str, optional
    expected_platform : str, optional
    """
    import joblib

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no CARB model at {path}")
    payload = joblib.load(path)
    if not isinstance(payload, dict) or "model" not in payload or "metadata" not in payload:
        raise ValueError(f"{path} is not a CARB model file written by carb_lib.ensemble.save_model")
    model, meta = payload["model"], payload["metadata"]
    side = _meta_path(path)
    if side.exists():
        side_meta = json.loads(side.read_text())
        for key in (
            "feature_set",
            "feature_names_in",
            "base_features",
            "targets",
            "platform",
            "training_data_hash",
        ):
            if side_meta.get(key) != meta.get(key):
                raise ValueError(
                    f"{side} disagrees with {path} on {key!r}: {side_meta.get(key)!r} vs "
                    f"{meta.get(key)!r} (the two files do not belong together)"
                )
    if meta.get("input_mode") == "frame":
        current = [c for c in _current_base_features(meta["feature_set"])]
        if current != list(meta["base_features"]):
            raise ValueError(
                f"model {path} was trained on model-matrix columns that this carb_lib no longer "
                f"builds for feature_set={meta['feature_set']!r}: "
                + _diff(meta["base_features"], current, "model", "current")
            )
    if expected_features is not None:
        exp = [str(c) for c in expected_features]
        options = {
            "input columns": meta.get("feature_names_in") or [],
            "model-matrix columns": list(meta["base_features"]),
        }
        if not any(sorted(exp) == sorted(v) for v in options.values()):
            raise ValueError(
                f"model {path} does not match the expected features: "
                + _diff(options["input columns"], exp, "model", "expected")
            )
    if expected_platform is not None and meta.get("platform") != expected_platform:
        raise ValueError(
            f"model {path} was trained on platform {meta.get('platform')!r}, expected "
            f"{expected_platform!r}: energy and latency models do not transfer across platforms"
        )
    now = _versions()
    changed = {k: (v, now.get(k)) for k, v in meta.get("versions", {}).items() if now.get(k) != v}
    changed.pop("python", None)
    if changed:
        warnings.warn(
            f"model {path} was saved with other library versions: {changed}",
            UserWarning,
            stacklevel=2,
        )
    return model


def _current_base_features(feature_set: str) -> list[str]:
    probe = pd.DataFrame(
        {
            "family": ["resnet"],
            "block": ["basic"],
            "depth": [18],
            "width": [1.0],
            "early_downsample": [True],
            "arch": [None],
            "resolution": [32],
            "batch": [1],
            "precision": ["fp32"],
            "num_classes": [1000],
            **{c: [1.0] for c in STATIC_FEATURES + TELEMETRY_FEATURES},
        }
    )
    return list(model_matrix(probe, feature_set).columns)


def _diff(have: Sequence[str], want: Sequence[str], a: str, b: str) -> str:
    only_a = [c for c in have if c not in set(want)]
    only_b = [c for c in want if c not in set(have)]
    return f"only in {a}: {only_a}; only in {b}: {only_b}" + (
        "" if only_a or only_b else " (same names, different order)"
    )
