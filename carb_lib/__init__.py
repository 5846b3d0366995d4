"""CARB: measure, explain, predict and screen the inference cost of CNNs.

Stages (one module or package each): ``families`` (design spaces, registry) -> ``profiling``
/ ``telemetry`` / ``campaign`` (measurement) -> ``dataset`` (schema, validator) -> ``features``
(static features) -> ``scaling`` / ``transfer`` / ``ensemble`` / ``evaluation`` (analysis and
prediction) -> ``screening`` -> ``plots``. Shared by all: ``vocab`` (names, units, labels),
``metrics`` and ``tables``.
"""

__version__ = "0.1.0"
