"""Family ``resnet`` — the paper's grid (arXiv 2608.10506), ResNet-style networks.

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
17,280 configurations (:func:`paper_grid`). Resolutions and batch sizes outside the grid are
valid (:data:`RESOLUTION_RANGE`, :data:`BATCH_RANGE`), e.g. for screening an extended space
(:func:`extended_sample`).

Static features (:func:`resnet_static_features`; columns in :mod:`carb_lib.dataset.features`) are
computed once per unique architecture x resolution and scaled by batch and bytes per element;
:func:`measured_resnet_features` measures them on the built model, and they agree exactly. The
family also fills :data:`carb_lib.core.vocab.EXTRA_STATIC_FEATURES` (definitions in
:mod:`carb_lib.families._layers`): no depthwise conv or SE block (``n_dwconv``, ``n_se``,
``se_flops``, ``dw_flops_share`` are 0), ``n_pool`` = the stem's max-pool (early downsampling)
+ the global average pool, ``n_add`` = one residual add per block, ``memory_bound_bytes`` =
inputs + output of every BN, ReLU (in place: 2x its tensor), pooling and residual add (in
place: 3x its output) call.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.vocab import COMMON_CONFIG_COLUMNS, EXTRA_STATIC_FEATURES, PRECISIONS
from carb_lib.families._alloc import ALLOC_UNIT_COLUMNS, AllocWalk, alloc_feature_columns
from carb_lib.families._base import ConfigColumn, ConfigError, Family
from carb_lib.families._common import (
    BATCH_RANGE,
    BATCH_SIZES,
    EXTRA_UNIT_COLUMNS,
    UNIT_COLUMNS,
    broadcast_rows,
    bytes_per_element,
    check_columns,
    check_int,
    check_precision,
    check_range,
    content_hash,
    equals,
    factorize_rows,
    family_rows,
    flag,
    fmt_float,
    measure_meta_model,
    meta_model,
    number,
    scale_extra_units,
    scale_units,
)
from carb_lib.families._resnet_torch import resnet_modules

FAMILY = "resnet"

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
RESOLUTION_RANGE: tuple[int, int] = (8, 1024)
EXPANSION: dict[str, int] = {"basic": 1, "bottleneck": 4}
NUM_CLASSES = 1000

#: The family's own config columns (besides the common ones).
OWN_COLUMNS: tuple[ConfigColumn, ...] = (
    ConfigColumn("block", "str", "basic | bottleneck"),
    ConfigColumn("depth", "int", "weighted layers", nonneg=True),
    ConfigColumn("width", "float", "width multiplier", nonneg=True),
    ConfigColumn("early_downsample", "bool"),
)
#: Config columns of the family, in order (``config_id`` comes first in frames).
RESNET_COLUMNS: tuple[str, ...] = (
    COMMON_CONFIG_COLUMNS[0], *(c.name for c in OWN_COLUMNS), *COMMON_CONFIG_COLUMNS[1:]
)
#: Columns a table must carry for ResNet rows (``num_classes`` defaults to 1000).
REQUIRED_COLUMNS: tuple[str, ...] = RESNET_COLUMNS[1:-1]
#: The learners' encoding of the own columns (:func:`encode_resnet_config`).
MATRIX_COLUMNS: tuple[str, ...] = ("block_bottleneck", "depth", "width", "early_downsample")
#: Their value in rows of other families.
NOT_APPLICABLE: float = -1.0
#: The campaigns' drift reference: cheap on a CPU (a few ms), launch-bound on a large GPU.
REFERENCE_CONFIG: dict[str, Any] = {
    "family": FAMILY, "block": "basic", "depth": 18, "width": 0.5, "early_downsample": True,
    "resolution": 64, "batch": 8, "precision": "fp32", "num_classes": NUM_CLASSES,
}  # fmt: skip


def stage_widths(width: float, n_stages: int = 4) -> tuple[int, ...]:
    """Channel widths of the stages for a width multiplier (multiple of 8, at least 8)."""
    return tuple(max(8, int(math.floor(b * width / 8 + 0.5)) * 8) for b in BASE_WIDTHS[:n_stages])


# --------------------------------------------------------------------------- config
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
    num_classes: int = NUM_CLASSES
    family: str = field(default=FAMILY, init=False)

    def __post_init__(self) -> None:
        if self.block not in BLOCKS:
            raise ConfigError(f"block={self.block!r} is unknown; valid values: {list(BLOCKS)}")
        depth = check_int("depth", self.depth)
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
        resolution = check_int("resolution", self.resolution)
        check_range("resolution", resolution, RESOLUTION_RANGE, RESOLUTIONS)
        batch = check_int("batch", self.batch)
        check_range("batch", batch, BATCH_RANGE, BATCH_SIZES)
        check_precision(self.precision)
        num_classes = check_int("num_classes", self.num_classes)
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
        """Build the network (see :func:`build_resnet`)."""
        return build_resnet(self)


def resnet_config_id(
    block: str, depth: int, width: float, early_downsample: bool,
    resolution: int, batch: int, precision: str, num_classes: int = NUM_CLASSES,
) -> str:
    """The content hash of a ResNet config (see :attr:`ResNetConfig.config_id`)."""
    canonical = (
        f"{FAMILY}|block={block}|depth={int(depth)}|width={fmt_float(width)}"
        f"|early_downsample={'true' if early_downsample else 'false'}"
        f"|resolution={int(resolution)}|batch={int(batch)}|precision={precision}"
        f"|num_classes={int(num_classes)}"
    )
    return content_hash(canonical)


def resnet_config_ids(df: pd.DataFrame) -> list[str]:
    """Content hashes of every row of ``df`` (ResNet config columns; ``num_classes`` may be
    absent or missing: 1000)."""
    check_columns(df, REQUIRED_COLUMNS, FAMILY)
    cols = [df[c].tolist() for c in REQUIRED_COLUMNS]
    nc = df["num_classes"].fillna(NUM_CLASSES) if "num_classes" in df else None
    cols.append([NUM_CLASSES] * len(df) if nc is None else nc.tolist())
    return [resnet_config_id(*vals) for vals in zip(*cols, strict=True)]


def resnet_from_row(row: Mapping[str, Any]) -> ResNetConfig:
    """Validate one row (mapping) into a :class:`ResNetConfig` (``num_classes`` defaults)."""
    missing = [c for c in REQUIRED_COLUMNS if c not in row]
    if missing:
        raise ConfigError(f"resnet config is missing column(s) {missing}")
    num_classes = row.get("num_classes", NUM_CLASSES)
    if num_classes is None or (isinstance(num_classes, float) and math.isnan(num_classes)):
        num_classes = NUM_CLASSES
    return ResNetConfig(
        block=row["block"], depth=row["depth"], width=row["width"],
        early_downsample=row["early_downsample"], resolution=row["resolution"],
        batch=row["batch"], precision=row["precision"], num_classes=num_classes,
    )


# --------------------------------------------------------------------------- model
def build_resnet(config: ResNetConfig):
    """Build the ResNet of ``config`` (fp32, CPU, eval mode; see the module docstring)."""
    basic, bottleneck, resnet = resnet_modules()
    block_cls = basic if config.block == "basic" else bottleneck
    model = resnet(
        block_cls, config.stage_blocks, config.stage_widths, config.early_downsample,
        config.num_classes,
    )
    return model.eval()


# --------------------------------------------------------------------------- features
def _out(h: int, k: int, s: int, p: int) -> int:
    return (h + 2 * p - k) // s + 1


@lru_cache(maxsize=4096)
def _resnet_unit(
    block: str, depth: int, width: float, early_downsample: bool, resolution: int,
    num_classes: int,
) -> tuple[float, ...]:
    """Per-sample counts of one ResNet architecture at one resolution (:data:`UNIT_COLUMNS`
    then :data:`EXTRA_UNIT_COLUMNS`: no depthwise conv, no SE; pools, one residual add per
    block, memory-bound elements read and written by BN, ReLU, pooling and the adds), then the
    allocator model's :data:`~carb_lib.families._alloc.ALLOC_UNIT_COLUMNS`.

    The allocator walk follows the eager forward of :mod:`carb_lib.families._resnet_torch`:
    the caller holds the input; the stem's output is referenced until the last stage returns
    and a stage's input until the stage returns (they are arguments of ``nn.Sequential``
    calls); a block's input and its identity are referenced until the block returns; in
    ``out = bn(conv(out))`` the old ``out`` is still referenced while the BN runs; the last
    stage's output is referenced until the classifier returns. ``peak_act_bytes`` (the
    ``live`` calls) keeps its simpler estimate.
    """
    blocks = STAGE_BLOCKS[(block, depth)]
    widths = stage_widths(width, len(blocks))
    exp = EXPANSION[block]
    n = {"conv": 0, "bn": 0, "act": 0, "fc": 0, "pool": 0, "add": 0}
    macs = params = act = mb = 0
    max_c = 0
    peak = 0
    inp = 3 * resolution * resolution  # the input batch stays alive (the caller holds it)
    mem = AllocWalk()

    def conv(cin, cout, k, s, p, h, live):
        nonlocal macs, params, act, max_c
        ho = _out(h, k, s, p)
        n["conv"] += 1
        macs += cout * ho * ho * cin * k * k
        params += cout * cin * k * k
        act += cout * ho * ho
        max_c = max(max_c, cout)
        mem.conv(live, cin, cout, k, s, p, 1, h, ho)
        return ho, cout * ho * ho

    def bn(c, elems, live):
        nonlocal params, act, mb
        n["bn"] += 1
        params += 2 * c
        act += elems
        mb += 2 * elems
        mem.bn(live, c, elems)

    def relu(elems):
        nonlocal act, mb
        n["act"] += 1
        act += elems
        mb += 2 * elems  # in place: reads and writes its tensor

    def live(*elems):
        nonlocal peak
        peak = max(peak, inp + sum(elems))

    # stem
    c0 = widths[0]
    if early_downsample:
        h, e = conv(3, c0, 7, 2, 3, resolution, inp)
    else:
        h, e = conv(3, c0, 3, 1, 1, resolution, inp)
    live(e)  # conv reads the input (already counted) and writes e
    bn(c0, e, inp + e)
    live(e, e)
    relu(e)
    x = e
    if early_downsample:
        h2 = _out(h, 3, 2, 1)
        e2 = c0 * h2 * h2
        act += e2
        n["pool"] += 1
        mb += x + e2
        live(x, e2)
        mem.maxpool(inp + x, e2)
        h, x = h2, e2
    cin = c0
    # stages; the stem's output is referenced until the stages return, each stage's input
    # until the stage returns (nn.Sequential's arguments)
    stem_out = x

    def totals() -> tuple:
        return (*n.values(), macs, params, act, mb, mem.buffer_elems, mem.n_buffers)

    def repeat(before: tuple, times: int) -> None:
        """Count the last block ``times`` more (its sums since ``before``); its ops add no
        allocator candidate (the same geometries at the same live bytes) and no new peak."""
        nonlocal macs, params, act, mb
        d = [b - a for a, b in zip(before, totals(), strict=True)]
        for k, dk in zip(n, d, strict=False):
            n[k] += dk * times
        m = len(n)
        macs, params, act, mb = (v + dk * times for v, dk in
                                 zip((macs, params, act, mb), d[m:m + 4], strict=True))
        mem.buffer_elems += d[m + 4] * times
        mem.n_buffers += d[m + 5] * times

    for i, (nb, w) in enumerate(zip(blocks, widths, strict=True)):
        stage_in = x
        # blocks 2.. of a stage repeat block 1 exactly (stride 1, no projection, the same
        # shapes and live bytes): walk blocks 0 and 1, then count block 1 nb - 2 more times
        for j in range(min(nb, 2)):
            if j == 1:
                before = totals()
            s = 2 if (i > 0 and j == 0) else 1
            cout = w * exp
            xin = x
            base = inp + (stem_out if i > 0 else 0) + (stage_in if j > 0 else 0) + xin
            if s != 1 or cin != cout:
                hd, ed = conv(cin, cout, 1, s, 0, h, base)
                live(xin, ed)
                bn(cout, ed, base + ed)
                live(xin, ed, ed)
                held = ed  # the projected shortcut is held while the branch runs
            else:
                held = 0
            base += held
            if block == "basic":
                h1, e1 = conv(cin, w, 3, s, 1, h, base)
                live(xin, held, e1)
                bn(w, e1, base + e1)
                live(xin, held, e1, e1)
                relu(e1)
                h2, e2 = conv(w, cout, 3, 1, 1, h1, base + e1)
                live(xin, held, e1, e2)
                bn(cout, e2, base + e1 + e2)
                live(xin, held, e2, e2)
            else:
                h1, e1 = conv(cin, w, 1, 1, 0, h, base)
                live(xin, held, e1)
                bn(w, e1, base + e1)
                live(xin, held, e1, e1)
                relu(e1)
                hm, em = conv(w, w, 3, s, 1, h1, base + e1)
                live(xin, held, e1, em)
                bn(w, em, base + e1 + em)
                live(xin, held, em, em)
                relu(em)
                h2, e2 = conv(w, cout, 1, 1, 0, hm, base + em)
                live(xin, held, em, e2)
                bn(cout, e2, base + em + e2)
                live(xin, held, e2, e2)
            n["add"] += 1
            mb += 3 * e2  # the in-place residual add reads two tensors, writes one
            relu(e2)  # after the in-place residual add
            h, x, cin = h2, e2, cout
        if nb > 2:
            repeat(before, nb - 2)
    # head
    act += cin  # adaptive average pool output (C x 1 x 1)
    n["pool"] += 1
    mb += x + cin
    live(x, cin)
    mem.global_pool(inp + x, cin, x)
    n["fc"] += 1
    macs += cin * num_classes
    params += cin * num_classes + num_classes
    act += num_classes
    live(cin, num_classes)
    mem.new(inp + x + cin, num_classes)
    return (n["conv"], n["bn"], n["act"], n["fc"], max_c, macs, params, act, peak,
            0, n["pool"], n["add"], 0, 0, 0, mb, *mem.unit())


def resnet_op_list(row: Mapping[str, Any]) -> list[tuple]:
    """The operators of ``row``'s ResNet per image (:data:`carb_lib.kernels.law.OP_COLUMNS`): those
    of the eager forward of :mod:`carb_lib.families._resnet_torch`, equal as a multiset to those
    recorded on the built model (a projection shortcut is listed before its block's branch;
    summed kernel times do not depend on the order)."""
    cfg = resnet_from_row({**row, "batch": 1, "precision": "fp32"})
    blocks, widths = cfg.stage_blocks, cfg.stage_widths
    exp = EXPANSION[cfg.block]
    ops: list[tuple] = []

    def conv(cin: int, cout: int, k: int, s: int, p: int, h: int) -> int:
        ho = _out(h, k, s, p)
        ops.append(("conv", cin, cout, k, s, p, 1, h, ho))
        return ho

    def eltwise(kind: str, c: int, h: int) -> None:
        ops.append((kind, c, c, 1, 1, 0, 1, h, h))

    c0 = widths[0]
    stem = (7, 2, 3) if cfg.early_downsample else (3, 1, 1)
    h = conv(3, c0, *stem, cfg.resolution)
    eltwise("bn", c0, h)
    eltwise("relu", c0, h)
    if cfg.early_downsample:
        h2 = _out(h, 3, 2, 1)
        ops.append(("maxpool", c0, c0, 3, 2, 1, 1, h, h2))
        h = h2
    cin = c0
    for i, (nb, w) in enumerate(zip(blocks, widths, strict=True)):
        for j in range(nb):
            s = 2 if (i > 0 and j == 0) else 1
            cout = w * exp
            if s != 1 or cin != cout:
                eltwise("bn", cout, conv(cin, cout, 1, s, 0, h))
            if cfg.block == "basic":
                h1 = conv(cin, w, 3, s, 1, h)
                eltwise("bn", w, h1)
                eltwise("relu", w, h1)
                h2 = conv(w, cout, 3, 1, 1, h1)
            else:
                h1 = conv(cin, w, 1, 1, 0, h)
                eltwise("bn", w, h1)
                eltwise("relu", w, h1)
                hm = conv(w, w, 3, s, 1, h1)
                eltwise("bn", w, hm)
                eltwise("relu", w, hm)
                h2 = conv(w, cout, 1, 1, 0, hm)
            eltwise("bn", cout, h2)
            eltwise("add", cout, h2)
            eltwise("relu", cout, h2)
            h, cin = h2, cout
    ops.append(("avgpool", cin, cin, 1, 1, 0, 1, h, 1))
    ops.append(("linear", cin, cfg.num_classes, 1, 1, 0, 1, 1, 1))
    return ops


#: Per-sample quantities of :func:`_resnet_unit`.
RESNET_UNIT_COLUMNS: tuple[str, ...] = (*UNIT_COLUMNS, *EXTRA_UNIT_COLUMNS)


def _units_frame(df: pd.DataFrame, unit_fn, key_cols: list[str], validate=None
                 ) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Evaluate ``unit_fn`` once per unique key and broadcast the result to every row.

    ``validate(row_label, unique_row)`` may raise a :class:`ConfigError` naming the first row
    that carries an invalid key. Returns the broadcast :data:`RESNET_UNIT_COLUMNS`, the
    allocator columns per unique key and every row's key code.
    """
    codes, uniq = factorize_rows(df, key_cols)
    rows = []
    for label, u in zip(uniq.index, uniq.itertuples(index=False), strict=True):
        if validate is not None:
            validate(label, u)
        rows.append(unit_fn(*u))
    nu = len(RESNET_UNIT_COLUMNS)
    table = np.array(rows, dtype=np.float64).reshape(len(uniq), nu + len(ALLOC_UNIT_COLUMNS))
    units = broadcast_rows(table[:, :nu], codes, list(RESNET_UNIT_COLUMNS), df.index)
    return units, table[:, nu:], codes


def resnet_static_features(df: pd.DataFrame) -> pd.DataFrame:
    """Analytic static features of ResNet-family rows (see :mod:`carb_lib.dataset.features`).

    Raises
    ------
    ConfigError
        Naming the row and value of a config outside the design space or a missing column.
    """
    check_columns(df, REQUIRED_COLUMNS, FAMILY)
    key = pd.DataFrame(
        {
            "block": df["block"],
            "depth": df["depth"].astype(np.int64),
            "width": df["width"].astype(np.float64),
            "early_downsample": df["early_downsample"].astype(bool),
            "resolution": df["resolution"].astype(np.int64),
            "num_classes": (df["num_classes"].fillna(NUM_CLASSES).astype(np.int64)
                            if "num_classes" in df else NUM_CLASSES),
        },
        index=df.index,
    )  # fmt: skip

    def validate(label, u):
        if (u.block, u.depth) not in STAGE_BLOCKS:
            raise ConfigError(
                f"row {label!r}: (block, depth)=({u.block!r}, {u.depth!r}) is not in the design "
                f"space; valid: {sorted(STAGE_BLOCKS)}"
            )

    units, alloc, codes = _units_frame(key, _resnet_unit, list(key.columns), validate=validate)
    batch, bpe = df["batch"].to_numpy(), bytes_per_element(df["precision"])
    out = scale_units(units, batch, bpe)
    extra = scale_extra_units(units, batch.astype(np.float64), bpe, out["flops"].to_numpy())
    for c in EXTRA_STATIC_FEATURES:
        out[c] = extra[c].to_numpy()
    for name, values in alloc_feature_columns(alloc, codes, units["params"].to_numpy(),
                                              df["precision"], batch, bpe).items():
        out[name] = values
    return out


def measured_resnet_features(config: ResNetConfig, model=None) -> dict[str, int]:
    """Measure the static features of ``config`` on its model built on the ``meta`` device.

    Every leaf module is hooked (conv, BN, ReLU, pooling, linear); residual adds are seen by a
    dispatch mode (:func:`carb_lib.families._common.measure_meta_model`). ``model`` may be the
    config's network already built on the ``meta`` device at its precision (reused across
    batch sizes and resolutions).
    """
    if model is None:
        model = meta_model(config)
    leaves = [m for m in model.modules() if len(list(m.children())) == 0]
    return measure_meta_model(model, config, leaves, extras=EXTRA_STATIC_FEATURES)


# --------------------------------------------------------------------------- learners
def encode_resnet_config(df: pd.DataFrame, rows: np.ndarray | None = None) -> pd.DataFrame:
    """The learners' numeric encoding of the ResNet config columns.

    Parameters
    ----------
    df : pandas.DataFrame
        Rows of any families (validated beforehand).
    rows : numpy.ndarray of bool, optional
        Which rows are ResNet rows; default ``df["family"] == "resnet"``.

    Returns
    -------
    pandas.DataFrame
        float64 columns :data:`MATRIX_COLUMNS`, index-aligned with ``df``: ``block_bottleneck``
        (1.0 for a bottleneck, else 0.0), ``depth``, ``width``, ``early_downsample`` (0/1;
        strings ``"true"``/``"false"``/``"1"``/``"0"`` accepted); :data:`NOT_APPLICABLE`
        (-1.0) in rows of other families. A missing or non-numeric value of a ResNet row is
        NaN.
    """
    mine = family_rows(df, FAMILY, rows)
    n = len(df)
    bottleneck = equals(df["block"], "bottleneck") if "block" in df.columns else np.zeros(n, bool)
    out = {"block_bottleneck": np.where(mine, bottleneck.astype(float), NOT_APPLICABLE)}
    for col, values in (
        ("depth", number(df, "depth")),
        ("width", number(df, "width")),
        ("early_downsample", flag(df, "early_downsample")),
    ):
        out[col] = np.where(mine, values, NOT_APPLICABLE)
    return pd.DataFrame(out, index=df.index, columns=list(MATRIX_COLUMNS))


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
    df.insert(0, "family", FAMILY)
    df["num_classes"] = NUM_CLASSES
    df = df.astype({"depth": "int64", "width": "float64", "early_downsample": bool,
                    "resolution": "int64", "batch": "int64", "num_classes": "int64"})
    df = df[list(RESNET_COLUMNS)]
    df.insert(0, "config_id", resnet_config_ids(df))
    return df


def sample_configs(n: int, seed: int = 0) -> pd.DataFrame:
    """``n`` distinct configs of the paper grid (all of it if ``n`` is larger), seeded, in
    grid order: the family's sampler, as the other families have one."""
    grid = paper_grid()
    if n >= len(grid):
        return grid
    take = np.random.default_rng(seed).choice(len(grid), size=n, replace=False)
    return grid.iloc[np.sort(take)].reset_index(drop=True)


#: Resolutions and batch sizes of the ``extended`` space (69,120 distinct configs).
EXTENDED_RESOLUTIONS: tuple[int, ...] = (32, 48, 64, 80, 96, 112, 128, 160, 192, 224)
EXTENDED_BATCH_SIZES: tuple[int, ...] = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
                                         256, 384, 512)
#: Resolutions (every 2 px from 32 to 512) and batch sizes (every integer from 1 to 1024) of
#: the ``extended-dense`` space: 94,765,056 distinct configs, so that 10,000,000 draws hold
#: ~9.5 million distinct ones (the ``extended`` space repeats itself after 69,120).
DENSE_RESOLUTIONS: tuple[int, ...] = tuple(range(32, 513, 2))
DENSE_BATCH_SIZES: tuple[int, ...] = tuple(range(1, 1025))


def extended_sample(
    n: int,
    seed: int = 0,
    resolutions: tuple[int, ...] = EXTENDED_RESOLUTIONS,
    batch_sizes: tuple[int, ...] = EXTENDED_BATCH_SIZES,
) -> pd.DataFrame:
    """A seeded random sample of ``n`` configs of an extended ResNet space.

    Same architectures, widths, stems and precisions as the paper's grid, with more input
    resolutions and batch sizes (each validated against :data:`RESOLUTION_RANGE` /
    :data:`BATCH_RANGE`). Duplicates are possible for large ``n``; ``config_id`` identifies them.
    :func:`dense_sample` draws from a far larger space.
    """
    for r in resolutions:
        check_range("resolution", int(r), RESOLUTION_RANGE, RESOLUTIONS)
    for b in batch_sizes:
        check_range("batch", int(b), BATCH_RANGE, BATCH_SIZES)
    rng = np.random.default_rng(seed)
    arch = np.array(list(STAGE_BLOCKS), dtype=object)
    a = rng.integers(len(arch), size=n)
    df = pd.DataFrame(
        {
            "family": FAMILY,
            "block": [arch[i][0] for i in a],
            "depth": np.array([arch[i][1] for i in a], dtype=np.int64),
            "width": rng.choice(np.array(WIDTHS), size=n),
            "early_downsample": rng.choice(np.array(EARLY_DOWNSAMPLE), size=n),
            "resolution": rng.choice(np.array(resolutions, dtype=np.int64), size=n),
            "batch": rng.choice(np.array(batch_sizes, dtype=np.int64), size=n),
            "precision": rng.choice(np.array(PRECISIONS), size=n),
            "num_classes": NUM_CLASSES,
        }
    )
    df.insert(0, "config_id", resnet_config_ids(df))
    return df[["config_id", *RESNET_COLUMNS]]


def dense_sample(n: int, seed: int = 0) -> pd.DataFrame:
    """A seeded random sample of ``n`` configs of the ``extended-dense`` space
    (:data:`DENSE_RESOLUTIONS` x :data:`DENSE_BATCH_SIZES`, 94,765,056 configs): large candidate
    sets with few repeats, for screening at scale.

    Examples
    --------
    >>> df = dense_sample(1000, seed=0)
    >>> int(df["config_id"].nunique()) >= 995, int(df["batch"].max()) <= 1024
    (True, True)
    """
    return extended_sample(n, seed, DENSE_RESOLUTIONS, DENSE_BATCH_SIZES)


#: Candidate sets generated by seeded sampling: name (``carb screen --candidates NAME``) ->
#: sampler ``(n, seed=...)``.
SAMPLED_SPACES: dict[str, Callable[..., pd.DataFrame]] = {
    "extended": extended_sample,
    "extended-dense": dense_sample,
}


def depth_tier(depth: pd.Series | np.ndarray) -> np.ndarray:
    """Depth tiers: ``shallow`` (<=14), ``medium`` (18-34), ``deep`` (50-101), ``very_deep``."""
    d = np.asarray(depth, dtype=float)
    return np.select(
        [d <= 14, d <= 34, d <= 101], ["shallow", "medium", "deep"], default="very_deep"
    ).astype(object)


# --------------------------------------------------------------------------- the family
class ResNetFamily(Family):
    """The ``resnet`` family (see the module docstring)."""

    name = FAMILY
    config_type = ResNetConfig
    own_columns = OWN_COLUMNS
    required_columns = REQUIRED_COLUMNS
    categories = {"block": BLOCKS}
    extra_feature_columns = EXTRA_STATIC_FEATURES
    matrix_columns = MATRIX_COLUMNS
    not_applicable = NOT_APPLICABLE
    # columns in every model matrix: the layout of the models fitted before other families
    always_in_matrix = True
    reference_config = REFERENCE_CONFIG

    from_row = staticmethod(resnet_from_row)
    config_ids = staticmethod(resnet_config_ids)
    build_model = staticmethod(build_resnet)
    static_features = staticmethod(resnet_static_features)
    measured_features = staticmethod(measured_resnet_features)
    op_list = staticmethod(resnet_op_list)
    encode_config = staticmethod(encode_resnet_config)

    def depth_label(self, df: pd.DataFrame) -> np.ndarray:
        """Depth tier of every row (:func:`depth_tier`); ``"unknown"`` where depth is missing."""
        d = number(df, "depth")
        return np.where(np.isnan(d), "unknown", depth_tier(d)).astype(object)


#: The family object (registered by :mod:`carb_lib.families`).
RESNET = ResNetFamily()
