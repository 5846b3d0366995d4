"""Split-conformal intervals of CARB, Mondrian by batch regime.

A fitted :class:`~carb_lib.ensemble.CARBRegressor` keeps, per target, the sorted absolute
residuals on the learning (log) scale of its calibration rows (``conformal_scores_``: pooled
``"all"``, and ``"small_batch"`` / ``"large_batch"`` when each regime has enough rows). The
half-width at coverage ``c`` is their ``ceil((n + 1) c)``-th smallest value, so one fit gives
the interval at any coverage; intervals are multiplicative on the original scale and never
narrower than ``exp(±MIN_HALF_WIDTH)`` (1 ppm): a target the model reproduces to rounding error
(peak memory on the project's CPU, via the allocator model) gets that floor, not a width of
rounding noise that would cover the truth by chance.

Examples
--------
>>> import numpy as np
>>> from carb_lib.ensemble.conformal import conformal_quantile
>>> scores = np.arange(1.0, 20.0)  # 19 sorted scores
>>> conformal_quantile(scores, 0.5), conformal_quantile(scores, 0.9)
(10.0, 18.0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

__all__ = ["MIN_HALF_WIDTH", "REGIMES", "calibration_mask", "conformal_quantile", "half_widths", "score_groups"]

#: Batch regimes of the Mondrian split: ``batch <= regime_batch_max`` and the rest.
REGIMES: tuple[str, ...] = ("small_batch", "large_batch")
#: Smallest regime group with its own quantile (smaller: the pooled scores).
MIN_GROUP = 30
#: Fewest calibration rows for ``conformal="split"`` (fewer: scores from OOF residuals).
MIN_CALIBRATION = 20
#: Smallest half-width on the learning (log) scale: 1e-6 = 1 ppm.
MIN_HALF_WIDTH = 1e-6
_CALIBRATION_SEED_OFFSET = 7919  # the calibration draw's generator: random_state + this


def conformal_quantile(scores: np.ndarray, coverage: float) -> float:
    """Split-conformal quantile: the ceil((n+1) coverage)-th smallest score (inf if beyond n).

    Parameters
    ----------
    scores : ndarray
        Sorted absolute residuals of the calibration rows.
    coverage : float
        Nominal coverage in (0, 1).
    """
    n = len(scores)
    k = math.ceil((n + 1) * coverage)
    return float(scores[k - 1]) if 1 <= k <= n else math.inf


def calibration_mask(regime: np.ndarray, size: float, random_state: int,
                     groups: np.ndarray | None = None) -> np.ndarray:
    """Rows of the calibration fold: a share ``size`` of each batch regime, drawn at random.

    With ``groups`` (config ids) that repeat, whole groups are drawn (a share ``size`` of each
    regime's groups), so that repeated measurements of one config are never split between the
    fitted rows and the calibration fold (which would overstate coverage)."""
    cal = np.zeros(len(regime), bool)
    rng = np.random.default_rng(random_state + _CALIBRATION_SEED_OFFSET)
    if groups is not None and len(set(groups)) < len(groups):
        g = np.asarray(groups).astype(str)
        for rows in (np.flatnonzero(regime), np.flatnonzero(~regime)):
            uniq = np.unique(g[rows])
            k = int(round(size * len(uniq)))
            cal[rows[np.isin(g[rows], rng.choice(uniq, size=k, replace=False))]] = True
        return cal
    for rows in (np.flatnonzero(regime), np.flatnonzero(~regime)):
        k = int(round(size * len(rows)))
        cal[rng.choice(rows, size=k, replace=False)] = True
    return cal


def score_groups(
    scores: np.ndarray, rows: np.ndarray, regime: np.ndarray | None, by_regime: bool
) -> dict[str, np.ndarray]:
    """Sorted scores of ``rows``: ``"all"`` and, with ``by_regime``, each regime big enough.

    Parameters
    ----------
    scores : ndarray
        Absolute residuals of every training row (learning scale).
    rows : ndarray of bool
        The rows whose residuals are conformal scores.
    regime : ndarray of bool or None
        Small-batch mask (None without a batch column: pooled scores only).
    by_regime : bool
    """
    groups = {"all": np.sort(scores[rows])}
    if by_regime and regime is not None:
        for g, mask in zip(REGIMES, (regime, ~regime), strict=True):
            s = scores[rows & mask]
            if len(s) >= MIN_GROUP:
                groups[g] = np.sort(s)
    return groups


def half_widths(
    groups: Mapping[str, np.ndarray], regime: np.ndarray, coverage: float
) -> np.ndarray:
    """Per-row half-width at ``coverage``: the row's regime quantile, else the pooled one."""
    half = np.full(len(regime), conformal_quantile(groups["all"], coverage))
    for g, rows in zip(REGIMES, (regime, ~regime), strict=True):
        if g in groups:
            half[rows] = conformal_quantile(groups[g], coverage)
    return np.maximum(half, MIN_HALF_WIDTH)
