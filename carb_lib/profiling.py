"""Deprecated path: ``carb_lib.profiling`` is now :mod:`carb_lib.measure.profiling`.

This alias goes in the next release.
"""

import importlib
import sys
import warnings

warnings.warn(
    f"{__name__} is deprecated: import carb_lib.measure.profiling instead",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = importlib.import_module("carb_lib.measure.profiling")
