"""The EfficientNet family (``efficientnet``): MBConv with squeeze-and-excitation and SiLU,
compound scaling of width, depth and resolution.

The network follows torchvision's ``efficientnet_b0`` .. ``b7`` (Tan & Le, ICML 2019), built
in the project, on B0's base table (expansion t, kernel k, stride s, channels in -> out,
blocks n)::

    t  k  s  in   out  n
    1  3  1  32   16   1
    6  3  2  16   24   2
    6  5  2  24   40   2
    6  3  2  40   80   3
    6  5  1  80   112  3
    6  5  2  112  192  4
    6  3  1  192  320  1

Compound scaling: channels ``-> make_divisible(c * width)`` (multiple of 8), blocks
``-> ceil(n * depth_mult)``, input side ``resolution``; the three are independent columns
(:data:`WIDTHS`, :data:`DEPTH_MULTS`, any resolution), and :data:`PRESETS` holds the paper's
B0-B4 coefficients (B4: width 1.4, depth 1.8, 380 px).

* stem: 3x3 stride-2 conv + BN + SiLU;
* MBConv (cin -> cout, stride s on a stage's first block): 1x1 expansion conv to
  ``make_divisible(cin * t)`` + BN + SiLU (omitted when that equals cin), k x k depthwise conv
  + BN + SiLU, squeeze-and-excitation (global average pool, 1x1 conv with bias to
  ``max(1, cin // 4)``, SiLU, 1x1 conv with bias back, Sigmoid gate, multiply: SE ratio 0.25 of
  the block input), 1x1 projection conv + BN; the input is added (out of place) when s = 1 and
  cin == cout (stochastic depth is the identity at inference);
* head: 1x1 conv to ``4 * make_divisible(320 * width)`` + BN + SiLU, global average pool,
  ``Linear(., num_classes)`` (no dropout). Convs other than the SE's have no bias.

Width 1, depth 1, 1000 classes is EfficientNet-B0 (5,288,548 parameters). Grid: 6 widths x 7
depth multipliers (42 architectures) x 8 resolutions x 9 batch sizes x 2 precisions = 6,048
configurations. Static features: see :mod:`carb_lib.families._layers` (SE convs count in
``n_conv`` and in ``se_flops``; SiLU and Sigmoid in ``n_act``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import ClassVar

import carb_lib.families._config as C
import carb_lib.families._layers as L
from carb_lib.families._base import ConfigError

FAMILY = "efficientnet"
WIDTHS: tuple[float, ...] = (0.5, 0.75, 1.0, 1.1, 1.2, 1.4)
DEPTH_MULTS: tuple[float, ...] = (0.5, 0.75, 1.0, 1.1, 1.2, 1.4, 1.8)
#: Architecture columns and their valid values.
SPACE: dict[str, tuple] = {"width": WIDTHS, "depth_mult": DEPTH_MULTS}
#: The column declarations (see :class:`carb_lib.families._config.Columns`).
ARCH_COLUMNS, COLUMNS, OWN_COLUMNS, REQUIRED_COLUMNS, MATRIX_COLUMNS = C.columns(
    FAMILY, SPACE, {"width": "width coefficient", "depth_mult": "depth coefficient"})
RESOLUTIONS: tuple[int, ...] = C.RESOLUTIONS
NOT_APPLICABLE: float = C.NOT_APPLICABLE
#: (expansion, kernel, stride, in channels, out channels, blocks) of B0's stages.
STAGES: tuple[tuple[int, int, int, int, int, int], ...] = (
    (1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
    (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1),
)
#: The paper's (width, depth_mult, resolution) of B0-B4.
PRESETS: dict[str, tuple[float, float, int]] = {
    "b0": (1.0, 1.0, 224), "b1": (1.0, 1.1, 240), "b2": (1.1, 1.2, 260),
    "b3": (1.2, 1.4, 300), "b4": (1.4, 1.8, 380),
}
SE_RATIO = 0.25


@dataclass(frozen=True)
class EfficientNetConfig(C.ConfigMixin):
    """One EfficientNet network at one input size, batch and precision (validated).

    Parameters
    ----------
    width : float
        Width coefficient (:data:`WIDTHS`).
    depth_mult : float
        Depth coefficient (:data:`DEPTH_MULTS`), blocks per stage rounded up.
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
    width: float
    depth_mult: float
    resolution: int
    batch: int
    precision: str
    num_classes: int = 1000
    family: str = field(default=FAMILY, init=False)

    @property
    def blocks(self) -> tuple[tuple[int, int, int, int, int, int], ...]:
        """``(cin, expanded, cout, kernel, stride, squeeze)`` of every MBConv block."""
        return block_plan(self.width, self.depth_mult)


def preset(name: str, batch: int = 1, precision: str = "fp32",
           num_classes: int = 1000) -> EfficientNetConfig:
    """The config of a paper model (``"b0"`` .. ``"b4"``, see :data:`PRESETS`)."""
    if name not in PRESETS:
        raise ConfigError(f"EfficientNet preset {name!r} is unknown; valid: {list(PRESETS)}")
    width, depth_mult, resolution = PRESETS[name]
    return EfficientNetConfig(width, depth_mult, resolution, batch, precision, num_classes)


@lru_cache(maxsize=64)
def block_plan(width: float, depth_mult: float
               ) -> tuple[tuple[int, int, int, int, int, int], ...]:
    """``(cin, expanded, cout, kernel, stride, squeeze)`` of every block for the coefficients."""
    out = []
    for t, k, s, c_in, c_out, n in STAGES:
        cin, cout = C.make_divisible(c_in * width), C.make_divisible(c_out * width)
        for i in range(C.round_repeats(n, depth_mult)):
            out.append((cin, C.make_divisible(cin * t), cout, k, s if i == 0 else 1,
                        max(1, int(cin * SE_RATIO))))
            cin = cout
    return tuple(out)


# --------------------------------------------------------------------------- model
def build_model(config: EfficientNetConfig):
    """Build the network of ``config`` (fp32, eval mode, default device; see module docstring).

    Build under ``with torch.device("meta"):`` to count without allocating.
    """
    t = L.torch_layers()
    nn = t.nn
    blocks = config.blocks
    layers = [t.conv_bn_act(3, blocks[0][0], 3, 2, act=nn.SiLU)]
    for cin, hidden, cout, k, stride, squeeze in blocks:
        body = [t.conv_bn_act(cin, hidden, 1, act=nn.SiLU)] if hidden != cin else []
        body += [t.conv_bn_act(hidden, hidden, k, stride, groups=hidden, act=nn.SiLU),
                 t.SqueezeExcite(hidden, squeeze), t.conv_bn_act(hidden, cout, 1, act=None)]
        body = nn.Sequential(*body)
        layers.append(t.Residual(body) if stride == 1 and cin == cout else body)
    last = 4 * blocks[-1][2]
    layers.append(t.conv_bn_act(blocks[-1][2], last, 1, act=nn.SiLU))
    return t.Classifier(nn.Sequential(*layers), last, config.num_classes).eval()


# --------------------------------------------------------------------------- features
def _walk(width: float, depth_mult: float, resolution: int) -> L.Tally:
    """The analytic pass of the feature extractor of one architecture at one resolution (the
    classifier head is tallied by :func:`carb_lib.families._config.tally_functions`)."""
    blocks = block_plan(width, depth_mult)
    t = L.Tally(resolution, act="silu")
    t.conv(blocks[0][0], 3, 2)
    t.bn()
    t.activation()
    for cin, hidden, cout, k, stride, squeeze in blocks:
        t.push()
        if hidden != cin:
            t.conv(hidden, 1)
            t.bn()
            t.activation()
        t.conv(hidden, k, stride, groups=hidden)
        t.bn()
        t.activation()
        t.push()  # squeeze-and-excitation
        t.pool()
        t.conv(squeeze, 1, bias=True, se=True)
        t.activation()
        t.conv(hidden, 1, bias=True, se=True)
        t.activation(inplace=False, kind="sigmoid")
        t.scale()
        t.conv(cout, 1)
        t.bn()
        t.pop(add=stride == 1 and cin == cout)
    t.conv(4 * blocks[-1][2], 1)
    t.bn()
    t.activation()
    return t


_FUNCTIONS = C.tally_functions(EfficientNetConfig, _walk, build_model, __name__)
#: The family's functions (:func:`carb_lib.families._config.tally_functions`).
(config_from_row, config_ids, grid, sample_configs, _unit, op_list, static_features,
 measured_features, compare_features, encode_config) = _FUNCTIONS


# --------------------------------------------------------------------------- the family
class EfficientNetFamily(C.TallyFamily):
    """The ``efficientnet`` family (see the module docstring)."""

    name, config_type, functions = FAMILY, EfficientNetConfig, _FUNCTIONS
    own_columns, required_columns, matrix_columns = OWN_COLUMNS, REQUIRED_COLUMNS, MATRIX_COLUMNS


#: The family object (registered by :mod:`carb_lib.families`).
EFFICIENTNET = EfficientNetFamily()


def family() -> EfficientNetFamily:
    """The registered family object :data:`EFFICIENTNET` (the former registry-record factory)."""
    return EFFICIENTNET


__all__ = [*C.TALLY_NAMES, "WIDTHS", "DEPTH_MULTS", "STAGES", "PRESETS", "EfficientNetConfig",
           "ConfigError", "preset", "block_plan", "EfficientNetFamily", "EFFICIENTNET"]
