"""CARB: measure, explain, predict and screen the inference cost of CNNs.

Stages (one module each): ``space`` (design space) -> ``profiling`` / ``telemetry`` /
``campaign`` (measurement) -> ``dataset`` (schema) -> ``features`` (static features) ->
``scaling`` / ``transfer`` / ``ensemble`` (analysis and prediction) -> ``screening`` ->
``plots``.
"""

__version__ = "0.1.0"
