"""Deprecated path: ``carb_lib.space`` is now :mod:`carb_lib.families.space`.

This alias goes in the next release.
"""

import importlib
import sys
import warnings

warnings.warn(
    f"{__name__} is deprecated: import carb_lib.families.space instead",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = importlib.import_module("carb_lib.families.space")
