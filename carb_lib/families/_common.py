"""Helpers shared by the family modules (private: import them from a family module's users).

Config checks, the content hash, the scaling of per-sample feature units to a batch and a
precision, the measurement of a model built on the ``meta`` device, and the per-distinct-value
column conversions of the learners' encoding.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.vocab import EXTRA_STATIC_FEATURES, PRECISIONS
from carb_lib.families._base import ConfigError

#: Bytes of one element at each precision.
BYTES_PER_ELEMENT: dict[str, int] = {"fp32": 4, "fp16": 2}
#: Batch sizes of the families' grids (the paper's).
BATCH_SIZES: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256)
#: Valid batch sizes of every family (configs off the grid included).
BATCH_RANGE: tuple[int, int] = (1, 4096)


# --------------------------------------------------------------------------- config checks
def fmt_float(x: float) -> str:
    """Canonical text of a float in a content hash."""
    return format(float(x), ".6g")


def content_hash(canonical: str) -> str:
    """16 hex digits of the sha1 of ``canonical``."""
    return hashlib.sha1(canonical.encode()).hexdigest()[:16]


def structure_hash(model: Any) -> str:
    """Content hash of a module's structure: its ``repr`` and its parameters' and buffers'
    names, shapes and dtypes."""
    lines = [repr(model)]
    for kind, items in (("p", model.named_parameters()), ("b", model.named_buffers())):
        lines += [f"{kind}|{n}|{tuple(t.shape)}|{t.dtype}" for n, t in items]
    return content_hash("\n".join(lines))


def is_missing(v: Any) -> bool:
    """``None`` or a float NaN."""
    return v is None or (isinstance(v, float) and math.isnan(v))


def check_int(name: str, value: Any) -> int:
    """``value`` as an int (integral floats accepted), else a :class:`ConfigError`."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            return int(value)
        raise ConfigError(f"{name} must be an integer, got {value!r}")
    return int(value)


def check_range(name: str, value: int, lo_hi: tuple[int, int], grid: Iterable[int]) -> None:
    """Raise a :class:`ConfigError` if ``value`` is outside ``lo_hi`` (the grid is listed)."""
    lo, hi = lo_hi
    if not lo <= value <= hi:
        raise ConfigError(
            f"{name}={value} is outside the valid range {lo}..{hi} (paper grid: {list(grid)})"
        )


def check_precision(value: Any) -> None:
    """Raise a :class:`ConfigError` unless ``value`` is one of :data:`PRECISIONS`."""
    if value not in PRECISIONS:
        raise ConfigError(f"precision={value!r} is unknown; valid values: {list(PRECISIONS)}")


def check_columns(df: pd.DataFrame, cols: Iterable[str], family: str) -> None:
    """Raise a :class:`ConfigError` naming the columns of ``cols`` absent from ``df``."""
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ConfigError(f"{family} configs are missing column(s) {missing}")


# --------------------------------------------------------------------------- feature units
#: Per-sample quantities of one architecture at one resolution, every family.
UNIT_COLUMNS: tuple[str, ...] = (
    "n_conv", "n_bn", "n_act", "n_fc", "max_channels", "macs", "params", "act_elems",
    "peak_elems",
)  # fmt: skip


#: Per-sample quantities behind :data:`carb_lib.core.vocab.EXTRA_STATIC_FEATURES`.
EXTRA_UNIT_COLUMNS: tuple[str, ...] = (
    "n_dwconv", "n_pool", "n_add", "n_se", "dw_macs", "se_macs", "mb_elems",
)  # fmt: skip


def bytes_per_element(precision: pd.Series) -> np.ndarray:
    """Bytes per element of every row's ``precision``.

    Raises
    ------
    ConfigError
        Naming the first row whose precision is unknown or missing.
    """
    codes, uniq = pd.factorize(precision)
    table = np.array([BYTES_PER_ELEMENT.get(u, np.nan) for u in uniq] + [np.nan], dtype=float)
    bpe = table[codes]  # code -1 (missing) -> the trailing NaN
    bad = np.isnan(bpe)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ConfigError(
            f"row {precision.index[i]!r}: precision={precision.iloc[i]!r} is unknown; "
            f"valid values: {list(BYTES_PER_ELEMENT)}"
        )
    return bpe


def scale_units(units: pd.DataFrame, batch: np.ndarray, bpe: np.ndarray) -> pd.DataFrame:
    """The static feature columns from per-sample ``units`` (:data:`UNIT_COLUMNS`), the batch
    size and the bytes per element of every row."""
    b = batch.astype(np.float64)
    out = pd.DataFrame(index=units.index)
    for c in ("n_conv", "n_bn", "n_act", "n_fc", "max_channels"):
        out[c] = units[c].to_numpy().astype(np.int64)
    out["flops"] = (2.0 * units["macs"].to_numpy() * b).astype(np.int64)
    out["params"] = units["params"].to_numpy().astype(np.int64)
    out["param_bytes"] = (units["params"].to_numpy() * bpe).astype(np.int64)
    out["activation_bytes"] = (units["act_elems"].to_numpy() * b * bpe).astype(np.int64)
    out["peak_act_bytes"] = (units["peak_elems"].to_numpy() * b * bpe).astype(np.int64)
    out["arith_intensity_flop_per_byte"] = out["flops"].to_numpy() / (
        out["param_bytes"].to_numpy() + out["activation_bytes"].to_numpy()
    )
    return out


def scale_extra_units(units: pd.DataFrame, batch: np.ndarray, bpe: np.ndarray,
                      flops: np.ndarray) -> pd.DataFrame:
    """The :data:`carb_lib.core.vocab.EXTRA_STATIC_FEATURES` from per-sample ``units``
    (:data:`EXTRA_UNIT_COLUMNS`), batch sizes, bytes per element and the rows' ``flops``."""
    u = {c: units[c].to_numpy() for c in EXTRA_UNIT_COLUMNS}
    out = pd.DataFrame(index=units.index)
    for c in ("n_dwconv", "n_pool", "n_add", "n_se"):
        out[c] = u[c].astype(np.int64)
    dw = (2.0 * u["dw_macs"] * batch).astype(np.int64)
    flops = np.asarray(flops)
    out["dw_flops_share"] = np.where(flops > 0, dw / np.maximum(flops, 1), 0.0)
    out["se_flops"] = (2.0 * u["se_macs"] * batch).astype(np.int64)
    out["memory_bound_bytes"] = (u["mb_elems"] * batch * bpe).astype(np.int64)
    return out[list(EXTRA_STATIC_FEATURES)]


def broadcast_rows(table: np.ndarray, codes: np.ndarray, columns: list[str],
                   index: pd.Index) -> pd.DataFrame:
    """``table[codes]`` as a frame of ``columns`` (one per column of ``table``), gathered
    column by column into the column-major layout that pandas keeps (no transposing copy of
    a frame of a million rows)."""
    gathered = np.ascontiguousarray(table.T)[:, codes]  # (columns, rows), C order
    return pd.DataFrame(gathered.T, columns=columns, index=index, copy=False)


def factorize_rows(df: pd.DataFrame, key_cols: list[str]) -> tuple[np.ndarray, pd.DataFrame]:
    """Codes of the unique rows of ``df[key_cols]`` and those unique rows (fast for 1M rows).

    Raises
    ------
    ConfigError
        Naming the first row where a key column is missing.
    """
    combined = np.zeros(len(df), dtype=np.int64)
    for c in key_cols:
        codes, uniq = pd.factorize(df[c], sort=False)
        if (codes < 0).any():
            i = int(np.flatnonzero(codes < 0)[0])
            raise ConfigError(f"row {df.index[i]!r}: column {c!r} is missing (NaN/None)")
        combined = combined * len(uniq) + codes
    codes, ucomb = pd.factorize(combined, sort=False)
    first = np.zeros(len(ucomb), dtype=np.int64)
    first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)  # first row of each unique key
    unique_rows = df[key_cols].iloc[first].reset_index(drop=True)
    unique_rows.index = df.index[first]
    return codes, unique_rows


# --------------------------------------------------------------------------- measured
def meta_model(config: Any) -> Any:
    """Build ``config``'s model on the ``meta`` device at its precision (allocates nothing)."""
    import torch

    dtype = torch.float16 if config.precision == "fp16" else torch.float32
    meta_build = getattr(config, "build_meta_model", None)  # a user module builds its own way
    if meta_build is not None:
        return meta_build().to(dtype=dtype)
    with torch.device("meta"):
        return config.build_model().to(dtype=dtype)


def measure_meta_model(model: Any, config: Any, hooked: Iterable[Any],
                       extras: Iterable[str] = ()) -> dict[str, int | float]:
    """Run ``model`` (on the ``meta`` device) once on ``config``'s input and count.

    FLOPs with ``FlopCounterMode``; parameters by counting; forward hooks on the ``hooked``
    modules count conv, BN, ReLU and linear calls, the widest conv output (``max_channels``)
    and the bytes of every hooked module's output (``activation_bytes``).

    Parameters
    ----------
    model : torch.nn.Module
        ``config``'s network on the ``meta`` device at the config's precision.
    config
        A config with ``batch``, ``resolution`` and ``precision``.
    hooked : iterable of torch.nn.Module
        The modules whose calls and outputs count (e.g. every leaf module).
    extras : iterable of str
        Which of :data:`carb_lib.core.vocab.EXTRA_STATIC_FEATURES` to measure too: ``n_dwconv``
        (hooked depthwise convs), ``n_pool`` (hooked pooling layers), ``dw_flops_share``
        (their FLOPs from ``FlopCounterMode``'s per-module counts), ``n_add`` and ``n_se``
        (residual additions and SE gating multiplies, seen by a dispatch mode:
        :func:`_residual_adds`), ``se_flops`` (0: not attributed here) and
        ``memory_bound_bytes`` (inputs + output bytes of hooked BN, ReLU and pooling calls and
        of those additions and multiplies).

    Returns
    -------
    dict
        ``n_conv``, ``n_bn``, ``n_act``, ``n_fc``, ``max_channels``, ``flops``, ``params``,
        ``param_bytes``, ``activation_bytes`` and the requested ``extras``.
    """
    import torch
    from torch import nn
    from torch.utils.flop_counter import FlopCounterMode

    dtype = torch.float16 if config.precision == "fp16" else torch.float32
    kinds = {nn.Conv2d: "conv", nn.BatchNorm2d: "bn", nn.ReLU: "act", nn.Linear: "fc"}
    pools = (nn.MaxPool2d, nn.AvgPool2d, nn.AdaptiveAvgPool2d)
    counts = {"conv": 0, "bn": 0, "act": 0, "fc": 0, "dwconv": 0, "pool": 0}
    totals = {"activation_bytes": 0, "max_channels": 0, "mb": 0}

    def nbytes(t: Any) -> int:
        return t.numel() * t.element_size() if isinstance(t, torch.Tensor) else 0

    def hook(module, inputs, output):
        kind = kinds.get(type(module))
        if kind is not None:
            counts[kind] += 1
        if kind == "conv":
            totals["max_channels"] = max(totals["max_channels"], int(output.shape[1]))
            counts["dwconv"] += _is_depthwise(module)
        if isinstance(module, pools):
            counts["pool"] += 1
        if kind in ("bn", "act") or isinstance(module, pools):
            totals["mb"] += nbytes(output) + sum(nbytes(i) for i in inputs)
        totals["activation_bytes"] += output.numel() * output.element_size()

    hooked = list(hooked)
    handles = [m.register_forward_hook(hook) for m in hooked]
    x = torch.empty(config.batch, 3, config.resolution, config.resolution, dtype=dtype,
                    device="meta")  # fmt: skip
    adds = _residual_adds()
    try:
        with torch.no_grad(), FlopCounterMode(display=False) as fc, adds:
            model(x)
    finally:
        for h in handles:
            h.remove()
    params = sum(p.numel() for p in model.parameters())
    flops = int(fc.get_total_flops())
    out: dict[str, int | float] = {
        "n_conv": counts["conv"], "n_bn": counts["bn"], "n_act": counts["act"],
        "n_fc": counts["fc"], "max_channels": totals["max_channels"],
        "flops": flops, "params": int(params),
        "param_bytes": int(params * BYTES_PER_ELEMENT[config.precision]),
        "activation_bytes": int(totals["activation_bytes"]),
    }  # fmt: skip
    per_module = fc.get_flop_counts()
    root = type(model).__name__
    dw_names = [n for n, m in model.named_modules()
                if isinstance(m, nn.Conv2d) and _is_depthwise(m)]
    dw = sum(sum(per_module.get(f"{root}.{n}", {}).values()) for n in dw_names)
    measured = {
        "n_dwconv": counts["dwconv"], "n_pool": counts["pool"], "n_add": adds.n,
        "n_se": adds.n_gate, "dw_flops_share": dw / flops if flops else 0.0, "se_flops": 0,
        "memory_bound_bytes": int(totals["mb"] + adds.nbytes + adds.gate_bytes),
    }  # fmt: skip
    for name in extras:
        out[name] = measured[name]
    return out


def _is_depthwise(conv: Any) -> bool:
    """A depthwise conv: ``groups == in_channels > 1``."""
    return conv.groups > 1 and conv.groups == conv.in_channels


def _residual_adds() -> Any:
    """A dispatch mode counting the memory-bound binary ops that are no module: residual
    additions (``aten.add``/``add_`` of two tensors of one shape; attributes ``n``, ``nbytes``)
    and squeeze-and-excitation gating multiplies (``aten.mul``/``mul_`` of an N x C x ... map by
    an N x C x 1 x ... gate; attributes ``n_gate``, ``gate_bytes``, and ``gates``, the gate
    tensors); bytes are those read and written (the inputs and the output). ``inputs_of`` maps
    the id of every op's output to its tensor inputs' ids (the first op that wrote it), and
    the tensors stay referenced (``held``), so that a gate can be traced back to its squeeze."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    aten = torch.ops.aten
    adds = {aten.add.Tensor, aten.add_.Tensor}
    muls = {aten.mul.Tensor, aten.mul_.Tensor}

    def nbytes(*tensors) -> int:
        return sum(t.numel() * t.element_size() for t in tensors)

    def is_gate(a, b) -> bool:
        """``b`` gates ``a`` per channel: same rank >= 3, same N and C, spatial dims 1."""
        return (a.dim() == b.dim() >= 3 and a.shape[:2] == b.shape[:2]
                and all(d == 1 for d in b.shape[2:]) and a.shape[2:].numel() > 1)

    class BinaryOps(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.n = self.nbytes = self.n_gate = self.gate_bytes = 0
            self.gates: list = []
            self.inputs_of: dict[int, list[int]] = {}
            self.held: list = []

        def observe(self, func, args, out) -> None:
            """Count ``func(*args) -> out`` if it is a residual add or a gating multiply."""
            if len(args) < 2 or not all(isinstance(a, torch.Tensor) for a in args[:2]):
                return
            a, b = args[:2]
            if func in adds and a.shape == b.shape:
                self.n += 1
                self.nbytes += nbytes(a, b, out)
            elif func in muls and (is_gate(a, b) or is_gate(b, a)):
                self.n_gate += 1
                self.gate_bytes += nbytes(a, b, out)
                self.gates.append(b if is_gate(a, b) else a)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            self.observe(func, args, out)
            if isinstance(out, torch.Tensor):
                ins = [a for a in args if isinstance(a, torch.Tensor)]
                self.inputs_of.setdefault(id(out), [id(a) for a in ins])
                self.held.append((out, ins))
            return out

    return BinaryOps()


# --------------------------------------------------------------------------- encoding
def per_unique(values: pd.Series, table_of: Callable[[Any], Any], na_value: Any) -> np.ndarray:
    """Map a column through a function of its *distinct* values (no Python loop over rows).

    ``table_of(uniques)`` returns a 1-D array with one entry per distinct non-missing value;
    missing values get ``na_value``.
    """
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    table = np.asarray(table_of(uniques))
    table = np.append(table, np.asarray([na_value], dtype=table.dtype))
    return table[codes]  # code -1 (missing) -> the appended na_value


def equals(values: pd.Series, value: str) -> np.ndarray:
    """Boolean array ``values == value`` (missing -> False)."""
    if isinstance(values.dtype, (pd.StringDtype, pd.ArrowDtype)):
        return (values == value).to_numpy(dtype=bool, na_value=False)  # vectorised already
    return per_unique(
        values, lambda u: np.array([v == value for v in u], dtype=bool), False
    ).astype(bool)


def number(df: pd.DataFrame, col: str) -> np.ndarray:
    """Column ``col`` as float64 (non-numbers and an absent column -> NaN)."""
    if col not in df.columns:
        return np.full(len(df), np.nan)
    return pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float, na_value=np.nan)


_FLAG_STRINGS = {"true": True, "false": False, "1": True, "0": False}


def flag(df: pd.DataFrame, col: str) -> np.ndarray:
    """0/1 of a boolean-like column, NaN where missing or absent.

    Strings ``"true"``/``"false"``/``"1"``/``"0"`` (any case) are accepted; the conversion is
    done once per distinct value.
    """
    if col not in df.columns:
        return np.full(len(df), np.nan)
    s = df[col]
    if s.dtype == object or str(s.dtype).startswith(("str", "string")):

        def table(uniques):
            vals = [
                _FLAG_STRINGS.get(v.lower(), v) if isinstance(v, str) else v for v in uniques
            ]
            return pd.array(vals, dtype="boolean").to_numpy(dtype=float, na_value=np.nan)

        return per_unique(s, table, np.nan).astype(float)
    return pd.array(s, dtype="boolean").to_numpy(dtype=float, na_value=np.nan)


def family_rows(df: pd.DataFrame, name: str, rows: np.ndarray | None) -> np.ndarray:
    """Boolean mask of the rows of family ``name`` (``rows`` if given, else from ``family``)."""
    if rows is not None:
        return np.asarray(rows, dtype=bool)
    if "family" not in df.columns:
        raise ConfigError("column 'family' is absent: cannot tell the rows of each family")
    return equals(df["family"], name)
