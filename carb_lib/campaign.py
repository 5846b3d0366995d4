"""Deprecated path: ``carb_lib.campaign`` is now :mod:`carb_lib.measure.campaign`.

This alias goes in the next release.
"""

import importlib
import sys
import warnings

warnings.warn(
    f"{__name__} is deprecated: import carb_lib.measure.campaign instead",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = importlib.import_module("carb_lib.measure.campaign")
