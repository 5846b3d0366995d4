"""Host calibration: a model of stored rows, brought to the speed of the host at hand.

The same CPU kind is another machine a few days later: re-measured rows of one Xeon ran 1.01-
1.57x slower than their stored values, with identical memory. A handful of reference configs
timed now (:func:`calibration_configs`, :func:`time_configs`, under a minute) and predicted by
the model give the *host factor*: the median of measured / predicted latency. Its *spread* is
the robust standard deviation (1.4826 x the median absolute deviation) of the log ratios. The
factor multiplies the latency predictions and their interval bounds only when it is larger than
its spread (``|log factor| > spread``); otherwise the calibration is reported and not applied
(:class:`HostCalibration` ``applied``, ``reason``). ``carb predict --calibrate`` and ``carb
screen --calibrate`` record factor, spread and whether it was applied in their output.

:func:`campaign_calibration` evaluates the idea on stored campaigns of one CPU taken at
different times: a model of one campaign, the factor from the other campaign's reference
rows (its first few: the moment a calibration measures) or from a few of its configs, scored on
that campaign (median APE, share within +-10 %, interval coverage).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["CALIBRATED_TARGETS", "HostCalibration", "apply_calibration", "calibrate_model",
           "calibration_configs", "campaign_calibration", "host_factor", "time_configs"]

#: Predicted columns a host factor scales (time; memory does not move with the host's speed).
CALIBRATED_TARGETS: tuple[str, ...] = ("latency_ms",)
#: Least calibration timings a factor is computed from.
MIN_TIMINGS = 3


@dataclass
class HostCalibration:
    """A host factor (measured / predicted latency) and whether it was applied.

    Attributes
    ----------
    factor : float
        Median of measured / predicted latency over the calibration timings (> 1: this host
        runs slower than the model's rows).
    spread : float
        Robust standard deviation of the log ratios (1.4826 x MAD), on the log scale.
    n : int
        Calibration timings.
    applied : bool
        ``|log factor| > spread``.
    reason : str
        One line saying what was done and why.
    """

    factor: float
    spread: float
    n: int
    applied: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def host_factor(measured: Sequence[float], predicted: Sequence[float]) -> HostCalibration:
    """The host factor of calibration timings against the model's predictions.

    Raises
    ------
    ValueError
        Fewer than :data:`MIN_TIMINGS` finite, positive pairs.
    """
    m = np.asarray(measured, dtype=float)
    p = np.asarray(predicted, dtype=float)
    if m.shape != p.shape:
        raise ValueError(f"{m.size} measured and {p.size} predicted latencies: give one per "
                         "timing")
    ok = np.isfinite(m) & np.isfinite(p) & (m > 0) & (p > 0)
    if ok.sum() < MIN_TIMINGS:
        raise ValueError(f"a host calibration needs >= {MIN_TIMINGS} timed configs, got "
                         f"{int(ok.sum())} usable")
    r = np.log(m[ok] / p[ok])
    c = float(np.median(r))
    spread = float(1.4826 * np.median(np.abs(r - c)))
    applied = abs(c) > spread
    reason = (f"host factor {np.exp(c):.3f} (spread x{np.exp(spread):.3f}, {ok.sum()} timings): "
              + ("applied to the latency predictions" if applied else
                 "NOT applied: its spread is at least the correction"))
    return HostCalibration(float(np.exp(c)), spread, int(ok.sum()), bool(applied), reason)


def apply_calibration(pred: pd.DataFrame, cal: HostCalibration, *,
                      targets: Sequence[str] = CALIBRATED_TARGETS) -> pd.DataFrame:
    """``pred`` with every column of ``targets`` (and its ``_lo`` / ``_hi`` and ``_pred*``
    spellings) times the factor when ``cal.applied``, and the columns ``host_factor``,
    ``host_factor_spread`` (multiplicative, ``exp(spread)``) and ``host_calibration_applied``."""
    out = pred.copy()
    if cal.applied:
        for t in targets:
            for c in (t, f"{t}_lo", f"{t}_hi", f"{t}_pred", f"{t}_pred_lo", f"{t}_pred_hi"):
                if c in out.columns:
                    out[c] = out[c].astype(float) * cal.factor
    return out.assign(host_factor=cal.factor, host_factor_spread=float(np.exp(cal.spread)),
                      host_calibration_applied=cal.applied)


class CalibratedModel:
    """A fitted model whose latency predictions (``predict``, ``predict_interval``) are
    multiplied by an applied host factor; everything else is the model's."""

    def __init__(self, model: Any, cal: HostCalibration) -> None:
        self._model, self.calibration_ = model, cal

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def _scale(self, out: Any) -> Any:
        if not self.calibration_.applied or not isinstance(out, pd.DataFrame):
            return out
        out = out.copy()
        for t in CALIBRATED_TARGETS:
            for c in (t, f"{t}_lo", f"{t}_hi"):
                if c in out.columns:
                    out[c] = out[c].astype(float) * self.calibration_.factor
        return out

    def predict(self, X: Any, *args: Any, **kwargs: Any) -> Any:
        return self._scale(self._model.predict(X, *args, **kwargs))

    def predict_interval(self, X: Any, *args: Any, **kwargs: Any) -> Any:
        return self._scale(self._model.predict_interval(X, *args, **kwargs))


def calibration_configs(n: int = 5) -> pd.DataFrame:
    """``n`` small ResNet configs to time now: the campaigns' reference config (ResNet-18 x0.5,
    64 px, batch 8, fp32) first, then neighbours of it (other batch, width, depth and
    resolution), each timed in well under a second a call; with ids and static features."""
    from carb_lib.dataset.features import with_static_features
    from carb_lib.families.resnet import REFERENCE_CONFIG
    from carb_lib.families.space import add_config_ids

    if not 3 <= n <= 8:
        raise ValueError(f"a calibration times 3 to 8 configs, got n={n}")
    ref = dict(REFERENCE_CONFIG)
    variants = [{}, {"batch": 1}, {"width": 0.25}, {"depth": 34, "batch": 4},
                {"resolution": 32, "batch": 16}, {"batch": 2}, {"width": 0.75, "batch": 2},
                {"resolution": 96, "batch": 2}]
    rows = pd.DataFrame([{**ref, **v} for v in variants[:n]])
    return with_static_features(add_config_ids(rows))


def time_configs(configs: pd.DataFrame, *, platform: str | None = None,
                 budget_s: float = 60.0) -> pd.DataFrame:
    """Time ``configs`` now on this CPU with the study's protocol (heap kept), in one fresh
    process, within ``budget_s`` seconds; their rows (``latency_ms``, ``status``)."""
    from carb_lib.families import all_config_columns
    from carb_lib.measure.campaign_noise import measure_many_in_subprocess
    from carb_lib.measure.protocol import Protocol

    cols = [c for c in all_config_columns() if c in configs.columns]
    rows = measure_many_in_subprocess(configs[cols].to_dict(orient="records"), "cpu",
                                      Protocol(cpu_keep_heap=True), platform,
                                      timeout_s=float(budget_s))
    return pd.DataFrame(rows)


def calibrate_model(model: Any, *, n: int = 5, budget_s: float = 60.0,
                    timed: pd.DataFrame | None = None) -> HostCalibration:
    """Time :func:`calibration_configs` now (or take ``timed`` rows with ``config_id`` and
    ``latency_ms``), predict them with ``model`` and return the host factor."""
    configs = calibration_configs(n)
    if timed is None:
        timed = time_configs(configs, platform=getattr(model, "platform_", None),
                             budget_s=budget_s)
    ok = timed[timed.get("status", pd.Series("ok", index=timed.index)).astype(str) == "ok"]
    got = configs.merge(ok[["config_id", "latency_ms"]], on="config_id", how="inner")
    pred = model.predict(got.drop(columns=["latency_ms"]))
    p = pred["latency_ms"] if isinstance(pred, pd.DataFrame) else pred
    return host_factor(got["latency_ms"].to_numpy(float), np.asarray(p, dtype=float))


# --------------------------------------------------------------------------- evaluation
def _light_model(rows: pd.DataFrame, coverage: float, seed: int):
    """A LightGBM of log latency on the transfer study's features, fitted on 80 % of ``rows``,
    and the split-conformal half-width (log scale) at ``coverage`` from the other 20 %."""
    from carb_lib.transfer.pairwise import make_source_model, model_features

    rng = np.random.default_rng(seed)
    cal = rng.random(len(rows)) < 0.2
    y = np.log(rows["latency_ms"].to_numpy(float))
    X = model_features(rows)
    m = make_source_model(300, seed).fit(X[~cal], y[~cal])
    res = np.sort(np.abs(y[cal] - m.predict(X[cal])))
    n = len(res)
    half = float(res[min(n - 1, int(np.ceil((n + 1) * coverage)) - 1)])
    return (lambda d: m.predict(model_features(d))), half


def campaign_calibration(model_rows: pd.DataFrame, other_rows: pd.DataFrame,
                         other_reference: pd.DataFrame | None = None, *,
                         n_reference: int = 3, n_configs: int = 5, coverage: float = 0.9,
                         seeds: int = 5) -> pd.DataFrame:
    """A model of one campaign predicting another campaign of the same CPU, raw and host-
    calibrated.

    Parameters
    ----------
    model_rows, other_rows : pandas.DataFrame
        The ok rows (with static features) of the model's campaign and of the other one.
    other_reference : pandas.DataFrame, optional
        The other campaign's reference rows (``data/reference/``): its first ``n_reference``
        ok rows calibrate (``calibration="reference"``).
    n_configs : int, default 5
        Calibration from this many of the other campaign's rows (seeded; left out of the
        scores): ``calibration="configs"``.
    coverage : float, default 0.9
        Nominal coverage of the split-conformal interval of the model's campaign.
    seeds : int, default 5

    Returns
    -------
    pandas.DataFrame
        One row per seed and calibration (``none``, ``reference``, ``configs``): ``seed``,
        ``calibration``, ``factor``, ``spread`` (multiplicative), ``applied``, ``n_scored``,
        ``median_ape_pct``, ``within_10pct``, ``coverage`` (share of the scored rows inside
        the interval), ``nominal``.
    """
    from carb_lib.transfer.cpus import _score

    out = []
    y = other_rows["latency_ms"].to_numpy(float)
    for seed in range(seeds):
        predict, half = _light_model(model_rows, coverage, seed)
        lp = predict(other_rows)
        cals: list[tuple[str, HostCalibration | None, np.ndarray]] = [
            ("none", None, np.ones(len(y), dtype=bool))]
        if other_reference is not None and len(other_reference):
            ref = other_reference
            if "status" in ref.columns:
                ref = ref[ref["status"].astype(str).eq("ok")]
            ref = ref.sort_values("measured_at").head(n_reference)
            pr = np.exp(predict(ref))
            cals.append(("reference", host_factor(ref["latency_ms"].to_numpy(float), pr),
                         np.ones(len(y), dtype=bool)))
        pick = np.random.default_rng([seed, 11]).permutation(len(y))[:n_configs]
        keep = np.ones(len(y), dtype=bool)
        keep[pick] = False
        cals.append(("configs", host_factor(y[pick], np.exp(lp[pick])), keep))
        for name, cal, mask in cals:
            f = cal.factor if cal is not None and cal.applied else 1.0
            p = np.exp(lp[mask]) * f
            lo, hi = p * np.exp(-half), p * np.exp(half)
            out.append({"seed": seed, "calibration": name,
                        "factor": cal.factor if cal is not None else 1.0,
                        "spread": float(np.exp(cal.spread)) if cal is not None else 1.0,
                        "applied": cal.applied if cal is not None else False,
                        "n_scored": int(mask.sum()), **_score(y[mask], p),
                        "coverage": float(np.mean((y[mask] >= lo) & (y[mask] <= hi))),
                        "nominal": coverage})
    return pd.DataFrame(out)
