"""CARB: the characterization-guided, cascade-blended ensemble for memory, energy and latency.

:class:`CARBRegressor` follows the reported design of the CARB paper (see the project's
``shared/reference/paper-notes.md``, outside the repository; the paper's numbers are not ours),
made
*characterization-guided*:

* per target a base law from the characterization (:mod:`carb_lib.base_models`): peak memory
  by NNLS on parameter and activation bytes per precision; latency and energy by a
  roofline-style law (FLOPs / throughput + bytes / bandwidth + layers x per-layer overhead +
  batch and constant terms), fitted by relative NNLS with interpretable constants;
* learners (XGBoost, LightGBM, ExtraTrees; which ones: :data:`PRESETS`) model only
  ``log(measured / base)``, with ``log(base)`` among their inputs, so the scaling the trees
  cannot extrapolate comes from the law;
* their predictions blended with NNLS weights learned on out-of-fold (OOF) predictions (or the
  paper's fixed weights);
* a cascade: memory = f(x); energy = f(x, predicted memory); latency = f(x, predicted memory,
  predicted energy). During training the cascade inputs are OOF predictions, never in-sample
  ones, so a downstream model sees inputs as noisy as those it gets at prediction time;
* a regime correction: a LightGBM model of the OOF residual, used only where
  ``batch <= regime_batch_max``; final = blend + ``regime_shrink`` x predicted residual;
* split-conformal intervals on a held-out calibration fold (log scale, Mondrian by batch
  regime) at the requested ``coverage``; a per-row ``extrapolated`` flag where a candidate's
  features leave the training range;
* rows weighted by their measured timing noise (``latency_window_cv``) when the data carry it.

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
from numbers import Integral, Real
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.model_selection import GroupKFold, KFold
from sklearn.utils._param_validation import Interval, StrOptions
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

#: Named model configurations, the one place where model sizes are defined:
#: ``CARBRegressor(**PRESETS[name])`` (plus ``n_jobs``, ``feature_set``...).
#:
#: ``"default"``
#:     The constructor defaults, sized for screening: base law + XGBoost (150 trees, depth 6) +
#:     LightGBM (150 trees, 31 leaves) on ``log(y / base)``, NNLS blend, cascade, small-batch
#:     corrector (60 trees), split-conformal intervals. The learner set follows the ablation
#:     on validation data (``carb_lib.evaluation.choose_default``; ``results/carb/``). Size and
#:     speed: ``benchmarks/bench_carb.py`` (README).
#: ``"paper"``
#:     The paper's model sizes, kept to reproduce them: XGBoost 800 trees of depth 9, LightGBM
#:     800 trees of 127 leaves, ExtraTrees 400 fully grown trees, corrector 200 trees, 5-fold
#:     OOF, all three learners (with the base law; ``base=False`` is the paper's design).
#:     Fit ~3.5 min and predict 1M rows ~3 min on 2 cores, ~2.9 GiB saved: not for screening.
#: ``"fast"``
#:     The three learners at small sizes (XGBoost 100 x depth 6, LightGBM 40 x 15 leaves,
#:     ExtraTrees 8 trees of depth <= 16, corrector 40 trees).
#: ``"quick"``
#:     Test and quick-profile size (tens of trees, 3 folds, one thread): seconds per fit.
PRESETS: dict[str, dict[str, Any]] = {
    "default": {},  # filled below from the constructor defaults
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
_MIN_CALIBRATION = 20  # fewer calibration rows: conformal scores from OOF residuals
_NOISY_TARGETS = ("latency_ms", "energy_j")  # weighted by the measured timing noise
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
    """Characterization-guided, cascade-blended ensemble for CNN inference cost (CARB).

    (``RegressorMixin`` comes before ``BaseEstimator`` as scikit-learn requires for mixins.)

    Per target, a base law from the characterization (:mod:`carb_lib.base_models`: NNLS on
    parameter/activation bytes for memory, a roofline-style law with a per-layer overhead for
    latency and energy) carries the scaling; the tree learners model only ``log(y / base)``
    (with ``log(base)`` as one of their inputs), their out-of-fold (OOF) predictions blended by
    NNLS weights; a cascade feeds earlier targets' predictions to later ones; a LightGBM
    corrector refines small batches; split-conformal intervals (Mondrian by batch regime) at the
    requested ``coverage``.

    Parameters
    ----------
    targets : tuple of str
        Targets in cascade order (each later target gets the earlier predictions as inputs).
        Frame mode only; targets absent or all-NaN in the training data are skipped with a
        :class:`MissingTargetWarning` (energy on CPU); if none is left, one ``ValueError``
        says why for each.
    feature_set : {"static", "static+telemetry"}
        Which columns :func:`model_matrix` uses (frame mode).
    base : bool
        Use the characterization base law (frame mode; array mode has no named features, so no
        base). False: the learners model ``log1p(target)`` directly (the paper's design).
    learners : tuple of str
        Subset of ``("xgb", "lgbm", "et")``; empty (with ``base``) means the base law alone.
    blend : {"nnls", "fixed"}
        NNLS weights on OOF predictions (normalised to sum 1) or the paper's fixed weights.
    cascade : bool
        Feed earlier targets' predictions to later targets (False: independent models).
    n_estimators_xgb, max_depth_xgb, learning_rate_xgb : XGBoost size.
    n_estimators_lgbm, num_leaves_lgbm, learning_rate_lgbm : LightGBM size.
    n_estimators_et, min_samples_leaf_et, max_features_et, max_depth_et : ExtraTrees size.
    n_estimators_regime, num_leaves_regime, learning_rate_regime : residual corrector size.
    regime_batch_max : int
        Small-batch regime: ``batch <= regime_batch_max`` (corrector and Mondrian conformal).
    regime_shrink : float
        final = blend + ``regime_shrink`` x predicted small-batch residual; 0 disables it.
    cv : int
        Folds for the OOF predictions (grouped by ``config_id`` when present). Needs at least
        ``2 * cv`` training rows with a target value.
    log_target : bool
        Without ``base``: learn ``log1p(target)`` (True) or the raw target (False). With a base
        law the learning scale is always ``log(target)`` (targets must be > 0).
    conformal : {"split", "oof"}
        ``"split"``: a calibration fold (``calibration_size`` of the rows, stratified by batch
        regime) is held out of every fit and its absolute log residuals are the conformal
        scores: finite-sample coverage for exchangeable rows. ``"oof"``: scores from the OOF
        residuals of all rows (no rows held out; approximate, jackknife+-after-refit style).
        With fewer than 20 calibration rows ``"split"`` falls back to ``"oof"`` (warning).
    calibration_size : float
        Fraction of rows in the calibration fold (``conformal="split"``).
    coverage : float
        Nominal coverage of :meth:`predict_interval` (default of its ``coverage`` argument) and
        of ``conformal_q_``.
    conformal_by_regime : bool
        Separate conformal quantiles for small and large batches (frame mode, when each regime
        has at least 30 calibration scores; otherwise the pooled scores).
    noise_weighting : bool
        Weight latency/energy rows by their measured noise when the data carry it
        (``latency_window_cv``, the spread of the accepted timing windows): weight
        ``1 / (cv^2 + median(cv)^2)``, normalised to mean 1; rows without it get the median.
    random_state : int
    n_jobs : int
        Threads for every learner, in fit and predict (<= 2 on the shared machine).

    Notes
    -----
    The defaults are :data:`PRESETS` ``["default"]`` (sized for screening millions of
    candidates); ``PRESETS["paper"]`` has the paper's model sizes; ``PRESETS["quick"]`` is the
    test size. A preset is only a dict of constructor parameters.

    Attributes
    ----------
    input_mode_ : {"frame", "array"}
    targets_, skipped_targets_ : list of str
    feature_names_in_ : ndarray of str
    n_features_in_ : int
    base_features_ : list of str
        Columns of the model matrix (before base and cascade inputs).
    base_laws_ : dict
        Target -> fitted :class:`carb_lib.base_models.BaseLaw` (empty without ``base``).
    model_features_ : dict
        Target -> feature names of its learners (model matrix, ``base_<t>``, ``cascade_<t>``).
    models_ : dict
        Target -> {learner: fitted model} (refitted on every training row, calibration fold
        excluded).
    blend_weights_ : dict
    regime_models_ : dict
        Target -> fitted LightGBM residual corrector, or None.
    oof_predictions_ : pandas.DataFrame
        Final OOF predictions per target on the learning scale (training rows; calibration
        rows get the fitted model's predictions, as at prediction time).
    cascade_train_inputs_ : pandas.DataFrame
    oof_metrics_ : pandas.DataFrame
        OOF RMSE (learning scale) per target of the base law, each learner, both blends and the
        final prediction.
    conformal_scores_ : dict
        Target -> {group: sorted absolute residuals (learning scale)}.
    conformal_q_ : dict
        Target -> {group: conformal half-width at ``coverage``}.
    conformal_method_ : str
        ``"split"`` or ``"oof"`` (what was actually used).
    calibration_index_ : pandas.Index
        Rows of the calibration fold (empty with ``"oof"``).
    feature_min_, feature_max_ : ndarray
        Training range of every model-matrix column (for :meth:`extrapolated`).
    platform_ : str or None
    training_data_hash_ : str
    n_train_ : int
    """

    _parameter_constraints: dict = {
        "targets": [tuple, list],
        "feature_set": [StrOptions(set(FEATURE_SETS))],
        "base": ["boolean"],
        "learners": [tuple, list],
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
        "coverage": [Interval(Real, 0, 1, closed="neither")],
        "conformal_by_regime": ["boolean"],
        "noise_weighting": ["boolean"],
        "random_state": [Interval(Integral, 0, None, closed="left")],
        "n_jobs": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        targets: Sequence[str] = TARGETS,
        *,
        feature_set: str = "static",
        base: bool = True,
        learners: Sequence[str] = ("xgb", "lgbm"),
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
        regime_batch_max: int = 8,
        regime_shrink: float = 0.9,
        cv: int = 5,
        log_target: bool = True,
        conformal: str = "split",
        calibration_size: float = 0.2,
        coverage: float = 0.9,
        conformal_by_regime: bool = True,
        noise_weighting: bool = True,
        random_state: int = 0,
        n_jobs: int = 2,
    ) -> None:
        self.targets = targets
        self.feature_set = feature_set
        self.base = base
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
        """Declarative checks (``_parameter_constraints``) plus the cross-parameter ones."""
        self._validate_params()
        learners = tuple(self.learners)
        if len(set(learners)) != len(learners) or set(learners) - set(LEARNERS):
            raise ValueError(
                f"learners must be distinct names from {LEARNERS}, got {self.learners!r}"
            )
        if not learners and not self.base:
            raise ValueError("learners may be empty only with base=True (the base law alone)")
        if isinstance(self.targets, str) or not len(self.targets):
            raise ValueError(f"targets must be a non-empty sequence of names, got {self.targets!r}")

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
                min_child_samples=5,
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
    def fit(self, X, y=None):
        """Fit the base laws, the learners, the cascade and the conformal calibration.

        Parameters
        ----------
        X : pandas.DataFrame or array-like
            Frame mode: config + static feature columns (+ telemetry), and the target columns
            unless ``y`` is given; rows whose ``status`` is not ``"ok"`` are dropped (warning).
            Array mode: numeric features.
        y : pandas.DataFrame, pandas.Series, array-like or None
            Frame mode: optional targets, positionally aligned with ``X``. Array mode: required.

        Returns
        -------
        self
        """
        self._check_params()
        if _is_frame_input(X):
            mm, Y, batch, groups, df = self._prepare_frame_fit(X, y)
        else:
            mm, Y = self._prepare_array_fit(X, y)
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
        self.training_data_hash_ = _hash_training_data(mm, Y)
        Xb = mm.to_numpy(dtype=np.float32)
        self.feature_min_ = Xb.min(axis=0)
        self.feature_max_ = Xb.max(axis=0)
        Yv = Y.to_numpy(dtype=float)
        if self._uses_base:
            bad = np.isfinite(Yv) & (Yv <= 0)
            if bad.any():
                j = int(np.flatnonzero(bad.any(axis=0))[0])
                raise ValueError(
                    f"target {self.targets_[j]!r} has {int(bad[:, j].sum())} value(s) <= 0; the "
                    "base law works on log(target) (costs are positive; use base=False and "
                    "log_target=False for other data)"
                )
        elif self.log_target:
            low = Y.min(axis=0, skipna=True)
            if (low <= -1).any():
                t = low.index[int(np.argmax((low <= -1).to_numpy()))]
                raise ValueError(
                    f"target {t!r} has values <= -1 (min {low[t]!r}); log1p needs > -1 "
                    "(costs are positive; use log_target=False for other data)"
                )
        Z = self._to_learning(Yv)
        regime = (
            np.asarray(batch, float) <= self.regime_batch_max
            if batch is not None
            else np.zeros(n, bool)
        )
        W = self._noise_weights(df, n)

        # calibration fold (split conformal), stratified by batch regime
        cal = np.zeros(n, bool)
        self.conformal_method_ = self.conformal
        if self.conformal == "split":
            n_cal = int(round(self.calibration_size * n))
            if n_cal < _MIN_CALIBRATION or n - n_cal < need:
                warnings.warn(
                    f"{n} training rows are too few for a calibration fold of "
                    f"{self.calibration_size:.0%} (>= {_MIN_CALIBRATION} rows, and 2 x cv left "
                    "to fit): conformal scores from out-of-fold residuals instead",
                    UserWarning,
                    stacklevel=2,
                )
                self.conformal_method_ = "oof"
            else:
                rng = np.random.default_rng(self.random_state + 7919)
                for rows in (np.flatnonzero(regime), np.flatnonzero(~regime)):
                    k = int(round(self.calibration_size * len(rows)))
                    cal[rng.choice(rows, size=k, replace=False)] = True
        fit_rows = np.flatnonzero(~cal)
        cal_rows = np.flatnonzero(cal)
        self.calibration_index_ = index[cal_rows]

        # base laws, fitted on the rows the learners see
        self.base_laws_ = {}
        offsets = np.zeros_like(Z)
        if self._uses_base:
            from carb_lib.base_models import fit_base_law

            dfit = df.iloc[fit_rows]
            for j, t in enumerate(self.targets_):
                law = fit_base_law(dfit, t, Yv[fit_rows, j], sample_weight=W[fit_rows, j])
                self.base_laws_[t] = law
                offsets[:, j] = np.log(law.predict(df))

        g_fit = None if groups is None else groups[fit_rows]
        if g_fit is not None and pd.Series(g_fit).duplicated().any():
            splitter = GroupKFold(n_splits=self.cv, shuffle=True, random_state=self.random_state)
            folds = list(splitter.split(fit_rows, groups=g_fit))
        else:
            splitter = KFold(n_splits=self.cv, shuffle=True, random_state=self.random_state)
            folds = list(splitter.split(fit_rows))
        folds = [(fit_rows[tr], fit_rows[va]) for tr, va in folds]

        learners = tuple(self.learners)
        self.models_, self.blend_weights_, self.regime_models_ = {}, {}, {}
        self.model_features_, self.conformal_scores_, self.conformal_q_ = {}, {}, {}
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
            zt, wt, off = Z[:, j], W[:, j], offsets[:, j]
            r = zt - off  # what the learners model
            has_y = np.isfinite(zt)

            # out-of-fold learner predictions of the residual on the fitting rows
            P = np.full((n, len(learners)), np.nan)
            for tr, va in folds:
                tr = tr[has_y[tr]]
                for k, name in enumerate(learners):
                    model = self._make_learner(name).fit(feats[tr], r[tr], sample_weight=wt[tr])
                    P[va, k] = model.predict(feats[va])
            fy = fit_rows[has_y[fit_rows]]
            if learners:
                w_fixed = self._fixed_weights(t)
                w_nnls = _nnls_weights(P[fy] * np.sqrt(wt[fy, None]), r[fy] * np.sqrt(wt[fy]))
                w = w_nnls if self.blend == "nnls" else w_fixed
            else:
                w_fixed = w_nnls = w = np.zeros(0)
            blend_oof = off + (P @ w if learners else 0.0)
            self.blend_weights_[t] = dict(zip(learners, map(float, w), strict=True))

            # small-batch corrector of the OOF residual
            corr_oof = np.zeros(n)
            corrector = None
            reg_train = regime & has_y & ~cal
            if self.regime_shrink > 0 and reg_train.sum() >= _MIN_REGIME_ROWS:
                resid = zt - blend_oof
                for tr, va in folds:
                    tr = tr[reg_train[tr]]
                    va = va[regime[va]]
                    if len(tr) >= 2 and len(va):
                        corr_oof[va] = (
                            self._make_corrector()
                            .fit(feats[tr], resid[tr], sample_weight=wt[tr])
                            .predict(feats[va])
                        )
                corrector = self._make_corrector().fit(
                    feats[reg_train], resid[reg_train], sample_weight=wt[reg_train]
                )
            elif self.regime_shrink > 0 and batch is not None:
                warnings.warn(
                    f"{int(reg_train.sum())} training row(s) of {t!r} with batch <= "
                    f"{self.regime_batch_max} (< {_MIN_REGIME_ROWS}): no regime correction",
                    UserWarning,
                    stacklevel=2,
                )
            self.regime_models_[t] = corrector
            final = blend_oof + self.regime_shrink * corr_oof

            # refit the learners on every fitting row with a target value
            self.models_[t] = {
                name: self._make_learner(name).fit(feats[fy], r[fy], sample_weight=wt[fy])
                for name in learners
            }
            if len(cal_rows):  # calibration rows: exactly what predict() gives
                final[cal_rows] = self._predict_target(t, feats[cal_rows], off[cal_rows],
                                                       regime[cal_rows])
            zhat[t] = final

            # conformal scores, Mondrian by batch regime
            score_rows = (cal if self.conformal_method_ == "split" else ~cal) & has_y
            scores = np.abs(zt - final)
            groups_t = {"all": np.sort(scores[score_rows])}
            if self.conformal_by_regime and batch is not None:
                for g, rows in zip(_REGIMES, (regime, ~regime), strict=True):
                    s = scores[score_rows & rows]
                    if len(s) >= _MIN_CONFORMAL_GROUP:
                        groups_t[g] = np.sort(s)
            self.conformal_scores_[t] = groups_t
            self.conformal_q_[t] = {
                g: _conformal_quantile(s, self.coverage) for g, s in groups_t.items()
            }

            def rmse(pred, _z=zt, _m=fy):
                return float(np.sqrt(np.mean((_z[_m] - pred[_m]) ** 2)))

            row = {"target": t, "n": len(fy), "n_calibration": int((cal & has_y).sum())}
            if self._uses_base:
                row["rmse_base"] = rmse(off)
            row.update({f"rmse_{nm}": rmse(off + P[:, k]) for k, nm in enumerate(learners)})
            if learners:
                row["rmse_blend_nnls"] = rmse(off + P @ w_nnls)
                row["rmse_blend_fixed"] = rmse(off + P @ w_fixed)
            row["rmse_final"] = rmse(final)
            metrics_rows.append(row)

        self.oof_predictions_ = pd.DataFrame(zhat, index=index)
        cascaded = self.targets_[:-1] if self.cascade else []
        self.cascade_train_inputs_ = self.oof_predictions_[list(cascaded)].copy()
        self.oof_metrics_ = pd.DataFrame(metrics_rows).set_index("target")
        return self

    def _noise_weights(self, df: pd.DataFrame | None, n: int) -> np.ndarray:
        """Row weights per target (n, targets): measured-noise weights for latency/energy."""
        W = np.ones((n, len(self.targets_)))
        if not self.noise_weighting or df is None or "latency_window_cv" not in df.columns:
            return W
        cv = _num(df, "latency_window_cv")
        good = np.isfinite(cv) & (cv >= 0)
        if not good.any():
            return W
        med = float(np.median(cv[good]))
        cv = np.where(good, cv, med)
        w = 1.0 / (cv**2 + max(med, 1e-4) ** 2)
        w = w / w.mean()
        for j, t in enumerate(self.targets_):
            if t in _NOISY_TARGETS:
                W[:, j] = w
        return W

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
        return out

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
        fitted, skipped, reasons = [], [], []
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
                why = (
                    f"has only {count} value(s) in the training data (< 2 x cv = "
                    f"{2 * self.cv}: too few rows for cv={self.cv})"
                )
            reasons.append(f"{t!r} {why}")
            warnings.warn(
                f"target {t!r} {why} (energy is not measured on CPU); it is skipped and will "
                "not be predicted",
                MissingTargetWarning,
                stacklevel=3,
            )
        if not fitted:
            raise ValueError(
                f"none of the targets {list(self.targets)} can be fitted: "
                + "; ".join(reasons)
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
        self.families_ = sorted(df["family"].dropna().astype(str).unique())
        Yt = Y[fitted].apply(pd.to_numeric, errors="coerce").astype(float)
        groups = df["config_id"].astype(str).to_numpy() if "config_id" in df.columns else None
        return mm, Yt, _num(df, "batch"), groups, df

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
    def _matrix(self, X) -> tuple[np.ndarray, np.ndarray, Any]:
        """Model matrix (float32), small-batch mask and index of ``X``."""
        check_is_fitted(self)
        if self.input_mode_ == "frame":
            if not isinstance(X, pd.DataFrame):
                raise ValueError(
                    "this model was fitted on a DataFrame; pass a DataFrame of configs"
                )
            Xb = _model_array(X, self.feature_set)[1]  # once for every target and learner
            regime = _num(X, "batch") <= self.regime_batch_max
            return Xb, regime, X.index
        Xa = validate_data(self, X, reset=False, dtype=np.float64)
        return Xa.astype(np.float32), np.zeros(len(Xa), bool), pd.RangeIndex(len(Xa))

    def _learning_scale(self, X) -> tuple[dict[str, np.ndarray], np.ndarray, Any, np.ndarray]:
        """Predictions on the learning (log) scale, small-batch mask, index, model matrix."""
        Xb, regime, index = self._matrix(X)
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

    def predict_interval(self, X, coverage: float | None = None) -> pd.DataFrame:
        """Point prediction, split-conformal interval per target, and the extrapolation flag.

        The half-width is the conformal quantile of the absolute calibration residuals on the
        learning (log) scale, so intervals are multiplicative on the original scale; with
        ``conformal_by_regime`` small- and large-batch rows get their own quantile.

        Parameters
        ----------
        X : pandas.DataFrame or array-like
        coverage : float, optional
            Nominal coverage in (0, 1); default: the estimator's ``coverage``.

        Returns
        -------
        pandas.DataFrame
            Columns ``{t}``, ``{t}_lo``, ``{t}_hi`` for every fitted target, then
            ``extrapolated`` (see :meth:`extrapolated`).
        """
        coverage = self.coverage if coverage is None else coverage
        if not 0.0 < coverage < 1.0:
            raise ValueError(f"coverage must be in (0, 1), got {coverage!r}")
        preds, regime, index, Xb = self._learning_scale(X)
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
        cols["extrapolated"] = self._extrapolated(Xb)
        return pd.DataFrame(cols, index=index)

    def base_constants(self) -> pd.DataFrame:
        """The fitted base laws' constants (no CIs; :func:`carb_lib.evaluation` bootstraps)."""
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


PRESETS["default"] = {
    k: v
    for k, v in CARBRegressor().get_params().items()
    if k not in ("targets", "feature_set", "random_state", "n_jobs")
}


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
        "base_constants": model.base_constants().to_dict(orient="records"),
        "conformal_method": model.conformal_method_,
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
