"""Empirical coverage and width of CARB's conformal intervals on held-out rows.

One row per target and batch regime (``all``, ``small_batch``, ``large_batch``: the model's
``regime_batch_max``), at the requested nominal coverage.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.vocab import DEFAULT_COVERAGE

__all__ = ["coverage_rows"]


def coverage_rows(model: Any, test: pd.DataFrame, coverage: float = DEFAULT_COVERAGE,
                  **labels: Any) -> list[dict[str, Any]]:
    """Coverage and width per target and batch regime, as tidy rows.

    Parameters
    ----------
    model : carb_lib.ensemble.CARBRegressor
        A fitted model (anything with ``predict_interval``, ``targets_``, ``regime_batch_max``).
    test : pandas.DataFrame
        Held-out rows with the measured targets.
    coverage : float, default=DEFAULT_COVERAGE
        Nominal coverage of the intervals.
    **labels
        Columns prepended to every row (``kind``, ``seed``...).

    Returns
    -------
    list of dict
        ``target``, ``regime``, ``nominal``, ``coverage`` (share of measured values inside
        ``[lo, hi]``), ``median_hi_over_lo``, ``n``, ``share_extrapolated``.
    """
    iv = model.predict_interval(test, coverage=coverage)
    small = pd.to_numeric(test["batch"], errors="coerce").le(model.regime_batch_max).to_numpy()
    extrap = iv["extrapolated"].to_numpy(dtype=bool)
    rows = []
    for t in model.targets_:
        y = pd.to_numeric(test[t], errors="coerce").to_numpy(float)
        lo, hi = iv[f"{t}_lo"].to_numpy(), iv[f"{t}_hi"].to_numpy()
        for regime, mask in (("all", np.ones(len(y), bool)), ("small_batch", small),
                             ("large_batch", ~small)):
            m = mask & np.isfinite(y)
            if not m.any():
                continue
            rows.append({
                **labels,
                "target": t,
                "regime": regime,
                "nominal": coverage,
                "coverage": float(np.mean((y[m] >= lo[m]) & (y[m] <= hi[m]))),
                "median_hi_over_lo": float(np.median(hi[m] / np.maximum(lo[m], 1e-12))),
                "n": int(m.sum()),
                "share_extrapolated": float(extrap[m].mean()),
            })
    return rows
