"""The measured dataset: its schema and validator (:mod:`carb_lib.dataset.schema`), readers of
external tables (:mod:`carb_lib.dataset.readers`), SYNTHETIC datasets for tests and demos
(:mod:`carb_lib.dataset.synthetic`) and the static features of a config
(:mod:`carb_lib.dataset.features`).

The schema's public names are also reachable here (``carb_lib.dataset.read_dataset``); they
are imported on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

_SUBMODULES = ("schema", "readers", "synthetic", "features")


def __getattr__(name: str) -> Any:
    if name not in _SUBMODULES and not name.startswith("__"):
        module = importlib.import_module("carb_lib.dataset.schema")
        if name in module.__all__:
            return getattr(module, name)
    raise AttributeError(f"module 'carb_lib.dataset' has no attribute {name!r}")
