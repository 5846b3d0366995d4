"""A check a practitioner runs before trusting predictions: time some of them now.

:func:`check_predictions` predicts a query with a fitted model, times ``k`` of its configs on
this machine under the model's rows' protocol (threads, heap, device:
:func:`carb_lib.measure.protocol.model_protocol`) in a fresh process, times a subset of them a
second time in another fresh process, and compares: the median |log ratio| of measured to
predicted latency, the share within +-10 %, the share inside the prediction interval, and
peak memory, beside this host's re-measurement noise from the same run (the median |log
ratio| of the two timings of the repeated subset). ``carb check`` runs it; ``carb screen
--validate`` times its shortlist with the same :func:`measure_now`.

The ``k`` configs are spread over the predicted latency (smallest to largest), the largest
given up for smaller ones until the profiler's estimated time fits the budget (60 s by
default, :func:`carb_lib.transfer.calibration.estimate_seconds`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.measure.protocol import model_protocol
from carb_lib.transfer import calibration
from carb_lib.transfer.calibration import PROCESS_START_S, estimate_seconds, require_device

__all__ = ["CheckResult", "check_predictions", "measure_now", "pick_within_budget"]


@dataclass
class CheckResult:
    """What :func:`check_predictions` measured.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per timed config: ``config_id``, ``latency_ms_pred`` (``_lo``, ``_hi``),
        ``latency_ms_meas``, ``latency_ms_meas2`` (second timing, repeated subset only),
        ``log_ratio`` (log measured / predicted), ``in_interval``, peak memory predicted and
        measured, ``status``.
    n : int
        Configs timed ok.
    median_abs_log_ratio, within_10pct, coverage : float
        Of measured against predicted latency.
    noise_median_abs_log_ratio : float
        Of the two timings of the repeated subset (this host's re-measurement noise now).
    n_repeat : int
    memory_exact : float
        Share of rows whose predicted peak memory equals the measured one to the byte.
    protocol : str
    seconds : float
        Wall time of the timing.
    """

    table: pd.DataFrame
    n: int
    median_abs_log_ratio: float
    within_10pct: float
    coverage: float
    noise_median_abs_log_ratio: float
    n_repeat: int
    memory_exact: float
    protocol: str
    seconds: float

    def summary(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("table")
        return d

    def lines(self) -> list[str]:
        """Printable lines."""
        def pct(v: float) -> str:
            return "n/a" if not np.isfinite(v) else f"{100 * v:.1f} %"

        out = [f"check: {self.n} config(s) timed now ({self.protocol}, {self.seconds:.0f} s)",
               f"  latency median |log ratio| measured/predicted  {pct(self.median_abs_log_ratio)}",
               f"  latency within +-10 %                          {pct(self.within_10pct)}",
               f"  inside the prediction interval                 {pct(self.coverage)}",
               f"  this host's re-measurement noise (median |log ratio| of {self.n_repeat} "
               f"config(s) timed twice)  {pct(self.noise_median_abs_log_ratio)}",
               f"  peak memory exact to the byte                  {pct(self.memory_exact)}"]
        for _, r in self.table.iterrows():
            meas = r["latency_ms_meas"]
            out.append(f"  {r['config_id']}: predicted {r['latency_ms_pred']:.4g} ms "
                       f"[{r['latency_ms_pred_lo']:.4g}, {r['latency_ms_pred_hi']:.4g}], "
                       + (f"measured {meas:.4g} ms" if np.isfinite(meas)
                          else f"not measured ({r['status']})"))
        return out


def pick_within_budget(predicted_ms: Any, k: int, budget_s: float, *, protocol: Any = None,
                       repeat: int = 0) -> np.ndarray:
    """Indices of ``k`` configs spread over ``predicted_ms`` (sorted by it), the largest given
    up for the next smaller until their estimated timing (plus ``repeat`` of them again and two
    process starts) fits ``budget_s``."""
    p = np.asarray(predicted_ms, dtype=float)
    order = np.argsort(p, kind="stable")
    if k <= 0 or len(p) == 0:
        return np.zeros(0, dtype=int)
    pos = sorted({int(round(x)) for x in np.linspace(0, len(order) - 1, min(k, len(order)))})
    cost = estimate_seconds(p[order], protocol)
    allowed = budget_s - PROCESS_START_S * (2 if repeat else 1)

    def total(ps: list[int]) -> float:
        c = sorted(cost[i] for i in ps)
        return float(sum(c) + sum(c[:repeat]))

    while pos and total(pos) > allowed:
        top = max(pos, key=lambda i: cost[i])
        pos.remove(top)
        lower = [i for i in range(top) if i not in pos]
        if lower:
            pos.append(lower[-1])
            if total(pos) > allowed and len(pos) > 1 and lower[-1] == min(pos):
                pos.remove(lower[-1])
    return np.sort(order[sorted(pos)])


def measure_now(configs: pd.DataFrame, rp: Any, *, platform: str | None = None,
                budget_s: float = 600.0) -> pd.DataFrame:
    """Time ``configs`` on this machine under the rows' protocol ``rp`` in one fresh process
    (:func:`carb_lib.transfer.calibration.time_configs`); their rows, in ``configs``' order."""

    rows = calibration.time_configs(configs, protocol=rp, platform=platform, budget_s=budget_s)
    return rows.set_index("config_id").loc[configs["config_id"].to_numpy()].reset_index()


def check_predictions(model: Any, configs: pd.DataFrame, *, k: int = 5, budget_s: float = 60.0,
                      repeat: int | None = None, coverage: float = 0.9,
                      timer: Any = None) -> CheckResult:
    """Predict ``configs`` with ``model``, time ``k`` of them now under its rows' protocol and
    compare (module docstring).

    Parameters
    ----------
    model : fitted model
        A CARB model (or one wrapped by a router or a host calibration).
    configs : pandas.DataFrame
        The query: config columns and static features, with ``config_id``.
    k : int, default 5
        Configs to time.
    budget_s : float, default 60
        Timing budget (seconds) of the whole check.
    repeat : int, optional
        Configs timed a second time for the noise (default ``min(3, k)``).
    timer : callable, optional
        ``timer(configs, rp) -> rows`` in place of :func:`measure_now` (tests).

    Raises
    ------
    ValueError
        ``k`` larger than the query or below 1; the model's device is not on this machine.
    """
    import time

    if k < 1:
        raise ValueError(f"--k must be >= 1, got {k}")
    if k > len(configs):
        raise ValueError(f"--k {k} is larger than the query ({len(configs)} config(s))")
    if not budget_s > 0:
        raise ValueError(f"--budget-s must be > 0 seconds, got {budget_s}")
    rp = model_protocol(model)
    require_device(rp)
    repeat = min(3, k) if repeat is None else int(repeat)
    pred = model.predict_interval(configs, coverage=coverage).reset_index(drop=True)
    q = configs.reset_index(drop=True)
    pick = pick_within_budget(pred["latency_ms"].to_numpy(float), k, budget_s,
                              protocol=rp.protocol(), repeat=repeat)
    if len(pick) == 0:
        raise ValueError(f"no config of the query can be timed within --budget-s {budget_s:g}")
    sel, psel = q.iloc[pick].reset_index(drop=True), pred.iloc[pick].reset_index(drop=True)
    timer = timer or (lambda c, r: measure_now(c, r, platform=getattr(model, "platform_", None),
                                               budget_s=budget_s))
    t0 = time.perf_counter()
    first = timer(sel, rp)
    rep_idx = np.argsort(psel["latency_ms"].to_numpy(float), kind="stable")[:repeat]
    second = timer(sel.iloc[rep_idx].reset_index(drop=True), rp) if repeat else None
    seconds = time.perf_counter() - t0
    ok = first["status"].astype(str).eq("ok").to_numpy()
    meas = np.where(ok, pd.to_numeric(first["latency_ms"], errors="coerce"), np.nan)
    table = pd.DataFrame({
        "config_id": sel["config_id"].to_numpy(),
        "latency_ms_pred": psel["latency_ms"].to_numpy(float),
        "latency_ms_pred_lo": psel.get("latency_ms_lo", psel["latency_ms"]).to_numpy(float),
        "latency_ms_pred_hi": psel.get("latency_ms_hi", psel["latency_ms"]).to_numpy(float),
        "latency_ms_meas": meas.astype(float),
        "latency_ms_meas2": np.nan,
        "status": first["status"].astype(str).to_numpy(),
    })
    if "peak_mem_mib" in psel.columns and "peak_mem_mib" in first.columns:
        table["peak_mem_mib_pred"] = psel["peak_mem_mib"].to_numpy(float)
        table["peak_mem_mib_meas"] = pd.to_numeric(first["peak_mem_mib"],
                                                   errors="coerce").to_numpy(float)
    if second is not None and len(second):
        ok2 = second["status"].astype(str).eq("ok").to_numpy()
        table.loc[rep_idx, "latency_ms_meas2"] = np.where(
            ok2, pd.to_numeric(second["latency_ms"], errors="coerce"), np.nan)
    table["log_ratio"] = np.log(table["latency_ms_meas"] / table["latency_ms_pred"])
    table["in_interval"] = ((table["latency_ms_meas"] >= table["latency_ms_pred_lo"])
                            & (table["latency_ms_meas"] <= table["latency_ms_pred_hi"]))
    good = table["latency_ms_meas"].notna().to_numpy()
    lr = np.abs(table.loc[good, "log_ratio"].to_numpy(float))
    twice = table[["latency_ms_meas", "latency_ms_meas2"]].dropna()
    noise = np.abs(np.log(twice["latency_ms_meas2"] / twice["latency_ms_meas"]).to_numpy(float))
    if "peak_mem_mib_pred" in table.columns:
        mm = table.loc[good]
        exact = float(np.mean(np.isclose(mm["peak_mem_mib_pred"], mm["peak_mem_mib_meas"],
                                         rtol=0, atol=0.5 / 2**20))) if len(mm) else math.nan
    else:
        exact = math.nan
    nan = math.nan
    return CheckResult(
        table=table, n=int(good.sum()),
        median_abs_log_ratio=float(np.median(lr)) if len(lr) else nan,
        within_10pct=float(np.mean(lr <= np.log(1.10))) if len(lr) else nan,
        coverage=float(table.loc[good, "in_interval"].mean()) if good.any() else nan,
        noise_median_abs_log_ratio=float(np.median(noise)) if len(noise) else nan,
        n_repeat=int(len(twice)), memory_exact=exact, protocol=rp.describe(), seconds=seconds)
