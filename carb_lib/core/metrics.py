"""Accuracy metrics, defined once: R² (plain and log scale), MAE, MAPE (%), share within ±10 %
(nn-Meter's metric), Spearman's rho.

Rows where the true or predicted value is not finite are ignored (``n`` counts the rest).
MAPE and the ±10 % share are relative to the measured value; rows whose measured value is 0
are ignored by them (a measured cost is > 0 by the dataset's rule).

Examples
--------
>>> from carb_lib.core.metrics import regression_metrics
>>> m = regression_metrics([1.0, 2.0, 4.0], [1.06, 2.0, 4.0])
>>> round(m.mape_pct, 3), m.within_10pct
(2.0, 1.0)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

import numpy as np

__all__ = ["RegressionMetrics", "mape_pct", "r2", "regression_metrics", "spearman",
           "within_pct"]


def _pair(y_true: Iterable[float], y_pred: Iterable[float]) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y_true, dtype=float).ravel()
    p = np.asarray(y_pred, dtype=float).ravel()
    if y.shape != p.shape:
        raise ValueError(f"y_true has {y.size} values and y_pred {p.size}")
    m = np.isfinite(y) & np.isfinite(p)
    return y[m], p[m]


def _rel(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    nz = y != 0
    return np.abs(p[nz] - y[nz]) / np.abs(y[nz])


def mape_pct(y_true: Iterable[float], y_pred: Iterable[float]) -> float:
    """Mean absolute percentage error in % (NaN without a usable row)."""
    y, p = _pair(y_true, y_pred)
    rel = _rel(y, p)
    return float(100.0 * rel.mean()) if rel.size else float("nan")


def within_pct(y_true: Iterable[float], y_pred: Iterable[float], pct: float = 10.0) -> float:
    """Share (0-1) of predictions within ±``pct`` % of the measured value."""
    y, p = _pair(y_true, y_pred)
    rel = _rel(y, p)
    return float(np.mean(rel <= pct / 100.0)) if rel.size else float("nan")


def r2(y_true: Iterable[float], y_pred: Iterable[float]) -> float:
    """Coefficient of determination (NaN with fewer than 2 rows or constant ``y_true``)."""
    y, p = _pair(y_true, y_pred)
    if y.size < 2:
        return float("nan")
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    if ss_tot == 0.0:
        return float("nan")
    return 1.0 - float(np.sum((y - p) ** 2)) / ss_tot


def spearman(y_true: Iterable[float], y_pred: Iterable[float]) -> float:
    """Spearman rank correlation (NaN with fewer than 2 rows or a constant side)."""
    from scipy.stats import spearmanr

    y, p = _pair(y_true, y_pred)
    if y.size < 2 or np.ptp(y) == 0 or np.ptp(p) == 0:
        return float("nan")
    return float(spearmanr(y, p).statistic)


@dataclass(frozen=True)
class RegressionMetrics:
    """All metrics of one prediction; ``as_dict()`` gives the table row."""

    n: int
    r2: float
    r2_log: float
    mae: float
    mape_pct: float
    within_10pct: float
    spearman: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)

    # mapping-style access keeps older callers (``m["mape_pct"]``) working
    def __getitem__(self, key: str) -> float:
        return getattr(self, key)

    def keys(self):  # noqa: D102
        return self.as_dict().keys()


def regression_metrics(y_true: Iterable[float], y_pred: Iterable[float]) -> RegressionMetrics:
    """R² (original and log1p scale), MAE, MAPE (%), share within ±10 %, Spearman rho."""
    y, p = _pair(y_true, y_pred)
    nan = float("nan")
    if y.size < 2:
        return RegressionMetrics(int(y.size), nan, nan, nan, nan, nan, nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        return RegressionMetrics(
            n=int(y.size),
            r2=r2(y, p),
            r2_log=r2(np.log1p(y), np.log1p(np.clip(p, 0.0, None))),
            mae=float(np.mean(np.abs(p - y))),
            mape_pct=mape_pct(y, p),
            within_10pct=within_pct(y, p, 10.0),
            spearman=spearman(y, p),
        )
