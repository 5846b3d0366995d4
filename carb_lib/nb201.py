"""The NAS-Bench-201 family (``nb201``): compatibility names.

The family lives in :mod:`carb_lib.families.nb201` (config, builder, analytic and measured
static features, the learners' encoding); this module re-exports its public names.
"""

from __future__ import annotations

from carb_lib.families import ConfigError, register_family
from carb_lib.families.nb201 import (
    CELLS_PER_STAGE,
    EDGE_COLUMNS,
    EDGES,
    FAMILY,
    NB201,
    NB201_COLUMNS,
    NUM_CLASSES,
    OP_COUNT_COLUMNS,
    OPS,
    RESOLUTION,
    STEM_CHANNELS,
    UNIT_COLUMNS,
    NB201Config,
    all_archs,
    arch_from_ops,
    arch_ops,
    build_nb201,
    config_from_row,
    config_ids,
    edge_encoding,
    encode_nb201_config,
    longest_conv_path,
    measured_nb201_features,
    nb201_config_id,
    nb201_grid,
    nb201_static_features,
    parse_arch,
)

__all__ = [
    "CELLS_PER_STAGE", "ConfigError", "EDGES", "EDGE_COLUMNS", "FAMILY", "NB201", "NB201_COLUMNS",
    "NUM_CLASSES", "OPS", "OP_COUNT_COLUMNS", "RESOLUTION", "STEM_CHANNELS", "UNIT_COLUMNS",
    "NB201Config", "all_archs", "arch_from_ops", "arch_ops", "build_nb201", "config_from_row",
    "config_ids", "edge_encoding", "encode_nb201_config", "longest_conv_path",
    "measured_nb201_features", "nb201_config_id", "nb201_grid", "nb201_static_features",
    "parse_arch", "register",
]  # fmt: skip


def register() -> None:
    """Make sure the ``nb201`` family is registered (it is, by :mod:`carb_lib.families`)."""
    register_family(NB201)
