"""Host calibration: a model of stored rows, brought to the speed of the host at hand.

The same CPU kind is another machine a few days later: re-measured rows of one Xeon ran 1.20-
1.86x slower than their stored values (median 1.42x), with identical memory. A calibration
times reference configs now and predicts them with the model; the *host factor* is the median
of measured / predicted latency, its *spread* the robust standard deviation (1.4826 x the
median absolute deviation) of the log ratios.

* **The rows' protocol.** The timings repeat how the model's rows were timed: their thread
  count, heap and device (:func:`carb_lib.measure.protocol.model_protocol`, recorded by ``carb
  fit``). A model of GPU rows on a machine without that GPU is refused; a model file that
  records no protocol is calibrated under :data:`~carb_lib.measure.protocol.ASSUMED_PROTOCOL`
  with a warning that names it.
* **What is timed.** ``carb fit`` keeps a ladder of its training rows that spans their latency
  range (:func:`reference_rows`); :func:`calibration_configs` takes from it, per size band
  (the training rows' latency terciles), up to six configs, the largest band reaching the
  largest training rows, within the timing budget (``--calibrate-budget-s``, 60 s by
  default). ``--calibrate-on-query K`` adds K of the queried configs. A model without the
  ladder (older files) times small ResNet neighbours of the campaigns' reference config.
* **When it is applied.** The factor multiplies the latency predictions and their interval
  bounds when it differs from 1 by more than twice the standard error of a median of its
  timings (``|log factor| > 2 x 1.2533 x spread / sqrt(n)``); otherwise it is reported and not
  applied. Per-band factors replace the one factor only where every band holds at least
  :data:`MIN_TIMINGS` timings and two bands' factors differ by more than the sum of their
  spreads. Factor, spread, bands, protocol and whether it was applied go into every output
  (:class:`HostCalibration`).
* **When it cannot time.** A timing that fails or runs past the budget gives one line and no
  factor (``applied`` False), never an error of the prediction.

:func:`campaign_calibration` evaluates the idea on stored campaigns of one CPU taken at
different times: a model of one campaign, the factor from the other campaign's rows of the
configs ``--calibrate`` would time (its ladder), from its reference rows (its first few: the
moment a calibration measures) or from a few of its configs, scored on that campaign (median
APE, share within +-10 %, interval coverage); :mod:`carb_lib.transfer.calibration_eval` runs it
over every pair of a CPU's campaigns of one protocol (notebook 02).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.dataset.features import with_static_features
from carb_lib.families import all_config_columns
from carb_lib.families.resnet import REFERENCE_CONFIG
from carb_lib.families.space import add_config_ids
from carb_lib.measure import campaign_noise
from carb_lib.measure.protocol import ASSUMED_PROTOCOL, Protocol, model_protocol
from carb_lib.transfer.cpus import _score
from carb_lib.transfer.pairwise import make_source_model, model_features

__all__ = ["CALIBRATED_TARGETS", "HostCalibration", "apply_calibration", "calibrate_model",
           "calibration_configs", "campaign_calibration", "estimate_seconds", "host_factor",
           "reference_rows", "time_configs"]

#: Predicted columns a host factor scales (time; memory does not move with the host's speed).
CALIBRATED_TARGETS: tuple[str, ...] = ("latency_ms",)
#: Least calibration timings a factor (or a band's factor) is computed from.
MIN_TIMINGS = 3
#: Size bands of a calibration: the training rows' latency cut at these quantiles.
BAND_QUANTILES: tuple[float, ...] = (1 / 3, 2 / 3)
#: Configs timed per band at most.
PER_BAND = 6
#: Rows of the ladder ``carb fit`` keeps (:func:`reference_rows`).
LADDER_ROWS = 48
#: Seconds a fresh measuring process takes to start (imports) before its first config.
PROCESS_START_S = 4.0


@dataclass
class HostCalibration:
    """A host factor (measured / predicted latency) and whether it was applied.

    Attributes
    ----------
    factor : float
        Median of measured / predicted latency over the calibration timings (> 1: this host
        runs slower than the model's rows); NaN when nothing could be timed.
    spread : float
        Robust standard deviation of the log ratios (1.4826 x MAD), on the log scale.
    n : int
        Calibration timings.
    applied : bool
        The factor (or the band factors) multiply the latency predictions.
    reason : str
        One line saying what was done and why.
    protocol : str
        How the calibration timed (``"1 thread, default heap (cpu)"``).
    per_band : bool
        Band factors are applied instead of the one factor.
    bands : list of dict
        Per size band: ``lo_ms``, ``hi_ms`` (predicted latency), ``factor``, ``spread``, ``n``.
    n_query : int
        Timings of queried configs among ``n``.
    """

    factor: float
    spread: float
    n: int
    applied: bool
    reason: str
    protocol: str = ""
    per_band: bool = False
    bands: list[dict[str, Any]] = field(default_factory=list)
    n_query: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def factors_for(self, predicted_ms: Any) -> np.ndarray:
        """The factor each prediction is multiplied by (1 where nothing is applied)."""
        p = np.asarray(predicted_ms, dtype=float)
        if not self.applied:
            return np.ones_like(p)
        if not self.per_band:
            return np.full_like(p, self.factor)
        edges = [b["hi_ms"] for b in self.bands[:-1]]
        idx = np.searchsorted(np.asarray(edges, dtype=float), p, side="right")
        return np.asarray([b["factor"] for b in self.bands], dtype=float)[idx]


def _center_spread(r: np.ndarray) -> tuple[float, float]:
    c = float(np.median(r))
    return c, float(1.4826 * np.median(np.abs(r - c)))


def _distinct(c: float, spread: float, n: int) -> bool:
    """Whether a median log ratio differs from 0 by more than twice its standard error."""
    se = 1.2533 * spread / math.sqrt(max(n, 1))
    return abs(c) > 2 * se


def host_factor(measured: Sequence[float], predicted: Sequence[float], *,
                edges_ms: Sequence[float] | None = None, protocol: str = "",
                n_query: int = 0) -> HostCalibration:
    """The host factor of calibration timings against the model's predictions.

    Parameters
    ----------
    measured, predicted : sequence of float
        Latency (ms) timed now and predicted, one pair per config.
    edges_ms : sequence of float, optional
        Size-band edges (predicted latency, ms): band factors where every band has at least
        :data:`MIN_TIMINGS` timings and two differ by more than their spreads.
    protocol : str
        How the timings were taken, for the outputs.

    Raises
    ------
    ValueError
        Fewer than :data:`MIN_TIMINGS` finite, positive pairs.

    Examples
    --------
    >>> host_factor([1.2, 1.25, 1.18, 1.22], [1, 1, 1, 1]).applied
    True
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
    c, spread = _center_spread(r)
    n = int(ok.sum())
    applied = _distinct(c, spread, n)
    bands: list[dict[str, Any]] = []
    per_band = False
    if edges_ms is not None and len(edges_ms):
        e = np.asarray(edges_ms, dtype=float)
        idx = np.searchsorted(e, p[ok], side="right")
        bounds = [0.0, *e.tolist(), math.inf]
        for b in range(len(e) + 1):
            rb = r[idx == b]
            cb, sb = _center_spread(rb) if len(rb) else (math.nan, math.nan)
            bands.append({"lo_ms": bounds[b], "hi_ms": bounds[b + 1], "factor": math.exp(cb),
                          "spread": sb, "n": int(len(rb))})
        if all(b["n"] >= MIN_TIMINGS for b in bands):
            logs = [math.log(b["factor"]) for b in bands]
            per_band = any(abs(logs[i] - logs[j]) > bands[i]["spread"] + bands[j]["spread"]
                           for i in range(len(bands)) for j in range(i + 1, len(bands)))
        if per_band:
            applied = True
    how = f" ({protocol})" if protocol else ""
    q = f", {n_query} of them queried configs" if n_query else ""
    if per_band:
        said = ", ".join(f"{b['factor']:.3f} (n={b['n']})" for b in bands)
        reason = (f"host factors by size band {said}; one factor {math.exp(c):.3f} "
                  f"(spread x{math.exp(spread):.3f}, {n} timings{q}{how}): band factors applied")
    else:
        reason = (f"host factor {math.exp(c):.3f} (spread x{math.exp(spread):.3f}, {n} timings"
                  f"{q}{how}): " + ("applied to the latency predictions" if applied else
                                    "NOT applied: within twice its standard error of 1"))
    return HostCalibration(math.exp(c), spread, n, bool(applied), reason, protocol=protocol,
                           per_band=per_band, bands=bands, n_query=n_query)


def _not_timed(reason: str, protocol: str = "") -> HostCalibration:
    return HostCalibration(math.nan, math.nan, 0, False, reason, protocol=protocol)


def _latency_columns(frame: pd.DataFrame) -> list[str]:
    return [c for t in CALIBRATED_TARGETS
            for c in (t, f"{t}_lo", f"{t}_hi", f"{t}_pred", f"{t}_pred_lo", f"{t}_pred_hi")
            if c in frame.columns]


def apply_calibration(pred: pd.DataFrame, cal: HostCalibration, *,
                      targets: Sequence[str] = CALIBRATED_TARGETS) -> pd.DataFrame:
    """``pred`` with every column of ``targets`` (and its ``_lo`` / ``_hi`` and ``_pred*``
    spellings) times the factor (or its band's factor) when ``cal.applied``, and the columns
    ``host_factor`` (the factor applied to the row; the one factor where none is),
    ``host_factor_spread`` (multiplicative, ``exp(spread)``), ``host_calibration_applied`` and
    ``calibration_protocol``."""
    out = pred.copy()
    base = next((c for c in (f"{targets[0]}_pred", targets[0]) if c in out.columns), None)
    f = (cal.factors_for(out[base].to_numpy(float)) if base is not None
         else np.full(len(out), cal.factor if cal.applied else 1.0))
    if cal.applied:
        for t in targets:
            for c in (t, f"{t}_lo", f"{t}_hi", f"{t}_pred", f"{t}_pred_lo", f"{t}_pred_hi"):
                if c in out.columns:
                    out[c] = out[c].astype(float) * f
    return out.assign(host_factor=f if cal.applied else cal.factor,
                      host_factor_spread=float(np.exp(cal.spread)),
                      host_calibration_applied=cal.applied, calibration_protocol=cal.protocol)


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
            if t not in out.columns:
                continue
            f = self.calibration_.factors_for(out[t].to_numpy(float))
            for c in (t, f"{t}_lo", f"{t}_hi"):
                if c in out.columns:
                    out[c] = out[c].astype(float) * f
        return out

    def predict(self, X: Any, *args: Any, **kwargs: Any) -> Any:
        return self._scale(self._model.predict(X, *args, **kwargs))

    def predict_interval(self, X: Any, *args: Any, **kwargs: Any) -> Any:
        return self._scale(self._model.predict_interval(X, *args, **kwargs))


def estimate_seconds(latency_ms: Any, protocol: Any = None) -> np.ndarray:
    """Seconds the profiler takes to time configs of these latencies (ms) under ``protocol``
    (:class:`carb_lib.measure.protocol.Protocol`, the study's by default): build, warm-up,
    the windows (each until both its least iterations and its least time have passed) and the
    memory pass; a process's start (:data:`PROCESS_START_S`) is not included."""
    pr = protocol or Protocol()
    s = np.asarray(latency_ms, dtype=float) / 1000.0
    window = np.maximum(pr.cpu_min_iters * s, pr.cpu_min_window_s + s)
    return 0.3 + (pr.cpu_warmup_iters + 1) * s + pr.n_windows * window


def reference_rows(rows: pd.DataFrame, n: int = LADDER_ROWS) -> pd.DataFrame:
    """A ladder of ``n`` ok rows of ``rows`` that spans their latency range (the rows nearest
    to ``n`` evenly spaced quantiles of log latency, the largest row included): the configs a
    calibration of a model fitted on ``rows`` may time. Config columns, ``config_id`` and the
    stored ``latency_ms``; sorted by latency."""
    ok = rows[rows["status"].astype(str).eq("ok")] if "status" in rows.columns else rows
    ok = ok[np.isfinite(ok["latency_ms"].to_numpy(float))]
    if ok.empty:
        return ok.iloc[:0]
    ok = ok.sort_values("latency_ms", kind="stable").reset_index(drop=True)
    logs = np.log(ok["latency_ms"].to_numpy(float))
    want = np.quantile(logs, np.linspace(0, 1, min(n, len(ok))))
    idx = sorted({int(np.argmin(np.abs(logs - w))) for w in want})
    cols = ["config_id", *(c for c in all_config_columns() if c in ok.columns), "latency_ms"]
    out = ok.iloc[idx][list(dict.fromkeys(c for c in cols if c in ok.columns))]
    out = out.dropna(axis=1, how="all").reset_index(drop=True)
    # plain numpy columns (a model file stores no pandas missing-value objects)
    for c in out.columns:
        if isinstance(out[c].dtype, pd.api.extensions.ExtensionDtype):
            num = pd.api.types.is_numeric_dtype(out[c].dtype)
            out[c] = (out[c].astype(float) if num and out[c].isna().any()
                      else out[c].to_numpy(dtype=object if not num else None))
    return out


def band_edges(latency_ms: Any) -> list[float]:
    """The size-band edges (ms) of training latencies: their :data:`BAND_QUANTILES`."""
    lat = np.asarray(latency_ms, dtype=float)
    lat = lat[np.isfinite(lat) & (lat > 0)]
    return [float(np.quantile(lat, q)) for q in BAND_QUANTILES] if len(lat) else []


def _legacy_configs(n: int) -> pd.DataFrame:
    if not 3 <= n <= 8:
        raise ValueError(f"a calibration times 3 to 8 configs, got n={n}")
    ref = dict(REFERENCE_CONFIG)
    variants = [{}, {"batch": 1}, {"width": 0.25}, {"depth": 34, "batch": 4},
                {"resolution": 32, "batch": 16}, {"batch": 2}, {"width": 0.75, "batch": 2},
                {"resolution": 96, "batch": 2}]
    rows = pd.DataFrame([{**ref, **v} for v in variants[:n]])
    return with_static_features(add_config_ids(rows))


def calibration_configs(model: Any = None, n: int = 5, *, budget_s: float = 60.0,
                        per_band: int = PER_BAND) -> pd.DataFrame:
    """The configs a calibration of ``model`` times now.

    From the model's ladder (``reference_rows_``, kept by ``carb fit``): per size band
    (``band_edges_ms_``) up to ``per_band`` rows evenly spread in it, the largest band ending at
    the largest training row, shrunk (the largest picks swapped for smaller rows of their band)
    until the profiler's estimated time (:func:`estimate_seconds`) fits in ``budget_s`` less a
    process start. A model without a ladder (an int as first argument, or an older model file):
    ``n`` small ResNet neighbours of the campaigns' reference config (ResNet-18 x0.5, 64 px,
    batch 8, fp32), with ids and static features.
    """
    if isinstance(model, int | np.integer) and not isinstance(model, bool):
        model, n = None, int(model)
    ladder = getattr(model, "reference_rows_", None)
    if not isinstance(ladder, pd.DataFrame) or len(ladder) < MIN_TIMINGS:
        return _legacy_configs(n)

    ladder = ladder.sort_values("latency_ms", kind="stable").reset_index(drop=True)
    edges = list(getattr(model, "band_edges_ms_", None) or band_edges(ladder["latency_ms"]))
    band = np.searchsorted(np.asarray(edges, dtype=float), ladder["latency_ms"].to_numpy(float),
                           side="right")
    cost = estimate_seconds(ladder["latency_ms"].to_numpy(float), _model_timing_protocol(model))
    picks: dict[int, list[int]] = {}
    for b in range(len(edges) + 1):
        members = np.flatnonzero(band == b)
        if len(members) == 0:
            continue
        k = min(per_band, len(members))
        picks[b] = sorted({int(members[round(i)]) for i in np.linspace(0, len(members) - 1, k)})
    allowed = max(budget_s - PROCESS_START_S, 1.0)
    while sum(cost[i] for v in picks.values() for i in v) > allowed:
        # the most expensive pick gives way to the next smaller row of its band not yet picked
        b, i = max(((b, i) for b, v in picks.items() for i in v), key=lambda bi: cost[bi[1]])
        lower = [j for j in np.flatnonzero(band == b) if j < i and j not in picks[b]]
        picks[b].remove(i)
        if lower:
            picks[b].append(int(lower[-1]))
        elif not picks[b]:
            del picks[b]
        if not picks:
            break
    idx = sorted(i for v in picks.values() for i in v)
    out = ladder.iloc[idx].drop(columns=["latency_ms"]).reset_index(drop=True)
    return with_static_features(out)


def _model_timing_protocol(model: Any) -> Any:
    return model_protocol(model).protocol()


def time_configs(configs: pd.DataFrame, *, protocol: Any = None, platform: str | None = None,
                 budget_s: float = 60.0) -> pd.DataFrame:
    """Time ``configs`` now, in one fresh process, under ``protocol`` (a
    :class:`~carb_lib.measure.protocol.RowsProtocol`: the threads, heap and device of the rows
    they are compared with; :data:`~carb_lib.measure.protocol.ASSUMED_PROTOCOL` if None),
    within ``budget_s`` seconds; their rows (``latency_ms``, ``status``).

    Raises
    ------
    ValueError
        One line: the protocol's device is not on this machine, or the timing failed or ran
        past ``budget_s``.
    """
    import subprocess

    rp = protocol or ASSUMED_PROTOCOL
    device = require_device(rp)
    cols = [c for c in all_config_columns() if c in configs.columns]
    try:
        rows = campaign_noise.measure_many_in_subprocess(
            configs[cols].to_dict(orient="records"), device, rp.protocol(), platform,
            timeout_s=float(budget_s))
    except subprocess.TimeoutExpired:
        raise ValueError(f"the timing of {len(configs)} config(s) ran past its budget of "
                         f"{budget_s:g} s") from None
    except RuntimeError as exc:
        last = str(exc).strip().splitlines()[-1] if str(exc).strip() else "no message"
        raise ValueError(f"the timing of {len(configs)} config(s) failed: {last}") from None
    return pd.DataFrame(rows)


def require_device(rp: Any) -> str:
    """The device string that times under the rows' protocol ``rp`` on this machine.

    Raises
    ------
    ValueError
        A model of GPU rows on a machine without a CUDA device.
    """
    if rp.device == "cpu":
        return "cpu"
    import torch

    if not torch.cuda.is_available():
        raise ValueError(f"the model's rows were timed on {rp.device} and this machine has no "
                         "CUDA device: a calibration or check of it is refused here")
    return "cuda"


def calibrate_model(model: Any, *, n: int = 5, budget_s: float = 60.0,
                    timed: pd.DataFrame | None = None, query: pd.DataFrame | None = None,
                    k_query: int = 0, warn: Any = None) -> HostCalibration:
    """Time :func:`calibration_configs` of ``model`` now (or take ``timed`` rows with
    ``config_id`` and ``latency_ms``), plus ``k_query`` configs of ``query`` spread over their
    predicted latency, under the model's protocol; predict them with ``model``; the host
    factor (:func:`host_factor`, band edges from the model).

    A model that records no protocol is timed under
    :data:`~carb_lib.measure.protocol.ASSUMED_PROTOCOL`, said through ``warn`` (one line). A
    timing that fails or runs past ``budget_s`` gives a :class:`HostCalibration` with no factor
    (``applied`` False) and the reason."""
    rp = model_protocol(model)
    if not rp.recorded and warn is not None:
        warn(f"warning: the model records no timing protocol; calibrating under the assumed "
             f"one: {rp.describe()}")
    require_device(rp)
    configs = calibration_configs(model, n, budget_s=budget_s)
    n_query = 0
    if query is not None and k_query > 0:
        if k_query > len(query):
            raise ValueError(f"--calibrate-on-query {k_query}: the query holds only "
                             f"{len(query)} config(s)")
        qp = np.asarray(_predicted_latency(model, query), dtype=float)
        order = np.argsort(qp, kind="stable")
        pick = order[np.unique(np.linspace(0, len(order) - 1, k_query).round().astype(int))]
        qc = query.iloc[pick].copy()
        if "config_id" not in qc.columns:
            qc = add_config_ids(qc)
        configs = pd.concat([configs, qc], ignore_index=True)
        configs = configs.drop_duplicates("config_id").reset_index(drop=True)
        n_query = len(pick)
    if timed is None:
        try:
            timed = time_configs(configs, protocol=rp, platform=getattr(model, "platform_", None),
                                 budget_s=budget_s)
        except ValueError as exc:
            return _not_timed(f"no host factor: {exc}; predictions left as the model makes "
                              "them", rp.describe())
    ok = timed[timed.get("status", pd.Series("ok", index=timed.index)).astype(str) == "ok"]
    got = configs.merge(ok[["config_id", "latency_ms"]], on="config_id", how="inner",
                        suffixes=("_stored", ""))
    if len(got) < MIN_TIMINGS:
        return _not_timed(f"no host factor: {len(got)} of {len(configs)} calibration config(s) "
                          "were timed ok", rp.describe())
    p = _predicted_latency(model, got.drop(columns=["latency_ms"]))
    return host_factor(got["latency_ms"].to_numpy(float), np.asarray(p, dtype=float),
                       edges_ms=getattr(model, "band_edges_ms_", None), protocol=rp.describe(),
                       n_query=int(got["config_id"].isin(configs["config_id"].iloc[
                           len(configs) - n_query:]).sum()) if n_query else 0)


def _predicted_latency(model: Any, frame: pd.DataFrame) -> np.ndarray:
    pred = model.predict(frame)
    p = pred["latency_ms"] if isinstance(pred, pd.DataFrame) else pred
    return np.asarray(p, dtype=float)


# --------------------------------------------------------------------------- evaluation
def _light_model(rows: pd.DataFrame, coverage: float, seed: int):
    """A LightGBM of log latency on the transfer study's features, fitted on 80 % of ``rows``,
    and the split-conformal half-width (log scale) at ``coverage`` from the other 20 %."""
    rng = np.random.default_rng(seed)
    cal = rng.random(len(rows)) < 0.2
    y = np.log(rows["latency_ms"].to_numpy(float))
    X = model_features(rows)
    m = make_source_model(300, seed).fit(X[~cal], y[~cal])
    res = np.sort(np.abs(y[cal] - m.predict(X[cal])))
    n = len(res)
    half = float(res[min(n - 1, int(np.ceil((n + 1) * coverage)) - 1)])
    return (lambda d: m.predict(model_features(d))), half


def _ladder_calibration_rows(model_rows: pd.DataFrame, budget_s: float) -> pd.DataFrame:
    """The configs the product's calibration of a model fitted on ``model_rows`` would time
    (:func:`reference_rows` -> :func:`calibration_configs`, ``budget_s`` seconds)."""
    from types import SimpleNamespace

    ladder = reference_rows(model_rows)
    fake = SimpleNamespace(reference_rows_=ladder,
                           band_edges_ms_=band_edges(model_rows["latency_ms"]))
    return calibration_configs(fake, budget_s=budget_s)


def campaign_calibration(model_rows: pd.DataFrame, other_rows: pd.DataFrame,
                         other_reference: pd.DataFrame | None = None, *,
                         n_reference: int = 3, n_configs: int = 5, coverage: float = 0.9,
                         seeds: int = 5, budget_s: float = 60.0) -> pd.DataFrame:
    """A model of one campaign predicting another campaign of the same CPU, raw and host-
    calibrated.

    Every calibration goes through :func:`host_factor` with the model rows' size bands
    (:func:`band_edges`) and is applied as the product applies it
    (:meth:`HostCalibration.factors_for`: the one factor or the band factors, only when
    ``applied``), to the prediction and its interval bounds.

    Parameters
    ----------
    model_rows, other_rows : pandas.DataFrame
        The ok rows (with static features) of the model's campaign and of the other one.
    other_reference : pandas.DataFrame, optional
        The other campaign's reference rows (the campaign's ``reference`` file): its first ``n_reference``
        ok rows calibrate (``calibration="reference"``).
    n_configs : int, default 5
        Calibration from this many of the other campaign's rows (seeded), as
        ``--calibrate-on-query``: ``calibration="configs"``.
    coverage : float, default 0.9
        Nominal coverage of the split-conformal interval of the model's campaign.
    seeds : int, default 5
    budget_s : float, default 60
        Timing budget of the ``ladder`` calibration: the configs ``carb predict --calibrate``
        times for a model of ``model_rows`` (:func:`calibration_configs` of its
        :func:`reference_rows`), their latency taken from the other campaign.

    Returns
    -------
    pandas.DataFrame
        One row per seed and calibration (``none``, ``ladder``, ``reference``, ``configs``):
        ``seed``, ``calibration``, ``factor``, ``spread`` (multiplicative), ``n_timings``,
        ``applied``, ``per_band``, ``n_scored``, ``median_ape_pct``, ``within_10pct``,
        ``spearman``, ``coverage`` (share of the scored rows inside the interval),
        ``nominal``. Every calibration of a seed is scored on the same rows: the other
        campaign's rows less those any calibration timed.
    """
    out = []
    y = other_rows["latency_ms"].to_numpy(float)
    ids = other_rows["config_id"].astype(str).to_numpy()
    edges = band_edges(model_rows["latency_ms"])
    ladder_ids = set(_ladder_calibration_rows(model_rows, budget_s)["config_id"].astype(str))
    ladder_mask = np.isin(ids, list(ladder_ids))
    for seed in range(seeds):
        predict, half = _light_model(model_rows, coverage, seed)
        lp = np.exp(predict(other_rows))
        pick = np.random.default_rng([seed, 11]).permutation(len(y))[:n_configs]
        keep = ~ladder_mask
        keep[pick] = False
        cals: list[tuple[str, HostCalibration | None]] = [("none", None)]
        if ladder_mask.sum() >= MIN_TIMINGS:
            cals.append(("ladder", host_factor(y[ladder_mask], lp[ladder_mask],
                                               edges_ms=edges)))
        if other_reference is not None and len(other_reference):
            ref = other_reference
            if "status" in ref.columns:
                ref = ref[ref["status"].astype(str).eq("ok")]
            ref = ref.sort_values("measured_at").head(n_reference)
            if len(ref) >= MIN_TIMINGS:
                pr = np.exp(predict(ref))
                cals.append(("reference", host_factor(ref["latency_ms"].to_numpy(float), pr,
                                                      edges_ms=edges)))
        cals.append(("configs", host_factor(y[pick], lp[pick], edges_ms=edges)))
        yk = y[keep]
        for name, cal in cals:
            p = lp[keep] * (cal.factors_for(lp[keep]) if cal is not None else 1.0)
            lo, hi = p * np.exp(-half), p * np.exp(half)
            out.append({"seed": seed, "calibration": name,
                        "factor": cal.factor if cal is not None else 1.0,
                        "spread": float(np.exp(cal.spread)) if cal is not None else 1.0,
                        "n_timings": cal.n if cal is not None else 0,
                        "applied": cal.applied if cal is not None else False,
                        "per_band": cal.per_band if cal is not None else False,
                        "n_scored": int(keep.sum()), **_score(yk, p),
                        "coverage": float(np.mean((yk >= lo) & (yk <= hi))),
                        "nominal": coverage})
    return pd.DataFrame(out)
