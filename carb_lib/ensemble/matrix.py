"""CARB's model matrix: dataset columns (config, static features, telemetry) -> float32 array.

:func:`model_matrix` encodes a frame of configs into the numeric columns the learners read;
:func:`validate_features` checks first, naming the column and the first row of a missing or
unknown value; :func:`input_columns` lists the dataset columns a feature set reads;
:func:`model_matrix_columns` the encoded column names (what a saved model is checked against).

The columns are the same for every input (fixed category lists), so a model fitted on one frame
predicts another. The encoding is vectorised: string columns are factorised and each distinct
value converted once (about 0.2-1 s for 1,000,000 rows).

The family-specific part (which config columns each family needs, and how they are encoded)
sits in one marked section below, :func:`_family_encoding`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from carb_lib.nb201 import OPS, arch_ops
from carb_lib.vocab import (
    COMMON_CONFIG_COLUMNS,
    LOG_FEATURES,
    PRECISIONS,
    STATIC_FEATURES,
    TELEMETRY_FEATURES,
)

__all__ = [
    "CONFIG_COLUMNS",
    "FEATURE_SETS",
    "NB201_OPS",
    "STATIC_FEATURES",
    "TELEMETRY_FEATURES",
    "input_columns",
    "model_matrix",
    "model_matrix_columns",
    "validate_features",
]

#: Feature sets: static features only, or with the GPU telemetry columns.
FEATURE_SETS: tuple[str, ...] = ("static", "static+telemetry")
NB201_OPS: tuple[str, ...] = OPS  # the NB201 family's operation list, in its order
_NOT_APPLICABLE = -1.0  # value of a config feature that does not apply to the row's family


# ---------------------------------------------------------------------------------------------
# family-specific encoding
# TODO(families): wire this section to the family registry (carb_lib.families): each family
# names its config columns, their categories and its model-matrix encoding; nothing outside
# the section below knows a family by name.
# ---------------------------------------------------------------------------------------------
#: Config columns a family needs in addition to vocab.COMMON_CONFIG_COLUMNS.
_FAMILY_CONFIG: dict[str, tuple[str, ...]] = {
    "resnet": ("block", "depth", "width", "early_downsample"),
    "nb201": ("arch",),
}
#: Categorical config columns of a family and their allowed values.
_FAMILY_CATEGORIES: dict[str, dict[str, tuple[str, ...]]] = {
    "resnet": {"block": ("basic", "bottleneck")},
}


def _family_encoding(df: pd.DataFrame) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
    """The family-specific model-matrix columns, as ``(leading, trailing)`` (name, values) lists.

    Leading: the ``family_nb201`` indicator, then ResNet's ``block_bottleneck``, ``depth``,
    ``width``, ``early_downsample`` (``-1`` on rows of another family). Trailing: NB201's count
    of each operation (0 elsewhere). Two lists because the model matrix puts them at these two
    places (the column order of saved models).
    """
    n = len(df)
    resnet = _is(df["family"], "resnet")
    nb201 = _is(df["family"], "nb201")
    lead: list[tuple[str, Any]] = [("family_nb201", nb201)]
    bottleneck = _is(df["block"], "bottleneck") if "block" in df.columns else np.zeros(n, bool)
    lead.append(("block_bottleneck", np.where(resnet, bottleneck.astype(float), _NOT_APPLICABLE)))
    for col, values in (
        ("depth", _num(df, "depth")),
        ("width", _num(df, "width")),
        ("early_downsample", _flag(df, "early_downsample")),
    ):
        lead.append((col, np.where(resnet, values, _NOT_APPLICABLE)))
    counts = np.zeros((n, len(NB201_OPS)))
    if nb201.any():
        counts[nb201] = _nb201_op_counts(df["arch"][nb201])
    trail = [(f"nb201_n_{op}", counts[:, k]) for k, op in enumerate(NB201_OPS)]
    return lead, trail


def _probe_frame() -> pd.DataFrame:
    """One valid row (a ResNet-18) with every column any feature set reads."""
    return pd.DataFrame({
        "family": ["resnet"], "block": ["basic"], "depth": [18], "width": [1.0],
        "early_downsample": [True], "arch": [None], "resolution": [32], "batch": [1],
        "precision": ["fp32"], "num_classes": [1000],
        **{c: [1.0] for c in STATIC_FEATURES + TELEMETRY_FEATURES},
    })


def _nb201_op_counts(arch: pd.Series) -> np.ndarray:
    """Counts of each :data:`NB201_OPS` operation per arch string, shape (rows, ops)."""
    codes, uniques = pd.factorize(arch, use_na_sentinel=True)
    # one parse per distinct arch string, with the family's own (validating) parser
    rows = [[ops.count(op) for op in NB201_OPS] for ops in map(arch_ops, uniques)]
    counts = np.asarray(rows, dtype=float).reshape(len(uniques), len(NB201_OPS))
    counts = np.vstack([counts, np.zeros((1, len(NB201_OPS)))])  # missing -> "nan": 0 ops
    return counts[codes]


# ---------------------------------------------------------------------------------------------
# columns
# ---------------------------------------------------------------------------------------------
#: Config columns the model reads: ``family``, each family's own, then the common ones.
CONFIG_COLUMNS: tuple[str, ...] = (
    COMMON_CONFIG_COLUMNS[:1]
    + tuple(c for cols in _FAMILY_CONFIG.values() for c in cols)
    + COMMON_CONFIG_COLUMNS[1:]
)


def _check_feature_set(feature_set: str) -> None:
    if feature_set not in FEATURE_SETS:
        raise ValueError(f"feature_set must be one of {FEATURE_SETS}, got {feature_set!r}")


def input_columns(feature_set: str = "static") -> list[str]:
    """Return the dataset columns a model with ``feature_set`` reads (config + features).

    Parameters
    ----------
    feature_set : {"static", "static+telemetry"}, default="static"

    Returns
    -------
    list of str
        :data:`CONFIG_COLUMNS`, the static features, and the telemetry columns with
        ``"static+telemetry"``.
    """
    _check_feature_set(feature_set)
    cols = list(CONFIG_COLUMNS) + list(STATIC_FEATURES)
    if feature_set == "static+telemetry":
        cols += list(TELEMETRY_FEATURES)
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
    ``resnet``) may be NaN or absent. Unknown families, precisions and blocks are refused.

    Parameters
    ----------
    df : pandas.DataFrame
        Config columns plus the static features (and telemetry for ``"static+telemetry"``).
    feature_set : {"static", "static+telemetry"}, default="static"

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
    unknown = sorted({str(v) for v in family.dropna().unique()} - set(_FAMILY_CONFIG))
    if unknown:
        first = int(np.flatnonzero(family.astype(str).isin(unknown).to_numpy())[0])
        raise ValueError(
            f"column 'family' has unknown value {unknown[0]!r} in {_row_label(df, first)}; "
            f"known: {sorted(_FAMILY_CONFIG)}"
        )
    every = np.ones(len(df), bool)
    needs: list[tuple[str, np.ndarray, str]] = [
        (c, every, "every row needs it") for c in COMMON_CONFIG_COLUMNS[1:]
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
            every,
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
    categories = [("precision", PRECISIONS, every)] + [
        (col, allowed, _is(family, fam))
        for fam, table in _FAMILY_CATEGORIES.items()
        for col, allowed in table.items()
    ]
    for col, allowed, rows in categories:
        if col in df.columns:
            vals = df[col]
            bad = (vals.notna() & ~vals.isin(allowed)).to_numpy(dtype=bool) & rows
            _raise_unknown(df, col, bad, allowed)


# ---------------------------------------------------------------------------------------------
# vectorised column conversions
# ---------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------
# the model matrix
# ---------------------------------------------------------------------------------------------
def _model_array(df: pd.DataFrame, feature_set: str) -> tuple[list[str], np.ndarray]:
    """Validated model matrix as (column names, C-contiguous float32 array)."""
    validate_features(df, feature_set)
    n = len(df)
    family_lead, family_trail = _family_encoding(df)
    cols: list[tuple[str, Any]] = list(family_lead)
    batch = _num(df, "batch")
    cols += [
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
    cols += family_trail
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

    Config features that do not apply to a row's family are ``-1``; NB201 architectures enter
    as counts of each operation; heavy-tailed static features
    (:data:`carb_lib.vocab.LOG_FEATURES`) as ``log1p``.

    Parameters
    ----------
    df : pandas.DataFrame
        Rows to encode; validated with :func:`validate_features` (``ValueError`` naming the
        column and row of a missing feature).
    feature_set : {"static", "static+telemetry"}, default="static"
        ``"static+telemetry"`` adds ``sm_util_pct``, ``mem_util_pct``, ``temp_c_before``,
        ``log1p_kernel_launches`` and the paper's interactions (batch x SM util,
        log1p(FLOPs) x SM util, log1p(activation MiB) x memory util, SM util x memory util).

    Returns
    -------
    pandas.DataFrame
        float32 columns, index aligned with ``df``.

    Examples
    --------
    >>> from carb_lib.ensemble.matrix import _probe_frame, model_matrix
    >>> mm = model_matrix(_probe_frame())
    >>> mm.loc[0, ["depth", "batch", "precision_fp16"]].tolist()
    [18.0, 1.0, 0.0]
    """
    names, arr = _model_array(df, feature_set)
    return pd.DataFrame(arr, index=df.index, columns=names, copy=False)


def model_matrix_columns(feature_set: str = "static") -> list[str]:
    """Names of the model-matrix columns this version builds for ``feature_set``."""
    return list(model_matrix(_probe_frame(), feature_set).columns)
