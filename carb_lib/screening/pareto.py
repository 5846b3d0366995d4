"""Pareto maths of the screening: non-dominated fronts, non-dominated sorting, NSGA-II crowding
distance, distance to the ideal point, exact hypervolume.

Every function takes an ``(n, m)`` array of objective values, minimised unless ``senses``
says ``"max"`` for a column; values must be finite.

Examples
--------
>>> import numpy as np
>>> from carb_lib.screening import pareto_front, hypervolume
>>> F = np.array([[1.0, 3.0], [2.0, 2.0], [3.0, 3.0]])
>>> pareto_front(F).tolist()
[True, True, False]
>>> hypervolume(F, ref=[4.0, 4.0])
5.0
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["crowding_distance", "hypervolume", "knee_distance", "pareto_front", "pareto_ranks"]


# ============================================================================ Pareto
def _as_min_matrix(values: np.ndarray | pd.DataFrame, senses: Sequence[str] | None = None
                   ) -> np.ndarray:
    F = np.asarray(values, dtype=float)
    if F.ndim == 1:
        F = F[:, None]
    if F.ndim != 2:
        raise ValueError(f"objective values must be a 2-D array, got shape {F.shape}")
    if senses is not None:
        if len(senses) != F.shape[1]:
            raise ValueError(f"{len(senses)} senses for {F.shape[1]} objectives")
        sign = np.array([-1.0 if s == "max" else 1.0 for s in senses])
        F = F * sign
    if F.size and not np.isfinite(F).all():
        r, c = np.argwhere(~np.isfinite(F))[0]
        raise ValueError(f"objective values must be finite; row {r}, objective {c} is {F[r, c]}")
    return F


def _dense_ranks(F: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column dense ranks (ties equal) and the number of distinct values."""
    ranks = np.empty(F.shape, dtype=np.int64)
    sizes = np.empty(F.shape[1], dtype=np.int64)
    for j in range(F.shape[1]):
        u, inv = np.unique(F[:, j], return_inverse=True)
        ranks[:, j] = inv.ravel()
        sizes[j] = len(u)
    return ranks, sizes


def _front_2d(F: np.ndarray) -> np.ndarray:
    """Non-dominated mask, 2 objectives: lexicographic sort + cumulative-minimum sweep."""
    n = len(F)
    order = np.lexsort((F[:, 1], F[:, 0]))
    a, b = F[order, 0], F[order, 1]
    new_group = np.empty(n, dtype=bool)
    new_group[0] = True
    new_group[1:] = a[1:] != a[:-1]
    gstart = np.flatnonzero(new_group)
    gid = np.cumsum(new_group) - 1
    running = np.minimum.accumulate(b)
    prev_min = np.full(len(gstart), np.inf)  # min of b over strictly smaller a
    prev_min[1:] = running[gstart[1:] - 1]
    dominated = (prev_min[gid] <= b) | (b > b[gstart][gid])
    out = np.empty(n, dtype=bool)
    out[order] = ~dominated
    return out


def _front_3d(F: np.ndarray) -> np.ndarray:
    """Non-dominated mask, 3 objectives, O(n log^2 n), vectorised.

    Rows are deduplicated (duplicates share their status: equal points do not dominate each
    other) and put in lexicographic order. A distinct point ``i`` is then dominated iff an
    earlier point ``j`` has ``f2_j <= f2_i`` and ``f3_j <= f3_i``. That offline 2-D dominance
    query is answered by divide and conquer over the sorted order (CDQ): at each of the
    log2(n) levels, every right half asks its left half for the minimum ``f3`` rank among points
    with ``f2`` rank <= its own. One level is a single sort of all points by
    (block, f2 rank, side) and one segmented running minimum (a running maximum on
    block-offset keys), so each level costs one numpy sort.
    """
    ranks, sizes = _dense_ranks(F)
    key = (ranks[:, 0] * sizes[1] + ranks[:, 1]) * sizes[2] + ranks[:, 2]
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    m = len(first)
    r2, r3 = ranks[first, 1], ranks[first, 2]
    big = int(sizes[2]) + 1
    best = np.full(m, np.iinfo(np.int64).max)
    pos = np.arange(m, dtype=np.int64)
    half = 1
    while half < m:
        blk = pos // (2 * half)
        right = ((pos // half) & 1).astype(bool)
        # left points sort before right points with the same f2 rank (f2_j <= f2_i includes =)
        o = np.argsort((blk * (int(sizes[1]) + 1) + r2) * 2 + right)
        blk_o, right_o = blk[o], right[o]
        w = np.where(right_o, blk_o * big - 1, blk_o * big + (big - 1 - r3[o]))
        res = np.maximum.accumulate(w) - blk_o * big  # < 0: no left point of this block yet
        ok = right_o & (res >= 0)
        idx = o[ok]
        best[idx] = np.minimum(best[idx], big - 1 - res[ok])
        half *= 2
    return ~(best <= r3)[inv.ravel()]


def _prefilter(F: np.ndarray, n_dominators: int = 16) -> np.ndarray:
    """Mask of rows dominated by one of a few strong points (weighted-sum minimisers).

    Linear-time (O(n * n_dominators * m)); it only removes rows, never decides the front, so
    the exact algorithm that follows runs on far fewer rows in the usual correlated-cost case.
    """
    n, m = F.shape
    Ft = np.ascontiguousarray(F.T)  # (m, n): column-wise passes are contiguous
    lo, hi = Ft.min(axis=1), Ft.max(axis=1)
    span = np.where(hi > lo, hi - lo, 1.0)
    rng = np.random.default_rng(0)
    W = np.vstack([np.eye(m), np.full((1, m), 1.0 / m), rng.dirichlet(np.ones(m), n_dominators)])
    W = W / span  # weighted sums of min-max normalised objectives (the offset does not matter)
    cand = np.unique(np.argmin(W @ Ft, axis=1))
    cols = list(Ft)
    dominated = np.zeros(n, dtype=bool)
    ge = np.empty(n, dtype=bool)
    eq = np.empty(n, dtype=bool)
    tmp = np.empty(n, dtype=bool)
    for i in cand:
        s = F[i]
        np.greater_equal(cols[0], s[0], out=ge)
        np.equal(cols[0], s[0], out=eq)
        for j in range(1, m):
            ge &= np.greater_equal(cols[j], s[j], out=tmp)
            eq &= np.equal(cols[j], s[j], out=tmp)
        # no worse in every objective and not identical = dominated by s
        dominated |= ge & ~eq
    return dominated


def _front_general(F: np.ndarray, block: int = 2048) -> np.ndarray:
    """Non-dominated mask for any number of objectives: sort by rank sum, block-wise culling.

    A dominator has a strictly smaller sum of dense ranks, so rows are processed in that order
    and each block is compared with the front found so far and with itself (vectorised).
    Cost O(n * |front| * m): fine for the small fronts of >= 4 correlated objectives; the 2- and
    3-objective cases use the O(n log n) / O(n log^2 n) algorithms instead.
    """
    n = len(F)
    ranks, _ = _dense_ranks(F)
    order = np.argsort(ranks.sum(axis=1), kind="stable")
    G = F[order]
    keep = np.zeros(n, dtype=bool)
    front = np.empty((0, F.shape[1]))
    for s in range(0, n, block):
        B = G[s:s + block]
        dom = np.zeros(len(B), dtype=bool)
        if len(front):
            le = np.all(front[None, :, :] <= B[:, None, :], axis=2)
            lt = np.any(front[None, :, :] < B[:, None, :], axis=2)
            dom |= (le & lt).any(axis=1)
        le = np.all(B[None, :, :] <= B[:, None, :], axis=2)
        lt = np.any(B[None, :, :] < B[:, None, :], axis=2)
        dom |= (le & lt).any(axis=1)
        keep[s:s + len(B)] = ~dom
        front = np.vstack([front, B[~dom]])
    out = np.empty(n, dtype=bool)
    out[order] = keep
    return out


def pareto_front(values: np.ndarray | pd.DataFrame, senses: Sequence[str] | None = None
                 ) -> np.ndarray:
    """Boolean mask of the non-dominated rows.

    Row ``a`` dominates ``b`` when it is no worse in every objective and strictly better in one;
    identical rows do not dominate each other (duplicates on the front are all kept).

    Parameters
    ----------
    values : array-like, shape (n, m)
        Objective values, minimised unless ``senses`` says ``"max"``.
    senses : sequence of {"min", "max"}, optional

    Returns
    -------
    numpy.ndarray of bool, shape (n,)

    Notes
    -----
    For n > 4096 a linear prefilter first drops rows dominated by a few weighted-sum minimisers
    (:func:`_prefilter`; exact, it only removes dominated rows). Then
    m = 1: the minima. m = 2: lexicographic sort + running minimum, O(n log n).
    m = 3: divide and conquer over the lexicographic order (:func:`_front_3d`), O(n log^2 n)
    with one numpy sort per level.
    m >= 4: block-wise culling in rank-sum order, O(n * |front| * m).
    """
    F = _as_min_matrix(values, senses)
    n, m = F.shape
    if n == 0:
        return np.zeros(0, dtype=bool)
    if m == 1:
        return F[:, 0] == F[:, 0].min()
    if n <= 4096:
        return _front_2d(F) if m == 2 else _front_3d(F) if m == 3 else _front_general(F)
    out = np.zeros(n, dtype=bool)
    idx = np.flatnonzero(~_prefilter(F))
    sub = F[idx]
    out[idx] = _front_2d(sub) if m == 2 else _front_3d(sub) if m == 3 else _front_general(sub)
    return out


def pareto_ranks(values: np.ndarray | pd.DataFrame, senses: Sequence[str] | None = None,
                 max_rank: int | None = None, min_count: int | None = None) -> np.ndarray:
    """Non-dominated sorting by peeling fronts: 0 for the front, 1 for the next, ...

    Peeling stops after ``max_rank`` fronts or once ``min_count`` rows are ranked; unranked rows
    get ``-1``.
    """
    F = _as_min_matrix(values, senses)
    rank = np.full(len(F), -1, dtype=np.int64)
    remaining = np.arange(len(F))
    r = 0
    while len(remaining) and (max_rank is None or r < max_rank):
        mask = pareto_front(F[remaining])
        rank[remaining[mask]] = r
        remaining = remaining[~mask]
        r += 1
        if min_count is not None and (rank >= 0).sum() >= min_count:
            break
    return rank


def crowding_distance(values: np.ndarray | pd.DataFrame, senses: Sequence[str] | None = None
                      ) -> np.ndarray:
    """NSGA-II crowding distance of each row within its set (extremes get ``inf``).

    Each objective is normalised by its range in the set; a row's distance is the sum over
    objectives of the gap between its two neighbours in that objective's sorted order.
    """
    F = _as_min_matrix(values, senses)
    n, m = F.shape
    d = np.zeros(n)
    if n <= 2:
        return np.full(n, np.inf)
    for j in range(m):
        order = np.argsort(F[:, j], kind="stable")
        f = F[order, j]
        span = f[-1] - f[0]
        d[order[0]] = d[order[-1]] = np.inf
        if span > 0:
            d[order[1:-1]] += (f[2:] - f[:-2]) / span
    return d


def knee_distance(values: np.ndarray | pd.DataFrame, senses: Sequence[str] | None = None
                  ) -> np.ndarray:
    """Euclidean distance to the ideal point after min-max normalisation (smaller = kneeier)."""
    F = _as_min_matrix(values, senses)
    lo, hi = F.min(axis=0), F.max(axis=0)
    Z = (F - lo) / np.where(hi > lo, hi - lo, 1.0)
    return np.sqrt((Z ** 2).sum(axis=1))


# ============================================================================ hypervolume
def hypervolume(values: np.ndarray | pd.DataFrame, ref: Sequence[float],
                senses: Sequence[str] | None = None) -> float:
    """Exact hypervolume dominated by ``values`` and bounded by the reference point ``ref``.

    2 objectives: sort + sweep, O(n log n). 3 or more: slicing along the last objective
    (each slice a lower-dimensional hypervolume), O(n^2 log n) for 3 - meant for fronts of up to
    a few thousand points. Points not strictly better than ``ref`` in every objective add
    nothing. ``ref`` is given in the objectives' own sense (for a maximised objective, a value
    below every point).
    """
    F = _as_min_matrix(values, senses)
    r = np.asarray(ref, dtype=float).ravel()
    if senses is not None:
        r = r * np.array([-1.0 if s == "max" else 1.0 for s in senses])
    if F.shape[0] and F.shape[1] != len(r):
        raise ValueError(f"reference point has {len(r)} values for {F.shape[1]} objectives")
    if F.shape[0] == 0:
        return 0.0
    F = F[np.all(F < r, axis=1)]
    if len(F) == 0:
        return 0.0
    F = F[pareto_front(F)]
    return float(_hv(np.unique(F, axis=0), r))


def _hv(F: np.ndarray, r: np.ndarray) -> float:
    m = F.shape[1]
    if m == 1:
        return float(r[0] - F[:, 0].min())
    if m == 2:
        order = np.lexsort((F[:, 1], F[:, 0]))
        x, y = F[order, 0], F[order, 1]
        ymin = np.minimum.accumulate(y)
        x_next = np.append(x[1:], r[0])
        return float(np.sum((x_next - x) * (r[1] - ymin)))
    order = np.argsort(F[:, -1], kind="stable")
    F = F[order]
    levels = np.append(F[:, -1], r[-1])
    total = 0.0
    for i in range(len(F)):
        thick = levels[i + 1] - levels[i]
        if thick > 0:
            sub = F[: i + 1, :-1]
            total += thick * _hv(sub[pareto_front(sub)], r[:-1])
    return total
