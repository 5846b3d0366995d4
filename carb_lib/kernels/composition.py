"""The composition law: a network's latency from the sum of its own calls, fitted on this host.

The calls of a network timed alone (:mod:`carb_lib.kernels.replay`) miss part of the network's
time at small batches: a call repeated alone finds its weights and input in the cache, in the
network it often does not (docs/operators.md). The law

    network ms = a x (sum of its calls, ms) + b x (calls per forward) + c x (weight MiB)
                 + d x (MiB its calls read and write)

corrects the sum with a per-call cost and two memory-traffic terms, fitted by non-negative
least squares on relative errors (:func:`fit_law`) on networks of the design families only
(:func:`design_networks`: ResNet, MobileNetV2, EfficientNet, VGG, drawn with a fixed seed from
the configs of every catalogued design campaign, at batches 1 and 16, fp32, at their own
resolution), each timed on this host now, its calls and the network itself
(:func:`calibrate`, a few minutes). ``benchmarks/composition_law.py`` scores the procedure:
out of family on design networks, and once on zoo networks that neither fit nor chose it.

The fitted law is kept beside the call cache it was fitted with (same CPU model, torch
version, threads and heap: ``<cache>.law.json``, its rows in ``<cache>.law.parquet``), never
in ``data/``; :func:`load_law` reads it back, and :func:`carb_lib.kernels.replay.screen_times`
applies it (``law_ms``) when given.

Examples
--------
>>> law = CompositionLaw(coef=(1.0, 0.005, 0.05, 0.02), n_networks=80)
>>> float(law.predict(pd.DataFrame({"sum_ms": [10.0], "n_calls": [200],
...                                 "weight_mib": [20.0], "call_mib": [100.0]}))[0])
14.0
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.tables import atomic_write, atomic_write_parquet

__all__ = ["FAMILIES", "TERMS", "CompositionLaw", "calibrate", "design_networks", "fit_law",
           "law_path", "load_law", "traffic_mib"]

#: The design families the law is fitted on.
FAMILIES = ("resnet", "mobilenetv2", "efficientnet", "vgg")
#: The law's terms, in the order of its coefficients.
TERMS = ("sum_ms", "n_calls", "weight_mib", "call_mib")


@dataclass(frozen=True)
class CompositionLaw:
    """Coefficients of :data:`TERMS` (ms per unit), how many networks fitted them, and the
    protocol of the call times they apply to."""

    coef: tuple[float, ...]
    n_networks: int
    protocol: dict[str, Any] = field(default_factory=dict)
    fitted_at: str = ""

    def predict(self, frame: pd.DataFrame) -> np.ndarray:
        """The law's ms for every row of ``frame`` (columns :data:`TERMS`)."""
        missing = [t for t in TERMS if t not in frame.columns]
        if missing:
            raise ValueError(f"the composition law needs column(s) {missing}")
        return frame[list(TERMS)].to_numpy(dtype=float) @ np.asarray(self.coef, dtype=float)

    def describe(self) -> str:
        """``network ms = 0.981 x sum of calls + 5.5 µs x calls + ...``"""
        a, b, c, d = self.coef
        return (f"network ms = {a:.3f} x sum of calls + {1e3 * b:.1f} µs x calls + {c:.3f} ms x "
                f"weight MiB + {d:.3f} ms x MiB the calls move ({self.n_networks} design "
                "networks)")


def fit_law(rows: pd.DataFrame) -> CompositionLaw:
    """The law's coefficients from rows of :data:`TERMS` and ``measured_ms``: non-negative
    least squares on relative errors (each row divided by its measured time)."""
    from scipy.optimize import nnls

    if len(rows) < len(TERMS):
        raise ValueError(f"the composition law needs at least {len(TERMS)} networks, got "
                         f"{len(rows)}")
    y = rows["measured_ms"].to_numpy(dtype=float)
    if not (np.isfinite(y).all() and (y > 0).all()):
        raise ValueError("every network's measured_ms must be a positive number")
    X = rows[list(TERMS)].to_numpy(dtype=float) / y[:, None]
    coef, _ = nnls(X, np.ones(len(y)))
    return CompositionLaw(tuple(float(c) for c in coef), len(rows))


def traffic_mib(net: Any, shape: tuple[int, ...], dtype: Any = "fp32") -> tuple[float, float]:
    """The law's traffic terms of ``net`` at input ``shape`` in ``dtype``: its weights (MiB)
    and what its calls read and write in one forward pass (MiB, each distinct call times its
    count)."""
    from carb_lib.kernels.calls import network_calls
    from carb_lib.kernels.replay import _weight_mib

    calls = network_calls(net, shape, dtype)
    return _weight_mib(net, dtype), float((calls["bytes"] * calls["count"]).sum()) / 2**20


def design_networks(per_family: int = 10, seed: int = 0) -> pd.DataFrame:
    """A seeded sample of ``per_family`` distinct fp32 architectures (at their resolution) of
    each of :data:`FAMILIES`, from every catalogued design campaign's configs."""
    from carb_lib.dataset.catalog import load_catalog

    cat = load_catalog()
    parts = [pd.read_parquet(p) for plat in cat.platforms()
             for p in cat.files(plat, "design", "rows") if p.is_file()]
    rows = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if rows.empty or "family" not in rows.columns:
        raise ValueError("no catalogued design campaign holds configs to fit the composition "
                         "law on")
    rows = rows[rows["family"].isin(FAMILIES) & rows["precision"].eq("fp32")]
    rows = rows.drop_duplicates("config_id")
    keep = ["family", "resolution", "depth", "width", "block", "arch", "expansion", "kernel",
            "depth_mult", "batch_norm", "early_downsample"]
    rows = rows.drop_duplicates([c for c in keep if c in rows.columns])
    return pd.concat([g.sample(min(per_family, len(g)), random_state=seed)
                      for _, g in rows.groupby("family")], ignore_index=True)


def law_path(cache: Any) -> Path:
    """Where the law fitted with ``cache`` (a :class:`~carb_lib.kernels.replay.CallCache`) is
    kept: beside its file, ``<cache>.law.json``."""
    return cache.path.with_name(f"{cache.path.stem}.law.json")


def load_law(cache: Any) -> CompositionLaw | None:
    """The law fitted with ``cache``'s protocol on this host (None: none was)."""
    path = law_path(cache)
    if not path.is_file():
        return None
    try:
        got = json.loads(path.read_text())
        law = CompositionLaw(tuple(float(c) for c in got["coef"]), int(got["n_networks"]),
                             dict(got.get("protocol", {})), str(got.get("fitted_at", "")))
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a composition law ({exc})") from None
    if len(law.coef) != len(TERMS):
        raise ValueError(f"{path}: not a composition law ({len(law.coef)} coefficients)")
    ours = {k: str(v) for k, v in cache.protocol.items()}
    theirs = {k: str(v) for k, v in law.protocol.items() if k in ours}
    if theirs != {k: ours[k] for k in theirs}:
        raise ValueError(f"{path} was fitted with another protocol ({theirs}) than this "
                         f"host's ({ours}): fit it again")
    return law


def calibrate(cache: Any, *, per_family: int = 10, batches: tuple[int, ...] = (1, 16),
              seed: int = 0, window_s: float = 0.3, progress: bool = False
              ) -> tuple[CompositionLaw, pd.DataFrame]:
    """Fit the law on this host: each design network (:func:`design_networks`) at each batch,
    its calls timed into ``cache`` and summed, its traffic terms, and the network itself timed
    by the same harness (two warm-up calls, the median of three windows of at least
    ``window_s`` seconds, the cache's threads and heap); then :func:`fit_law`, kept beside
    the cache (:func:`law_path`) with its rows.

    Returns
    -------
    CompositionLaw, pandas.DataFrame
        The law (with the cache's protocol) and one row per network and batch: the config
        columns, ``batch``, :data:`TERMS`, ``measured_ms``, ``measured_cv``, ``n_untimed``.
    """
    import torch
    from tqdm.auto import tqdm

    from carb_lib.families import get_family
    from carb_lib.kernels.law import _time_call, timing_protocol
    from carb_lib.kernels.replay import network_time

    if int(per_family) < 1 or not batches or min(int(b) for b in batches) < 1 or window_s <= 0:
        raise ValueError(f"per_family >= 1, batches >= 1 and window_s > 0 are needed; got "
                         f"{per_family}, {batches}, {window_s}")
    configs = design_networks(per_family, seed)
    out = []
    todo = [(r, int(b)) for r in configs.to_dict("records") for b in batches]
    for row, batch in tqdm(todo, desc="design networks", disable=not progress):
        config = get_family(row["family"]).from_row({**row, "batch": batch})
        net = config.build_model().eval()
        shape = (batch, *(getattr(config, "input_shape", None)
                          or (3, config.resolution, config.resolution)))
        t = network_time(net, shape, cache=cache, budget_s=600)
        weight_mib, call_mib = traffic_mib(net, shape)
        x = torch.randn(*shape)
        with timing_protocol(cache.threads), torch.inference_mode():
            seconds, cv, _ = _time_call(lambda n=net, x=x: n(x), window_s, 3)
        out.append({**{c: row[c] for c in row if c not in ("batch", "config_id")},
                    "batch": batch, "sum_ms": t.predicted_ms, "n_calls": t.n_calls,
                    "weight_mib": weight_mib, "call_mib": call_mib,
                    "measured_ms": 1e3 * seconds, "measured_cv": cv,
                    "n_untimed": t.n_untimed})
    rows = pd.DataFrame(out)
    done = rows[rows["n_untimed"] == 0]
    fitted = fit_law(done)
    law = CompositionLaw(fitted.coef, fitted.n_networks, dict(cache.protocol),
                         pd.Timestamp.now(tz="UTC").isoformat())
    path = law_path(cache)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_parquet(rows, path.with_suffix(".parquet"))
    text = json.dumps({**asdict(law), "coef": list(law.coef)}, indent=1, default=str)
    atomic_write(path, lambda f: f.write(text.encode()))
    return law, rows
