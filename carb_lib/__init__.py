"""CARB: measure, explain, predict and screen the inference cost of CNNs.

The public API is the twelve names of :data:`__all__` (the README's Python example uses them);
each is imported on first use, so ``import carb_lib`` loads neither PyTorch nor scikit-learn.
Everything else lives in the package of its stage, lowest first: ``families`` (design spaces,
registry, the allocator model) -> ``dataset`` (schema, readers, static features, synthetic
data) -> ``measure`` / ``kernels`` (the profiler, campaigns, the operator benchmark) ->
``characterize`` / ``transfer`` / ``ensemble`` / ``evaluation`` (analysis and prediction) ->
``screening`` -> ``plots`` -> ``app`` (command line, reproduce, widgets). Shared by all:
``core`` (names and units, metrics, tables, safe file writing); ``distributed`` runs the
profiler and the screening on a Dask cluster.
``tests/test_import_graph.py`` holds the stage of every module and checks that no import runs
up the stages.

Examples
--------
>>> import carb_lib
>>> carb_lib.get_family("resnet").name
'resnet'
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: Public name -> (module, attribute).
_API: dict[str, tuple[str, str]] = {
    "CARBRegressor": ("carb_lib.ensemble", "CARBRegressor"),
    "preset": ("carb_lib.ensemble", "preset"),
    "load_model": ("carb_lib.ensemble", "load_model"),
    "get_family": ("carb_lib.families", "get_family"),
    "paper_grid": ("carb_lib.families.space", "paper_grid"),
    "static_features": ("carb_lib.dataset.features", "static_features"),
    "read_dataset": ("carb_lib.dataset.schema", "read_dataset"),
    "make_synthetic_dataset": ("carb_lib.dataset.synthetic", "make_synthetic_dataset"),
    "profile": ("carb_lib.measure.profiling", "profile_config"),
    "DeploymentSpec": ("carb_lib.screening", "DeploymentSpec"),
    "screen": ("carb_lib.screening", "screen"),
    "few_shot_predict": ("carb_lib.transfer.pairwise", "few_shot_predict"),
}

__all__ = list(_API)


def __getattr__(name: str) -> Any:
    """Import a public name on first use (PEP 562); a submodule is imported as usual."""
    if name not in _API:
        raise AttributeError(f"module 'carb_lib' has no attribute {name!r}")
    module, attr = _API[name]
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
