"""Hardware validation of a screening: re-profile the shortlist on this machine and compare the
measurements with the predictions (:func:`validate_on_hardware`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.vocab import TARGETS
from carb_lib.families import all_config_columns, space
from carb_lib.measure.profiling import profile_config
from carb_lib.measure.protocol import RowsProtocol
from carb_lib.screening._mapping import FieldMapping
from carb_lib.screening.result import ScreeningResult

__all__ = ["CONFIG_KEYS", "HardwareSummary", "format_hardware", "validate_on_hardware"]

#: Config columns handed to the profiler: the common ones and those of every family registered
#: at import (:func:`carb_lib.families.all_config_columns`, read again at each call).
CONFIG_KEYS: tuple[str, ...] = all_config_columns()


@dataclass(frozen=True)
class HardwareSummary(FieldMapping):
    """Summary of :func:`validate_on_hardware`.

    Mapping access keeps the keys of the former dict: ``"n"``, ``"<target>_mae"`` per target,
    ``"budget_checks"``, ``"budgets_held"``.

    Attributes
    ----------
    n : int
        Shortlisted configs re-profiled.
    mae : dict of str to float
        Per target, mean absolute error of the prediction against the measurement (NaN if no
        config was measured).
    budget_checks : int
        Measured configs x budgets (a config whose measurement failed is no check).
    budgets_held : int
        Checks whose measurement is within the budget.
    not_measured : int
        Configs x budgets left unchecked because the measurement failed (never a miss).
    """

    n: int
    mae: dict[str, float] = field(default_factory=dict)
    budget_checks: int = 0
    budgets_held: int = 0
    not_measured: int = 0

    @property
    def held_share(self) -> float:
        """Share of the budget checks that held (NaN without a check)."""
        return self.budgets_held / self.budget_checks if self.budget_checks else math.nan

    def keys(self) -> list[str]:
        return ["n", *(f"{t}_mae" for t in self.mae), "budget_checks", "budgets_held"]

    def __getitem__(self, key: str) -> Any:
        if key.endswith("_mae") and key.removesuffix("_mae") in self.mae:
            return self.mae[key.removesuffix("_mae")]
        if key in ("n", "budget_checks", "budgets_held"):
            return getattr(self, key)
        raise KeyError(key)


def _config_of(row: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for k in all_config_columns():
        if k in row:
            v = row[k]
            if v is None or (isinstance(v, float) and math.isnan(v)):
                continue
            out[k] = v.item() if hasattr(v, "item") else v
    return out


def _as_mapping(meas: Any) -> Mapping[str, Any]:
    if isinstance(meas, pd.DataFrame):
        return meas.iloc[0].to_dict()
    if isinstance(meas, pd.Series):
        return meas.to_dict()
    if not isinstance(meas, Mapping):
        return dict(vars(meas)) if hasattr(meas, "__dict__") else {}
    return meas


def validate_on_hardware(
    result: ScreeningResult,
    device: str,
    protocol: Any = None,
    profile_fn: Callable[..., Any] | None = None,
) -> tuple[pd.DataFrame, HardwareSummary]:
    """Re-profile the shortlist on this machine and compare with the predictions.

    Parameters
    ----------
    result : ScreeningResult
    device : str
        Passed to the profiler (``"cuda"``, ``"cpu"``).
    protocol : object, optional
        Measurement protocol passed through to the profiler; a
        :class:`~carb_lib.measure.protocol.RowsProtocol` (the model's rows' threads, heap and
        device: what ``carb screen --validate`` passes) times every shortlisted config in one
        fresh process under it (:func:`carb_lib.transfer.check.measure_now`, as ``carb check``).
    profile_fn : callable, optional
        ``profile_fn(config, device, protocol)`` (``config`` a dict of config columns) returning
        a mapping (or one-row DataFrame) with the measured targets; default
        :func:`carb_lib.measure.profiling.profile_config` on :func:`carb_lib.families.space.config_from_row`
        (imported here; ``protocol=None`` means its default ``Protocol()``). A config whose
        profiling raises gets ``status="error"`` and the others go on.

    Returns
    -------
    (pandas.DataFrame, HardwareSummary)
        Per shortlisted candidate: ``{t}_pred``, ``{t}_lo``, ``{t}_hi``, ``{t}_meas``,
        ``{t}_abs_err``, ``{t}_in_interval``; per budget ``held_<budget>`` (measured within it;
        None where the measurement failed: not a miss);
        ``status``, ``error``. The summary: configs, per-target MAE, budget checks held.
    """
    if profile_fn is None and isinstance(protocol, RowsProtocol):
        # the rows' protocol: every shortlisted config in one fresh process, as carb check does
        from carb_lib.transfer.check import measure_now

        timed = measure_now(result.shortlist, protocol,
                            platform=getattr(result.spec, "platform", None))
        by_id = {r["config_id"]: r for r in timed.to_dict(orient="records")}

        def profile_fn(cfg, dev, proto, _row=None):
            return by_id[cfg["config_id"]]
    elif profile_fn is None:
        def profile_fn(cfg, dev, proto):
            return profile_config(space.config_from_row(cfg), dev, proto)
    spec = result.spec
    targets = [t for t in TARGETS if t in result.shortlist.columns]
    rows = []
    for _, r in result.shortlist.iterrows():
        cfg = _config_of(r)
        rec: dict[str, Any] = {"config_id": r["config_id"], **cfg}
        try:
            meas = _as_mapping(profile_fn({**cfg, "config_id": r["config_id"]}, device, protocol)
                               if isinstance(protocol, RowsProtocol) else
                               profile_fn(cfg, device, protocol))
        except Exception as exc:  # noqa: BLE001 - one failing config must not stop the rest
            meas = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
        rec["status"] = meas.get("status", "ok")
        rec["error"] = meas.get("error")
        for t in targets:
            mv = meas.get(t, math.nan)
            mv = math.nan if mv is None else float(mv)
            rec[f"{t}_pred"] = float(r[t])
            rec[f"{t}_lo"], rec[f"{t}_hi"] = float(r[f"{t}_lo"]), float(r[f"{t}_hi"])
            rec[f"{t}_meas"] = mv
            rec[f"{t}_abs_err"] = abs(mv - float(r[t]))
            rec[f"{t}_in_interval"] = bool(rec[f"{t}_lo"] <= mv <= rec[f"{t}_hi"])
        for b in spec.budgets:
            mv = rec.get(f"{b.target}_meas", math.nan)
            if b.per_sample:
                mv = mv / float(r["batch"])
            rec[f"held_{b.label}"] = (None if math.isnan(mv) or rec["status"] != "ok"
                                      else bool(b.holds(np.array([mv]))[0]))
        rows.append(rec)
    table = pd.DataFrame(rows)
    mae: dict[str, float] = {}
    if len(table):
        for t in targets:
            err = table[f"{t}_abs_err"]
            mae[t] = float(np.nanmean(err)) if err.notna().any() else math.nan
    held = [c for c in table.columns if c.startswith("held_")]
    checked = table[held].notna().to_numpy() if held else np.zeros((len(table), 0), bool)
    summary = HardwareSummary(
        n=len(table), mae=mae, budget_checks=int(checked.sum()),
        budgets_held=int((table[held] == True).to_numpy().sum()) if held else 0,  # noqa: E712
        not_measured=int((~checked).sum()),
    )
    return table, summary


def format_hardware(table: pd.DataFrame, summary: HardwareSummary | Mapping[str, Any]) -> str:
    """Printable lines for :func:`validate_on_hardware`'s result."""
    unmeasured = int(getattr(summary, "not_measured", 0) or 0)
    targets = [c.removesuffix("_meas") for c in table.columns if c.endswith("_meas")]
    held = [c for c in table.columns if c.startswith("held_")]

    def failed(r: pd.Series) -> bool:  # a failed measurement is never a budget miss
        status = r.get("status", "ok")
        return ((isinstance(status, str) and status != "ok")
                or any(r[h] is None or pd.isna(r[h]) for h in held))

    n_failed = sum(failed(r) for _, r in table.iterrows())
    lines = [f"re-profiled {summary['n']} shortlisted configs: "
             f"{summary['budgets_held']}/{summary['budget_checks']} budget checks held"
             + (f" ({unmeasured} not checked: the measurement failed)" if unmeasured else "")
             + (f"; {n_failed} config(s) not measured" if n_failed else "")]
    for _, r in table.iterrows():
        parts = [f"{t} {r[f'{t}_pred']:.4g} pred / {r[f'{t}_meas']:.4g} meas" for t in targets]
        if failed(r):
            err = r.get("error")
            err = err if isinstance(err, str) and err else f"status {r.get('status')}"
            ok = f"NOT MEASURED ({err}): no budget checked"
        elif all(bool(r[h]) for h in held):
            ok = "all budgets held"
        else:
            ok = "BUDGET MISSED: " + ", ".join(h.removeprefix("held_") for h in held
                                               if not bool(r[h]))
        lines.append(f"  {r['config_id']} [{r['status']}] " + "; ".join(parts) + f"; {ok}")
    return "\n".join(lines)
