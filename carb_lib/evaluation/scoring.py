"""The evaluation's metric tables: :mod:`carb_lib.core.scoring` (every name is importable from
here too). They live in :mod:`carb_lib.core` so that :mod:`carb_lib.transfer` scores its CPUs'
re-measurement noise without importing :mod:`carb_lib.evaluation`, which evaluates transfer."""

from __future__ import annotations

from carb_lib.core.scoring import (
    METRIC_COLUMNS,
    REMEASUREMENT_NOISE,
    mean_sd,
    metric_rows,
    noise_floor_cv,
    regression_metrics,
    remeasurement_floor,
    remeasurement_noise,
)

__all__ = ["METRIC_COLUMNS", "REMEASUREMENT_NOISE", "mean_sd", "metric_rows", "noise_floor_cv",
           "regression_metrics", "remeasurement_floor", "remeasurement_noise"]
