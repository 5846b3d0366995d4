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

from dataclasses import dataclass, field
from functools import lru_cache
from typing import ClassVar

import carb_lib.families._config as C
import carb_lib.families._layers as L
from carb_lib.families._base import ConfigError

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
#: The column declarations (see :class:`carb_lib.families._config.Columns`).
ARCH_COLUMNS, COLUMNS, OWN_COLUMNS, REQUIRED_COLUMNS, MATRIX_COLUMNS = C.columns(
    FAMILY, SPACE, {"depth": "configuration 11 | 13 | 16 | 19", "width": "channel multiplier",
                 "batch_norm": "BN after every conv"})
RESOLUTIONS: tuple[int, ...] = C.RESOLUTIONS
NOT_APPLICABLE: float = C.NOT_APPLICABLE


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
    SPACE: ClassVar[dict[str, tuple]] = SPACE
    depth: int
    width: float
    batch_norm: bool
    resolution: int
    batch: int
    precision: str
    num_classes: int = 1000
    family: str = field(default=FAMILY, init=False)

    @property
    def layers(self) -> tuple[int | str, ...]:
        """Conv widths (scaled) and ``"M"`` pools of the feature extractor."""
        return layer_plan(self.depth, self.width)


@lru_cache(maxsize=64)
def layer_plan(depth: int, width: float) -> tuple[int | str, ...]:
    """Conv widths (``make_divisible(v * width)``) and ``"M"`` pools of a configuration."""
    return tuple(v if v == "M" else C.make_divisible(v * width) for v in CFGS[depth])


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
def _walk(depth: int, width: float, batch_norm: bool, resolution: int) -> L.Tally:
    """The analytic pass of the feature extractor of one architecture at one resolution (the
    classifier head is tallied by :func:`carb_lib.families._config.tally_functions`)."""
    t = L.Tally(resolution, act="relu")
    for v in layer_plan(depth, width):
        if v == "M":
            t.pool(2, 2)
            continue
        t.conv(v, 3, bias=True)
        if batch_norm:
            t.bn()
        t.activation()
    return t


_FUNCTIONS = C.tally_functions(VGGConfig, _walk, build_model, __name__)
#: The family's functions (:func:`carb_lib.families._config.tally_functions`).
(config_from_row, config_ids, grid, sample_configs, _unit, op_list, static_features,
 measured_features, compare_features, encode_config) = _FUNCTIONS


# --------------------------------------------------------------------------- the family
class VGGFamily(C.TallyFamily):
    """The ``vgg`` family (see the module docstring)."""

    name, config_type, functions = FAMILY, VGGConfig, _FUNCTIONS
    own_columns, required_columns, matrix_columns = OWN_COLUMNS, REQUIRED_COLUMNS, MATRIX_COLUMNS


#: The family object (registered by :mod:`carb_lib.families`).
VGG = VGGFamily()


def family() -> VGGFamily:
    """The registered family object :data:`VGG` (the former registry-record factory)."""
    return VGG


__all__ = [*C.TALLY_NAMES, "CFGS", "DEPTHS", "WIDTHS", "BATCH_NORM", "VGGConfig", "ConfigError",
           "layer_plan", "VGGFamily", "VGG"]
