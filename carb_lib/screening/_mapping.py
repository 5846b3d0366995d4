"""Read-only mapping access for the result dataclasses of the screening.

The validation results were nested dicts; they are dataclasses now. :class:`FieldMapping`
keeps the old reads working (``v["front_recall"]``, ``v.get("classification")``,
``{**c}``) while new code reads the attributes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields
from typing import Any


class FieldMapping:
    """Mixin: ``keys()``, ``[key]``, ``get(key, default)``, ``in`` and ``as_dict()`` over the
    fields of a dataclass (a subclass may override :meth:`keys` and :meth:`__getitem__`)."""

    def keys(self) -> list[str]:
        """Field names, in declaration order."""
        return [f.name for f in fields(self)]  # type: ignore[arg-type]

    def __getitem__(self, key: str) -> Any:
        if key not in self.keys():
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        """``self[key]``, or ``default`` when there is no such key."""
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return key in self.keys()

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def as_dict(self) -> dict[str, Any]:
        """A shallow ``{key: value}`` copy (DataFrames and nested results are not copied)."""
        return {k: self[k] for k in self.keys()}
