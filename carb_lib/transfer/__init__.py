"""Transfer across platforms: the pairwise platform matrix, slope analysis and few-shot
recalibration (:mod:`carb_lib.transfer.pairwise`), the study's data
(:mod:`carb_lib.transfer.data`), the comparison with HELP
(:mod:`carb_lib.transfer.help_benchmark`), leave-one-CPU-out over the measured CPUs
(:mod:`carb_lib.transfer.cpus`), host calibration (:mod:`carb_lib.transfer.calibration`) and its
evaluation on stored campaigns of one CPU (:mod:`carb_lib.transfer.calibration_eval`).

The names of :mod:`carb_lib.transfer.pairwise` are also reachable here; they are imported on
first use.
"""

from __future__ import annotations

import importlib
from typing import Any

_SUBMODULES = ("pairwise", "data", "help_benchmark", "cpus", "calibration", "calibration_eval")


def __getattr__(name: str) -> Any:
    if name not in _SUBMODULES and not name.startswith("__"):
        module = importlib.import_module("carb_lib.transfer.pairwise")
        if name in module.__all__:
            return getattr(module, name)
    raise AttributeError(f"module 'carb_lib.transfer' has no attribute {name!r}")
