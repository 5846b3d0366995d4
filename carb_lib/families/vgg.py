"""The VGG family (``vgg``): plain stacks of 3x3 convs and max-pools, a small head.

The feature extractor follows torchvision's ``vgg11``/``13``/``16``/``19`` (Simonyan &
Zisserman, ICLR 2015; configurations A, B, D, E), built in the project:

* :data:`CFGS` lists the conv widths and ``"M"`` (``MaxPool2d(2, 2)``) of each depth; widths are
  ``make_divisible(v * width)`` (multiple of 8, at least 8);
* every conv is 3x3, stride 1, padding 1, *with bias* (as torchvision, also with BN), followed
  by BN (``batch_norm=True``) and an in-place ReLU.

``depth`` names the configuration (its weighted layers with the original three-FC head); the
network here has ``depth - 3`` convs and **one** FC layer: the original 7x7 x 512 -> 4096 ->
4096 -> classes head (which needs 224 px inputs and holds ~90 % of the parameters) is replaced
by a global average pool (1x1) and ``Linear(c_last, num_classes)``, so that every resolution
from 32 px (five halvings to 1 px) works and the cost is the conv stack's. Grid: 4 depths x 5
widths x 2 BN settings (40 architectures) x 8 resolutions x 9 batch sizes x 2 precisions =
5,760 configurations. Static features: see :mod:`carb_lib.families._layers`.
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

FAMILY = "vgg"
#: Conv widths and max-pools (``"M"``) of each configuration (torchvision ``cfgs`` A/B/D/E).
CFGS: dict[int, tuple[int | str, ...]] = {
    11: (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"),
    13: (64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"),
    16: (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512,
         "M"),
    19: (64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512,
         512, 512, 512, "M"),
}
DEPTHS: tuple[int, ...] = tuple(CFGS)
WIDTHS: tuple[float, ...] = (0.125, 0.25, 0.5, 0.75, 1.0)
BATCH_NORM: tuple[bool, ...] = (True, False)
#: Architecture columns and their valid values.
SPACE: dict[str, tuple] = {"depth": DEPTHS, "width": WIDTHS, "batch_norm": BATCH_NORM}
ARCH_COLUMNS: tuple[str, ...] = tuple(SPACE)
#: Config columns of the family, in order (``config_id`` comes first in frames).
COLUMNS: tuple[str, ...] = ("family", *ARCH_COLUMNS, *C.COMMON_COLUMNS)
RESOLUTIONS: tuple[int, ...] = C.RESOLUTIONS
#: The family's own config columns (besides the common ones), for the protocol and schema.
OWN_COLUMNS: tuple[ConfigColumn, ...] = C.own_columns(SPACE, {"depth": "configuration 11 | 13 | 16 | 19", "width": "channel multiplier", "batch_norm": "BN after every conv"})
#: Columns a table must carry for vgg rows (``num_classes`` defaults to 1000).
REQUIRED_COLUMNS: tuple[str, ...] = (*ARCH_COLUMNS, "resolution", "batch", "precision")
#: The learners' encoding of the own columns (:func:`encode_config`).
MATRIX_COLUMNS: tuple[str, ...] = tuple(f"{FAMILY}_{c}" for c in ARCH_COLUMNS)
#: Their value in rows of other families.
NOT_APPLICABLE: float = -1.0


@dataclass(frozen=True)
class VGGConfig(C.ConfigMixin):
    """One VGG network at one input size, batch and precision (validated).

    Parameters
    ----------
    depth : int
        Configuration 11, 13, 16 or 19 (:data:`CFGS`).
    width : float
        Channel multiplier (:data:`WIDTHS`).
    batch_norm : bool
        BN after every conv.
    resolution : int
        Square input side, at least 32 (grid :data:`RESOLUTIONS`).
    batch : int
        Batch size (grid ``carb_lib.families._common.BATCH_SIZES``; any in ``BATCH_RANGE``).
    precision : {"fp32", "fp16"}
    num_classes : int
        Classifier outputs (1000).
    """

    ARCH_COLUMNS: ClassVar[tuple[str, ...]] = ARCH_COLUMNS
    depth: int
    width: float
    batch_norm: bool
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
    def layers(self) -> tuple[int | str, ...]:
        """Conv widths (scaled) and ``"M"`` pools of the feature extractor."""
        return layer_plan(self.depth, self.width)

    def build_model(self):
        """Build the network (see :func:`build_model`)."""
        return build_model(self)


@lru_cache(maxsize=64)
def layer_plan(depth: int, width: float) -> tuple[int | str, ...]:
    """Conv widths (``make_divisible(v * width)``) and ``"M"`` pools of a configuration."""
    return tuple(v if v == "M" else C.make_divisible(v * width) for v in CFGS[depth])


def config_from_row(row: Mapping[str, Any]) -> VGGConfig:
    """Validate one row (mapping) into a :class:`VGGConfig` (``num_classes``: 1000)."""
    return VGGConfig(**C.row_kwargs(row, FAMILY, ARCH_COLUMNS))


def config_ids(df: pd.DataFrame) -> list[str]:
    """Content hashes of every row (vectorised over unique rows)."""
    return C.config_ids(df, FAMILY, COLUMNS[1:])


def grid(resolutions: tuple[int, ...] = RESOLUTIONS,
         batch_sizes: tuple[int, ...] = BATCH_SIZES) -> pd.DataFrame:
    """The full grid (5,760 configs by default): ``config_id`` + :data:`COLUMNS`."""
    return C.grid_frame(FAMILY, SPACE, resolutions, batch_sizes)


def sample_configs(n: int, seed: int = 0, resolutions: tuple[int, ...] = RESOLUTIONS,
                   batch_sizes: tuple[int, ...] = BATCH_SIZES) -> pd.DataFrame:
    """``n`` seeded random configs (every column uniform over its values)."""
    return C.sample_frame(FAMILY, SPACE, n, seed, resolutions, batch_sizes)


# --------------------------------------------------------------------------- model
def build_model(config: VGGConfig):
    """Build the network of ``config`` (fp32, eval mode, default device; see module docstring).

    Build under ``with torch.device("meta"):`` to count without allocating.
    """
    nn = L.torch_layers().nn
    layers: list = []
    cin = 3
    for v in config.layers:
        if v == "M":
            layers.append(nn.MaxPool2d(2, 2))
            continue
        layers.append(nn.Conv2d(cin, v, 3, padding=1))
        if config.batch_norm:
            layers.append(nn.BatchNorm2d(v))
        layers.append(nn.ReLU(inplace=True))
        cin = v
    return L.torch_layers().Classifier(nn.Sequential(*layers), cin, config.num_classes).eval()


# --------------------------------------------------------------------------- features
def _walk(depth: int, width: float, batch_norm: bool, resolution: int,
          num_classes: int) -> L.Tally:
    """The analytic forward pass of one architecture at one resolution: counts and operators."""
    t = L.Tally(resolution, act="relu")
    for v in layer_plan(depth, width):
        if v == "M":
            t.pool(2, 2)
            continue
        t.conv(v, 3, bias=True)
        if batch_norm:
            t.bn()
        t.activation()
    t.pool()
    t.fc(num_classes)
    return t


@lru_cache(maxsize=16384)
def _unit(depth: int, width: float, batch_norm: bool, resolution: int,
          num_classes: int) -> tuple[int, ...]:
    """Per-sample counts of one architecture at one resolution (``_layers.UNIT_COLUMNS``)."""
    return _walk(depth, width, batch_norm, resolution, num_classes).unit()


def op_list(row: Mapping[str, Any]) -> list[tuple]:
    """The operators of ``row``'s network per image (:data:`carb_lib.kernels.OP_COLUMNS`),
    from the analytic pass (equal to those recorded on the built model)."""
    c = config_from_row({**row, "batch": 1, "precision": "fp32"})
    return _walk(c.depth, c.width, c.batch_norm, c.resolution, c.num_classes).ops


def static_features(df: pd.DataFrame) -> pd.DataFrame:
    """Analytic static features of vgg rows (vectorised over unique arch x resolution).

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
    return L.static_frame(df, FAMILY, ARCH_COLUMNS, _unit, VGGConfig)


def measured_features(config: VGGConfig, model=None) -> dict[str, int | float]:
    """Measure ``_layers.EXACT_COLUMNS`` from the built model on the ``meta`` device.

    Parameters
    ----------
    config : VGGConfig
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
    """The learners' numeric encoding of the vgg config columns.

    Parameters
    ----------
    df : pandas.DataFrame
        Rows of any families (validated beforehand).
    rows : numpy.ndarray of bool, optional
        Which rows are vgg rows; default ``df["family"] == "vgg"``.

    Returns
    -------
    pandas.DataFrame
        float64 columns :data:`MATRIX_COLUMNS` (``vgg_<column>`` for every column of
        :data:`SPACE`, ``batch_norm`` as 0/1), index-aligned with ``df``; :data:`NOT_APPLICABLE`
        (-1.0) in rows of other families.
    """
    return C.encode_numeric(df, FAMILY, SPACE, MATRIX_COLUMNS, NOT_APPLICABLE, rows)


# --------------------------------------------------------------------------- the family
class VGGFamily(Family):
    """The ``vgg`` family (see the module docstring)."""

    name = FAMILY
    config_type = VGGConfig
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
VGG = VGGFamily()


def family() -> VGGFamily:
    """The registered family object :data:`VGG` (the former registry-record factory)."""
    return VGG


__all__ = [
    "FAMILY", "CFGS", "DEPTHS", "WIDTHS", "BATCH_NORM", "SPACE", "ARCH_COLUMNS", "COLUMNS",
    "RESOLUTIONS", "VGGConfig", "ConfigError", "layer_plan", "config_from_row", "config_ids",
    "grid", "sample_configs", "build_model", "static_features", "measured_features",
    "compare_features", "family", "encode_config", "OWN_COLUMNS", "REQUIRED_COLUMNS",
    "MATRIX_COLUMNS", "NOT_APPLICABLE", "VGGFamily", "VGG",
]
