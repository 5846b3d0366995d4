"""Record headline values from a notebook and read them back from the executed file.

A notebook calls :func:`glue` ``("name", value)``; the value is shown in the cell output
as a JSON document with the MIME type :data:`MIME`. Tests (and ``carb reproduce``) read every
glued value of an executed notebook with :func:`read_glued`. This is the scrapbook idea
without the scrapbook dependency, which is no longer maintained.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

MIME = "application/x.carb-glue+json"


def _jsonable(value: Any) -> Any:
    """Convert numpy / pandas scalars and containers to plain JSON values."""
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "tolist"):
        return _jsonable(value.tolist())
    return value


def glue(name: str, value: Any, display: bool = True) -> Any:
    """Record ``value`` under ``name`` in the executing notebook's output.

    Parameters
    ----------
    name : str
        Key to read the value back with.
    value : Any
        A JSON-serialisable value (numpy scalars and arrays are converted; NaN -> null).
    display : bool
        Also show ``name = value`` as plain text.

    Returns
    -------
    Any
        The JSON-converted value.
    """
    from IPython.display import display as ipy_display

    payload = {"name": name, "value": _jsonable(value)}
    json.dumps(payload)  # raises early on anything not serialisable
    bundle = {MIME: payload}
    if display:
        bundle["text/plain"] = f"{name} = {payload['value']!r}"
    ipy_display(bundle, raw=True)
    return payload["value"]


def read_glued(notebook_path: str | Path) -> dict[str, Any]:
    """Return every glued ``{name: value}`` of an executed notebook.

    Raises
    ------
    FileNotFoundError
        If the notebook does not exist.
    """
    import nbformat  # here, not at import: jsonschema's checkers cost a notebook kernel ~1 s

    nb = nbformat.read(str(notebook_path), as_version=4)
    out: dict[str, Any] = {}
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if MIME in data:
                payload = data[MIME]
                if isinstance(payload, str):
                    payload = json.loads(payload)
                out[payload["name"]] = payload["value"]
    return out
