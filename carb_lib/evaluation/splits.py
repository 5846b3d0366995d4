"""Data preparation and the splits of CARB's evaluation.

* :func:`stratified_split`: the paper's 70/15/15, stratified by batch tier (<=4, <=16, <=128,
  above) x stress flag (SM or memory utilisation > 65 %; False without telemetry, e.g. on CPU)
  x depth tier (shallow <= 14, medium <= 34, deep <= 101, very deep; the tiers of
  :mod:`carb_lib.families.space`, the paper does not give its own).
* :func:`grouped_split`: 70/15/15 by architecture (no architecture in two parts).
* :func:`extrapolation_splits`: small batches held out (train ``batch > SMALL_BATCH_MAX``), large
  batches held out, leave-one-depth/width/resolution-out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.vocab import ALLOC_FEATURES, SMALL_BATCH_MAX, STATIC_FEATURES
from carb_lib.dataset.features import static_features
from carb_lib.families import FAMILIES, family_names, get_family
from carb_lib.families._common import equals
from carb_lib.families.space import batch_tier as tiers
from carb_lib.families.space import family_of

__all__ = [
    "ARCH_COLUMNS",
    "EXTRAPOLATION_KINDS",
    "STRESS_UTIL_PCT",
    "arch_columns",
    "architecture_key",
    "batch_tier",
    "depth_tier",
    "extrapolation_splits",
    "grouped_split",
    "has_values",
    "prepare_dataset",
    "stratified_split",
    "stress_flag",
]

#: SM or memory utilisation (%) above which a row counts as stressed (a stratum of the split).
STRESS_UTIL_PCT = 65.0


def arch_columns() -> tuple[str, ...]:
    """Architecture columns: ``family`` and every registered family's ``arch_columns`` (in
    registration order, each once); rows sharing them are one architecture (grouped split)."""
    cols = ["family"]
    for fam in FAMILIES.values():
        cols += [c for c in fam.arch_columns if c not in cols]
    return tuple(cols)


#: :func:`arch_columns` of the families registered at import (``family``, ResNet's ``block``,
#: ``depth``, ``width``, ``early_downsample``, NB201's ``arch``).
ARCH_COLUMNS: tuple[str, ...] = arch_columns()
#: Extrapolation splits: ``batch_small`` trains on ``batch > SMALL_BATCH_MAX`` and tests the
#: rest; ``batch_large`` trains on batch < 64 and tests batch >= 64; ``depth`` / ``width`` /
#: ``resolution`` hold out each value in turn (ResNet rows).
EXTRAPOLATION_KINDS: tuple[str, ...] = ("batch_small", "batch_large", "depth", "width",
                                        "resolution")
_GOLDEN = 0.6180339887498949


def prepare_dataset(df: pd.DataFrame, platform: str | None = None) -> pd.DataFrame:
    """Keep ``status == "ok"`` rows (of ``platform`` if given) and make sure static features exist.

    Static feature columns missing from the file (with the allocator model's
    :data:`~carb_lib.core.vocab.ALLOC_FEATURES`) are computed with
    :func:`carb_lib.dataset.features.static_features`.

    Parameters
    ----------
    df : pandas.DataFrame
        Measured rows (the dataset schema).
    platform : str, optional
        Keep this platform's rows only (``ValueError`` when it has none).

    Returns
    -------
    pandas.DataFrame
        A copy.
    """
    out = df
    if "status" in out.columns:
        out = out[out["status"] == "ok"]
    if platform is not None:
        if "platform" not in out.columns:
            raise ValueError(
                f"platform={platform!r} requested but the data has no 'platform' column"
            )
        out = out[out["platform"] == platform]
        if out.empty:
            raise ValueError(
                f"no status=='ok' rows for platform {platform!r}; "
                f"platforms in the data: {sorted(df['platform'].dropna().unique())}"
            )
    missing = [c for c in (*STATIC_FEATURES, *ALLOC_FEATURES.values()) if c not in out.columns]
    if missing and len(out):
        feats = static_features(out)
        out = out.assign(**{c: feats[c].to_numpy() for c in missing})
    return out.copy()


def has_values(df: pd.DataFrame, col: str) -> bool:
    """True when ``df`` has column ``col`` with at least one numeric value."""
    return col in df.columns and pd.to_numeric(df[col], errors="coerce").notna().any()


def batch_tier(batch: pd.Series) -> pd.Series:
    """The paper's batch tiers (:func:`carb_lib.families.space.batch_tier`: ``b<=4`` ... ``b>128``)."""
    return pd.Series(
        tiers(pd.to_numeric(batch).to_numpy(dtype=float)), index=batch.index, name="batch_tier"
    )


def depth_tier(df: pd.DataFrame) -> pd.Series:
    """Depth stratum of every row: its family's ``depth_label`` (ResNet: the depth tiers of
    :func:`carb_lib.families.space.depth_tier`; NB201 and other families without depth tiers: the
    family name). Rows without a ``family`` are of :data:`~carb_lib.families.DEFAULT_FAMILY`.
    """
    family = family_of(df)
    out = np.full(len(df), None, dtype=object)
    for name in family_names():
        rows = equals(family, name)
        if rows.any():
            out[rows] = get_family(name).depth_label(df.loc[rows])
    unknown = pd.isna(out)
    if unknown.any():
        raise ValueError(
            f"row {df.index[int(np.flatnonzero(unknown)[0])]!r}: family "
            f"{family.iloc[int(np.flatnonzero(unknown)[0])]!r} is not registered; known: "
            f"{list(family_names())}"
        )
    return pd.Series(out, index=df.index, name="depth_tier")


def stress_flag(df: pd.DataFrame, threshold_pct: float = STRESS_UTIL_PCT) -> pd.Series:
    """True where SM or memory utilisation exceeds ``threshold_pct`` (False without telemetry)."""
    flag = pd.Series(False, index=df.index, name="stress")
    for col in ("sm_util_pct", "mem_util_pct"):
        if col in df.columns:
            flag |= pd.to_numeric(df[col], errors="coerce").gt(threshold_pct).fillna(False)
    return flag


def _check_fractions(fractions: Sequence[float]) -> np.ndarray:
    f = np.asarray(fractions, dtype=float)
    if len(f) != 3 or (f < 0).any() or not np.isclose(f.sum(), 1.0):
        raise ValueError(
            f"fractions must be three non-negative numbers summing to 1, got {fractions!r}"
        )
    return f


def stratified_split(
    df: pd.DataFrame,
    fractions: Sequence[float] = (0.7, 0.15, 0.15),
    random_state: int = 0,
) -> pd.Series:
    """Assign each row to ``train`` / ``val`` / ``test``, stratified like the paper.

    Strata are batch tier x stress flag x depth tier. Rows are shuffled within each stratum
    and laid end to end; position ``p`` gets the split whose cumulative fraction interval
    contains ``frac(p x golden ratio)``, a low-discrepancy sequence, so every stratum (even a
    small one) and the whole set are split close to ``fractions``.

    Parameters
    ----------
    df : pandas.DataFrame
    fractions : sequence of 3 float, default=(0.7, 0.15, 0.15)
    random_state : int, default=0

    Returns
    -------
    pandas.Series
        ``"train"``/``"val"``/``"test"``, index of ``df``.
    """
    f = _check_fractions(fractions)
    strata = (
        batch_tier(df["batch"]) + "|" + stress_flag(df).astype(str) + "|" + depth_tier(df)
    ).to_numpy()
    rng = np.random.default_rng(random_state)
    order = np.lexsort((rng.random(len(df)), strata))
    u = np.modf(np.arange(len(df)) * _GOLDEN + rng.random())[0]
    labels = np.select([u < f[0], u < f[0] + f[1]], ["train", "val"], "test")
    out = np.empty(len(df), dtype=object)
    out[order] = labels
    return pd.Series(out, index=df.index, name="split")


def architecture_key(df: pd.DataFrame) -> pd.Series:
    """One string per architecture (the config without resolution, batch and precision): the
    :func:`arch_columns` present in ``df``, joined with ``|``."""
    parts = [df[c].astype(object).fillna("-").astype(str) for c in arch_columns()
             if c in df.columns]
    key = parts[0]
    for p in parts[1:]:
        key = key + "|" + p
    return key.rename("arch_key")


def grouped_split(
    df: pd.DataFrame, fractions: Sequence[float] = (0.7, 0.15, 0.15), random_state: int = 0
) -> pd.Series:
    """``train``/``val``/``test`` by architecture: no architecture is in two parts.

    Architectures are shuffled and laid end to end; a row's part is set by where its
    architecture's cumulative row share falls (so parts are close to ``fractions`` in rows).
    """
    f = _check_fractions(fractions)
    key = architecture_key(df)
    counts = key.value_counts(sort=False)
    rng = np.random.default_rng(random_state)
    order = counts.index[rng.permutation(len(counts))]
    sizes = counts[order].to_numpy(dtype=float)
    mid = (np.cumsum(sizes) - sizes / 2) / sizes.sum()  # centre of each group's row span
    part = np.select([mid < f[0], mid < f[0] + f[1]], ["train", "val"], "test")
    mapping = dict(zip(order, part, strict=True))
    return pd.Series(key.map(mapping).to_numpy(), index=df.index, name="split")


def extrapolation_splits(
    df: pd.DataFrame,
    kinds: Iterable[str] = EXTRAPOLATION_KINDS,
    batch_small_max: int = SMALL_BATCH_MAX,
    batch_large_min: int = 64,
    values: Mapping[str, Iterable[Any]] | None = None,
) -> list[tuple[str, Any, np.ndarray]]:
    """``(kind, held_out, test_mask)`` of each extrapolation split (train: ``~test_mask``).

    ``values`` restricts the held-out values of ``depth``/``width``/``resolution`` (quick runs).
    Splits with an empty side are left out.
    """
    kinds = list(kinds)
    unknown = sorted(set(kinds) - set(EXTRAPOLATION_KINDS))
    if unknown:
        raise ValueError(f"unknown extrapolation kind(s) {unknown}; known {EXTRAPOLATION_KINDS}")
    values = dict(values or {})
    b = pd.to_numeric(df["batch"], errors="coerce").to_numpy(dtype=float)
    out: list[tuple[str, Any, np.ndarray]] = []
    for kind in kinds:
        if kind == "batch_small":
            out.append((kind, f"batch<={batch_small_max}", b <= batch_small_max))
        elif kind == "batch_large":
            out.append((kind, f"batch>={batch_large_min}", b >= batch_large_min))
        else:
            col = pd.to_numeric(df[kind], errors="coerce").to_numpy(dtype=float)
            vals = values.get(kind)
            vals = sorted(np.unique(col[np.isfinite(col)])) if vals is None else list(vals)
            for v in vals:
                out.append((kind, float(v) if kind == "width" else int(v), col == v))
    return [(k, h, m) for k, h, m in out if m.any() and (~m).any()]
