"""Tidy metric tables of the evaluation and of transfer (one metric implementation:
:mod:`carb_lib.core.metrics`); importable from :mod:`carb_lib.evaluation.scoring` too.

Per target: R² (original and log scale), MAE, MAPE, share within ±10 %, Spearman rho; latency
errors next to the measured run-to-run noise (median ``latency_cv``) and the re-measurement
noise (:func:`remeasurement_noise`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.metrics import RegressionMetrics, regression_metrics
from carb_lib.core.vocab import REMEASURED_COLUMNS

__all__ = ["METRIC_COLUMNS", "REMEASUREMENT_NOISE", "mean_sd", "metric_rows", "noise_floor_cv",
           "regression_metrics", "remeasurement_floor", "remeasurement_noise"]

#: Columns of one metrics row (:class:`carb_lib.core.metrics.RegressionMetrics`).
METRIC_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(RegressionMetrics))


def noise_floor_cv(df: pd.DataFrame) -> float | None:
    """Median ``latency_cv`` (run-to-run coefficient of variation) or None if not measured."""
    if "latency_cv" not in df.columns:
        return None
    cv = pd.to_numeric(df["latency_cv"], errors="coerce").dropna()
    return float(cv.median()) if len(cv) else None


def metric_rows(truth: pd.DataFrame, pred: pd.DataFrame, targets: Sequence[str],
                **labels: Any) -> list[dict[str, Any]]:
    """Metric rows per target and subset (``all``; ``clean`` too when ``truth`` has ``quality``)."""
    rows = []
    subsets = {"all": np.ones(len(truth), bool)}
    if "quality" in truth.columns:  # re-measured data: also the clean rows alone
        subsets["clean"] = (truth["quality"].astype(str) == "clean").to_numpy()
    for t in targets:
        if t not in pred.columns or t not in truth.columns:
            continue
        y = pd.to_numeric(truth[t], errors="coerce").to_numpy(dtype=float)
        p = pred[t].reindex(truth.index).to_numpy(dtype=float)
        for name, m in subsets.items():
            if m.sum() < 2:
                continue
            rows.append({**labels, "target": t, "subset": name,
                         **regression_metrics(y[m], p[m]).as_dict()})
    return rows


def mean_sd(frame: pd.DataFrame, by: list[str], cols: Sequence[str]) -> pd.DataFrame:
    """Mean, sd and number of runs of ``cols`` per group (sd NaN for one run)."""
    g = frame.groupby(by, dropna=False, sort=False)[list(cols)]
    mean = g.mean().add_suffix("_mean")
    sd = g.std(ddof=1).add_suffix("_sd")
    runs = g.size().rename("runs")
    return pd.concat([mean, sd, runs], axis=1).reset_index()


#: What "re-measurement noise" means everywhere in CARB (:func:`remeasurement_noise`).
REMEASUREMENT_NOISE = ("the second measurement of a stored row (``carb audit``) scored as a "
                       "prediction of the stored value: APE = |second - stored| / stored")


def remeasurement_noise(audit_rows: pd.DataFrame, **labels: Any) -> pd.DataFrame:
    """The re-measurement noise of a data set: a re-measurement scored as if it were a prediction.

    An audit (:func:`carb_lib.measure.audit.audit`, ``carb audit``) re-measures stored rows in
    fresh processes at a later time. Scoring the second measurement against the stored one with
    the models' own metrics (:func:`metric_rows`: R², MAPE, share within ±10 %, Spearman, and
    the median APE; every APE relative to the stored value, as a model's is; subsets ``all``
    and, by the stored row's ``quality``, ``clean``) says how closely *this data* reproduces
    itself: the scale on which a model's test error on the same data is read. This is the one
    definition of re-measurement noise in CARB (:data:`REMEASUREMENT_NOISE`).

    It is not a bound a model cannot beat: the pair carries the noise twice, a model that knew
    each config's true mean carries it once, so for independent, equal noise a perfect model
    scores about 1/sqrt(2) of the re-measurement error. A ratio model / noise between about 0.7
    and 1 is at the noise, not beyond it.

    Parameters
    ----------
    audit_rows : pandas.DataFrame
        An audit's rows: ``latency_ms`` and ``latency_ms_new`` (and/or ``peak_mem_mib`` and
        ``peak_mem_mib_new``), optionally ``status_new`` (rows not ``ok`` are dropped) and
        ``quality``.
    **labels
        Label columns written to every row (``platform``...).

    Returns
    -------
    pandas.DataFrame
        One row per target and subset: ``model`` (``"re-measurement"``), ``target``,
        ``subset``, :data:`METRIC_COLUMNS` and ``median_ape_pct``.

    Raises
    ------
    ValueError
        When the frame has no stored/re-measured pair of columns.

    Examples
    --------
    >>> import pandas as pd
    >>> rows = pd.DataFrame({"latency_ms": [10.0, 20.0, 40.0],
    ...                      "latency_ms_new": [11.0, 20.0, 36.0]})
    >>> noise = remeasurement_noise(rows)
    >>> round(float(noise["mape_pct"].iloc[0]), 2), round(float(noise["median_ape_pct"].iloc[0]), 2)
    (6.67, 10.0)
    """

    pairs = {t: n for t, n in REMEASURED_COLUMNS.items()
             if t in audit_rows.columns and n in audit_rows.columns}
    if not pairs:
        raise ValueError("audit rows need a stored and a re-measured column, e.g. 'latency_ms' "
                         f"and 'latency_ms_new'; got {list(audit_rows.columns)}")
    rows = audit_rows
    if "status_new" in rows.columns:
        rows = rows[rows["status_new"].astype(str) == "ok"]
    pred = pd.DataFrame({t: pd.to_numeric(rows[n], errors="coerce") for t, n in pairs.items()},
                        index=rows.index)
    out = pd.DataFrame(metric_rows(rows, pred, list(pairs), model="re-measurement", **labels))
    if out.empty:
        return out
    subsets = {"all": np.ones(len(rows), bool)}
    if "quality" in rows.columns:
        subsets["clean"] = (rows["quality"].astype(str) == "clean").to_numpy()
    median = []
    for t, sub in zip(out["target"], out["subset"], strict=True):
        y = pd.to_numeric(rows[t], errors="coerce").to_numpy(float)[subsets[sub]]
        p = pred[t].to_numpy(float)[subsets[sub]]
        ok = np.isfinite(y) & np.isfinite(p) & (y != 0)
        median.append(float(100 * np.median(np.abs(p[ok] - y[ok]) / np.abs(y[ok])))
                      if ok.any() else float("nan"))
    return out.assign(median_ape_pct=median)


def remeasurement_floor(audit_rows: pd.DataFrame, **labels: Any) -> pd.DataFrame:
    """Deprecated: :func:`remeasurement_noise` (the same rows, and ``median_ape_pct``)."""
    import warnings

    warnings.warn("remeasurement_floor is deprecated; use remeasurement_noise (the same "
                  "statistic)", DeprecationWarning, stacklevel=2)
    return remeasurement_noise(audit_rows, **labels)
