"""The MobileNetV2 family (``mobilenetv2``): inverted residual blocks, BN + ReLU6.

The network follows torchvision's ``mobilenet_v2`` (Sandler et al., CVPR 2018), built in the
project (torchvision is not a dependency), with four architecture knobs:

* stem: 3x3 stride-2 conv (``make_divisible(32 * width)`` channels) + BN + ReLU6;
* the standard stage table (expansion t, channels c, blocks n, stride s of the first block)::

      t  c    n  s
      1  16   1  1
      e  24   2  2
      e  32   3  2
      e  64   4  2
      e  96   3  1
      e  160  3  2
      e  320  1  1

  with ``e = expansion`` (6 in the paper), ``c -> make_divisible(c * width)`` and
  ``n -> ceil(n * depth_mult)``;
* an inverted residual block: 1x1 expansion conv + BN + ReLU6 (omitted when t = 1; hidden
  channels ``round(cin * t)``), ``kernel`` x ``kernel`` depthwise conv (stride s on the first
  block of a stage, padding ``(kernel - 1) // 2``) + BN + ReLU6, 1x1 projection conv + BN (no
  activation); the input is added (out of place) when the stride is 1 and cin == cout;
* head: 1x1 conv to ``make_divisible(1280 * max(1, width))`` + BN + ReLU6, global average
  pool, ``Linear(., num_classes)`` (no dropout: inference). Convs have no bias.

``make_divisible`` is :func:`carb_lib.families._config.make_divisible` (multiple of 8). With
expansion 6, kernel 3, width 1, depth 1 and 1000 classes this is MobileNetV2 1.0 (3,504,872
parameters). Grid: 3 expansions x 2 kernels x 5 widths x 4 depth multipliers (120
architectures) x 8 resolutions x 9 batch sizes x 2 precisions = 17,280 configurations.
Static features: see :mod:`carb_lib.families._layers`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np
import pandas as pd

import carb_lib.families._config as C
import carb_lib.families._layers as L
from carb_lib.families._base import ConfigColumn, ConfigError, Family
from carb_lib.families._common import BATCH_SIZES
from carb_lib.vocab import EXTRA_STATIC_FEATURES

FAMILY = "mobilenetv2"
EXPANSIONS: tuple[int, ...] = (3, 4, 6)
KERNELS: tuple[int, ...] = (3, 5)
WIDTHS: tuple[float, ...] = (0.35, 0.5, 0.75, 1.0, 1.4)
DEPTH_MULTS: tuple[float, ...] = (0.5, 0.75, 1.0, 1.25)
#: Architecture columns and their valid values.
SPACE: dict[str, tuple] = {"expansion": EXPANSIONS, "kernel": KERNELS, "width": WIDTHS,
                           "depth_mult": DEPTH_MULTS}
ARCH_COLUMNS: tuple[str, ...] = tuple(SPACE)
#: Config columns of the family, in order (``config_id`` comes first in frames).
COLUMNS: tuple[str, ...] = ("family", *ARCH_COLUMNS, *C.COMMON_COLUMNS)
RESOLUTIONS: tuple[int, ...] = C.RESOLUTIONS
#: The family's own config columns (besides the common ones), for the protocol and schema.
OWN_COLUMNS: tuple[ConfigColumn, ...] = C.own_columns(SPACE, {"expansion": "expansion factor of the inverted residual blocks", "kernel": "depthwise kernel size", "width": "channel multiplier", "depth_mult": "blocks-per-stage multiplier"})
#: Columns a table must carry for mobilenetv2 rows (``num_classes`` defaults to 1000).
REQUIRED_COLUMNS: tuple[str, ...] = (*ARCH_COLUMNS, "resolution", "batch", "precision")
#: The learners' encoding of the own columns (:func:`encode_config`).
MATRIX_COLUMNS: tuple[str, ...] = tuple(f"{FAMILY}_{c}" for c in ARCH_COLUMNS)
#: Their value in rows of other families.
NOT_APPLICABLE: float = -1.0
#: (expansion, channels, blocks, stride) per stage; ``None``: the config's ``expansion``.
STAGES: tuple[tuple[int | None, int, int, int], ...] = (
    (1, 16, 1, 1), (None, 24, 2, 2), (None, 32, 3, 2), (None, 64, 4, 2), (None, 96, 3, 1),
    (None, 160, 3, 2), (None, 320, 1, 1),
)
STEM_CHANNELS = 32
LAST_CHANNELS = 1280


@dataclass(frozen=True)
class MobileNetV2Config(C.ConfigMixin):
    """One MobileNetV2 network at one input size, batch and precision (validated).

    Parameters
    ----------
    expansion : int
        Expansion factor of every stage but the first (:data:`EXPANSIONS`).
    kernel : int
        Depthwise kernel size (:data:`KERNELS`).
    width : float
        Channel multiplier (:data:`WIDTHS`).
    depth_mult : float
        Blocks-per-stage multiplier (:data:`DEPTH_MULTS`), rounded up.
    resolution : int
        Square input side (grid :data:`RESOLUTIONS`; any in ``_config.RESOLUTION_RANGE``).
    batch : int
        Batch size (grid ``carb_lib.families._common.BATCH_SIZES``; any in ``BATCH_RANGE``).
    precision : {"fp32", "fp16"}
    num_classes : int
        Classifier outputs (1000).
    """

    ARCH_COLUMNS: ClassVar[tuple[str, ...]] = ARCH_COLUMNS
    expansion: int
    kernel: int
    width: float
    depth_mult: float
    resolution: int
    batch: int
    precision: str
    num_classes: int = 1000
    family: str = field(default=FAMILY, init=False)

    def __post_init__(self) -> None:
        for c in ARCH_COLUMNS:
            object.__setattr__(self, c, C.check_choice(c, getattr(self, c), SPACE[c]))
        C.validate_common(self)

    @property
    def blocks(self) -> tuple[tuple[int, int, int, int, int], ...]:
        """``(cin, t, hidden, cout, stride)`` of every inverted residual block."""
        return block_plan(self.expansion, self.width, self.depth_mult)

    def build_model(self):
        """Build the network (see :func:`build_model`)."""
        return build_model(self)


@lru_cache(maxsize=256)
def block_plan(expansion: int, width: float, depth_mult: float
               ) -> tuple[tuple[int, int, int, int, int], ...]:
    """``(cin, t, hidden, cout, stride)`` of every block for the architecture knobs."""
    cin = C.make_divisible(STEM_CHANNELS * width)
    out = []
    for t, c, n, s in STAGES:
        t = expansion if t is None else t
        cout = C.make_divisible(c * width)
        for i in range(C.round_repeats(n, depth_mult)):
            out.append((cin, t, int(round(cin * t)), cout, s if i == 0 else 1))
            cin = cout
    return tuple(out)


def last_channels(width: float) -> int:
    """Channels of the head's 1x1 conv."""
    return C.make_divisible(LAST_CHANNELS * max(1.0, width))


def config_from_row(row: Mapping[str, Any]) -> MobileNetV2Config:
    """Validate one row (mapping) into a :class:`MobileNetV2Config` (``num_classes``: 1000)."""
    return MobileNetV2Config(**C.row_kwargs(row, FAMILY, ARCH_COLUMNS))


def config_ids(df: pd.DataFrame) -> list[str]:
    """Content hashes of every row (vectorised over unique rows)."""
    return C.config_ids(df, FAMILY, COLUMNS[1:])


def grid(resolutions: tuple[int, ...] = RESOLUTIONS,
         batch_sizes: tuple[int, ...] = BATCH_SIZES) -> pd.DataFrame:
    """The full grid (17,280 configs by default): ``config_id`` + :data:`COLUMNS`."""
    return C.grid_frame(FAMILY, SPACE, resolutions, batch_sizes)


def sample_configs(n: int, seed: int = 0, resolutions: tuple[int, ...] = RESOLUTIONS,
                   batch_sizes: tuple[int, ...] = BATCH_SIZES) -> pd.DataFrame:
    """``n`` seeded random configs (every column uniform over its values)."""
    return C.sample_frame(FAMILY, SPACE, n, seed, resolutions, batch_sizes)


# --------------------------------------------------------------------------- model
def build_model(config: MobileNetV2Config):
    """Build the network of ``config`` (fp32, eval mode, default device; see module docstring).

    Build under ``with torch.device("meta"):`` to count without allocating.
    """
    t = L.torch_layers()
    nn = t.nn
    stem = C.make_divisible(STEM_CHANNELS * config.width)
    layers = [t.conv_bn_act(3, stem, 3, 2)]
    for cin, ratio, hidden, cout, stride in config.blocks:
        body = [t.conv_bn_act(cin, hidden, 1)] if ratio != 1 else []
        body += [t.conv_bn_act(hidden, hidden, config.kernel, stride, groups=hidden),
                 t.conv_bn_act(hidden, cout, 1, act=None)]
        body = nn.Sequential(*body)
        layers.append(t.Residual(body) if stride == 1 and cin == cout else body)
    last = last_channels(config.width)
    layers.append(t.conv_bn_act(config.blocks[-1][3], last, 1))
    return t.Classifier(nn.Sequential(*layers), last, config.num_classes).eval()


# --------------------------------------------------------------------------- features
def _walk(expansion: int, kernel: int, width: float, depth_mult: float, resolution: int,
          num_classes: int) -> L.Tally:
    """The analytic forward pass of one architecture at one resolution: counts and operators."""
    t = L.Tally(resolution, act="relu6")
    t.conv(C.make_divisible(STEM_CHANNELS * width), 3, 2)
    t.bn()
    t.activation()
    for cin, ratio, hidden, cout, stride in block_plan(expansion, width, depth_mult):
        t.push()
        if ratio != 1:
            t.conv(hidden, 1)
            t.bn()
            t.activation()
        t.conv(hidden, kernel, stride, groups=hidden)
        t.bn()
        t.activation()
        t.conv(cout, 1)
        t.bn()
        t.pop(add=stride == 1 and cin == cout)
    t.conv(last_channels(width), 1)
    t.bn()
    t.activation()
    t.pool()
    t.fc(num_classes)
    return t


@lru_cache(maxsize=16384)
def _unit(expansion: int, kernel: int, width: float, depth_mult: float, resolution: int,
          num_classes: int) -> tuple[int, ...]:
    """Per-sample counts of one architecture at one resolution (``_layers.UNIT_COLUMNS``)."""
    return _walk(expansion, kernel, width, depth_mult, resolution, num_classes).unit()


def op_list(row: Mapping[str, Any]) -> list[tuple]:
    """The operators of ``row``'s network per image (:data:`carb_lib.kernels.OP_COLUMNS`),
    from the analytic pass (equal to those recorded on the built model)."""
    c = config_from_row({**row, "batch": 1, "precision": "fp32"})
    return _walk(c.expansion, c.kernel, c.width, c.depth_mult, c.resolution, c.num_classes).ops


def static_features(df: pd.DataFrame) -> pd.DataFrame:
    """Analytic static features of mobilenetv2 rows (vectorised over unique arch x resolution).

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
    """
    return L.static_frame(df, FAMILY, ARCH_COLUMNS, _unit, MobileNetV2Config)


def measured_features(config: MobileNetV2Config, model=None) -> dict[str, int | float]:
    """Measure ``_layers.EXACT_COLUMNS`` from the built model on the ``meta`` device.

    Parameters
    ----------
    config : MobileNetV2Config
    model : torch.nn.Module, optional
        ``config``'s network already on the ``meta`` device at its precision (reusable across
        resolutions and batch sizes).
    """
    if model is None:
        model = L.meta_model(config, build_model)
    return L.measure(model, config)


def compare_features(configs: pd.DataFrame) -> pd.DataFrame:
    """Analytic against measured, one row per (config, exact column); see ``_layers.compare``."""
    return L.compare(configs, static_features, config_from_row, measured_features, build_model)


def encode_config(df: pd.DataFrame, rows: np.ndarray | None = None) -> pd.DataFrame:
    """The learners' numeric encoding of the mobilenetv2 config columns.

    Parameters
    ----------
    df : pandas.DataFrame
        Rows of any families (validated beforehand).
    rows : numpy.ndarray of bool, optional
        Which rows are mobilenetv2 rows; default ``df["family"] == "mobilenetv2"``.

    Returns
    -------
    pandas.DataFrame
        float64 columns :data:`MATRIX_COLUMNS` (``mobilenetv2_<column>`` for every column of
        :data:`SPACE`), index-aligned with ``df``; :data:`NOT_APPLICABLE`
        (-1.0) in rows of other families.
    """
    return C.encode_numeric(df, FAMILY, SPACE, MATRIX_COLUMNS, NOT_APPLICABLE, rows)


# --------------------------------------------------------------------------- the family
class MobileNetV2Family(Family):
    """The ``mobilenetv2`` family (see the module docstring)."""

    name = FAMILY
    config_type = MobileNetV2Config
    own_columns = OWN_COLUMNS
    required_columns = REQUIRED_COLUMNS
    categories = {}
    extra_feature_columns = EXTRA_STATIC_FEATURES
    matrix_columns = MATRIX_COLUMNS
    not_applicable = NOT_APPLICABLE

    from_row = staticmethod(config_from_row)
    config_ids = staticmethod(config_ids)
    build_model = staticmethod(build_model)
    static_features = staticmethod(static_features)
    measured_features = staticmethod(measured_features)
    encode_config = staticmethod(encode_config)
    op_list = staticmethod(op_list)


#: The family object (registered by :mod:`carb_lib.families`).
MOBILENETV2 = MobileNetV2Family()


def family() -> MobileNetV2Family:
    """The registered family object :data:`MOBILENETV2` (the former registry-record factory)."""
    return MOBILENETV2


__all__ = [
    "FAMILY", "EXPANSIONS", "KERNELS", "WIDTHS", "DEPTH_MULTS", "SPACE", "ARCH_COLUMNS",
    "COLUMNS", "RESOLUTIONS", "STAGES", "MobileNetV2Config", "ConfigError", "block_plan",
    "last_channels", "config_from_row", "config_ids", "grid", "sample_configs", "build_model",
    "static_features", "measured_features", "compare_features", "family", "encode_config", "OWN_COLUMNS", "REQUIRED_COLUMNS",
    "MATRIX_COLUMNS", "NOT_APPLICABLE", "MobileNetV2Family", "MOBILENETV2",
]
