"""The design space: operations on frames of configs of any registered family.

The families themselves (config types, validation, builders, features, grids) live in
:mod:`carb_lib.families`; the paper's ResNet grid is :mod:`carb_lib.families.resnet` (its
docstring holds the blocks-per-stage table), NAS-Bench-201 cells are
:mod:`carb_lib.families.nb201`. This module dispatches on each row's ``family`` (default
:data:`~carb_lib.families.DEFAULT_FAMILY`) without knowing any family by name:
:func:`config_from_row`, :func:`configs_from_frame`, :func:`validate_config_frame`,
:func:`add_config_ids`, :func:`build_model`, plus batch tiers, strata and the stratified
sampler. The ResNet names it always exported (``paper_grid``, ``ResNetConfig``,
``RESNET_COLUMNS``, ``STAGE_BLOCKS``, ...) are re-exported unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.vocab import BATCH_TIER_EDGES, BATCH_TIER_LABELS, PRECISIONS
from carb_lib.core.vocab import COMMON_CONFIG_COLUMNS as COMMON_COLUMNS
from carb_lib.families import (
    BYTES_PER_ELEMENT,
    DEFAULT_FAMILY,
    FAMILIES,
    ConfigError,
    Family,
    all_config_columns,
    family_names,
    get_family,
    register_family,
)
from carb_lib.families.resnet import (
    BASE_WIDTHS,
    BATCH_RANGE,
    BATCH_SIZES,
    BLOCKS,
    DEPTHS,
    EARLY_DOWNSAMPLE,
    EXPANSION,
    RESNET_COLUMNS,
    RESOLUTION_RANGE,
    RESOLUTIONS,
    SAMPLED_SPACES,
    STAGE_BLOCKS,
    WIDTHS,
    ResNetConfig,
    build_resnet,
    dense_sample,
    depth_tier,
    extended_sample,
    paper_grid,
    resnet_config_id,
    stage_widths,
)

#: Config columns of the paper's family, in order (``config_id`` comes first in frames);
#: :func:`carb_lib.families.all_config_columns` has those of every family.
CONFIG_COLUMNS: tuple[str, ...] = RESNET_COLUMNS

__all__ = [
    "BASE_WIDTHS", "BATCH_RANGE", "BATCH_SIZES", "BATCH_TIER_EDGES", "BATCH_TIER_LABELS",
    "BLOCKS", "BYTES_PER_ELEMENT", "COMMON_COLUMNS", "CONFIG_COLUMNS", "DEFAULT_FAMILY",
    "DEPTHS", "EARLY_DOWNSAMPLE", "EXPANSION", "FAMILIES", "PRECISIONS", "RESNET_COLUMNS",
    "RESOLUTIONS", "RESOLUTION_RANGE", "SAMPLED_SPACES", "STAGE_BLOCKS", "WIDTHS", "ConfigError", "Family",
    "ResNetConfig", "add_config_ids", "all_config_columns", "batch_tier", "build_model",
    "build_resnet", "config_from_row", "configs_from_frame", "dense_sample", "depth_tier", "extended_sample",
    "family_names", "family_of", "get_family", "paper_grid", "register_family",
    "resnet_config_id", "stage_widths", "strata", "stratified_sample", "validate_config_frame",
]  # fmt: skip


# --------------------------------------------------------------------------- dispatch
def _row_family(row: Mapping[str, Any]) -> Any:
    fam = row.get("family", DEFAULT_FAMILY)
    if fam is None or (isinstance(fam, float) and math.isnan(fam)):
        return DEFAULT_FAMILY
    return fam


def family_of(df: pd.DataFrame) -> pd.Series:
    """The ``family`` of every row of ``df``: :data:`DEFAULT_FAMILY` where the column is absent
    or the value missing."""
    if "family" not in df.columns:
        return pd.Series(DEFAULT_FAMILY, index=df.index, dtype=object)
    return df["family"].astype(object).where(df["family"].notna(), DEFAULT_FAMILY)


def config_from_row(row: Mapping[str, Any] | pd.Series):
    """Build and validate the config of one row (dispatches on its ``family``)."""
    if isinstance(row, pd.Series):
        row = row.to_dict()
    return get_family(_row_family(row)).from_row(row)


def configs_from_frame(df: pd.DataFrame) -> list:
    """Validate every row of ``df`` into a config; the error names the failing row."""
    out = []
    for i, row in enumerate(df.to_dict(orient="records")):
        try:
            out.append(config_from_row(row))
        except ConfigError as exc:
            raise ConfigError(f"row {df.index[i]!r}: {exc}") from None
    return out


def validate_config_frame(df: pd.DataFrame, what: str = "input") -> None:
    """Validate every row of a frame of configs against its family's space, fast.

    Distinct config rows are validated once each (a million candidates of the extended space
    hold tens of thousands of distinct configs), so this runs before any work in every
    command that takes configs. Off-grid but valid values (resolution 33, batch 3) pass.

    Raises
    ------
    ConfigError
        ``<what>: row <position>: <reason naming column and value>`` for the first invalid
        row of a family, with the count of invalid distinct configs.
    """
    if len(df) == 0:
        raise ConfigError(f"{what}: no rows")
    pos = df.reset_index(drop=True)
    fam = family_of(pos)
    for name, idx in fam.groupby(fam.astype(str), sort=False).groups.items():
        try:
            family = get_family(name)
        except ConfigError as exc:
            raise ConfigError(f"{what}: row {idx[0]}: {exc}") from None
        family.validate_frame(pos.loc[idx], what)


def build_model(config):
    """Build the network of a config of any registered family, in eval mode (fp32, CPU)."""
    return get_family(config.family).build_model(config)


def check_config_ids(df: pd.DataFrame, what: str = "input") -> None:
    """Refuse a given ``config_id`` column whose values are not the content hash of their
    row's config (a copied or edited id would be carried into the output).

    Raises
    ------
    ConfigError
        ``<what>: row <position>: config_id <given> does not match its config (<expected>)``.
    """
    if "config_id" not in df.columns:
        return
    pos = df.reset_index(drop=True)
    given = pos["config_id"].astype("string").fillna("").to_numpy(dtype=object)
    expected = add_config_ids(pos.drop(columns=["config_id"]))["config_id"].to_numpy(dtype=object)
    bad = np.flatnonzero(given != expected)
    if len(bad):
        i = int(bad[0])
        raise ConfigError(f"{what}: row {i}: config_id {given[i]!r} does not match its config "
                          f"(its id is {expected[i]!r}); drop the config_id column or correct it"
                          + (f"; {len(bad) - 1} more row(s) like it" if len(bad) > 1 else ""))


def add_config_ids(df: pd.DataFrame) -> pd.DataFrame:
    """Return a copy of ``df`` with a ``config_id`` column (per family, vectorised)."""
    out = df.copy()
    fam = family_of(out)
    ids = pd.Series(index=out.index, dtype=object)
    for name, idx in fam.groupby(fam, sort=False).groups.items():
        ids.loc[idx] = get_family(name).config_ids(out.loc[idx])
    out["config_id"] = ids.astype(str)
    return out


# --------------------------------------------------------------------------- tiers / sampling
def batch_tier(batch: pd.Series | np.ndarray) -> np.ndarray:
    """The paper's batch tiers: ``b<=4``, ``b<=16``, ``b<=128``, ``b>128``."""
    b = np.asarray(batch)
    return np.asarray(BATCH_TIER_LABELS, dtype=object)[np.searchsorted(BATCH_TIER_EDGES, b)]


def strata(df: pd.DataFrame) -> pd.Series:
    """Stratum label of each row: family/block x depth tier x batch tier x precision."""
    fam = df["family"] if "family" in df else pd.Series(DEFAULT_FAMILY, index=df.index)
    block = df["block"] if "block" in df else fam
    depth = depth_tier(df["depth"]) if "depth" in df else np.full(len(df), "-", dtype=object)
    parts = [
        fam.astype(str).to_numpy(), block.astype(str).to_numpy(), depth,
        batch_tier(df["batch"]), df["precision"].astype(str).to_numpy(),
    ]  # fmt: skip
    lab = parts[0]
    for p in parts[1:]:
        lab = lab + "|" + p
    return pd.Series(lab, index=df.index, name="stratum")


def stratified_sample(df: pd.DataFrame, n: int, seed: int = 0) -> pd.DataFrame:
    """A seeded sample of ``n`` rows balanced over :func:`strata`.

    Strata are filled round-robin (every stratum gets its k-th row before any gets its
    (k+1)-th), so a sample of a few hundred covers every block, depth tier, batch tier and
    precision. Rows keep their original index; the result is in sampling order.

    Raises
    ------
    ValueError
        If ``n`` is negative or larger than ``len(df)``.
    """
    if n < 0 or n > len(df):
        raise ValueError(f"n={n} must be between 0 and the number of rows ({len(df)})")
    rng = np.random.default_rng(seed)
    key = rng.random(len(df))
    lab = strata(df).to_numpy()
    order = pd.DataFrame({"lab": lab, "key": key})
    order["rank"] = order.groupby("lab")["key"].rank(method="first")
    pos = np.lexsort((order["key"].to_numpy(), order["rank"].to_numpy()))[:n]
    return df.iloc[pos]
