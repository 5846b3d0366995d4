"""The pure core of "what does my network cost?" (:func:`carb_lib.app.explore.network_cost`):
a config in, its predicted cost with intervals, the nearest measured rows and the training
range out (:class:`CostReport`); the widget and its display are in :mod:`carb_lib.app.explore`,
the words and rounding in :mod:`carb_lib.app.explore_format`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from carb_lib.app.explore_format import (
    NOT_MEASURED_ENERGY,
    noise_floor,
    reason_words,
    widen_to_noise,
)
from carb_lib.core.vocab import DEFAULT_COVERAGE, TARGET_UNITS, display_name
from carb_lib.dataset.features import with_static_features
from carb_lib.families.space import ResNetConfig

#: Config columns compared with the training range (numeric: min-max; others: values seen).
RANGE_COLUMNS: tuple[str, ...] = ("block", "depth", "width", "early_downsample", "resolution",
                                  "batch", "precision", "flops", "params", "activation_bytes")
#: Unit of each target (:data:`carb_lib.core.vocab.TARGET_UNITS`; costs are per batch).
UNITS: dict[str, str] = TARGET_UNITS
_DISTANCE_NUMERIC = ("depth", "width", "resolution", "batch")
#: What a user network (family ``module``) is compared on: its size and kind of layers, as
#: the model sees them, not a config of a family.
MODULE_RANGE_COLUMNS: tuple[str, ...] = (
    "resolution", "batch", "precision", "flops", "params", "activation_bytes", "n_dwconv",
    "dw_flops_share", "n_add", "n_se",
)  # fmt: skip
_MODULE_DISTANCE_NUMERIC = ("flops", "params", "resolution", "batch")
_DISTANCE_CATEGORICAL = ("block", "precision", "early_downsample")


@dataclass
class CostReport:
    """What :func:`cost_report` returns for one config."""

    config: pd.DataFrame  # one row: the config with its static features
    prediction: pd.DataFrame  # target, unit, predicted, lo, hi, coverage
    nearest: pd.DataFrame  # the k nearest measured rows, with distance
    ranges: pd.DataFrame  # column, value, train_min, train_max, outside
    not_predicted: dict[str, str]  # target -> why
    notes: list[str] = field(default_factory=list)  # what the model said while predicting
    platform: str | None = None  # the platform the model was fitted on (its rows' platform)
    protocol: str | None = None  # the protocol it predicts for, in words

    @property
    def is_extrapolation(self) -> bool:
        """True if any config column lies outside the training range."""
        return bool(self.ranges["outside"].any())

    def summary(self) -> str:
        outside = [display_name(c, unit=False)
                   for c in self.ranges.loc[self.ranges["outside"], "column"]]
        if outside:
            return ("EXTRAPOLATION: outside the training range in " + ", ".join(outside)
                    + " - no interval can be trusted there, treat the prediction with care")
        return "inside the training range of every config column"


def make_config(block: str = "basic", depth: int = 18, width: float = 1.0,
                early_downsample: bool = True, resolution: int = 64, batch: int = 1,
                precision: str = "fp32", num_classes: int = 1000) -> pd.DataFrame:
    """One ResNet config as a one-row frame with its static features (validated).

    Raises
    ------
    carb_lib.families.space.ConfigError
        If a value is outside the design space.
    """
    cfg = ResNetConfig(block=block, depth=int(depth), width=float(width),
                       early_downsample=bool(early_downsample), resolution=int(resolution),
                       batch=int(batch), precision=precision, num_classes=int(num_classes))
    row = pd.DataFrame([{"family": cfg.family, "block": cfg.block, "depth": cfg.depth,
                         "width": cfg.width, "early_downsample": cfg.early_downsample,
                         "resolution": cfg.resolution, "batch": cfg.batch,
                         "precision": cfg.precision, "num_classes": cfg.num_classes}])
    return with_static_features(row)


def training_ranges(config: pd.DataFrame, train: pd.DataFrame,
                    columns: Sequence[str] = RANGE_COLUMNS) -> pd.DataFrame:
    """Per column: the config's value, the training range and whether it lies outside.

    Numeric columns: outside ``[min, max]`` of the training rows. Other columns (block,
    precision, early_downsample): a value no training row has.
    """
    rows = []
    for col in columns:
        if col not in config.columns or col not in train.columns:
            continue
        v = config[col].iloc[0]
        t = train[col].dropna()
        numeric = (pd.api.types.is_numeric_dtype(t) and not pd.api.types.is_bool_dtype(t)
                   and col != "early_downsample")
        if numeric:
            tv = pd.to_numeric(t, errors="coerce").astype(float)
            lo, hi = float(tv.min()), float(tv.max())
            rows.append(dict(column=col, value=v, train_min=lo, train_max=hi,
                             outside=bool(not lo <= float(v) <= hi)))
        else:
            seen = sorted(map(str, t.unique()))
            rows.append(dict(column=col, value=v, train_min=", ".join(seen), train_max=None,
                             outside=str(v) not in seen))
    return pd.DataFrame(rows, columns=["column", "value", "train_min", "train_max", "outside"])


def nearest_measured(config: pd.DataFrame, measured: pd.DataFrame, k: int = 5,
                     numeric: Sequence[str] = _DISTANCE_NUMERIC) -> pd.DataFrame:
    """The ``k`` measured rows nearest to ``config``.

    Distance: Euclidean over log2 of the ``numeric`` columns (default depth, width, resolution
    and batch; each divided by its standard deviation in ``measured``), plus 1 for each of
    block, precision and early_downsample that differs. 0 means the same config was measured.
    Rows of the config's precision come first (an fp16 query lists fp16 rows), then the others.
    """
    if measured.empty:
        return measured.assign(distance=pd.Series(dtype=float))
    d2 = np.zeros(len(measured))
    for col in numeric:
        if col in measured.columns and col in config.columns:
            m = np.log2(pd.to_numeric(measured[col], errors="coerce").astype(float).to_numpy())
            c = math.log2(float(config[col].iloc[0]))
            sd = np.nanstd(m)
            d2 += ((m - c) / (sd if sd > 0 else 1.0)) ** 2
    for col in _DISTANCE_CATEGORICAL:
        if col in measured.columns and col in config.columns:
            d2 += (measured[col].astype(str).to_numpy() != str(config[col].iloc[0])).astype(float)
    dist = np.sqrt(np.nan_to_num(d2, nan=np.inf))
    other = np.zeros(len(measured))
    if "precision" in measured.columns and "precision" in config.columns:
        other = (measured["precision"].astype(str).to_numpy()
                 != str(config["precision"].iloc[0])).astype(float)
    order = np.lexsort((dist, other))[:k]  # rows of the same precision first, then distance
    cols = [c for c in ("platform", "family", "block", "depth", "width", "early_downsample",
                        "resolution",
                        "batch", "precision", "flops", "peak_mem_mib", "energy_j", "latency_ms")
            if c in measured.columns]
    out = measured.iloc[order][cols].copy()
    out.insert(0, "distance", dist[order])
    return out.reset_index(drop=True)


def _has_values(rows: pd.DataFrame, column: str) -> bool:
    return column in rows.columns and bool(
        np.isfinite(pd.to_numeric(rows[column], errors="coerce").astype(float)).any())


def cost_report(model, config: pd.DataFrame, train: pd.DataFrame,
                measured: pd.DataFrame | None = None, coverage: float = DEFAULT_COVERAGE,
                k: int = 5, *, columns: Sequence[str] = RANGE_COLUMNS,
                distance: Sequence[str] = _DISTANCE_NUMERIC) -> CostReport:
    """Predict ``config``'s cost with ``model`` and put it in context.

    Parameters
    ----------
    model : carb_lib.ensemble.CARBRegressor
        Fitted in frame mode (on a dataset in the CARB schema).
    config : pandas.DataFrame
        One row (:func:`make_config`).
    train : pandas.DataFrame
        The rows the model was trained on (their ranges decide "extrapolation").
    measured : pandas.DataFrame or None
        Rows to search for the nearest measured configs (default: ``train``).
    coverage : float
        Nominal coverage of the split-conformal intervals.
    k : int
        Nearest measured rows listed.
    columns, distance : sequence of str
        Columns compared with the training range (:func:`training_ranges`) and numeric
        columns of the distance (:func:`nearest_measured`).
    """
    import warnings

    with warnings.catch_warnings(record=True) as caught:  # shown as notes, never as warnings
        warnings.simplefilter("always")
        iv = model.predict_interval(config, coverage=coverage)
    notes = list(dict.fromkeys(str(c.message) for c in caught
                               if c.category.__name__ != "MissingTargetWarning"))
    pred = pd.DataFrame([
        dict(target=t, unit=UNITS.get(t, ""), predicted=float(iv[t].iloc[0]),
             lo=float(iv[f"{t}_lo"].iloc[0]), hi=float(iv[f"{t}_hi"].iloc[0]), coverage=coverage)
        for t in model.targets_])
    why = {t: NOT_MEASURED_ENERGY if t == "energy_j" else "not in the training data"
           for t in getattr(model, "skipped_targets_", [])}
    if "energy_j" not in model.targets_ and not _has_values(train, "energy_j"):
        why["energy_j"] = NOT_MEASURED_ENERGY
    if why.get("energy_j"):  # the counter's own reason (a sysfs path) says no more than this
        notes = [n for n in notes if "powercap" not in n and "energy" not in n.lower()]
    notes = [reason_words(n) for n in notes]
    prec = str(config["precision"].iloc[0]) if "precision" in config.columns else None
    pred = widen_to_noise(pred, noise_floor(train, prec))
    measured = train if measured is None else measured
    ranges = training_ranges(config, train, columns)
    pred["extrapolated"] = bool(ranges["outside"].any())
    platforms = sorted(train["platform"].dropna().astype(str).unique()) \
        if "platform" in train.columns else []
    return CostReport(config, pred, nearest_measured(config, measured, k, distance), ranges,
                      why, notes, platforms[0] if len(platforms) == 1 else None)
