"""A network from its own calls: each distinct aten call timed once on this host, cached, summed.

The kernel law (:mod:`carb_lib.kernels.law`) predicts an operator from a regressor trained on
sampled shapes, and sums twelve kinds. This module takes the other road, nn-Meter's "time what
you have not seen": :func:`network_calls` records every aten call of one forward pass on the
``meta`` device (nothing allocated; :func:`~carb_lib.kernels.inventory.inventory`'s recorder),
with its arguments as shapes, strides and dtypes; :class:`CallCache` times each *distinct* call
once on this CPU (random inputs of those shapes, the kernel benchmark's windows, one thread),
within a time budget, and keeps the times in the user's cache directory, outside ``data/``;
:func:`network_time` sums a network's calls, each as often as it runs. A screen of thousands
of networks then times every distinct call once, and a network whose calls are all cached
costs only the look-up.

The cache file is keyed by what a time depends on besides the call: the CPU model
(``cpu_id``), the torch version, the thread count and whether the heap is kept
(:func:`carb_lib.measure.heap.keep_heap`); a file of another key is another file, and a file
given by path whose rows name another key is refused with both named. Times of an earlier
campaign are scaled to this one by the anchor set (:mod:`carb_lib.kernels.anchors`) timed in
both: once per :class:`CallCache`, a few seconds.

What the sum leaves out: views and allocations (:data:`~carb_lib.kernels.inventory.VIEW_OPS`:
no data moved, a microsecond or two of dispatch each, counted in ``n_view_calls``), the Python
work of the modules between calls, and what running calls in sequence changes (cache reuse;
``benchmarks/chain_overhead.py`` measures it). A call left untimed (over the budget, or one
that cannot run on random inputs) is never counted as zero: its share of the network's FLOPs
and bytes is returned (``untimed_share``) and the prediction's upper bound widened by the time
its bytes and FLOPs would take at the slowest rate any timed call of the network ran.

Examples
--------
>>> import torch
>>> from carb_lib.kernels.replay import network_calls
>>> with torch.device("meta"):
...     net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(),
...                               torch.nn.Conv2d(8, 8, 3), torch.nn.ReLU())
>>> calls = network_calls(net, (1, 3, 16, 16))
>>> calls[["kind", "count"]].values.tolist()
[['conv', 1], ['relu', 1], ['conv', 1], ['relu', 1]]
>>> cache = CallCache(tmp_dir, budget_s=10)                       # doctest: +SKIP
>>> network_time(net, (1, 3, 16, 16), cache=cache).predicted_ms     # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from filelock import FileLock

from carb_lib.core.tables import atomic_write_parquet
from carb_lib.kernels.inventory import _kind, _nbytes, _tensors, record_on_meta
from carb_lib.kernels.law import _time_call
from carb_lib.measure import heap
from carb_lib.measure.devices import cpu_identity

__all__ = ["CACHE_COLUMNS", "CallCache", "NetworkTime", "network_calls", "network_time",
           "zoo_times"]

#: Version of the call key (:func:`_spec`): a change re-times every call.
KEY_VERSION = 1
#: Columns of a cache file.
CACHE_COLUMNS: tuple[str, ...] = (
    "key", "aten", "kind", "time_ms", "cv", "n_iter", "campaign", "cpu_id", "torch_version",
    "threads", "heap_kept", "window_s", "n_windows", "measured_at")
#: The parts of a cache file's key, in its rows.
_PROTOCOL = ("cpu_id", "torch_version", "threads", "heap_kept")


@dataclass(frozen=True)
class _TensorSpec:
    """A tensor argument of a recorded call: what it takes to make one like it."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: Any

    def key(self) -> str:
        dt = str(self.dtype).removeprefix("torch.")
        return f"T({','.join(map(str, self.shape))};{','.join(map(str, self.stride))};{dt})"

    def make(self, torch: Any) -> Any:
        t = torch.empty_strided(self.shape, self.stride, dtype=self.dtype)
        if t.is_floating_point():  # positive values: no square root of a negative variance
            t.uniform_(0.1, 1.0)
        else:
            t.zero_()
        return t


def _spec(obj: Any, torch: Any) -> Any:
    """An argument with each tensor replaced by its :class:`_TensorSpec` and the ``meta``
    device by the CPU."""
    if isinstance(obj, torch.Tensor):
        return _TensorSpec(tuple(obj.shape), tuple(obj.stride()), obj.dtype)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_spec(o, torch) for o in obj)
    if isinstance(obj, torch.device):
        return torch.device("cpu")
    return obj


def _key_text(obj: Any) -> str:
    """The canonical text of a spec'd argument (a call's key is built from it)."""
    if isinstance(obj, _TensorSpec):
        return obj.key()
    if isinstance(obj, (list, tuple)):
        inner = ",".join(_key_text(o) for o in obj)
        return f"[{inner}]" if isinstance(obj, list) else f"({inner})"
    if isinstance(obj, dict):
        return "{" + ",".join(f"{k}={_key_text(v)}" for k, v in sorted(obj.items())) + "}"
    return repr(obj)


def _make(obj: Any, torch: Any) -> Any:
    """A spec'd argument with random tensors in place of the specs."""
    if isinstance(obj, _TensorSpec):
        return obj.make(torch)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_make(o, torch) for o in obj)
    if isinstance(obj, dict):
        return {k: _make(v, torch) for k, v in obj.items()}
    return obj


def _call_row(func: Any, args: tuple, kwargs: dict, out: Any, torch: Any) -> dict[str, Any]:
    """One recorded call: its kind, its arguments as specs, its key and the bytes it moves."""
    kind = _kind(func.overloadpacket.__name__, args, torch)
    ins = [t for a in (*args, *kwargs.values()) for t in _tensors(a, torch)]
    spec_args = _spec(args, torch)
    spec_kwargs = {k: _spec(v, torch) for k, v in kwargs.items()}
    moved = 0 if kind == "view" else _nbytes(ins) + _nbytes(list(_tensors(out, torch)))
    return {"aten": str(func), "kind": kind, "func": func, "spec": (spec_args, spec_kwargs),
            "key": f"v{KEY_VERSION}|{func}|{_key_text(spec_args)}|{_key_text(spec_kwargs)}",
            "bytes": moved}


def network_calls(module: Any, input_shape: tuple[int, ...] = (1, 3, 224, 224),
                  dtype: Any = "fp32") -> pd.DataFrame:
    """The distinct aten calls of one forward pass of ``module``, in order of first call.

    Parameters
    ----------
    module : torch.nn.Module
        The network, in eval mode. It runs on a copy moved to the ``meta`` device and
        ``dtype``; ``module`` is left as it is.
    input_shape : tuple of int, default=(1, 3, 224, 224)
        The input batch's shape (batch first).
    dtype : str or torch.dtype, default="fp32"

    Returns
    -------
    pandas.DataFrame
        One row per distinct call: ``key`` (the overload and every argument's shape, stride,
        dtype and value: equal keys run the same kernel on the same sizes), ``aten``, ``kind``
        (:func:`~carb_lib.kernels.inventory.inventory`'s; ``"view"`` for views and
        allocations), ``count`` (calls per forward pass), ``bytes`` (read and written per call)
        and, for replay, ``func`` and ``spec`` (Python objects, not stored).
    """
    rows = record_on_meta(module, input_shape, dtype, _call_row)
    calls = pd.DataFrame(rows, columns=["key", "aten", "kind", "bytes", "func", "spec"])
    count = calls.groupby("key", sort=False).size()
    out = calls.drop_duplicates("key").reset_index(drop=True)
    out.insert(3, "count", out["key"].map(count).astype(int))
    return out


def _protocol_key(protocol: dict[str, Any]) -> str:
    text = "|".join(f"{k}={protocol[k]}" for k in _PROTOCOL)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def default_cache_dir() -> Path:
    """``$CARB_CACHE_DIR`` or ``$XDG_CACHE_HOME/carb`` (``~/.cache/carb``), as the zoo's
    feature cache: the folder a :class:`CallCache` keeps its ``operator_calls/`` in."""
    from carb_lib.families.zoo import cache_path

    return cache_path().parent


@dataclass
class NetworkTime:
    """:func:`network_time`'s answer for one network at one batch and precision."""

    predicted_ms: float
    upper_ms: float
    n_calls: int
    n_distinct: int
    n_view_calls: int
    n_timed_now: int
    n_untimed: int
    untimed_share: float
    timing_s: float
    by_kind: pd.DataFrame = field(repr=False)


class CallCache:
    """Times of aten calls on this host and protocol, read from and written to one file.

    Parameters
    ----------
    cache_dir : path, optional
        Folder of the cache (default :func:`default_cache_dir`); the file is
        ``operator_calls/<protocol hash>.parquet`` in it, the anchors beside it.
    path : path, optional
        One cache file instead (its rows must name this host's protocol: else ``ValueError``
        naming both).
    threads : int, default=1
        Intra-op threads of every timing (the stored rows' protocol).
    keep_heap : bool, default=True
        Keep this process's heap first (:func:`carb_lib.measure.heap.keep_heap`), as the zoo
        rows were timed.
    window_s, n_windows : float, int
        Each call's timing: the median of ``n_windows`` windows of at least ``window_s``
        seconds (:func:`carb_lib.kernels.law.bench_kernels`' defaults).
    budget_s : float, default=30.0
        Seconds a :func:`network_time` may spend timing calls the cache lacks; the calls left
        are untimed (flagged, never zero).
    scale_by_anchors : bool, default=True
        Time the anchor set once, on first use, and scale the times of earlier campaigns by it.
    """

    def __init__(self, cache_dir: str | Path | None = None, *, path: str | Path | None = None,
                 threads: int = 1, keep_heap: bool = True, window_s: float = 0.02,
                 n_windows: int = 5, budget_s: float = 30.0, scale_by_anchors: bool = True):
        import torch

        if int(threads) < 1:
            raise ValueError(f"threads={threads}: at least 1")
        if budget_s < 0 or window_s <= 0 or int(n_windows) < 1:
            raise ValueError("budget_s >= 0, window_s > 0 and n_windows >= 1 are needed; got "
                             f"{budget_s}, {window_s}, {n_windows}")
        self.threads, self.keep_heap = int(threads), bool(keep_heap)
        self.window_s, self.n_windows, self.budget_s = float(window_s), int(n_windows), budget_s
        self.scale_by_anchors = bool(scale_by_anchors)
        if self.keep_heap:
            heap.keep_heap()
        self.protocol = {"cpu_id": cpu_identity(), "torch_version": torch.__version__,
                         "threads": self.threads, "heap_kept": heap.heap_kept()}
        if path is None:
            folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
            path = folder / "operator_calls" / f"{_protocol_key(self.protocol)}.parquet"
        self.path = Path(path)
        self.anchors_path = self.path.with_name(f"{self.path.stem}.anchors.parquet")
        self.campaign = pd.Timestamp.now(tz="UTC")
        self._rows = self._read(self.path)
        self._scale: dict[Any, float] | None = None

    # -- the file ------------------------------------------------------------------------------
    def _read(self, path: Path) -> pd.DataFrame:
        if not path.is_file():
            return pd.DataFrame(columns=list(CACHE_COLUMNS))
        try:
            rows = pd.read_parquet(path)
        except Exception as exc:  # noqa: BLE001 - one line naming the file
            raise ValueError(f"{path}: not a readable cache of call times ({exc})") from None
        missing = [c for c in CACHE_COLUMNS if c not in rows.columns]
        if missing:
            raise ValueError(f"{path}: not a cache of call times (no column {missing[0]!r})")
        for k in _PROTOCOL:
            theirs = sorted({str(v) for v in rows[k]})
            if theirs and theirs != [str(self.protocol[k])]:
                raise ValueError(f"{path} holds call times of {k} {' / '.join(theirs)}, this "
                                 f"host times with {k} {self.protocol[k]}: give another cache")
        return rows

    def __len__(self) -> int:
        return len(self._rows)

    def _append(self, new: pd.DataFrame) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.path) + ".lock"):
            have = self._read(self.path)  # another process may have written meanwhile
            both = pd.concat([d for d in (have, new) if len(d)], ignore_index=True)
            self._rows = both.drop_duplicates("key", keep="first").reset_index(drop=True)
            atomic_write_parquet(self._rows, self.path)

    # -- anchors -------------------------------------------------------------------------------
    def anchor_scale(self) -> dict[Any, float]:
        """The factor taking each campaign's times to this one's speed (1 for this one), from
        the anchor set timed now (once per cache object, on first need) and in each campaign
        (campaigns without anchors: 1)."""
        if self._scale is not None:
            return self._scale
        self._scale = {}
        if not self.scale_by_anchors:
            return self._scale
        from carb_lib.kernels.anchors import anchor_speeds, time_anchors

        now = time_anchors(phase="check", threads=self.threads, n_windows=3).assign(
            campaign=self.campaign)
        with FileLock(str(self.path) + ".lock"):
            before = (pd.read_parquet(self.anchors_path) if self.anchors_path.is_file()
                      else pd.DataFrame())
            both = pd.concat([d for d in (before, now) if len(d)], ignore_index=True)
            self.anchors_path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_parquet(both, self.anchors_path)
        speeds = anchor_speeds(both, reference=self.campaign)
        self._scale = {c: 1.0 / float(r) for c, r in
                       zip(speeds["campaign"], speeds["relative_time"], strict=True)}
        return self._scale

    def times_ms(self, keys: list[str]) -> dict[str, float]:
        """Cached times of ``keys`` (those the cache holds), in this campaign's speed."""
        rows = self._rows[self._rows["key"].isin(keys)]
        if rows.empty:
            return {}
        scale = self.anchor_scale() if (rows["campaign"] != self.campaign).any() else {}
        factor = rows["campaign"].map(lambda c: scale.get(c, 1.0)).to_numpy(dtype=float)
        return dict(zip(rows["key"], rows["time_ms"].to_numpy(dtype=float) * factor,
                        strict=True))

    # -- timing --------------------------------------------------------------------------------
    def time_calls(self, calls: pd.DataFrame, *, budget_s: float | None = None,
                   progress: bool = False) -> tuple[int, list[str], float]:
        """Time the calls of ``calls`` (:func:`network_calls` rows, views excepted) the cache
        lacks, within ``budget_s`` (default the cache's), and store them; how many were timed,
        the keys left untimed (over the budget, or failing on random inputs) and the seconds
        spent."""
        import torch
        from tqdm.auto import tqdm

        budget = self.budget_s if budget_s is None else float(budget_s)
        todo = calls[(calls["kind"] != "view") & ~calls["key"].isin(set(self._rows["key"]))]
        if len(todo):  # a campaign that stores times stores its anchors (the scale's base)
            self.anchor_scale()
        start, rows, left = time.perf_counter(), [], []
        before = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        flushed = torch.set_flush_denormal(True)  # as bench_kernels: no denormal slow-down
        try:
            for _, c in tqdm(todo.iterrows(), total=len(todo), desc="calls", disable=not progress,
                             leave=False):
                if time.perf_counter() - start > budget:
                    left.append(c["key"])
                    continue
                args, kwargs = c["spec"]
                try:
                    a, kw = _make(args, torch), _make(kwargs, torch)
                    c["func"](*a, **kw)
                except Exception:  # noqa: BLE001 - a call that cannot run on random inputs
                    left.append(c["key"])
                    continue
                t, cv, n = _time_call(lambda f=c["func"], a=a, kw=kw: f(*a, **kw),
                                      self.window_s, self.n_windows)
                rows.append({"key": c["key"], "aten": c["aten"], "kind": c["kind"],
                             "time_ms": 1e3 * t, "cv": cv, "n_iter": n,
                             "campaign": self.campaign, **self.protocol,
                             "window_s": self.window_s, "n_windows": self.n_windows,
                             "measured_at": pd.Timestamp.now(tz="UTC")})
        finally:
            torch.set_num_threads(before)
            if flushed:
                torch.set_flush_denormal(False)
        if rows:
            self._append(pd.DataFrame(rows, columns=list(CACHE_COLUMNS)))
        return len(rows), left, time.perf_counter() - start


def _by_kind(calls: pd.DataFrame) -> pd.DataFrame:
    g = calls.assign(total_ms=calls["time_ms"] * calls["count"]).groupby("kind")
    return pd.DataFrame({"calls": g["count"].sum(), "total_ms": g["total_ms"].sum(min_count=1)}
                        ).sort_values("total_ms", ascending=False)


def network_time(module: Any, input_shape: tuple[int, ...] = (1, 3, 224, 224),
                 dtype: Any = "fp32", *, cache: CallCache, budget_s: float | None = None,
                 progress: bool = False) -> NetworkTime:
    """A network's latency as the sum of its calls' times, timing those the cache lacks.

    Parameters
    ----------
    module : torch.nn.Module
    input_shape : tuple of int
    dtype : str or torch.dtype
    cache : CallCache
        Where times are read and new ones written (its protocol: threads, heap, windows).
    budget_s : float, optional
        Seconds to spend timing unseen calls (default the cache's ``budget_s``).
    progress : bool, default=False

    Returns
    -------
    NetworkTime
        ``predicted_ms`` (the sum of the timed calls, each times its count; NaN when none is
        timed), ``upper_ms``
        (plus, for each untimed call, its bytes at the slowest bytes-per-ms any timed call of
        the network moved), counts of calls, distinct calls, view calls, calls timed now and
        left untimed, ``untimed_share`` (of the network's bytes), the seconds spent timing,
        and the time per kind (``by_kind``).
    """
    calls = network_calls(module, input_shape, dtype)
    n_new, _left, spent = cache.time_calls(calls, budget_s=budget_s, progress=progress)
    timed = cache.times_ms(list(calls["key"]))
    calls = calls.assign(time_ms=calls["key"].map(timed))
    real = calls[calls["kind"] != "view"]
    untimed = real[real["time_ms"].isna()]
    total_bytes = float((real["bytes"] * real["count"]).sum())
    done = real[real["time_ms"].notna() & (real["bytes"] > 0)]
    slowest = float((done["time_ms"] / done["bytes"]).max()) if len(done) else np.nan
    extra = float((untimed["bytes"] * untimed["count"]).sum())
    predicted = float((real["time_ms"] * real["count"]).sum()) if timed else np.nan
    return NetworkTime(
        predicted_ms=predicted,
        upper_ms=predicted + (extra * slowest if extra else 0.0),
        n_calls=int(calls["count"].sum()), n_distinct=len(real),
        n_view_calls=int(calls.loc[calls["kind"] == "view", "count"].sum()),
        n_timed_now=n_new,
        n_untimed=len(untimed),
        untimed_share=extra / total_bytes if total_bytes else 0.0,
        timing_s=spent, by_kind=_by_kind(real))


def zoo_times(networks: list[str], *, batches: list[int], precisions: list[str],
              resolutions: list[int], cache: CallCache, progress: bool = False) -> pd.DataFrame:
    """:func:`network_time` of zoo networks (``torchvision.models`` names) at every batch x
    precision x resolution, one row each.

    Returns
    -------
    pandas.DataFrame
        ``network``, ``batch``, ``precision``, ``resolution``, ``predicted_ms``, ``upper_ms``,
        ``untimed_share``, ``n_calls``, ``n_distinct``, ``n_timed_now``, ``n_untimed``,
        ``timing_s``, ``top_kinds`` (the three kinds of most time) and the cache's protocol
        (``cpu_id``, ``torch_version``, ``threads``, ``heap_kept``, ``window_s``,
        ``n_windows``, ``budget_s``).
    """
    from tqdm.auto import tqdm

    from carb_lib.families._torchvision import import_torchvision

    models = import_torchvision().models
    rows = []
    for name in tqdm(networks, desc="networks", disable=not progress):
        net = models.get_model(name).eval()  # built once, recorded on a meta copy per shape
        for b in batches:
            for p in precisions:
                for r in resolutions:
                    t = network_time(net, (b, 3, r, r), p, cache=cache, progress=progress)
                    top = t.by_kind["total_ms"].dropna().head(3)
                    rows.append({
                        "network": name, "batch": b, "precision": p, "resolution": r,
                        "predicted_ms": t.predicted_ms, "upper_ms": t.upper_ms,
                        "untimed_share": t.untimed_share, "n_calls": t.n_calls,
                        "n_distinct": t.n_distinct, "n_timed_now": t.n_timed_now,
                        "n_untimed": t.n_untimed, "timing_s": t.timing_s,
                        "top_kinds": "; ".join(f"{k} {v:.2f} ms" for k, v in top.items())})
    proto = {**cache.protocol, "window_s": cache.window_s, "n_windows": cache.n_windows,
             "budget_s": cache.budget_s}
    return pd.DataFrame(rows).assign(**proto)
