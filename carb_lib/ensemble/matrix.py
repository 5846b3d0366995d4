"""CARB's model matrix: dataset columns (config, static features, telemetry) -> float32 array.

:func:`model_matrix` encodes a frame of configs into the numeric columns the learners read;
:func:`validate_features` checks first, naming the column and the first row of a missing or
unknown value; :func:`input_columns` lists the dataset columns a feature set reads;
:func:`model_matrix_columns` the encoded column names (what a saved model is checked against).

The columns are the same for every input (fixed category lists), so a model fitted on one frame
predicts another. The encoding is vectorised: string columns are factorised and each distinct
value converted once (about 0.2-1 s for 1,000,000 rows).

Families
--------
Everything family-specific comes from the registry (:mod:`carb_lib.families`): each family's
config columns (``own_column_names``) and categories, its one-hot indicator
(:func:`~carb_lib.families.family_indicators`, none for the default family) and the encoding of
its config columns (``encode_config``, ``matrix_columns``). Column order:

1. :data:`LEADING_FAMILY_COLUMNS` (those that are built): the layout of the first two
   families, kept because learners depend on column order (models fitted before the registry
   have these columns at these places);
2. the common columns (resolution, batch, num_classes, precision, layer counts, log features);
3. every other family column in registration order, family by family (its indicator, then
   its encoding): a family registered later only appends columns, it never moves old ones;
4. the telemetry columns (``feature_set="static+telemetry"``).

``feature_set="shared"`` builds the common columns only, plus the family-agnostic
:data:`~carb_lib.core.vocab.EXTRA_STATIC_FEATURES` (depthwise convs, squeeze-and-excitation, pooling,
residual adds, memory-bound bytes) and no family column at all: a model fitted on some
families predicts rows of any family from what its network computes and moves (the
cross-family model of :mod:`carb_lib.evaluation.cross_family`).

A fitted model keeps the names of the columns it was fitted on (``base_features_``) and
predicts from those columns only (:func:`_model_array` with ``columns``), so a model saved
before a family was registered still loads and predicts the same; rows of a family it has no
columns for are refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.vocab import (
    COMMON_CONFIG_COLUMNS,
    EXTRA_STATIC_FEATURES,
    LOG_FEATURES,
    PRECISIONS,
    STATIC_FEATURES,
    TELEMETRY_FEATURES,
)
from carb_lib.families import (
    DEFAULT_FAMILY,
    FAMILIES,
    all_config_columns,
    family_indicators,
    family_names,
)
from carb_lib.families._common import equals, flag, number, per_unique
from carb_lib.families.nb201 import OPS

__all__ = [
    "CONFIG_COLUMNS",
    "FEATURE_SETS",
    "LEADING_FAMILY_COLUMNS",
    "NB201_OPS",
    "STATIC_FEATURES",
    "TELEMETRY_FEATURES",
    "input_columns",
    "model_matrix",
    "model_matrix_columns",
    "validate_features",
]

#: Feature sets: static features only, with the GPU telemetry columns, or ``"shared"``: the
#: columns every family has (static features with the family-agnostic extras, resolution,
#: batch, classes, precision) and no family's config encoding, for a model that predicts
#: families it was not fitted on.
FEATURE_SETS: tuple[str, ...] = ("static", "static+telemetry", "shared")
#: Extra static features that ``feature_set="shared"`` enters as ``log1p`` (FLOPs, bytes).
SHARED_LOG_FEATURES: tuple[str, ...] = ("se_flops", "memory_bound_bytes")
NB201_OPS: tuple[str, ...] = OPS  # the NB201 family's operation list, in its order (former name)
#: Family columns placed before the common columns, in this order (those that are built): the
#: model-matrix layout of the first two registered families, which fitted models and the
#: reproduced numbers depend on. Every other family column follows the common columns.
LEADING_FAMILY_COLUMNS: tuple[str, ...] = (
    "family_nb201", "block_bottleneck", "depth", "width", "early_downsample",
)  # fmt: skip

# former private names of the shared conversions (carb_lib.families._common)
_per_unique, _is, _num, _flag = per_unique, equals, number, flag


# ---------------------------------------------------------------------------------------------
# family columns (from the registry)
# ---------------------------------------------------------------------------------------------
def _family_column_names() -> list[tuple[str, list[str]]]:
    """``(family, its model-matrix columns)`` in registration order: the indicator (not for
    :data:`~carb_lib.families.DEFAULT_FAMILY`), then ``matrix_columns``.

    Raises
    ------
    ValueError
        If two families (or a family and a common column) claim the same column name.
    """
    out, seen = [], dict.fromkeys(_COMMON_NAMES, "the common columns")
    for name, fam in FAMILIES.items():
        cols = ([fam.indicator_column] if name != DEFAULT_FAMILY else []) + list(fam.matrix_columns)
        for c in cols:
            if c in seen:
                raise ValueError(
                    f"model-matrix column {c!r} of family {name!r} is also one of {seen[c]}; "
                    "a family's matrix_columns need names of their own"
                )
            seen[c] = f"family {name!r}"
        out.append((name, cols))
    return out


def _family_parts(df: pd.DataFrame) -> dict[str, Any]:
    """Every family column of the model matrix as ``{name: float64 values}`` (generic order)."""
    _family_column_names()  # refuses clashing column names
    indicators = family_indicators(df)
    parts: dict[str, Any] = {}
    for name, fam in FAMILIES.items():
        if name == DEFAULT_FAMILY:
            rows = equals(df["family"], name)
        else:
            rows = indicators[fam.indicator_column].to_numpy() == 1.0
            parts[fam.indicator_column] = indicators[fam.indicator_column].to_numpy()
        encoded = fam.encode_config(df, rows=rows)
        parts.update((c, encoded[c].to_numpy()) for c in fam.matrix_columns)
    return parts


def _absent_family_columns(df: pd.DataFrame) -> set[str]:
    """Columns of the families that ``df`` has no row of, except those of families whose
    columns every matrix carries (``Family.always_in_matrix``): a model fitted on some
    families gets no constant columns of the others (their column sampling and numbers stay
    as they were before those families were registered)."""
    present = set(df["family"].fillna(DEFAULT_FAMILY).astype(str).unique())
    out: set[str] = set()
    for name, cols in _family_column_names():
        if name not in present and not FAMILIES[name].always_in_matrix:
            out.update(cols)
    return out


def _ordered(names: Sequence[str]) -> tuple[list[str], list[str]]:
    """Family column ``names`` (generic order) split into (leading, trailing), see the module
    docstring."""
    lead = [c for c in LEADING_FAMILY_COLUMNS if c in names]
    return lead, [c for c in names if c not in lead]


# ---------------------------------------------------------------------------------------------
# columns
# ---------------------------------------------------------------------------------------------
#: Config columns the model reads: ``family``, each family's own, then the common ones (the
#: registry at import time; :func:`input_columns` reads it at call time).
CONFIG_COLUMNS: tuple[str, ...] = all_config_columns()


def _check_feature_set(feature_set: str) -> None:
    if feature_set not in FEATURE_SETS:
        raise ValueError(f"feature_set must be one of {FEATURE_SETS}, got {feature_set!r}")


def input_columns(feature_set: str = "static") -> list[str]:
    """Return the dataset columns a model with ``feature_set`` reads (config + features).

    Parameters
    ----------
    feature_set : {"static", "static+telemetry", "shared"}, default="static"

    Returns
    -------
    list of str
        The config columns of every registered family
        (:func:`carb_lib.families.all_config_columns`), the static features, and the
        telemetry columns with ``"static+telemetry"``.
    """
    _check_feature_set(feature_set)
    cols = list(all_config_columns()) + list(STATIC_FEATURES)
    if feature_set == "static+telemetry":
        cols += list(TELEMETRY_FEATURES)
    elif feature_set == "shared":
        cols += list(EXTRA_STATIC_FEATURES)
    return cols


# ---------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------
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


def _raise_unknown(df: pd.DataFrame, col: str, bad: np.ndarray, allowed) -> None:
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"column {col!r} has unknown value {df[col].iloc[pos]!r} in {_row_label(df, pos)}; "
            f"known: {list(allowed)}"
        )


def validate_features(df: pd.DataFrame, feature_set: str = "static") -> None:
    """Raise ``ValueError`` naming the column and the first row where a needed feature is missing.

    A column that does not apply to a row's family (``depth`` for ``nb201``, ``arch`` for
    ``resnet``) may be NaN or absent. Unknown families and precisions, and values outside a
    family's ``categories`` (ResNet's ``block``), are refused.

    Parameters
    ----------
    df : pandas.DataFrame
        Config columns plus the static features (and telemetry for ``"static+telemetry"``).
    feature_set : {"static", "static+telemetry", "shared"}, default="static"

    Raises
    ------
    ValueError
        The first problem found, with the column, the row (and its ``config_id``) and why the
        column is needed.
    """
    _check_feature_set(feature_set)
    if len(df) == 0:
        raise ValueError("no rows: the input DataFrame is empty")
    if "family" not in df.columns:
        raise ValueError("feature column 'family' is absent from the input (needed by every row)")
    family = df["family"]
    _raise_missing(df, "family", family.isna().to_numpy(), "every row needs its family")
    known = family_names()
    unknown = sorted({str(v) for v in family.dropna().unique()} - set(known))
    if unknown:
        first = int(np.flatnonzero(family.astype(str).isin(unknown).to_numpy())[0])
        raise ValueError(
            f"column 'family' has unknown value {unknown[0]!r} in {_row_label(df, first)}; "
            f"known: {sorted(known)}"
        )
    rows_of = {name: equals(family, name) for name in known}
    every = np.ones(len(df), bool)
    needs: list[tuple[str, np.ndarray, str]] = [
        (c, every, "every row needs it") for c in COMMON_CONFIG_COLUMNS[1:]
    ]
    for name, fam in FAMILIES.items():
        needs += [(c, rows_of[name], f"family {name!r} needs it") for c in fam.own_column_names]
    feats = list(STATIC_FEATURES)
    if feature_set == "static+telemetry":
        feats += list(TELEMETRY_FEATURES)
    elif feature_set == "shared":
        feats += list(EXTRA_STATIC_FEATURES)
    hint = "static features come from carb_lib.dataset.features.static_features(df)"
    needs += [
        (
            c,
            every,
            f"feature_set={feature_set!r} needs it"
            + (f" ({hint})" if c not in TELEMETRY_FEATURES
               else " (telemetry is measured on GPUs only)"),
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
    categories = [("precision", PRECISIONS, every)] + [
        (col, allowed, rows_of[name])
        for name, fam in FAMILIES.items()
        for col, allowed in fam.categories.items()
    ]
    for col, allowed, rows in categories:
        if col in df.columns:
            vals = df[col]
            bad = (vals.notna() & ~vals.isin(allowed)).to_numpy(dtype=bool) & rows
            _raise_unknown(df, col, bad, allowed)


# ---------------------------------------------------------------------------------------------
# the model matrix
# ---------------------------------------------------------------------------------------------
def _common_parts(
    df: pd.DataFrame, feature_set: str
) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
    """The columns every family shares, as ``(common, telemetry)`` lists of (name, values)."""
    batch = _num(df, "batch")
    cols: list[tuple[str, Any]] = [
        ("resolution", _num(df, "resolution")),
        ("batch", batch),
        ("num_classes", _num(df, "num_classes")),
        ("precision_fp16", _is(df["precision"], "fp16")),
    ]
    cols += [(col, _num(df, col)) for col in ("n_conv", "n_bn", "n_act", "n_fc")]
    logs = {col: np.log1p(np.clip(_num(df, col), 0.0, None)) for col in LOG_FEATURES}
    cols += [(f"log1p_{col}", v) for col, v in logs.items()]
    cols.append(("log1p_flops_per_sample", np.log1p(np.clip(_num(df, "flops"), 0.0, None) / batch)))
    cols.append(
        (
            "log1p_activation_bytes_per_sample",
            np.log1p(np.clip(_num(df, "activation_bytes"), 0.0, None) / batch),
        )
    )
    if feature_set == "shared":
        cols += [(col, _num(df, col)) for col in EXTRA_STATIC_FEATURES
                 if col not in SHARED_LOG_FEATURES]
        cols += [(f"log1p_{col}", np.log1p(np.clip(_num(df, col), 0.0, None)))
                 for col in SHARED_LOG_FEATURES]
    telemetry: list[tuple[str, Any]] = []
    if feature_set == "static+telemetry":
        sm, mem = _num(df, "sm_util_pct"), _num(df, "mem_util_pct")
        act_mib = np.clip(_num(df, "activation_bytes"), 0.0, None) / 2**20
        telemetry = [
            ("sm_util_pct", sm),
            ("mem_util_pct", mem),
            ("temp_c_before", _num(df, "temp_c_before")),
            ("log1p_kernel_launches", np.log1p(np.clip(_num(df, "kernel_launches"), 0.0, None))),
            ("batch_x_sm_util", batch * sm),
            ("log1p_flops_x_sm_util", logs["flops"] * sm),
            ("log1p_activation_mib_x_mem_util", np.log1p(act_mib) * mem),
            ("sm_util_x_mem_util", sm * mem),
        ]
    return cols, telemetry


def _common_names(feature_set: str) -> tuple[list[str], list[str]]:
    """Names of the ``(common, telemetry)`` columns of :func:`_common_parts`."""
    common, telemetry = _common_parts(pd.DataFrame({"precision": ["fp32"], "batch": [1.0]}),
                                      feature_set)  # fmt: skip
    return [name for name, _ in common], [name for name, _ in telemetry]


_COMMON_NAMES: tuple[str, ...] = tuple(dict.fromkeys(
    c for fs in ("static+telemetry", "shared") for cols in _common_names(fs) for c in cols))


def _check_columns(df: pd.DataFrame, parts: dict[str, Any], columns: Sequence[str],
                   feature_set: str = "static") -> None:
    """Refuse ``columns`` this version does not build, and rows of a family without columns
    in ``columns`` (a family registered after the model was fitted; not with
    ``feature_set="shared"``, which has no family column)."""
    missing = [c for c in columns if c not in parts]
    if missing:
        raise ValueError(
            f"model-matrix column(s) {missing} are not built by this carb_lib (known: "
            f"{list(parts)}); the model was fitted by another version"
        )
    if feature_set == "shared":
        return
    wanted = set(columns)
    for name, cols in _family_column_names():
        if FAMILIES[name].predict_unseen:  # e.g. user modules: predicted from features alone
            continue
        absent = [c for c in cols if c not in wanted]
        rows = equals(df["family"], name) if absent else None
        if rows is not None and rows.any():
            raise ValueError(
                f"{_row_label(df, int(np.flatnonzero(rows)[0]))}: family {name!r} has no "
                f"model-matrix columns {absent} in this model (it was fitted without rows of "
                "that family); fit a model on that family"
            )


def _model_array(
    df: pd.DataFrame, feature_set: str, columns: Sequence[str] | None = None
) -> tuple[list[str], np.ndarray]:
    """Validated model matrix as (column names, C-contiguous float32 array).

    ``columns`` (a fitted model's ``base_features_``) selects and orders the columns; default
    every column this version builds for ``feature_set``.
    """
    validate_features(df, feature_set)
    n = len(df)
    family = _family_parts(df) if feature_set != "shared" else {}
    lead, trail = _ordered(list(family))
    common, telemetry = _common_parts(df, feature_set)
    parts: dict[str, Any] = {c: family[c] for c in lead}
    parts.update(common)
    parts.update((c, family[c]) for c in trail)
    parts.update(telemetry)
    if columns is not None:
        _check_columns(df, parts, columns, feature_set)
        names = list(columns)
    else:
        names = [c for c in parts if c not in _absent_family_columns(df)]
    # float64 values rounded once to float32, column by column, into one row-major array
    arr = np.empty((n, len(names)), dtype=np.float32)
    for k, name in enumerate(names):
        arr[:, k] = parts[name]
    finite = np.isfinite(arr)
    if not finite.all():
        r, c = np.argwhere(~finite)[0]
        raise ValueError(
            f"model feature {names[c]!r} is not finite in {_row_label(df, int(r))} "
            "(check batch > 0 and the numeric config/feature columns)"
        )
    return names, arr


def model_matrix(df: pd.DataFrame, feature_set: str = "static") -> pd.DataFrame:
    """Build CARB's numeric model matrix from config, static feature (and telemetry) columns.

    Config features that do not apply to a row's family hold that family's
    ``not_applicable`` value (``-1`` for ResNet's, ``0`` for NB201's operation counts);
    NB201 architectures enter as counts of each operation; heavy-tailed static features
    (:data:`carb_lib.core.vocab.LOG_FEATURES`) as ``log1p``. Column order: see the module
    docstring.

    Parameters
    ----------
    df : pandas.DataFrame
        Rows to encode; validated with :func:`validate_features` (``ValueError`` naming the
        column and row of a missing feature).
    feature_set : {"static", "static+telemetry", "shared"}, default="static"
        ``"static+telemetry"`` adds ``sm_util_pct``, ``mem_util_pct``, ``temp_c_before``,
        ``log1p_kernel_launches`` and the paper's interactions (batch x SM util,
        log1p(FLOPs) x SM util, log1p(activation MiB) x memory util, SM util x memory util).

    Returns
    -------
    pandas.DataFrame
        float32 columns, index aligned with ``df``.

    Examples
    --------
    >>> import pandas as pd
    >>> from carb_lib.dataset.features import with_static_features
    >>> row = pd.DataFrame({"family": ["resnet"], "block": ["basic"], "depth": [18],
    ...                     "width": [1.0], "early_downsample": [True], "resolution": [32],
    ...                     "batch": [1], "precision": ["fp32"], "num_classes": [1000]})
    >>> mm = model_matrix(with_static_features(row))
    >>> mm.loc[0, ["family_nb201", "depth", "batch", "precision_fp16"]].tolist()
    [0.0, 18.0, 1.0, 0.0]
    """
    names, arr = _model_array(df, feature_set)
    return pd.DataFrame(arr, index=df.index, columns=names, copy=False)


def model_matrix_columns(feature_set: str = "static") -> list[str]:
    """Names of the model-matrix columns this version builds for ``feature_set`` (with the
    families registered now), in order."""
    _check_feature_set(feature_set)
    common, telemetry = _common_names(feature_set)
    if feature_set == "shared":
        return common
    lead, trail = _ordered([c for _, cols in _family_column_names() for c in cols])
    return lead + common + trail + telemetry
