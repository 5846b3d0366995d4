"""What the cost widget shows a student: numbers to their precision, intervals no tighter than
the measurement noise, tables in words (used by :mod:`carb_lib.app.explore`).

* :func:`sig` rounds to three significant digits (``1183.1192`` -> ``"1,180"``) and
  :func:`cost_text` writes a cost with its unit, long times in minutes and seconds
  (``312839.3 ms`` -> ``"5 min 13 s"``).
* :func:`noise_floor` is the relative measurement noise of the training rows per target (the
  median per-row spread of repeated timings); :func:`widen_to_noise` widens an interval that
  is tighter than it.
* :func:`prediction_table`, :func:`nearest_table` and :func:`ranges_table` are the report's
  tables as text, rounded, with column names in words (:data:`carb_lib.core.vocab.DISPLAY`);
  :func:`fit_table` the scaling explorer's power laws. An interval is never shown as "x to
  x": narrower than the rounding it reads "x ± h %", and outside the training range none is
  given (:func:`interval_text`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from carb_lib.characterize.scaling import noise_measures
from carb_lib.core.vocab import DISPLAY_SCALE, TARGET_UNITS, display_name, in_words

__all__ = ["cost_text", "fit_table", "interval_text", "nearest_table", "noise_floor",
           "prediction_table", "ranges_table", "reason_words", "shown_value", "sig",
           "widen_to_noise"]

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


def _half_width_pct(predicted: float, lo: float, hi: float) -> str:
    """The interval's larger half-width in percent of the prediction, to one digit."""
    h = 100 * max(hi - predicted, predicted - lo) / abs(predicted) if predicted else math.nan
    if not math.isfinite(h):
        return "unknown width"
    return "± under 0.01 %" if h < 0.01 else f"± {sig(h, 1)} %"


def interval_text(predicted, lo, hi, unit: str, extrapolated: bool = False) -> str:
    """An interval in words. Outside the training range none is given (a split-conformal
    interval covers configs like the training rows, not beyond them); one narrower than the
    rounding is written as the prediction ± its half-width, never as "x to x"."""
    if extrapolated:
        return "none outside the training range"
    a, b = cost_text(lo, unit), cost_text(hi, unit)
    if a == b:
        return f"{cost_text(predicted, unit)} {_half_width_pct(predicted, lo, hi)}"
    return f"{a} to {b}"


def prediction_table(pred: pd.DataFrame) -> pd.DataFrame:
    """The predicted costs as text: cost, prediction, interval (:func:`interval_text`) and the
    noise floor."""
    rows = []
    for r in pred.itertuples(index=False):
        unit = TARGET_UNITS.get(r.target, getattr(r, "unit", ""))
        noise = getattr(r, "noise_pct", float("nan"))
        rows.append({
            "cost": display_name(r.target, unit=False),
            "predicted": cost_text(r.predicted, unit),
            f"{r.coverage:.0%} interval": interval_text(
                r.predicted, r.lo, r.hi, unit, bool(getattr(r, "extrapolated", False))),
            "measurement noise": "-" if not np.isfinite(noise) else f"±{sig(noise)} %",
        })
    return pd.DataFrame(rows)


def _header(col: str) -> str:
    return display_name(col)


def shown_value(col: str, value):
    """``value`` of column ``col`` as a person reads it: scaled (:data:`DISPLAY_SCALE`: FLOPs
    in GFLOP, bytes in MB), rounded (:func:`sig`), yes / no for a truth value."""
    if isinstance(value, str) and value in ("True", "False"):
        return "yes" if value == "True" else "no"
    if col in DISPLAY_SCALE and value is not None and not isinstance(value, (str, bool)):
        try:
            return sig(float(value) / DISPLAY_SCALE[col])
        except (TypeError, ValueError):
            return sig(value)
    return sig(value)


#: Columns of the nearest-rows table, costs first (the platform is named above the tables).
NEAREST_COLUMNS: tuple[str, ...] = (
    "distance", "latency_ms", "peak_mem_mib", "energy_j", "block", "depth", "width",
    "early_downsample", "resolution", "batch", "precision", "flops",
)  # fmt: skip


def nearest_table(nearest: pd.DataFrame) -> pd.DataFrame:
    """The nearest measured rows, rounded, columns in words (costs first and with units; a
    cost no row measured is left out)."""
    out = pd.DataFrame(index=nearest.index)
    for col in NEAREST_COLUMNS:
        if col not in nearest.columns:
            continue
        if col in TARGET_UNITS:
            v = pd.to_numeric(nearest[col], errors="coerce")
            if not v.notna().any():
                continue
            out[display_name(col, unit=False)] = [
                cost_text(x, TARGET_UNITS[col]) if pd.notna(x) else "-" for x in v]
        else:
            out[_header(col)] = [shown_value(col, v) for v in nearest[col]]
    return out


def ranges_table(ranges: pd.DataFrame) -> pd.DataFrame:
    """Config columns against the training range, as text: value, range, outside."""
    rows = []
    for r in ranges.itertuples(index=False):
        if r.train_max is None or (isinstance(r.train_max, float) and math.isnan(r.train_max)):
            seen = [shown_value(r.column, v) for v in str(r.train_min).split(", ")]
            span = "measured: " + ", ".join(seen)
        else:
            span = f"{shown_value(r.column, r.train_min)} to {shown_value(r.column, r.train_max)}"
        rows.append({"config": _header(r.column), "value": shown_value(r.column, r.value),
                     "training rows": span, "outside": "OUTSIDE" if r.outside else ""})
    return pd.DataFrame(rows)


#: Why energy is not shown where the rows hold none.
NOT_MEASURED_ENERGY = "not measured on this platform (no energy counter)"


def reason_words(reason) -> str:
    """Why a power law or a cost is missing, in words: a target NaN on every row because the
    platform has no energy counter reads :data:`NOT_MEASURED_ENERGY` (not the counter's sysfs
    path); other reasons with code names in words (:func:`carb_lib.core.vocab.in_words`)."""
    if reason is None or (isinstance(reason, float) and math.isnan(reason)) or reason == "":
        return "too few rows"
    text = str(reason)
    if "energy_j" in text and ("energy counter" in text or "powercap" in text
                               or "is NaN for all" in text):
        return f"energy {NOT_MEASURED_ENERGY}"
    return in_words(text)


def fit_table(fits: pd.DataFrame) -> pd.DataFrame:
    """The scaling explorer's power laws in words: what each was fitted to, rows, exponent
    with its 95 % CI and R², rounded; why a group has none."""
    rows = []
    for r in (fits.to_dict("records") if fits is not None else []):
        by = str(r.get("group_by", "all"))
        ok = bool(r.get("testable", False))
        rows.append({
            "fitted to": "all rows shown" if by == "all" else
            f"{display_name(by, unit=False)} = {shown_value(by, r.get('group'))}",
            "rows": sig(r.get("n")),
            "exponent b": sig(r.get("exponent")) if ok else "-",
            "95 % CI": f"{sig(r.get('ci_low'))} to {sig(r.get('ci_high'))}" if ok else "-",
            "R²": sig(r.get("r2"), 2) if ok else "-",
            "note": "" if ok else f"no power law: {reason_words(r.get('reason'))}",
        })
    return pd.DataFrame(rows, columns=["fitted to", "rows", "exponent b", "95 % CI", "R²",
                                       "note"])
