"""Model families of the design space and their registry.

Every family implements the protocol of :class:`Family` (``carb_lib.families._base``): its
config type and columns, validation, ``config_ids``, ``build_model``, ``static_features``,
``measured_features`` and ``encode_config`` (the learners' numeric encoding of its own config
columns). The built-in families are registered here, explicitly, in this order:

``resnet``
    The paper's ResNet grid (:mod:`carb_lib.families.resnet`; the default family).
``nb201``
    NAS-Bench-201 cells (:mod:`carb_lib.families.nb201`).
``mobilenetv2``
    Inverted residual blocks (:mod:`carb_lib.families.mobilenetv2`).
``vgg``
    Plain conv stacks (:mod:`carb_lib.families.vgg`).
``efficientnet``
    MBConv with squeeze-and-excitation, compound scaling (:mod:`carb_lib.families.efficientnet`).
``module``
    Any user ``torch.nn.Module`` from a factory and an input shape, features measured on the
    ``meta`` device (:mod:`carb_lib.families.module`).

The order is that of the learners' columns (family indicators, encoded config columns), so
families added later append columns and never reorder the existing ones.

Importing any module of this package registers them (Python runs this file first); nothing
else registers or replaces a family at import time. A new family is a module with a
:class:`Family` subclass and one :func:`register_family` call (here, or in user code).

Examples
--------
>>> from carb_lib import families
>>> families.family_names()
('resnet', 'nb201', 'mobilenetv2', 'vgg', 'efficientnet', 'module')
>>> families.get_family("resnet").own_column_names
('block', 'depth', 'width', 'early_downsample')
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.vocab import COMMON_CONFIG_COLUMNS
from carb_lib.families._base import DEFAULT_FAMILY, ConfigColumn, ConfigError, Family
from carb_lib.families._common import BYTES_PER_ELEMENT, equals
from carb_lib.families.efficientnet import EFFICIENTNET
from carb_lib.families.mobilenetv2 import MOBILENETV2
from carb_lib.families.module import MODULE
from carb_lib.families.nb201 import NB201
from carb_lib.families.resnet import RESNET
from carb_lib.families.vgg import VGG

__all__ = [
    "BYTES_PER_ELEMENT",
    "DEFAULT_FAMILY",
    "FAMILIES",
    "ConfigColumn",
    "ConfigError",
    "Family",
    "all_config_columns",
    "family_indicators",
    "family_names",
    "get_family",
    "register_family",
]

#: The registry: family name -> family object, in registration order.
FAMILIES: dict[str, Family] = {}


def register_family(family: Family, *, replace: bool = False) -> Family:
    """Add ``family`` to the registry and return it.

    Raises
    ------
    ValueError
        If a different family of that name is registered already and ``replace`` is False
        (registering the same object again is a no-op).
    TypeError
        If ``family`` is not a :class:`Family`.
    """
    if not isinstance(family, Family):
        raise TypeError(f"register_family needs a Family instance, got {family!r}")
    old = FAMILIES.get(family.name)
    if old is not None and old is not family and not replace:
        raise ValueError(
            f"family {family.name!r} is registered already ({old!r}); pass replace=True"
        )
    FAMILIES[family.name] = family
    return family


def get_family(name: Any) -> Family:
    """The registered family ``name``.

    Raises
    ------
    ConfigError
        If no family of that name is registered (the message lists the registered ones).
    """
    try:
        return FAMILIES[name]
    except (KeyError, TypeError):
        raise ConfigError(
            f"family={name!r} is unknown; registered families: {sorted(FAMILIES)}"
        ) from None


def family_names() -> tuple[str, ...]:
    """Names of the registered families, in registration order."""
    return tuple(FAMILIES)


def all_config_columns() -> tuple[str, ...]:
    """Config columns of every registered family: ``family``, each family's own columns (in
    registration order, each name once), then the other common columns."""
    own: list[str] = []
    for fam in FAMILIES.values():
        own += [c for c in fam.own_column_names if c not in own]
    return (COMMON_CONFIG_COLUMNS[0], *own, *COMMON_CONFIG_COLUMNS[1:])


def family_indicators(df: pd.DataFrame) -> pd.DataFrame:
    """One-hot family columns for the learners: ``family_<name>`` (1.0 / 0.0) for every
    registered family except :data:`DEFAULT_FAMILY`, in registration order.

    With the built-in families: ``family_nb201``, ``family_mobilenetv2``, ``family_vgg``,
    ``family_efficientnet``, ``family_module``.
    """
    cols = {
        fam.indicator_column: equals(df["family"], name).astype(np.float64)
        for name, fam in FAMILIES.items()
        if name != DEFAULT_FAMILY
    }
    return pd.DataFrame(cols, index=df.index)


register_family(RESNET)
register_family(NB201)
register_family(MOBILENETV2)
register_family(VGG)
register_family(EFFICIENTNET)
register_family(MODULE)
