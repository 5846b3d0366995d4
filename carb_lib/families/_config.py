"""Configs and spaces shared by the families ``mobilenetv2``, ``vgg`` and ``efficientnet``:
channel rounding, content hashes, validation with messages that list the valid values, the
config mixin, the family protocol's column declarations and learners' encoding, grids, seeded
samplers and the stratified check sample.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.families._base import ConfigColumn, ConfigError
from carb_lib.families._common import BATCH_RANGE, BATCH_SIZES, family_rows, flag, number
from carb_lib.vocab import PRECISIONS

#: Input resolutions of the families' grids (any in :data:`RESOLUTION_RANGE` is valid).
RESOLUTIONS: tuple[int, ...] = (32, 48, 64, 96, 128, 160, 192, 224)
#: Valid input resolutions (five stride-2 reductions need at least 32 px for VGG).
RESOLUTION_RANGE: tuple[int, int] = (32, 1024)
COMMON_COLUMNS: tuple[str, ...] = ("resolution", "batch", "precision", "num_classes")


# --------------------------------------------------------------------------- config helpers
def make_divisible(v: float, divisor: int = 8) -> int:
    """Round ``v`` to a multiple of ``divisor`` (at least ``divisor``, never below 90 % of ``v``).

    The rounding of MobileNetV2/EfficientNet channel counts (torchvision ``_make_divisible``).
    """
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def round_repeats(n: int, depth_mult: float) -> int:
    """Blocks of a stage of ``n`` blocks under a depth multiplier: ``ceil(n * depth_mult)``."""
    return int(math.ceil(n * depth_mult))


def _fmt(v: Any) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return format(float(v), ".6g")
    return str(v)


def config_id(family: str, items: Mapping[str, Any]) -> str:
    """Content hash (16 hex digits) of ``family|key=value|...`` in the order of ``items``."""
    canonical = "|".join([family, *(f"{k}={_fmt(v)}" for k, v in items.items())])
    return hashlib.sha1(canonical.encode()).hexdigest()[:16]


def config_ids(df: pd.DataFrame, family: str, columns: tuple[str, ...]) -> list[str]:
    """Content hashes of every row of ``df`` (``columns`` without ``family``), per unique row."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ConfigError(f"{family} configs are missing column(s) {missing}")
    codes, uniques = pd.MultiIndex.from_frame(df[list(columns)]).factorize()
    ids = np.array([config_id(family, dict(zip(columns, u, strict=True))) for u in uniques],
                   dtype=object)
    return ids[codes].tolist()


def check_int(name: str, value: Any) -> int:
    """``value`` as an int (integral floats pass), else a :class:`ConfigError`."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            return int(value)
        raise ConfigError(f"{name} must be an integer, got {value!r}")
    return int(value)


def check_choice(name: str, value: Any, valid: tuple) -> Any:
    """The element of ``valid`` equal to ``value`` (floats within 1e-9), else a ConfigError."""
    for v in valid:
        if isinstance(v, (bool, np.bool_)):
            if isinstance(value, (bool, np.bool_)) and bool(value) == v:
                return v
        elif isinstance(value, (bool, np.bool_)):
            continue
        elif isinstance(value, (int, float, np.integer, np.floating)) and abs(value - v) < 1e-9:
            return v
    raise ConfigError(f"{name}={value!r} is unknown; valid values: {list(valid)}")


def validate_common(cfg: Any) -> None:
    """Validate and normalise ``resolution``, ``batch``, ``precision`` and ``num_classes`` of a
    frozen config dataclass in place (messages list the valid values)."""
    res = check_int("resolution", cfg.resolution)
    lo, hi = RESOLUTION_RANGE
    if not lo <= res <= hi:
        raise ConfigError(f"resolution={res} is outside the valid range {lo}..{hi} "
                          f"(grid: {list(RESOLUTIONS)})")
    batch = check_int("batch", cfg.batch)
    lo, hi = BATCH_RANGE
    if not lo <= batch <= hi:
        raise ConfigError(f"batch={batch} is outside the valid range {lo}..{hi} "
                          f"(grid: {list(BATCH_SIZES)})")
    if cfg.precision not in PRECISIONS:
        raise ConfigError(f"precision={cfg.precision!r} is unknown; valid values: "
                          f"{list(PRECISIONS)}")
    num_classes = check_int("num_classes", cfg.num_classes)
    if num_classes < 1:
        raise ConfigError(f"num_classes must be >= 1, got {cfg.num_classes!r}")
    for k, v in (("resolution", res), ("batch", batch), ("num_classes", num_classes)):
        object.__setattr__(cfg, k, v)


def row_kwargs(row: Mapping[str, Any], family: str, arch_columns: tuple[str, ...]) -> dict:
    """Constructor arguments of a config from a row (``num_classes`` defaults to 1000)."""
    required = (*arch_columns, "resolution", "batch", "precision")
    missing = [c for c in required if c not in row or _missing(row[c])]
    if missing:
        raise ConfigError(f"{family} config is missing column(s) {missing}")
    kw = {c: row[c] for c in required}
    nc = row.get("num_classes", 1000)
    kw["num_classes"] = 1000 if _missing(nc) else nc
    return kw


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


class ConfigMixin:
    """``config_id``, ``to_dict`` and ``build_model`` of a frozen family config dataclass whose
    class sets ``ARCH_COLUMNS`` (a ``ClassVar``), a ``family`` field and ``_build``."""

    ARCH_COLUMNS: tuple[str, ...] = ()

    def _items(self) -> dict[str, Any]:
        return {c: getattr(self, c) for c in (*self.ARCH_COLUMNS, *COMMON_COLUMNS)}

    @property
    def config_id(self) -> str:
        """Content hash (16 hex digits), identical on every machine and run."""
        return config_id(self.family, self._items())

    def to_dict(self) -> dict[str, Any]:
        """Config columns as a plain dict (``family`` first)."""
        return {"family": self.family, **self._items()}


# --------------------------------------------------------------------------- protocol
def own_columns(space: Mapping[str, tuple], docs: Mapping[str, str]) -> tuple[ConfigColumn, ...]:
    """The :class:`ConfigColumn` of every architecture column of ``space`` (kind from its
    values: bool, int or float; numbers are non-negative)."""
    out = []
    for name, values in space.items():
        if all(isinstance(v, (bool, np.bool_)) for v in values):
            kind = "bool"
        elif all(isinstance(v, (int, np.integer)) for v in values):
            kind = "int"
        else:
            kind = "float"
        out.append(ConfigColumn(name, kind, docs.get(name, ""), nonneg=kind != "bool"))
    return tuple(out)


def encode_numeric(df: pd.DataFrame, family: str, space: Mapping[str, tuple],
                   matrix_columns: tuple[str, ...], not_applicable: float,
                   rows: np.ndarray | None = None) -> pd.DataFrame:
    """The learners' encoding of a family whose architecture columns are all numbers or flags.

    Column ``matrix_columns[i]`` holds the i-th column of ``space`` as float64 (bools 0/1,
    strings ``"true"``/``"false"``/``"1"``/``"0"`` accepted) in the family's rows (``rows``, or
    ``df["family"] == family``), ``not_applicable`` elsewhere; a missing or non-numeric value of a
    row of the family is NaN.
    """
    mine = family_rows(df, family, rows)
    out = {}
    for col, name in zip(space, matrix_columns, strict=True):
        is_flag = all(isinstance(v, (bool, np.bool_)) for v in space[col])
        values = flag(df, col) if is_flag else number(df, col)
        out[name] = np.where(mine, values, not_applicable)
    return pd.DataFrame(out, index=df.index, columns=list(matrix_columns))


# --------------------------------------------------------------------------- spaces
def grid_frame(family: str, space: Mapping[str, tuple], resolutions: tuple[int, ...] = RESOLUTIONS,
               batch_sizes: tuple[int, ...] = BATCH_SIZES,
               precisions: tuple[str, ...] = PRECISIONS, num_classes: int = 1000) -> pd.DataFrame:
    """Cartesian product of ``space`` (arch column -> values) x resolutions x batches x
    precisions, with ``family`` and ``config_id``, in a fixed order."""
    axes = {**space, "resolution": resolutions, "batch": batch_sizes, "precision": precisions}
    df = pd.MultiIndex.from_product(list(axes.values()), names=list(axes)).to_frame(index=False)
    return _finish_frame(df, family, tuple(space), num_classes)


def sample_frame(family: str, space: Mapping[str, tuple], n: int, seed: int = 0,
                 resolutions: tuple[int, ...] = RESOLUTIONS,
                 batch_sizes: tuple[int, ...] = BATCH_SIZES,
                 precisions: tuple[str, ...] = PRECISIONS, num_classes: int = 1000
                 ) -> pd.DataFrame:
    """``n`` configs drawn uniformly and independently per column (seeded; duplicates are
    possible, ``config_id`` identifies them)."""
    rng = np.random.default_rng(seed)
    axes = {**space, "resolution": resolutions, "batch": batch_sizes, "precision": precisions}
    df = pd.DataFrame({k: np.asarray(v)[rng.integers(len(v), size=n)] for k, v in axes.items()})
    return _finish_frame(df, family, tuple(space), num_classes)


def _finish_frame(df: pd.DataFrame, family: str, arch: tuple[str, ...], num_classes: int):
    df["num_classes"] = int(num_classes)
    for c in ("resolution", "batch", "num_classes"):
        df[c] = df[c].astype(np.int64)
    cols = (*arch, *COMMON_COLUMNS)
    df.insert(0, "config_id", config_ids(df, family, cols))
    df.insert(1, "family", family)
    return df[["config_id", "family", *cols]]


def stratified(df: pd.DataFrame, n: int, by: list[str], seed: int = 0) -> pd.DataFrame:
    """``n`` rows filled round-robin over the strata ``by`` (seeded; original index kept)."""
    if not 0 <= n <= len(df):
        raise ValueError(f"n={n} must be between 0 and the number of rows ({len(df)})")
    key = np.random.default_rng(seed).random(len(df))
    lab = df[by].astype(str).agg("|".join, axis=1).to_numpy()
    rank = pd.DataFrame({"lab": lab, "key": key}).groupby("lab")["key"].rank(method="first")
    return df.iloc[np.lexsort((key, rank.to_numpy()))[:n]]


def check_sample(family: str, space: Mapping[str, tuple], n: int, seed: int = 0,
                 corner_batches: tuple[int, ...] = (1, 256),
                 corner_precisions: tuple[str, ...] = PRECISIONS) -> pd.DataFrame:
    """The configs on which analytic and measured features are compared: the extremes of the
    family's grid (every architecture column at its smallest value, or every one at its largest,
    at the smallest and the largest grid resolution, ``corner_batches`` x
    ``corner_precisions``), then ``n`` further grid rows filled round-robin over architecture
    x precision (:func:`stratified`)."""
    g = grid_frame(family, space)
    low = np.logical_and.reduce([g[c] == min(v) for c, v in space.items()])
    high = np.logical_and.reduce([g[c] == max(v) for c, v in space.items()])
    ext = g[(low | high) & g["resolution"].isin([min(RESOLUTIONS), max(RESOLUTIONS)])
            & g["batch"].isin(corner_batches) & g["precision"].isin(corner_precisions)]
    rest = g.drop(index=ext.index)
    return pd.concat([ext, stratified(rest, n, [*space, "precision"], seed)])
