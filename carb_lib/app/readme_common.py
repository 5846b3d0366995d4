"""What the generated blocks of the docs share (:mod:`carb_lib.app.readme` and its block
modules): reading a results table, the source line under a block, the error of a missing
file."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

__all__ = ["ReadmeError"]


class ReadmeError(RuntimeError):
    """A block is missing from the README or its source file is missing."""


def _read(results: Path, rel: str) -> pd.DataFrame:
    path = results / rel
    if not path.exists():
        raise ReadmeError(f"{path} does not exist (run `make reproduce` first)")
    return pd.read_csv(path)


def _source(*rels: str) -> str:
    return "\n_Source: " + ", ".join(f"`results/{r}`" for r in rels) + "._\n"
