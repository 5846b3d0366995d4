"""The shared implementation of the layer-tally families ``mobilenetv2``, ``vgg`` and
``efficientnet``: channel rounding, content hashes, validation with messages that list the valid
values, the config mixin, the family protocol's column declarations and learners' encoding,
grids, seeded samplers, the stratified check sample, and the family functions and class
(:func:`tally_functions`, :class:`TallyFamily`).

A layer-tally family module keeps only what differs: its space (architecture column -> valid
values), its config dataclass (:class:`ConfigMixin`), its torch builder and its analytic pass of the
feature extractor (``walk(*arch, resolution)``, a :class:`carb_lib.families._layers.Tally`; the
builders end in the shared classifier head ``_layers.torch_layers().Classifier``, whose global
average pool and ``Linear`` are tallied here); everything else comes from here.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any, ClassVar, NamedTuple

import numpy as np
import pandas as pd

import carb_lib.families._layers as L
from carb_lib.core.vocab import EXTRA_STATIC_FEATURES, PRECISIONS
from carb_lib.families._base import ConfigColumn, ConfigError, Family
from carb_lib.families._common import BATCH_RANGE, BATCH_SIZES, family_rows, flag, number

#: Input resolutions of the families' grids (any in :data:`RESOLUTION_RANGE` is valid).
RESOLUTIONS: tuple[int, ...] = (32, 48, 64, 96, 128, 160, 192, 224)
#: Valid input resolutions (five stride-2 reductions need at least 32 px for VGG).
RESOLUTION_RANGE: tuple[int, int] = (32, 1024)
COMMON_COLUMNS: tuple[str, ...] = ("resolution", "batch", "precision", "num_classes")
#: Value of a layer-tally family's encoded columns in rows of other families.
NOT_APPLICABLE: float = -1.0


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
    """Validation, ``config_id``, ``to_dict`` and ``build_model`` of a frozen family config
    dataclass whose class sets ``ARCH_COLUMNS`` and ``SPACE`` (``ClassVar``: the architecture
    columns and their valid values) and a ``family`` field; :func:`tally_functions` sets its
    builder (``_build``)."""

    ARCH_COLUMNS: tuple[str, ...] = ()
    SPACE: Mapping[str, tuple] = {}
    _build: Callable[[Any], Any]

    def __post_init__(self) -> None:
        for c in self.ARCH_COLUMNS:
            object.__setattr__(self, c, check_choice(c, getattr(self, c), self.SPACE[c]))
        validate_common(self)

    def _items(self) -> dict[str, Any]:
        return {c: getattr(self, c) for c in (*self.ARCH_COLUMNS, *COMMON_COLUMNS)}

    @property
    def config_id(self) -> str:
        """Content hash (16 hex digits), identical on every machine and run."""
        return config_id(self.family, self._items())

    def to_dict(self) -> dict[str, Any]:
        """Config columns as a plain dict (``family`` first)."""
        return {"family": self.family, **self._items()}

    def build_model(self):
        """Build the network (the family module's ``build_model``)."""
        return type(self)._build(self)


# --------------------------------------------------------------------------- protocol
class Columns(NamedTuple):
    """The column declarations of a layer-tally family (:func:`columns`)."""

    #: Architecture columns (the space's keys, in order).
    arch: tuple[str, ...]
    #: Config columns in order: ``family``, the architecture ones, :data:`COMMON_COLUMNS`
    #: (``config_id`` comes first in frames).
    config: tuple[str, ...]
    #: The family's own config columns (besides the common ones), for the protocol and schema.
    own: tuple[ConfigColumn, ...]
    #: Columns a table must carry for the family's rows (``num_classes`` defaults to 1000).
    required: tuple[str, ...]
    #: The learners' encoding of the own columns (``<family>_<column>``).
    matrix: tuple[str, ...]


def columns(family: str, space: Mapping[str, tuple], docs: Mapping[str, str]) -> Columns:
    """The :class:`Columns` of family ``family`` with architecture space ``space`` (``docs``:
    column -> its description)."""
    arch = tuple(space)
    return Columns(arch, ("family", *arch, *COMMON_COLUMNS), own_columns(space, docs),
                   (*arch, "resolution", "batch", "precision"),
                   tuple(f"{family}_{c}" for c in arch))


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


# --------------------------------------------------------------------------- the family
class TallyFunctions(NamedTuple):
    """The module-level functions of a layer-tally family (:func:`tally_functions`), in the
    order a family module unpacks them."""

    config_from_row: Callable
    config_ids: Callable
    grid: Callable
    sample_configs: Callable
    unit: Callable
    op_list: Callable
    static_features: Callable
    measured_features: Callable
    compare_features: Callable
    encode_config: Callable


def tally_functions(config_type: type, walk: Callable[..., Any], build: Callable[[Any], Any],
                    module: str) -> TallyFunctions:
    """The functions of the layer-tally family of ``config_type`` (a :class:`ConfigMixin`
    dataclass), whose network is ``build(config)`` (its features, then the shared classifier
    head: global average pool and ``Linear``) and whose analytic pass of the features is
    ``walk(*arch, resolution)`` (a :class:`carb_lib.families._layers.Tally`); they are named as
    module ``module``'s functions. Sets ``config_type``'s builder."""
    family, space = config_type.family, config_type.SPACE
    arch = tuple(space)
    columns = (*arch, *COMMON_COLUMNS)
    matrix = tuple(f"{family}_{c}" for c in arch)
    config_name = config_type.__name__
    n_grid = math.prod(len(v) for v in space.values()) * len(RESOLUTIONS) * len(BATCH_SIZES) \
        * len(PRECISIONS)
    config_type._build = staticmethod(build)

    def config_from_row(row: Mapping[str, Any]) -> Any:
        return config_type(**row_kwargs(row, family, arch))

    def config_ids_(df: pd.DataFrame) -> list[str]:
        return config_ids(df, family, columns)

    def grid(resolutions: tuple[int, ...] = RESOLUTIONS,
             batch_sizes: tuple[int, ...] = BATCH_SIZES) -> pd.DataFrame:
        return grid_frame(family, space, resolutions, batch_sizes)

    def sample_configs(n: int, seed: int = 0, resolutions: tuple[int, ...] = RESOLUTIONS,
                       batch_sizes: tuple[int, ...] = BATCH_SIZES) -> pd.DataFrame:
        return sample_frame(family, space, n, seed, resolutions, batch_sizes)

    def tally(*key: Any) -> L.Tally:
        """The pass of ``(*arch, resolution, num_classes)``: features, then the head."""
        t = walk(*key[:-1])
        t.pool()
        t.fc(key[-1])
        return t

    @lru_cache(maxsize=16384)
    def unit(*key: Any) -> tuple[int, ...]:
        return tally(*key).unit()

    def op_list(row: Mapping[str, Any]) -> list[tuple]:
        c = config_from_row({**row, "batch": 1, "precision": "fp32"})
        return tally(*(getattr(c, a) for a in arch), c.resolution, c.num_classes).ops

    def static_features(df: pd.DataFrame) -> pd.DataFrame:
        return L.static_frame(df, family, arch, unit, config_type)

    def measured_features(config: Any, model=None) -> dict[str, int | float]:
        if model is None:
            model = L.meta_model(config, build)
        return L.measure(model, config)

    def compare_features(configs: pd.DataFrame) -> pd.DataFrame:
        return L.compare(configs, static_features, config_from_row, measured_features, build)

    def encode_config(df: pd.DataFrame, rows: np.ndarray | None = None) -> pd.DataFrame:
        return encode_numeric(df, family, space, matrix, NOT_APPLICABLE, rows)

    docs = {
        "config_from_row": f"Validate one row (mapping) into a :class:`{config_name}` "
                           "(``num_classes``: 1000).",
        "config_ids": "Content hashes of every row (vectorised over unique rows).",
        "grid": f"The full grid ({n_grid:,} configs by default): ``config_id`` + :data:`COLUMNS`.",
        "sample_configs": "``n`` seeded random configs (every column uniform over its values).",
        "unit": "Per-sample counts of one architecture at one resolution "
                "(``_layers.UNIT_COLUMNS``), from ``(*arch, resolution, num_classes)``.",
        "op_list": "The operators of ``row``'s network per image "
                   "(:data:`carb_lib.kernels.law.OP_COLUMNS`),\nfrom the analytic pass (equal to "
                   "those recorded on the built model).",
        "static_features": f"""Analytic static features of {family} rows (vectorised over unique
arch x resolution).

Parameters
----------
df : pandas.DataFrame
    The :data:`COLUMNS` (``num_classes`` optional, 1000).

Returns
-------
pandas.DataFrame
    ``_layers.FEATURE_COLUMNS`` (``vocab.STATIC_FEATURES`` + ``NEW_FEATURE_COLUMNS``),
    index-aligned with ``df``; FLOPs and bytes for the whole batch.

Raises
------
ConfigError
    Naming the first row whose config is outside the space.
""",
        "measured_features": f"""Measure ``_layers.EXACT_COLUMNS`` from the built model on the
``meta`` device.

Parameters
----------
config : {config_name}
model : torch.nn.Module, optional
    ``config``'s network already on the ``meta`` device at its precision (reusable across
    resolutions and batch sizes).
""",
        "compare_features": "Analytic against measured, one row per (config, exact column); "
                            "see ``_layers.compare``.",
        "encode_config": f"""The learners' numeric encoding of the {family} config columns.

Parameters
----------
df : pandas.DataFrame
    Rows of any families (validated beforehand).
rows : numpy.ndarray of bool, optional
    Which rows are {family} rows; default ``df["family"] == "{family}"``.

Returns
-------
pandas.DataFrame
    float64 columns :data:`MATRIX_COLUMNS` (``{family}_<column>`` for every column of
    :data:`SPACE`, flags as 0/1), index-aligned with ``df``; :data:`NOT_APPLICABLE` (-1.0) in
    rows of other families.
""",
    }
    out = TallyFunctions(config_from_row, config_ids_, grid, sample_configs, unit, op_list,
                         static_features, measured_features, compare_features, encode_config)
    for field, fn in zip(TallyFunctions._fields, out, strict=True):
        name = "_unit" if field == "unit" else field  # the module's name of the function
        for f in {fn, getattr(fn, "__wrapped__", fn)}:
            f.__name__, f.__qualname__, f.__module__, f.__doc__ = name, name, module, docs[field]
    config_from_row.__annotations__["return"] = config_name
    measured_features.__annotations__["config"] = config_name
    return out


#: The public names every layer-tally family module defines (its ``__all__`` adds its own).
TALLY_NAMES: tuple[str, ...] = (
    "FAMILY", "SPACE", "ARCH_COLUMNS", "COLUMNS", "RESOLUTIONS", "OWN_COLUMNS",
    "REQUIRED_COLUMNS", "MATRIX_COLUMNS", "NOT_APPLICABLE", "config_from_row", "config_ids",
    "grid", "sample_configs", "build_model", "static_features", "measured_features",
    "compare_features", "encode_config", "family",
)


class TallyFamily(Family):
    """A layer-tally family: a subclass sets ``name``, ``config_type``, the column declarations
    (``own_columns``, ``required_columns``, ``matrix_columns``) and ``functions`` (its
    :class:`TallyFunctions`); the protocol's methods are those functions."""

    functions: ClassVar[TallyFunctions]
    categories = {}
    extra_feature_columns = EXTRA_STATIC_FEATURES
    not_applicable = NOT_APPLICABLE

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        f = cls.functions
        for name, fn in (("from_row", f.config_from_row), ("config_ids", f.config_ids),
                         ("build_model", cls.config_type._build),
                         ("static_features", f.static_features),
                         ("measured_features", f.measured_features),
                         ("encode_config", f.encode_config), ("op_list", f.op_list)):
            setattr(cls, name, staticmethod(fn))
