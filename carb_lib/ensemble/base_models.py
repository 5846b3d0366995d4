"""Characterization-guided base laws: the physics CARB's learners correct.

Each target gets a low-capacity, interpretable law fitted per platform from the static features
(:mod:`carb_lib.dataset.features`); :class:`carb_lib.ensemble.CARBRegressor` then lets its tree learners
model only ``log(measured / base)``. Because the law is linear in quantities that grow with
batch, depth, width and resolution, the combined model extrapolates where trees alone cannot.

``memory`` (peak memory, MiB), per precision ``p``::

    mem = c0_p + a_p * param_bytes + b_p * peak_act_bytes + d_p * activation_bytes
          + e_p * alloc_peak_bytes                                                    [MiB]

``alloc_peak_bytes`` is the allocator model's peak (:mod:`carb_lib.families._alloc`): on the
project's CPUs it equals the measured peak to the byte, and the fit puts ``e_p`` at 1 and the
other terms at 0; elsewhere (a GPU, another allocator) it is one more byte count. The model has
one column per allocator variant (:data:`carb_lib.core.vocab.ALLOC_FEATURES`: oneDNN's 8-channel
blocks on AVX2, 16 on AVX-512, and ``"16+fp16"`` for AVX-512 CPUs whose oneDNN also runs fp16
convolutions, e.g. Intel Sapphire Rapids and later); the fit learns which one the platform
follows — the one whose law has the smaller training error, ``BaseLaw.alloc_block`` — so a law
fitted on an AVX-512 CPU's rows uses 16-channel blocks without being told the CPU. Rows of a family without the model (NaN) use
``param_bytes + peak_act_bytes`` in its place; a frame without the columns gets them computed
(:func:`with_alloc_column`).
``memory_bytes`` is the same law without the allocator term (the ablation).

``roofline`` (latency in ms, energy in J), per precision ``p``::

    y = c0_p + c_batch_p * batch + flops / T_p + bytes / B_p + n_layers * o_p

with ``bytes = param_bytes + activation_bytes`` and ``n_layers = n_conv + n_bn + n_act + n_fc``.
For latency, ``T_p`` is an effective throughput (GFLOP/s), ``B_p`` an effective bandwidth
(GB/s) and ``o_p`` a per-layer dispatch cost (µs); for energy the same constants read as
GFLOP/J, GB/J and mJ per layer.

``kernel`` (latency in ms; ``CARBRegressor(latency_law="kernel")``), per precision ``p``::

    y = c0_p + c_batch_p * batch + a_p * kernel_ms + bytes / B_p + n_layers * o_p

with ``kernel_ms`` the row's operators timed alone on the platform, predicted and summed
(:mod:`carb_lib.kernels.law`); ``a_p`` (ms per ms) scales the operators' times alone to their time
in the network, where caches, allocation and dispatch differ (on the project's CPU, fitted on
all ResNet rows: 0.87 in fp32 beside a 9.8 GB/s bytes term, 1.07 in fp16).

Every coefficient is non-negative (non-negative least squares, NNLS) and the fit minimises the
*relative* error (rows divided by the measured value), with a few Huber re-weighting passes so
that contention outliers (a row measured 1.5x slower) do not pull the constants. Optional row
weights (e.g. inverse measured noise) multiply in. :func:`fit_base_law` with ``n_boot > 0``
gives bootstrap percentile confidence intervals of every constant.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from carb_lib.core.vocab import (
    ALLOC_FEATURES,
    DEFAULT_ALLOC_BLOCK,
    KERNEL_FEATURE,
    PRECISIONS,
    TARGET_UNITS,
)
from carb_lib.dataset.features import static_features

__all__ = ["BASE_KINDS", "BaseLaw", "base_kind", "fit_base_law", "law_columns",
           "with_alloc_column"]

#: Which law each target uses (other targets: ``roofline``).
BASE_KINDS: dict[str, str] = {
    "peak_mem_mib": "memory",
    "latency_ms": "roofline",
    "energy_j": "roofline",
}
_MIB = 2.0**20
_HUBER_PASSES = 3
#: Smallest robust scale of the relative residuals (a law exact on most rows has a MAD of 0).
_SCALE_FLOOR = 1e-6
#: Rows beyond this many robust scales are left out of the final refit (``reweight``).
_REJECT_SCALES = 2.5


def base_kind(target: str) -> str:
    """Law used for ``target`` (``"memory"`` or ``"roofline"``)."""
    return BASE_KINDS.get(target, "roofline")


def law_columns(kind: str) -> tuple[str, ...]:
    """Names of the per-precision terms of a law (the design columns, in order)."""
    if kind == "memory":
        return ("const_mib", "param_mib", "peak_act_mib", "activation_mib", "alloc_mib")
    if kind == "memory_bytes":
        return ("const_mib", "param_mib", "peak_act_mib", "activation_mib")
    if kind == "roofline":
        return ("const", "batch", "gflop", "gbyte", "layers")
    if kind == "kernel":
        return ("const", "batch", "kernel_ms", "gbyte", "layers")
    raise ValueError(f"kind must be 'memory', 'memory_bytes', 'roofline' or 'kernel', got {kind!r}")


def _col(df: pd.DataFrame, name: str) -> np.ndarray:
    if name not in df.columns:
        raise ValueError(f"the base law needs column {name!r}, absent from the input")
    v = pd.to_numeric(df[name], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    return v


def _terms(df: pd.DataFrame, kind: str, block: int | str = DEFAULT_ALLOC_BLOCK) -> np.ndarray:
    """The law's terms (n, k), before the per-precision split (``block``: the allocator
    column's channel block)."""
    if kind in ("memory", "memory_bytes"):
        cols = [
            np.ones(len(df)),
            _col(df, "param_bytes") / _MIB,
            _col(df, "peak_act_bytes") / _MIB,
            _col(df, "activation_bytes") / _MIB,
        ]
        if kind == "memory":
            cols.append(_alloc_term(df, block) / _MIB)
        return np.column_stack(cols)
    layers = sum(_col(df, c) for c in ("n_conv", "n_bn", "n_act", "n_fc"))
    if kind == "kernel":
        if KERNEL_FEATURE not in df.columns:
            raise ValueError(f"the kernel law needs column {KERNEL_FEATURE!r} (the summed "
                             "microbenchmarked kernel times: carb_lib.kernels.law.with_kernel_column)")
        return np.column_stack(
            [
                np.ones(len(df)),
                _col(df, "batch"),
                _col(df, KERNEL_FEATURE),
                (_col(df, "param_bytes") + _col(df, "activation_bytes")) / 1e9,
                layers,
            ]
        )
    return np.column_stack(
        [
            np.ones(len(df)),
            _col(df, "batch"),
            _col(df, "flops") / 1e9,
            (_col(df, "param_bytes") + _col(df, "activation_bytes")) / 1e9,
            layers,
        ]
    )


def with_alloc_column(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with the allocator model's columns (:data:`~carb_lib.core.vocab.ALLOC_FEATURES`),
    computed once when one is absent (NaN for rows that are not configs; NaN values of a family
    without the model are kept as they are). ``df`` itself is not modified."""
    need = [c for c in ALLOC_FEATURES.values() if c not in df.columns]
    if not need:
        return df

    try:
        f = static_features(df)
        cols = {c: f[c].to_numpy(dtype=float) for c in need}
    except (ValueError, KeyError):  # not configs: no allocator model
        cols = {c: np.full(len(df), np.nan) for c in need}
    return df.assign(**cols)


def _alloc_term(df: pd.DataFrame, block: int | str = DEFAULT_ALLOC_BLOCK) -> np.ndarray:
    """``alloc_peak_bytes`` of allocator variant ``block`` (:func:`with_alloc_column`),
    ``param_bytes + peak_act_bytes`` where the family has no allocator model."""
    if block not in ALLOC_FEATURES:
        raise ValueError(f"alloc_block={block!r} is not modelled; valid: {list(ALLOC_FEATURES)}")
    v = _col(with_alloc_column(df), ALLOC_FEATURES[block])
    fallback = _col(df, "param_bytes") + _col(df, "peak_act_bytes")
    return np.where(np.isfinite(v), v, fallback)


def _precision(df: pd.DataFrame) -> np.ndarray:
    if "precision" not in df.columns:
        return np.full(len(df), "fp32", dtype=object)
    return df["precision"].astype(str).to_numpy(dtype=object)


def _nnls_relative(A: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """argmin_{c >= 0} sum w ((A c - y) / y)^2, columns rescaled for conditioning."""
    from scipy.optimize import nnls

    sw = np.sqrt(w)
    M = A / y[:, None] * sw[:, None]
    b = sw
    scale = np.sqrt((M**2).sum(axis=0))
    scale[scale == 0] = 1.0
    c, _ = nnls(M / scale, b, maxiter=50 * M.shape[1])
    return c / scale


def _robust_scale(r: np.ndarray) -> float:
    """1.4826 x the median absolute deviation of ``r``, at least :data:`_SCALE_FLOOR`."""
    return max(1.4826 * float(np.median(np.abs(r - np.median(r)))), _SCALE_FLOOR)


def _robust_fit(A: np.ndarray, y: np.ndarray, w: np.ndarray,
                reweight: bool = False) -> np.ndarray:
    """Relative NNLS with Huber re-weighting of the relative residuals.

    With ``reweight``, a final refit (weights ``w``, no Huber weights) on the rows whose
    relative residual is within :data:`_REJECT_SCALES` robust scales (Rousseeuw and Leroy's
    reweighted least squares): a law exact on most rows then keeps the coefficients that are
    exact for them, whatever a minority of rows with residuals would pull (with Huber weights
    alone every row keeps a little pull). Without enough rows left (half the rows, and the
    law's terms), the Huber fit is kept.
    """
    c = _nnls_relative(A, y, w)
    for _ in range(_HUBER_PASSES):
        r = (A @ c - y) / y
        delta = 1.345 * _robust_scale(r)
        hub = np.where(np.abs(r) <= delta, 1.0, delta / np.maximum(np.abs(r), 1e-300))
        c = _nnls_relative(A, y, w * hub)
    if reweight:
        r = (A @ c - y) / y
        keep = np.abs(r) <= _REJECT_SCALES * _robust_scale(r)
        if keep.sum() >= max(A.shape[1], 0.5 * len(y)) and not keep.all():
            c = _nnls_relative(A[keep], y[keep], w[keep])
    return c


@dataclass
class BaseLaw:
    """A fitted base law (see the module docstring).

    Attributes
    ----------
    target, kind : str
    precisions : list of str
        Precisions with their own block of constants (those seen in training).
    coef : dict
        Precision -> non-negative coefficients (one per :func:`law_columns` term).
    ci : dict
        Precision -> (lower, upper) arrays of bootstrap percentile CIs (empty without bootstrap).
    floor : float
        Smallest value the law returns (a small fraction of the smallest training target), so
        that ``log(base)`` is always finite.
    n : int
        Training rows.
    alloc_block : int or str
        Allocator variant of the allocator term (``memory`` laws; :data:`ALLOC_FEATURES`: a
        oneDNN channel block, or ``"16+fp16"``): the one whose fit had the smaller training
        error (8 for a law saved before it was learned).
    train_error : float
        Weighted mean relative error of the law on its training rows.
    """

    target: str
    kind: str
    precisions: list[str]
    coef: dict[str, np.ndarray]
    floor: float
    n: int
    ci: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    ci_level: float = 0.95
    alloc_block: int | str = DEFAULT_ALLOC_BLOCK
    train_error: float = float("nan")

    def _kind(self) -> str:
        """The law its coefficients belong to (a memory law saved before 2026-11-30, without the
        allocator term, is read as ``memory_bytes``)."""
        k = len(next(iter(self.coef.values())))
        if self.kind == "memory" and k == len(law_columns("memory_bytes")):
            return "memory_bytes"
        return self.kind

    def predict(self, df: pd.DataFrame) -> np.ndarray:
        """Base prediction on the original scale (always >= ``floor`` > 0).

        Rows of a precision never seen in training use the first trained precision's
        constants (flag them as extrapolated).
        """
        T = _terms(df, self._kind(), self.alloc_block)
        prec = _precision(df)
        out = T @ self.coef[self.precisions[0]]
        for p in self.precisions[1:]:
            rows = prec == p
            if rows.any():
                out[rows] = T[rows] @ self.coef[p]
        return np.maximum(out, self.floor)

    def constants(self) -> pd.DataFrame:
        """Interpretable constants with their CIs, one row per precision and term.

        ``roofline`` laws for latency (ms) give effective GFLOP/s, GB/s and µs per layer
        (inverses of the fitted coefficients; an infinite value means the term was not needed,
        coefficient 0); ``memory`` laws give MiB and the dimensionless multipliers of the byte
        terms (1.0: every byte counted once).
        """
        rows = []
        names = law_columns(self._kind())
        for p in self.precisions:
            c = self.coef[p]
            lo, hi = self.ci.get(p, (np.full(len(c), np.nan), np.full(len(c), np.nan)))
            for k, name in enumerate(names):
                rows.append(
                    {
                        "target": self.target,
                        "kind": self.kind,
                        "precision": p,
                        "term": name,
                        "coef": float(c[k]),
                        "coef_lo": float(lo[k]),
                        "coef_hi": float(hi[k]),
                        **_interpret(self.target, self.kind, name, c[k], lo[k], hi[k]),
                        "n": self.n,
                    }
                )
        return pd.DataFrame(rows)


def _interpret(target: str, kind: str, term: str, c: float, lo: float, hi: float) -> dict:
    """Readable constant (value, CI, unit) of one coefficient."""

    def inv(x: float, scale: float) -> float:
        return float(scale / x) if x > 0 else float("inf")

    unit_y = TARGET_UNITS.get(target, "unit")
    if kind in ("memory", "memory_bytes"):
        unit = "MiB" if term == "const_mib" else "MiB per MiB"
        return {"quantity": term, "value": c, "value_lo": lo, "value_hi": hi, "unit": unit}
    if target == "latency_ms":
        if term == "gflop":
            return {"quantity": "throughput", "value": inv(c, 1e3), "value_lo": inv(hi, 1e3),
                    "value_hi": inv(lo, 1e3), "unit": "GFLOP/s"}
        if term == "gbyte":
            return {"quantity": "bandwidth", "value": inv(c, 1e3), "value_lo": inv(hi, 1e3),
                    "value_hi": inv(lo, 1e3), "unit": "GB/s"}
        if term == "layers":
            return {"quantity": "per-layer overhead", "value": 1e3 * c, "value_lo": 1e3 * lo,
                    "value_hi": 1e3 * hi, "unit": "us/layer"}
        if term == "kernel_ms":
            return {"quantity": "network time per kernel time", "value": c, "value_lo": lo,
                    "value_hi": hi, "unit": "ms per ms"}
        if term == "batch":
            return {"quantity": "per-sample overhead", "value": 1e3 * c, "value_lo": 1e3 * lo,
                    "value_hi": 1e3 * hi, "unit": "us/sample"}
        return {"quantity": "fixed cost", "value": c, "value_lo": lo, "value_hi": hi,
                "unit": "ms"}
    if target == "energy_j":
        if term == "gflop":
            return {"quantity": "energy efficiency", "value": inv(c, 1.0), "value_lo": inv(hi, 1.0),
                    "value_hi": inv(lo, 1.0), "unit": "GFLOP/J"}
        if term == "gbyte":
            return {"quantity": "bytes per joule", "value": inv(c, 1.0), "value_lo": inv(hi, 1.0),
                    "value_hi": inv(lo, 1.0), "unit": "GB/J"}
        if term == "layers":
            return {"quantity": "per-layer energy", "value": 1e3 * c, "value_lo": 1e3 * lo,
                    "value_hi": 1e3 * hi, "unit": "mJ/layer"}
    return {"quantity": term, "value": c, "value_lo": lo, "value_hi": hi,
            "unit": f"{unit_y} per {term}"}


def fit_base_law(
    df: pd.DataFrame,
    target: str,
    y: np.ndarray | None = None,
    sample_weight: np.ndarray | None = None,
    n_boot: int = 0,
    ci_level: float = 0.95,
    random_state: int = 0,
    kind: str | None = None,
    reweight: bool = False,
) -> BaseLaw:
    """Fit the base law of ``target`` on the rows of ``df`` where the target is finite and > 0.

    Parameters
    ----------
    df : pandas.DataFrame
        Static features (``param_bytes``, ``activation_bytes``, ``peak_act_bytes``, ``flops``,
        layer counts), ``batch`` and ``precision``.
    target : str
        Target name (selects the law, :data:`BASE_KINDS`).
    y : array, optional
        Target values (default ``df[target]``).
    sample_weight : array, optional
        Row weights (e.g. inverse squared measured noise), multiplied into the relative fit.
    n_boot : int
        Bootstrap resamples for the CIs (0: no CIs).
    ci_level : float
    random_state : int
    kind : str, optional
        The law (default :func:`base_kind` of ``target``; ``"memory_bytes"``: the memory law
        without the allocator term).
    reweight : bool, default=False
        After the Huber passes, refit on the rows within 2.5 robust scales of the law only
        (reweighted least squares): a minority of rows with residuals then leaves a law that
        is exact on the rest unmoved. ``CARBRegressor(memory_exact=True)``, its default,
        fits the allocator memory law so; False is the Huber fit alone.

    Returns
    -------
    BaseLaw
        A ``memory`` law is fitted once per allocator channel block
        (:data:`~carb_lib.core.vocab.ALLOC_FEATURES`) and the one with the smaller training error is
        kept (``alloc_block``; the bootstrap, if any, runs for that block only).

    Raises
    ------
    ValueError
        With fewer usable rows than the law has constants.
    """
    kind = base_kind(target) if kind is None else kind
    law_columns(kind)  # validates
    if kind != "memory":
        return _fit_law(df, target, kind, y, sample_weight, n_boot, ci_level, random_state,
                        DEFAULT_ALLOC_BLOCK, reweight)
    df = with_alloc_column(df)
    laws = [_fit_law(df, target, kind, y, sample_weight, 0, ci_level, random_state, b, reweight)
            for b in ALLOC_FEATURES]
    best = min(laws, key=lambda law: law.train_error).alloc_block  # the first (8) on a tie
    if n_boot == 0:
        return next(law for law in laws if law.alloc_block == best)
    return _fit_law(df, target, kind, y, sample_weight, n_boot, ci_level, random_state, best,
                    reweight)


def _fit_law(df: pd.DataFrame, target: str, kind: str, y, sample_weight, n_boot: int,
             ci_level: float, random_state: int, block: int | str,
             reweight: bool = False) -> BaseLaw:
    """:func:`fit_base_law` with the allocator term's channel block given."""
    yv = _col(df, target) if y is None else np.asarray(y, dtype=float)
    w = np.ones(len(df)) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    T = _terms(df, kind, block)
    ok = np.isfinite(yv) & (yv > 0) & np.isfinite(T).all(axis=1) & np.isfinite(w) & (w > 0)
    prec = _precision(df)
    present = [p for p in PRECISIONS if (ok & (prec == p)).any()]
    present += sorted({str(p) for p in prec[ok]} - set(PRECISIONS))
    k = T.shape[1]
    if not present or ok.sum() < k * len(present):
        raise ValueError(
            f"the {kind} base law of {target!r} needs at least {k} rows per precision with a "
            f"positive, finite target; got {int(ok.sum())}"
        )
    coef: dict[str, np.ndarray] = {}
    ci: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    rng = np.random.default_rng(random_state)
    err = 0.0
    for p in present:
        rows = np.flatnonzero(ok & (prec == p))
        A, yy, ww = T[rows], yv[rows], w[rows]
        if len(rows) < k:
            raise ValueError(
                f"the {kind} base law of {target!r} needs at least {k} rows of precision {p!r}, "
                f"got {len(rows)}"
            )
        coef[p] = _robust_fit(A, yy, ww, reweight)
        err += float(np.sum(ww * np.abs(A @ coef[p] - yy) / yy))
        if n_boot > 0:
            boots = np.empty((n_boot, k))
            for b in range(n_boot):
                i = rng.integers(0, len(rows), len(rows))
                boots[b] = _robust_fit(A[i], yy[i], ww[i], reweight)
            a = (1.0 - ci_level) / 2.0
            ci[p] = (np.quantile(boots, a, axis=0), np.quantile(boots, 1.0 - a, axis=0))
    floor = 1e-3 * float(np.min(yv[ok]))
    return BaseLaw(target, kind, present, coef, floor, int(ok.sum()), ci, ci_level, block,
                   err / float(np.sum(w[ok])))
