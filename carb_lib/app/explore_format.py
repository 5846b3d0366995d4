"""What the cost widget shows a student: numbers to their precision, intervals no tighter than
the measurement noise, tables in words (used by :mod:`carb_lib.app.explore`).

* :func:`sig` rounds to three significant digits (``1183.1192`` -> ``"1,180"``) and
  :func:`cost_text` writes a cost with its unit, long times in minutes and seconds
  (``312839.3 ms`` -> ``"5 min 13 s"``).
* :func:`noise_floor` is the relative measurement noise of the training rows per target (the
  median per-row spread of repeated timings); :func:`widen_to_noise` widens an interval that
  is tighter than it.
* :func:`prediction_table`, :func:`nearest_table` and :func:`ranges_table` are the report's
  tables as text, rounded, with column names in words.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from carb_lib.core.vocab import AXIS_LABELS, TARGET_SHORT, TARGET_UNITS

__all__ = ["cost_text", "nearest_table", "noise_floor", "prediction_table", "ranges_table",
           "sig", "widen_to_noise"]

#: Significant digits of every number the widget shows.
DIGITS = 3


def sig(value, digits: int = DIGITS) -> str:
    """``value`` rounded to ``digits`` significant digits, without exponent between 1e-3 and
    1e9, with thousands separators (whole numbers below 10,000 as they are); ``"-"`` for a
    missing value; text stays text."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if not isinstance(value, (int, float, np.integer, np.floating)):
        return str(value)
    v = float(value)
    if not math.isfinite(v):
        return str(v)
    if v == 0:
        return "0"
    if v.is_integer() and abs(v) < 1e4:  # config values: 8, 256, 1,024
        return f"{int(v):,}"
    mag = math.floor(math.log10(abs(v)))
    if mag < -3 or mag >= 9:
        return f"{v:.{digits - 1}e}"
    r = round(v, digits - 1 - mag)
    decimals = max(digits - 1 - mag, 0)
    return f"{r:,.{decimals}f}"


def cost_text(value, unit: str) -> str:
    """A cost with its unit: milliseconds from 1 s on as seconds, from 60 s on as minutes and
    seconds (``"5 min 13 s"``), from 1 h on as hours and minutes."""
    if value is None or not math.isfinite(float(value)):
        return "-"
    v = float(value)
    if unit == "ms" and abs(v) >= 1000:
        s = v / 1000
        if abs(s) < 60:
            return f"{sig(s)} s"
        total = round(s)
        if total < 3600:
            return f"{total // 60} min {total % 60} s"
        return f"{total // 3600} h {(total % 3600) // 60} min"
    return f"{sig(v)} {unit}".strip()


def noise_floor(train: pd.DataFrame, precision: str | None = None) -> dict[str, float]:
    """Relative measurement noise of ``train`` per target: the median over rows of each
    per-row noise measure (:func:`carb_lib.characterize.scaling.noise_measures`: the latency CV, half the
    p90-p10 spread), the largest per target; rows of ``precision`` only when it has any.
    Targets without a noise measure (peak memory: one allocator reading) are absent."""
    from carb_lib.characterize.scaling import noise_measures

    rows = train
    if precision is not None and "precision" in train.columns:
        same = train[train["precision"].astype(str) == str(precision)]
        rows = same if len(same) else train
    out: dict[str, float] = {}
    for name, (target, values) in noise_measures(rows).items():
        v = pd.to_numeric(values, errors="coerce").astype(float)
        v = v[np.isfinite(v) & (v >= 0)]
        if not len(v):
            continue
        rel = float(np.median(v)) / (2.0 if name.endswith("p90_p10_rel") else 1.0)
        out[target] = max(out.get(target, 0.0), rel)
    return out


def widen_to_noise(pred: pd.DataFrame, floor: dict[str, float]) -> pd.DataFrame:
    """``pred`` (target, predicted, lo, hi) with every interval at least
    ``predicted * (1 +- noise)`` wide; ``noise_pct`` says the floor used (NaN: none known)."""
    out = pred.copy()
    rel = out["target"].map(floor).astype(float)
    p = out["predicted"].astype(float)
    has = rel.notna()
    out.loc[has, "lo"] = np.minimum(out.loc[has, "lo"].astype(float), p[has] * (1 - rel[has]))
    out.loc[has, "hi"] = np.maximum(out.loc[has, "hi"].astype(float), p[has] * (1 + rel[has]))
    out["noise_pct"] = 100 * rel
    return out


def prediction_table(pred: pd.DataFrame) -> pd.DataFrame:
    """The predicted costs as text: target, prediction, interval and the noise floor."""
    rows = []
    for r in pred.itertuples(index=False):
        unit = TARGET_UNITS.get(r.target, getattr(r, "unit", ""))
        noise = getattr(r, "noise_pct", float("nan"))
        rows.append({
            "target": TARGET_SHORT.get(r.target, r.target),
            "predicted": cost_text(r.predicted, unit),
            f"{r.coverage:.0%} interval": (f"{cost_text(r.lo, unit)} to "
                                           f"{cost_text(r.hi, unit)}"),
            "measurement noise": "-" if not np.isfinite(noise) else f"±{sig(noise)} %",
        })
    return pd.DataFrame(rows)


def _header(col: str) -> str:
    return AXIS_LABELS.get(col, col.replace("_", " "))


def nearest_table(nearest: pd.DataFrame) -> pd.DataFrame:
    """The nearest measured rows, rounded, columns in words (costs with units)."""
    out = pd.DataFrame(index=nearest.index)
    for col in nearest.columns:
        if col == "flops":
            out["GFLOPs per batch"] = [sig(float(v) / 1e9) if pd.notna(v) else "-"
                                       for v in nearest[col]]
        elif col in TARGET_UNITS:
            out[_header(col)] = [cost_text(v, TARGET_UNITS[col]) if pd.notna(v) else "-"
                                 for v in nearest[col]]
        else:
            out[_header(col)] = [sig(v) for v in nearest[col]]
    return out


def ranges_table(ranges: pd.DataFrame) -> pd.DataFrame:
    """Config columns against the training range, as text: value, range, outside."""
    rows = []
    for r in ranges.itertuples(index=False):
        if r.train_max is None or (isinstance(r.train_max, float) and math.isnan(r.train_max)):
            span = f"seen: {r.train_min}"
        else:
            span = f"{sig(r.train_min)} to {sig(r.train_max)}"
        rows.append({"config column": _header(r.column), "value": sig(r.value),
                     "training rows": span, "outside": "OUTSIDE" if r.outside else ""})
    return pd.DataFrame(rows)
