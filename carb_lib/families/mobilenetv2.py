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

from dataclasses import dataclass, field
from functools import lru_cache
from typing import ClassVar

import carb_lib.families._config as C
import carb_lib.families._layers as L
from carb_lib.families._base import ConfigError

FAMILY = "mobilenetv2"
EXPANSIONS: tuple[int, ...] = (3, 4, 6)
KERNELS: tuple[int, ...] = (3, 5)
WIDTHS: tuple[float, ...] = (0.35, 0.5, 0.75, 1.0, 1.4)
DEPTH_MULTS: tuple[float, ...] = (0.5, 0.75, 1.0, 1.25)
#: Architecture columns and their valid values.
SPACE: dict[str, tuple] = {"expansion": EXPANSIONS, "kernel": KERNELS, "width": WIDTHS,
                           "depth_mult": DEPTH_MULTS}
#: The column declarations (see :class:`carb_lib.families._config.Columns`).
ARCH_COLUMNS, COLUMNS, OWN_COLUMNS, REQUIRED_COLUMNS, MATRIX_COLUMNS = C.columns(
    FAMILY, SPACE, {"expansion": "expansion factor of the inverted residual blocks",
                 "kernel": "depthwise kernel size", "width": "channel multiplier",
                 "depth_mult": "blocks-per-stage multiplier"})
RESOLUTIONS: tuple[int, ...] = C.RESOLUTIONS
NOT_APPLICABLE: float = C.NOT_APPLICABLE
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
    SPACE: ClassVar[dict[str, tuple]] = SPACE
    expansion: int
    kernel: int
    width: float
    depth_mult: float
    resolution: int
    batch: int
    precision: str
    num_classes: int = 1000
    family: str = field(default=FAMILY, init=False)

    @property
    def blocks(self) -> tuple[tuple[int, int, int, int, int], ...]:
        """``(cin, t, hidden, cout, stride)`` of every inverted residual block."""
        return block_plan(self.expansion, self.width, self.depth_mult)


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
def _walk(expansion: int, kernel: int, width: float, depth_mult: float,
          resolution: int) -> L.Tally:
    """The analytic pass of the feature extractor of one architecture at one resolution (the
    classifier head is tallied by :func:`carb_lib.families._config.tally_functions`)."""
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
    return t


_FUNCTIONS = C.tally_functions(MobileNetV2Config, _walk, build_model, __name__)
#: The family's functions (:func:`carb_lib.families._config.tally_functions`).
(config_from_row, config_ids, grid, sample_configs, _unit, op_list, static_features,
 measured_features, compare_features, encode_config) = _FUNCTIONS


# --------------------------------------------------------------------------- the family
class MobileNetV2Family(C.TallyFamily):
    """The ``mobilenetv2`` family (see the module docstring)."""

    name, config_type, functions = FAMILY, MobileNetV2Config, _FUNCTIONS
    own_columns, required_columns, matrix_columns = OWN_COLUMNS, REQUIRED_COLUMNS, MATRIX_COLUMNS


#: The family object (registered by :mod:`carb_lib.families`).
MOBILENETV2 = MobileNetV2Family()


def family() -> MobileNetV2Family:
    """The registered family object :data:`MOBILENETV2` (the former registry-record factory)."""
    return MOBILENETV2


__all__ = [*C.TALLY_NAMES, "EXPANSIONS", "KERNELS", "WIDTHS", "DEPTH_MULTS", "STAGES",
           "MobileNetV2Config", "ConfigError", "block_plan", "last_channels", "MobileNetV2Family",
           "MOBILENETV2"]
