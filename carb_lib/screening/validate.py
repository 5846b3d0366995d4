"""Held-out validation of a screening: screen measured rows as if unmeasured and score the
screening against their measurements.

:func:`validate_against_measured` returns a :class:`ScreeningValidation`: budget
classification per budget and overall (:class:`BudgetClassification`), the shortlist's
prediction error per target (:class:`ShortlistError`), the recall of the measured Pareto front
and the hypervolume ratio. The results keep read-only mapping access (``v["front_recall"]``)
for callers of the former dict result; read the attributes in new code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.metrics import mape_pct
from carb_lib.screening._mapping import FieldMapping
from carb_lib.screening.budgets import DeploymentSpec
from carb_lib.screening.pareto import _as_min_matrix, hypervolume, pareto_front
from carb_lib.screening.result import ScreeningResult
from carb_lib.screening.screen import _model_targets, prepare_candidates, screen

__all__ = ["BudgetClassification", "ScreeningValidation", "ShortlistError", "format_validation",
           "validate_against_measured"]

#: Reference point of the hypervolume ratio, in min-max normalised objectives.
HV_REFERENCE = 1.1


@dataclass(frozen=True)
class BudgetClassification(FieldMapping):
    """Predicted (upper bound within budget) against measured (measurement within budget).

    Attributes
    ----------
    n : int
        Rows classified.
    accuracy : float
        Share of rows where prediction and measurement agree.
    false_accept_rate : float
        Predicted within budget but measured over, as a share of all rows.
    false_accept_of_accepted : float
        The same as a share of the rows predicted within budget (NaN if none).
    false_reject_rate : float
        Predicted over budget but measured within, as a share of all rows.
    n_pred_accept, n_meas_accept : int
        Rows predicted / measured within budget.
    """

    n: int
    accuracy: float
    false_accept_rate: float
    false_accept_of_accepted: float
    false_reject_rate: float
    n_pred_accept: int
    n_meas_accept: int


@dataclass(frozen=True)
class ShortlistError(FieldMapping):
    """Prediction error of one target over the shortlisted rows with a finite measurement."""

    mae: float
    mape_pct: float
    interval_coverage: float
    n: int


@dataclass
class ScreeningValidation(FieldMapping):
    """What :func:`validate_against_measured` found.

    Attributes
    ----------
    result : ScreeningResult
        The screening of the measured rows.
    n : int
        Rows screened.
    classification : dict of str to BudgetClassification
        Per budget label and ``"all"`` (every budget at once; absent without budgets).
    shortlist_error : dict of str to ShortlistError
        Per target the model predicts and the rows measure.
    shortlist_table : pandas.DataFrame
        ``config_id`` and ``{t}_pred``, ``{t}_lo``, ``{t}_hi``, ``{t}_meas`` per shortlisted
        config.
    measured_front_size, predicted_front_size : int
        Size of the measured front (measured-feasible rows, measured objectives) and of the
        predicted front.
    front_recall : float
        Share of the measured front that the predicted front contains (NaN: empty front).
    front_recall_screened : float
        The same among rows that also pass the predicted budgets: the ranking without stage
        1's conservativeness.
    shortlist_in_measured_front : float
        Share of the shortlist on the measured front.
    hypervolume_ratio, shortlist_hypervolume_ratio : float
        Hypervolume of the measured-feasible rows of the predicted front (of the shortlist),
        measured values, over that of the measured front; objectives min-max normalised on the
        measured-feasible rows, reference point :data:`HV_REFERENCE` (NaN with > 3 objectives
        or an empty measured front).
    table : pandas.DataFrame
        Per row: ``pred_ok_<budget>``, ``meas_ok_<budget>``, ``pred_within_budget``,
        ``meas_within_budget``, ``pred_front``, ``meas_front``, ``shortlist``.
    """

    result: ScreeningResult
    n: int
    classification: dict[str, BudgetClassification]
    shortlist_error: dict[str, ShortlistError]
    shortlist_table: pd.DataFrame
    measured_front_size: int
    predicted_front_size: int
    front_recall: float
    front_recall_screened: float
    shortlist_in_measured_front: float
    hypervolume_ratio: float
    shortlist_hypervolume_ratio: float
    table: pd.DataFrame

    @property
    def overall(self) -> BudgetClassification | None:
        """The classification against every budget at once (None without budgets)."""
        return self.classification.get("all")


def _measured_metric(measured: pd.DataFrame, metric: str) -> np.ndarray:
    target = metric.removesuffix("_per_sample")
    if target not in measured.columns:
        raise ValueError(f"measured rows have no {target!r} column to validate {metric}")
    v = measured[target].to_numpy(dtype=float)
    if metric.endswith("_per_sample"):
        v = v / measured["batch"].to_numpy(dtype=float)
    return v


def _classification(pred_ok: np.ndarray, meas_ok: np.ndarray) -> BudgetClassification:
    n = len(pred_ok)
    fa = pred_ok & ~meas_ok
    fr = ~pred_ok & meas_ok
    return BudgetClassification(
        n=n,
        accuracy=float(np.mean(pred_ok == meas_ok)) if n else math.nan,
        false_accept_rate=float(fa.mean()) if n else math.nan,
        false_accept_of_accepted=(float(fa.sum() / pred_ok.sum()) if pred_ok.any()
                                  else math.nan),
        false_reject_rate=float(fr.mean()) if n else math.nan,
        n_pred_accept=int(pred_ok.sum()),
        n_meas_accept=int(meas_ok.sum()),
    )


def _shortlist_error(sl: pd.DataFrame, mi: pd.DataFrame, targets: list[str]
                     ) -> tuple[dict[str, ShortlistError], pd.DataFrame]:
    err: dict[str, ShortlistError] = {}
    for t in targets:
        if len(sl) == 0:
            break
        y = mi.loc[sl.index, t].to_numpy(dtype=float)
        p = sl[t].to_numpy(dtype=float)
        ok = np.isfinite(y) & np.isfinite(p)
        if not ok.any():
            continue
        inside = (sl[f"{t}_lo"].to_numpy()[ok] <= y[ok]) & (y[ok] <= sl[f"{t}_hi"].to_numpy()[ok])
        err[t] = ShortlistError(mae=float(np.abs(p[ok] - y[ok]).mean()),
                                mape_pct=mape_pct(y[ok], p[ok]),
                                interval_coverage=float(inside.mean()), n=int(ok.sum()))
    st = pd.DataFrame({"config_id": sl.index.to_numpy()})
    for t in targets:
        st[f"{t}_pred"] = sl[t].to_numpy(dtype=float)
        st[f"{t}_lo"] = sl[f"{t}_lo"].to_numpy(dtype=float)
        st[f"{t}_hi"] = sl[f"{t}_hi"].to_numpy(dtype=float)
        st[f"{t}_meas"] = mi.loc[sl.index, t].to_numpy(dtype=float) if len(sl) else []
    return err, st


def _front_of(M: np.ndarray, rows: np.ndarray, senses: list[str]) -> np.ndarray:
    """Mask of the non-dominated rows among ``rows`` (a mask), on ``M``."""
    out = np.zeros(len(M), dtype=bool)
    if rows.any():
        out[np.flatnonzero(rows)[pareto_front(M[rows], senses)]] = True
    return out


def _share(part: np.ndarray, whole: np.ndarray) -> float:
    n = int(whole.sum())
    return float((part & whole).sum() / n) if n else math.nan


def validate_against_measured(
    model: Any,
    measured: pd.DataFrame,
    spec: DeploymentSpec,
    model_a: Any | None = None,
    top_n: int | None = None,
) -> ScreeningValidation:
    """Screen held-out measured rows as if unmeasured and score the screening against the
    measurements.

    Parameters
    ----------
    model, spec, model_a, top_n
        As for :func:`carb_lib.screening.screen`.
    measured : pandas.DataFrame
        Held-out rows with config columns and the measured targets (rows whose ``status`` is
        not ``"ok"`` are dropped).

    Returns
    -------
    ScreeningValidation

    Raises
    ------
    ValueError
        No measured ``ok`` row, a budget or objective on a target the rows do not measure,
        or any error of :func:`carb_lib.screening.screen`.
    """
    m = measured
    if "status" in m.columns:
        m = m[m["status"].astype(str) == "ok"]
    if len(m) == 0:
        raise ValueError("no measured rows (with status 'ok') to validate against")
    m = prepare_candidates(m)
    res = screen(model, m, spec, model_a=model_a, top_n=top_n)
    tab = res.table.set_index("config_id")
    mi = m.drop_duplicates("config_id").set_index("config_id").loc[tab.index]

    cls: dict[str, BudgetClassification] = {}
    pred_all = np.ones(len(tab), dtype=bool)
    meas_all = np.ones(len(tab), dtype=bool)
    rows = pd.DataFrame(index=tab.index)
    for b in spec.budgets:
        pp = tab[f"ok_{b.label}"].to_numpy(dtype=bool)
        mp = b.holds(_measured_metric(mi, b.metric))
        rows[f"pred_ok_{b.label}"], rows[f"meas_ok_{b.label}"] = pp, mp
        cls[b.label] = _classification(pp, mp)
        pred_all &= pp
        meas_all &= mp
    if spec.budgets:
        cls["all"] = _classification(pred_all, meas_all)
    rows["pred_within_budget"], rows["meas_within_budget"] = pred_all, meas_all

    targets = [t for t in _model_targets(model) if t in mi.columns]
    err, st = _shortlist_error(res.shortlist.set_index("config_id"), mi, targets)

    # the measured front among measured-feasible rows
    senses = [o.sense for o in spec.objectives]
    M = np.column_stack([
        _measured_metric(mi, o.column) if o.predicted else mi[o.column].to_numpy(dtype=float)
        for o in spec.objectives
    ])
    feas = meas_all & np.isfinite(M).all(axis=1)
    meas_front = _front_of(M, feas, senses)
    pred_front = tab["on_front"].to_numpy(dtype=bool)
    in_sl = tab["shortlist_rank"].to_numpy() >= 0
    rows["pred_front"], rows["meas_front"], rows["shortlist"] = pred_front, meas_front, in_sl
    # the same among rows that pass the predicted (upper-bound) budgets too: the ranking's
    # recall, without the rows the conservative stage 1 removed
    meas_front_s = _front_of(M, feas & pred_all, senses)

    hv_ratio = sl_hv_ratio = math.nan
    if meas_front.any() and len(spec.objectives) <= 3:
        Z = _as_min_matrix(M[feas], senses)
        lo, hi = Z.min(axis=0), Z.max(axis=0)
        span = np.where(hi > lo, hi - lo, 1.0)
        Zall = (_as_min_matrix(np.where(np.isfinite(M), M, 0.0), senses) - lo) / span
        ref = np.full(len(senses), HV_REFERENCE)
        hv_m = hypervolume(Zall[meas_front], ref)
        if hv_m > 0:
            hv_ratio = hypervolume(Zall[pred_front & feas], ref) / hv_m
            sl_hv_ratio = hypervolume(Zall[in_sl & feas], ref) / hv_m

    return ScreeningValidation(
        result=res,
        n=len(tab),
        classification=cls,
        shortlist_error=err,
        shortlist_table=st,
        measured_front_size=int(meas_front.sum()),
        predicted_front_size=int(pred_front.sum()),
        front_recall=_share(pred_front, meas_front),
        front_recall_screened=_share(pred_front, meas_front_s),
        shortlist_in_measured_front=_share(meas_front, in_sl),
        hypervolume_ratio=hv_ratio,
        shortlist_hypervolume_ratio=sl_hv_ratio,
        table=rows.reset_index(),
    )


def format_validation(v: ScreeningValidation) -> str:
    """Printable lines for :func:`validate_against_measured`'s result."""
    lines = [f"held-out validation on {v.n:,} measured rows"]
    for b, c in v.classification.items():
        lines.append(
            f"  {b:<34} accuracy {c.accuracy:.3f}  false accepts {c.false_accept_rate:.3%}"
            f" of rows ({c.n_pred_accept:,} predicted / {c.n_meas_accept:,} measured within)"
        )
    for t, e in v.shortlist_error.items():
        lines.append(f"  shortlist {t:<14} MAE {e.mae:.4g}  MAPE {e.mape_pct:.1f}%  "
                     f"interval coverage {e.interval_coverage:.2f} (n={e.n})")
    lines.append(f"  measured front {v.measured_front_size}, predicted front "
                 f"{v.predicted_front_size}, recall {v.front_recall:.3f} (among rows "
                 f"passing stage 1: {v.front_recall_screened:.3f}), hypervolume ratio "
                 f"{v.hypervolume_ratio:.3f} (shortlist {v.shortlist_hypervolume_ratio:.3f})")
    return "\n".join(lines)
