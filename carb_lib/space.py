"""The design space: configuration types, the paper's grid, model builders and samplers.

The space is a registry of *families* (:data:`FAMILIES`). Each family supplies a frozen config
type with validation, a model builder and analytic static features; columns common to all
families (``family``, ``config_id``, ``resolution``, ``batch``, ``precision``, ``num_classes``)
have the same names everywhere.

Family ``resnet`` — the paper's grid (arXiv 2608.10506), ResNet-style networks
--------------------------------------------------------------------------------
``depth`` counts weighted layers: the stem conv, every conv of every residual block and the final
FC. Shortcut projections (1x1 conv + BN where the shape changes) are not counted in ``depth``
but are counted in ``n_conv``/``n_bn``. Blocks per stage (stage widths 64/128/256/512 x ``width``):

========== ===== ================ =====================================
block      depth blocks per stage  note
========== ===== ================ =====================================
basic      8     1, 1, 1, -       three stages only (64/128/256 x width)
basic      10    1, 1, 1, 1
basic      12    2, 1, 1, 1
basic      14    2, 2, 1, 1
basic      18    2, 2, 2, 2       ResNet-18
basic      22    2, 3, 3, 2
basic      26    2, 3, 4, 3
basic      34    3, 4, 6, 3       ResNet-34
bottleneck 50    3, 4, 6, 3       ResNet-50 (expansion 4)
bottleneck 101   3, 4, 23, 3      ResNet-101
bottleneck 152   3, 8, 36, 3      ResNet-152
bottleneck 200   3, 24, 36, 3     ResNet-200
========== ===== ================ =====================================

A basic block has 2 weighted layers, a bottleneck 3, so depth = 2*blocks + 2 or 3*blocks + 2.
With 4 stages at least 4 basic blocks are needed (depth >= 10), hence depth 8 uses three stages,
as CIFAR-style ResNet-8 does.

Stage widths are ``max(8, round_half_up(base * width / 8) * 8)``; the stem has the first stage's
width. Early downsampling ``True``: 7x7 stride-2 conv + BN + ReLU + 3x3 stride-2 max-pool (the
ImageNet stem); ``False``: 3x3 stride-1 conv + BN + ReLU, no pool. Stages 2-4 start with stride 2
(on the 3x3 conv, torchvision's "v1.5" bottleneck). Global average pool, then a ``num_classes``
FC layer (1000 by default). Convolutions have no bias; BN is affine; ReLU is in-place.

Grid: 12 (block, depth) x 8 widths x 2 stems x 5 resolutions x 9 batch sizes x 2 precisions =
17,280 configurations. Resolutions and batch sizes outside the grid are valid
(:data:`RESOLUTION_RANGE`, :data:`BATCH_RANGE`), e.g. for screening an extended space.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

# --------------------------------------------------------------------------- grid values
STAGE_BLOCKS: dict[tuple[str, int], tuple[int, ...]] = {
    ("basic", 8): (1, 1, 1),
    ("basic", 10): (1, 1, 1, 1),
    ("basic", 12): (2, 1, 1, 1),
    ("basic", 14): (2, 2, 1, 1),
    ("basic", 18): (2, 2, 2, 2),
    ("basic", 22): (2, 3, 3, 2),
    ("basic", 26): (2, 3, 4, 3),
    ("basic", 34): (3, 4, 6, 3),
    ("bottleneck", 50): (3, 4, 6, 3),
    ("bottleneck", 101): (3, 4, 23, 3),
    ("bottleneck", 152): (3, 8, 36, 3),
    ("bottleneck", 200): (3, 24, 36, 3),
}
BLOCKS: tuple[str, ...] = ("basic", "bottleneck")
DEPTHS: dict[str, tuple[int, ...]] = {
    b: tuple(d for (bb, d) in STAGE_BLOCKS if bb == b) for b in BLOCKS
}
BASE_WIDTHS: tuple[int, ...] = (64, 128, 256, 512)
WIDTHS: tuple[float, ...] = (0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 4.0)
EARLY_DOWNSAMPLE: tuple[bool, ...] = (True, False)
RESOLUTIONS: tuple[int, ...] = (32, 48, 64, 96, 128)
BATCH_SIZES: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256)
PRECISIONS: tuple[str, ...] = ("fp32", "fp16")
BYTES_PER_ELEMENT: dict[str, int] = {"fp32": 4, "fp16": 2}
RESOLUTION_RANGE: tuple[int, int] = (8, 1024)
BATCH_RANGE: tuple[int, int] = (1, 4096)
EXPANSION: dict[str, int] = {"basic": 1, "bottleneck": 4}

COMMON_COLUMNS: tuple[str, ...] = ("family", "resolution", "batch", "precision", "num_classes")
RESNET_COLUMNS: tuple[str, ...] = (
    "family", "block", "depth", "width", "early_downsample",
    "resolution", "batch", "precision", "num_classes",
)
#: Config columns of the paper's family, in order (``config_id`` comes first in frames).
CONFIG_COLUMNS: tuple[str, ...] = RESNET_COLUMNS

BATCH_TIER_EDGES: tuple[int, ...] = (4, 16, 128)  # tiers: <=4, <=16, <=128, above (the paper's)
BATCH_TIER_LABELS: tuple[str, ...] = ("b<=4", "b<=16", "b<=128", "b>128")


class ConfigError(ValueError):
    """A configuration value outside the design space; the message lists the valid values."""


def stage_widths(width: float, n_stages: int = 4) -> tuple[int, ...]:
    """Channel widths of the stages for a width multiplier (multiple of 8, at least 8)."""
    return tuple(max(8, int(math.floor(b * width / 8 + 0.5)) * 8) for b in BASE_WIDTHS[:n_stages])


def _fmt_float(x: float) -> str:
    return format(float(x), ".6g")


def _hash(canonical: str) -> str:
    return hashlib.sha1(canonical.encode()).hexdigest()[:16]


def _check_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            return int(value)
        raise ConfigError(f"{name} must be an integer, got {value!r}")
    return int(value)


def _check_range(name: str, value: int, lo_hi: tuple[int, int], grid: tuple[int, ...]) -> None:
    lo, hi = lo_hi
    if not lo <= value <= hi:
        raise ConfigError(
            f"{name}={value} is outside the valid range {lo}..{hi} (paper grid: {list(grid)})"
        )


def _check_precision(value: Any) -> None:
    if value not in PRECISIONS:
        raise ConfigError(f"precision={value!r} is unknown; valid values: {list(PRECISIONS)}")


# --------------------------------------------------------------------------- resnet config
@dataclass(frozen=True)
class ResNetConfig:
    """One configuration of the paper's ResNet family (validated on creation).

    Parameters
    ----------
    block : {"basic", "bottleneck"}
    depth : int
        Weighted layers; must be one of :data:`DEPTHS` ``[block]``.
    width : float
        Width multiplier, one of :data:`WIDTHS`.
    early_downsample : bool
        ImageNet stem (7x7/2 conv + 3x3/2 max-pool) if True, 3x3/1 conv otherwise.
    resolution : int
        Square input side in pixels (grid: :data:`RESOLUTIONS`; any in :data:`RESOLUTION_RANGE`).
    batch : int
        Batch size (grid: :data:`BATCH_SIZES`; any in :data:`BATCH_RANGE`).
    precision : {"fp32", "fp16"}
    num_classes : int
        Classifier outputs (1000).
    """

    block: str
    depth: int
    width: float
    early_downsample: bool
    resolution: int
    batch: int
    precision: str
    num_classes: int = 1000
    family: str = field(default="resnet", init=False)

    def __post_init__(self) -> None:
        if self.block not in BLOCKS:
            raise ConfigError(f"block={self.block!r} is unknown; valid values: {list(BLOCKS)}")
        depth = _check_int("depth", self.depth)
        if depth not in DEPTHS[self.block]:
            raise ConfigError(
                f"depth={self.depth!r} is not valid for block {self.block!r}; "
                f"valid depths: {list(DEPTHS[self.block])}"
            )
        try:
            width = float(self.width)
        except (TypeError, ValueError):
            raise ConfigError(f"width must be a number, got {self.width!r}") from None
        match = [w for w in WIDTHS if abs(w - width) < 1e-9]
        if not match:
            raise ConfigError(f"width={self.width!r} is unknown; valid values: {list(WIDTHS)}")
        if not isinstance(self.early_downsample, (bool, np.bool_)):
            raise ConfigError(
                f"early_downsample must be True or False, got {self.early_downsample!r}"
            )
        resolution = _check_int("resolution", self.resolution)
        _check_range("resolution", resolution, RESOLUTION_RANGE, RESOLUTIONS)
        batch = _check_int("batch", self.batch)
        _check_range("batch", batch, BATCH_RANGE, BATCH_SIZES)
        _check_precision(self.precision)
        num_classes = _check_int("num_classes", self.num_classes)
        if num_classes < 1:
            raise ConfigError(f"num_classes must be >= 1, got {self.num_classes!r}")
        # normalise types (frozen dataclass: use object.__setattr__)
        object.__setattr__(self, "depth", depth)
        object.__setattr__(self, "width", match[0])
        object.__setattr__(self, "early_downsample", bool(self.early_downsample))
        object.__setattr__(self, "resolution", resolution)
        object.__setattr__(self, "batch", batch)
        object.__setattr__(self, "num_classes", num_classes)

    @property
    def stage_blocks(self) -> tuple[int, ...]:
        """Residual blocks per stage."""
        return STAGE_BLOCKS[(self.block, self.depth)]

    @property
    def stage_widths(self) -> tuple[int, ...]:
        """Stage widths in channels (before the bottleneck expansion)."""
        return stage_widths(self.width, len(self.stage_blocks))

    @property
    def config_id(self) -> str:
        """Content hash (16 hex digits), identical on every machine and run."""
        return resnet_config_id(
            self.block, self.depth, self.width, self.early_downsample,
            self.resolution, self.batch, self.precision, self.num_classes,
        )

    def to_dict(self) -> dict[str, Any]:
        """Config columns as a plain dict (with ``family``)."""
        d = asdict(self)
        return {c: d[c] for c in RESNET_COLUMNS}

    def build_model(self):
        """Build the network (see :func:`build_model`)."""
        return build_resnet(self)


def resnet_config_id(
    block: str, depth: int, width: float, early_downsample: bool,
    resolution: int, batch: int, precision: str, num_classes: int = 1000,
) -> str:
    """The content hash of a ResNet config (see :attr:`ResNetConfig.config_id`)."""
    canonical = (
        f"resnet|block={block}|depth={int(depth)}|width={_fmt_float(width)}"
        f"|early_downsample={'true' if early_downsample else 'false'}"
        f"|resolution={int(resolution)}|batch={int(batch)}|precision={precision}"
        f"|num_classes={int(num_classes)}"
    )
    return _hash(canonical)


def _resnet_ids(df: pd.DataFrame) -> list[str]:
    cols = [df[c].tolist() for c in RESNET_COLUMNS[1:]]
    return [resnet_config_id(*vals) for vals in zip(*cols, strict=True)]


def _resnet_from_row(row: Mapping[str, Any]) -> ResNetConfig:
    missing = [c for c in RESNET_COLUMNS[1:-1] if c not in row]
    if missing:
        raise ConfigError(f"resnet config is missing column(s) {missing}")
    num_classes = row.get("num_classes", 1000)
    if num_classes is None or (isinstance(num_classes, float) and math.isnan(num_classes)):
        num_classes = 1000
    return ResNetConfig(
        block=row["block"], depth=row["depth"], width=row["width"],
        early_downsample=row["early_downsample"], resolution=row["resolution"],
        batch=row["batch"], precision=row["precision"], num_classes=num_classes,
    )


# --------------------------------------------------------------------------- resnet model
def _resnet_modules():
    """Define the torch modules lazily so that importing ``space`` does not import torch."""
    from torch import nn

    class BasicBlock(nn.Module):
        expansion = 1

        def __init__(self, cin: int, width: int, stride: int) -> None:
            super().__init__()
            cout = width * self.expansion
            self.conv1 = nn.Conv2d(cin, width, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.conv2 = nn.Conv2d(width, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, 0, bias=False), nn.BatchNorm2d(cout)
                )

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += identity
            return self.relu(out)

    class Bottleneck(nn.Module):
        expansion = 4

        def __init__(self, cin: int, width: int, stride: int) -> None:
            super().__init__()
            cout = width * self.expansion
            self.conv1 = nn.Conv2d(cin, width, 1, 1, 0, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(width)
            self.conv3 = nn.Conv2d(width, cout, 1, 1, 0, bias=False)
            self.bn3 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, 0, bias=False), nn.BatchNorm2d(cout)
                )

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            out += identity
            return self.relu(out)

    class ResNet(nn.Module):
        def __init__(self, block_cls, blocks, widths, early_downsample, num_classes):
            super().__init__()
            stem_w = widths[0]
            if early_downsample:
                self.stem = nn.Sequential(
                    nn.Conv2d(3, stem_w, 7, 2, 3, bias=False), nn.BatchNorm2d(stem_w),
                    nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1),
                )
            else:
                self.stem = nn.Sequential(
                    nn.Conv2d(3, stem_w, 3, 1, 1, bias=False), nn.BatchNorm2d(stem_w),
                    nn.ReLU(inplace=True),
                )
            stages = []
            cin = stem_w
            for i, (n, w) in enumerate(zip(blocks, widths, strict=True)):
                layers = []
                for j in range(n):
                    stride = 2 if (i > 0 and j == 0) else 1
                    layers.append(block_cls(cin, w, stride))
                    cin = w * block_cls.expansion
                stages.append(nn.Sequential(*layers))
            self.stages = nn.Sequential(*stages)
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(cin, num_classes)

        def forward(self, x):
            x = self.stages(self.stem(x))
            return self.fc(self.avgpool(x).flatten(1))

    return BasicBlock, Bottleneck, ResNet


def build_resnet(config: ResNetConfig):
    """Build the ResNet of ``config`` (fp32, CPU, eval mode; see the module docstring)."""
    basic, bottleneck, resnet = _resnet_modules()
    block_cls = basic if config.block == "basic" else bottleneck
    model = resnet(
        block_cls, config.stage_blocks, config.stage_widths, config.early_downsample,
        config.num_classes,
    )
    return model.eval()


# --------------------------------------------------------------------------- registry
@dataclass(frozen=True)
class Family:
    """A registered model family.

    Attributes
    ----------
    name : str
    columns : tuple of str
        Config columns of the family (``family`` first).
    from_row : callable
        ``mapping -> config`` (validates).
    build_model : callable
        ``config -> nn.Module`` in eval mode.
    config_ids : callable
        ``DataFrame -> list[str]`` of content hashes (vectorised over rows).
    static_features : callable or None
        ``DataFrame -> DataFrame`` analytic features; set by :mod:`carb_lib.features`.
    """

    name: str
    columns: tuple[str, ...]
    from_row: Callable[[Mapping[str, Any]], Any]
    build_model: Callable[[Any], Any]
    config_ids: Callable[[pd.DataFrame], list[str]]
    static_features: Callable[[pd.DataFrame], pd.DataFrame] | None = None


FAMILIES: dict[str, Family] = {}


def register_family(family: Family) -> None:
    """Add (or replace) a family in :data:`FAMILIES`."""
    FAMILIES[family.name] = family


def get_family(name: Any) -> Family:
    """Return the registered family ``name`` or raise a :class:`ConfigError` listing them."""
    _ensure_families()
    if name not in FAMILIES:
        raise ConfigError(f"family={name!r} is unknown; registered families: {sorted(FAMILIES)}")
    return FAMILIES[name]


register_family(
    Family(
        name="resnet", columns=RESNET_COLUMNS, from_row=_resnet_from_row,
        build_model=build_resnet, config_ids=_resnet_ids,
    )
)


def _ensure_families() -> None:
    """Import the modules that register further families (kept lazy to avoid cycles)."""
    try:
        from carb_lib import nb201  # noqa: F401  (registers "nb201" on import)
    except ImportError:  # pragma: no cover - the nb201 family is optional
        pass


def _row_family(row: Mapping[str, Any]) -> str:
    fam = row.get("family", "resnet")
    if fam is None or (isinstance(fam, float) and math.isnan(fam)):
        return "resnet"
    return fam


def config_from_row(row: Mapping[str, Any] | pd.Series):
    """Build and validate the config of one row (dispatches on its ``family``, default resnet)."""
    if isinstance(row, pd.Series):
        row = row.to_dict()
    return get_family(_row_family(row)).from_row(row)


def configs_from_frame(df: pd.DataFrame) -> list:
    """Validate every row of ``df``; the error names the failing row."""
    out = []
    for i, row in enumerate(df.to_dict(orient="records")):
        try:
            out.append(config_from_row(row))
        except ConfigError as exc:
            raise ConfigError(f"row {df.index[i]!r}: {exc}") from None
    return out


def validate_config_frame(df: pd.DataFrame, what: str = "input") -> None:
    """Validate every row of a frame of configs against its family's space, fast.

    Distinct config rows are validated once each (a million candidates of the extended space
    hold tens of thousands of distinct configs), so this runs before any work in every
    command that takes configs. Off-grid but valid values (resolution 33, batch 3) pass.

    Raises
    ------
    ConfigError
        ``<what>: row <index>: <reason naming column and value>`` for the first invalid row,
        with the count of invalid distinct configs.
    """
    if len(df) == 0:
        raise ConfigError(f"{what}: no rows")
    fam = df["family"] if "family" in df.columns else pd.Series("resnet", index=df.index)
    for name, idx in fam.groupby(fam.astype(str), sort=False).groups.items():
        try:
            family = get_family(name)
        except ConfigError as exc:
            first = df.index.get_loc(idx[0])
            raise ConfigError(f"{what}: row {first}: {exc}") from None
        cols = [c for c in family.columns if c in df.columns]
        sub = df.loc[idx, cols]
        uniq = sub.drop_duplicates()
        bad = []
        for i, row in zip(uniq.index, uniq.to_dict(orient="records"), strict=True):
            row = {k: v for k, v in row.items() if not (np.isscalar(v) and pd.isna(v))}
            row["family"] = name
            try:
                family.from_row(row)
            except (ConfigError, ValueError, TypeError, KeyError) as exc:
                bad.append((i, exc))
        if bad:
            i, exc = bad[0]
            more = f" ({len(bad) - 1} more invalid config(s))" if len(bad) > 1 else ""
            reason = f"missing column {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ConfigError(f"{what}: row {df.index.get_loc(i)}: {reason}{more}")


def build_model(config):
    """Build the network of a config of any registered family, in eval mode (fp32, CPU)."""
    return get_family(config.family).build_model(config)


def add_config_ids(df: pd.DataFrame) -> pd.DataFrame:
    """Return a copy of ``df`` with a ``config_id`` column (per family, vectorised)."""
    out = df.copy()
    fam = out["family"] if "family" in out else pd.Series("resnet", index=out.index)
    ids = pd.Series(index=out.index, dtype=object)
    for name, idx in fam.groupby(fam, sort=False).groups.items():
        ids.loc[idx] = get_family(name).config_ids(out.loc[idx])
    out["config_id"] = ids.astype(str)
    return out


# --------------------------------------------------------------------------- grids
def paper_grid() -> pd.DataFrame:
    """The paper's full grid: 17,280 ResNet configurations with a stable ``config_id``.

    Returns
    -------
    pandas.DataFrame
        Columns ``config_id`` + :data:`RESNET_COLUMNS`, in a fixed order.
    """
    arch = list(STAGE_BLOCKS)
    idx = pd.MultiIndex.from_product(
        [range(len(arch)), WIDTHS, EARLY_DOWNSAMPLE, RESOLUTIONS, BATCH_SIZES, PRECISIONS],
        names=["arch", "width", "early_downsample", "resolution", "batch", "precision"],
    )
    df = idx.to_frame(index=False)
    df.insert(0, "block", [arch[i][0] for i in df["arch"]])
    df.insert(1, "depth", [arch[i][1] for i in df["arch"]])
    df = df.drop(columns="arch")
    df.insert(0, "family", "resnet")
    df["num_classes"] = 1000
    df = df.astype({"depth": "int64", "width": "float64", "early_downsample": bool,
                    "resolution": "int64", "batch": "int64", "num_classes": "int64"})
    df = add_config_ids(df[list(RESNET_COLUMNS)])
    return df[["config_id", *RESNET_COLUMNS]]


def extended_sample(
    n: int,
    seed: int = 0,
    resolutions: tuple[int, ...] = (32, 48, 64, 80, 96, 112, 128, 160, 192, 224),
    batch_sizes: tuple[int, ...] = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256,
                                    384, 512),
) -> pd.DataFrame:
    """A seeded random sample of ``n`` configs of an extended ResNet space.

    Same architectures, widths, stems and precisions as the paper's grid, with more input
    resolutions and batch sizes (each validated against :data:`RESOLUTION_RANGE` /
    :data:`BATCH_RANGE`). Duplicates are possible for large ``n``; ``config_id`` identifies them.
    """
    for r in resolutions:
        _check_range("resolution", int(r), RESOLUTION_RANGE, RESOLUTIONS)
    for b in batch_sizes:
        _check_range("batch", int(b), BATCH_RANGE, BATCH_SIZES)
    rng = np.random.default_rng(seed)
    arch = np.array(list(STAGE_BLOCKS), dtype=object)
    a = rng.integers(len(arch), size=n)
    df = pd.DataFrame(
        {
            "family": "resnet",
            "block": [arch[i][0] for i in a],
            "depth": np.array([arch[i][1] for i in a], dtype=np.int64),
            "width": rng.choice(np.array(WIDTHS), size=n),
            "early_downsample": rng.choice(np.array(EARLY_DOWNSAMPLE), size=n),
            "resolution": rng.choice(np.array(resolutions, dtype=np.int64), size=n),
            "batch": rng.choice(np.array(batch_sizes, dtype=np.int64), size=n),
            "precision": rng.choice(np.array(PRECISIONS), size=n),
            "num_classes": 1000,
        }
    )
    df = add_config_ids(df)
    return df[["config_id", *RESNET_COLUMNS]]


# --------------------------------------------------------------------------- tiers / sampling
def batch_tier(batch: pd.Series | np.ndarray) -> np.ndarray:
    """The paper's batch tiers: ``b<=4``, ``b<=16``, ``b<=128``, ``b>128``."""
    b = np.asarray(batch)
    return np.asarray(BATCH_TIER_LABELS, dtype=object)[np.searchsorted(BATCH_TIER_EDGES, b)]


def depth_tier(depth: pd.Series | np.ndarray) -> np.ndarray:
    """Depth tiers: ``shallow`` (<=14), ``medium`` (18-34), ``deep`` (50-101), ``very_deep``."""
    d = np.asarray(depth, dtype=float)
    return np.select(
        [d <= 14, d <= 34, d <= 101], ["shallow", "medium", "deep"], default="very_deep"
    ).astype(object)


def strata(df: pd.DataFrame) -> pd.Series:
    """Stratum label of each row: family/block x depth tier x batch tier x precision."""
    fam = df["family"] if "family" in df else pd.Series("resnet", index=df.index)
    block = df["block"] if "block" in df else fam
    depth = depth_tier(df["depth"]) if "depth" in df else np.full(len(df), "-", dtype=object)
    parts = [
        fam.astype(str).to_numpy(), block.astype(str).to_numpy(), depth,
        batch_tier(df["batch"]), df["precision"].astype(str).to_numpy(),
    ]
    lab = parts[0]
    for p in parts[1:]:
        lab = lab + "|" + p
    return pd.Series(lab, index=df.index, name="stratum")


def stratified_sample(df: pd.DataFrame, n: int, seed: int = 0) -> pd.DataFrame:
    """A seeded sample of ``n`` rows balanced over :func:`strata`.

    Strata are filled round-robin (every stratum gets its k-th row before any gets its
    (k+1)-th), so a sample of a few hundred covers every block, depth tier, batch tier and
    precision. Rows keep their original index; the result is in sampling order.

    Raises
    ------
    ValueError
        If ``n`` is negative or larger than ``len(df)``.
    """
    if n < 0 or n > len(df):
        raise ValueError(f"n={n} must be between 0 and the number of rows ({len(df)})")
    rng = np.random.default_rng(seed)
    key = rng.random(len(df))
    lab = strata(df).to_numpy()
    order = pd.DataFrame({"lab": lab, "key": key})
    order["rank"] = order.groupby("lab")["key"].rank(method="first")
    pos = np.lexsort((order["key"].to_numpy(), order["rank"].to_numpy()))[:n]
    return df.iloc[pos]
