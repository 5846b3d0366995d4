"""A network from its own calls: each distinct aten call timed once on this host, cached, summed.

The kernel law (:mod:`carb_lib.kernels.law`) predicts an operator from a regressor trained on
sampled shapes, and sums twelve kinds. This module takes the other road, nn-Meter's "time what
you have not seen": :func:`network_calls` records every aten call of one forward pass on the
``meta`` device (nothing allocated; :func:`~carb_lib.kernels.inventory.inventory`'s recorder),
with its arguments as shapes, strides and dtypes; :class:`CallCache` times each *distinct* call
once on this CPU (random inputs of those shapes, the kernel benchmark's windows, one thread),
within a time budget, and keeps the times in the user's cache directory, outside ``data/``;
:func:`network_time` sums a network's calls, each as often as it runs. A screen of thousands
of networks (:func:`screen_times`) then times every distinct call once, and a network whose
calls are all cached costs only its recording, which remembers what it has seen in the process
(:mod:`carb_lib.kernels.calls`: calls and modules met before are not run again).

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
>>> with torch.device("meta"):
...     net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU())
>>> cache = CallCache(tmp_dir, budget_s=10)                       # doctest: +SKIP
>>> network_time(net, (1, 3, 16, 16), cache=cache).predicted_ms     # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import itertools
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from filelock import FileLock

from carb_lib.core.tables import atomic_write_parquet
from carb_lib.kernels.calls import _KNOWN, _block_signatures, _make, _record_keys, network_calls
from carb_lib.kernels.law import _time_call, timing_protocol
from carb_lib.measure import heap
from carb_lib.measure.devices import cpu_identity

__all__ = ["CACHE_COLUMNS", "SCREEN_COLUMNS", "CallCache", "NetworkTime", "network_calls",
           "network_time", "screen_calls", "screen_times", "zoo_times"]

#: Columns of a cache file.
CACHE_COLUMNS: tuple[str, ...] = (
    "key", "aten", "kind", "time_ms", "cv", "n_iter", "campaign", "cpu_id", "torch_version",
    "threads", "heap_kept", "window_s", "n_windows", "measured_at")
#: The parts of a cache file's key, in its rows.
_PROTOCOL = ("cpu_id", "torch_version", "threads", "heap_kept")


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
    #: What the calls read and write in one forward pass, MiB (each call times its count).
    call_mib: float = 0.0
    #: The network's weights at the recorded precision, MiB.
    weight_mib: float = 0.0

    def law_ms(self, law: Any) -> float:
        """The composition law (:class:`~carb_lib.kernels.composition.CompositionLaw`) on
        this network's sum, calls and traffic; NaN while a call is untimed."""
        if self.n_untimed:
            return float("nan")
        terms = pd.DataFrame({"sum_ms": [self.predicted_ms], "n_calls": [self.n_calls],
                              "weight_mib": [self.weight_mib], "call_mib": [self.call_mib]})
        return float(law.predict(terms)[0])

    def top_kinds(self, n: int = 3, digits: int = 2) -> str:
        """The ``n`` kinds of most time, ``"conv 1.23 ms; bn 0.40 ms; ..."``."""
        top = self.by_kind["total_ms"].dropna().head(n)
        return "; ".join(f"{k} {v:.{digits}f} ms" for k, v in top.items())


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
        with timing_protocol(self.threads):  # as bench_kernels: no denormal slow-down
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
        timing_s=spent, by_kind=_by_kind(real), call_mib=total_bytes / 2**20,
        weight_mib=_weight_mib(module, dtype))


def _weight_mib(module: Any, dtype: Any) -> float:
    """``module``'s weights in ``dtype`` (floating parameters; others as they are), MiB."""
    import torch

    from carb_lib.kernels.inventory import _torch_dtype

    size = _torch_dtype(dtype, torch).itemsize
    return sum(p.numel() * (size if p.is_floating_point() else p.element_size())
               for p in module.parameters()) / 2**20


def zoo_times(networks: list[str], *, batches: list[int], precisions: list[str],
              resolutions: list[int], cache: CallCache, law: Any = None,
              progress: bool = False) -> pd.DataFrame:
    """:func:`network_time` of zoo networks (``torchvision.models`` names) at every batch x
    precision x resolution, one row each.

    Returns
    -------
    pandas.DataFrame
        ``network``, ``batch``, ``precision``, ``resolution``, ``predicted_ms``, ``upper_ms``,
        ``untimed_share``, ``n_calls``, ``n_distinct``, ``n_timed_now``, ``n_untimed``,
        ``timing_s``, ``top_kinds`` (the three kinds of most time), the law's traffic terms
        ``weight_mib`` and ``call_mib``, with ``law`` (a
        :class:`~carb_lib.kernels.composition.CompositionLaw` fitted with the cache's
        protocol) ``law_ms``, and the cache's protocol (``cpu_id``, ``torch_version``,
        ``threads``, ``heap_kept``, ``window_s``, ``n_windows``, ``budget_s``).
    """
    from tqdm.auto import tqdm

    from carb_lib.families._torchvision import import_torchvision

    models = import_torchvision().models
    rows = []
    for name in tqdm(networks, desc="networks", disable=not progress):
        net = models.get_model(name).eval()  # built once, recorded on a meta copy per shape
        for b, p, r in itertools.product(batches, precisions, resolutions):
            t = network_time(net, (b, 3, r, r), p, cache=cache, progress=progress)
            rows.append({
                "network": name, "batch": b, "precision": p, "resolution": r,
                "predicted_ms": t.predicted_ms, "upper_ms": t.upper_ms,
                "untimed_share": t.untimed_share, "n_calls": t.n_calls,
                "n_distinct": t.n_distinct, "n_timed_now": t.n_timed_now,
                "n_untimed": t.n_untimed, "timing_s": t.timing_s, "top_kinds": t.top_kinds(),
                "weight_mib": t.weight_mib, "call_mib": t.call_mib,
                **({} if law is None else {"law_ms": t.law_ms(law)})})
    proto = {**cache.protocol, "window_s": cache.window_s, "n_windows": cache.n_windows,
             "budget_s": cache.budget_s}
    return pd.DataFrame(rows).assign(**proto)


# ------------------------------------------------------------------------------ screening
#: Columns of :func:`screen_times`' answer besides the candidates' own and the protocol's.
SCREEN_COLUMNS: tuple[str, ...] = (
    "predicted_ms", "upper_ms", "untimed_share", "n_calls", "n_distinct", "n_untimed",
    "weight_mib", "call_mib")


def _aten(name: str) -> Any:
    """The overload named ``name`` (``"aten.convolution.default"``)."""
    import torch

    op: Any = torch.ops
    for part in name.split("."):
        op = getattr(op, part)
    return op


def _screen_chunk(rows: list[dict[str, Any]]
                  ) -> tuple[list[dict[str, int]], list[float], dict[str, tuple]]:
    """In a worker: the call keys and counts of each row's network (each architecture built
    once on the ``meta`` device), its weights (MiB) and what each key stands for (aten name,
    kind, bytes, spec: picklable)."""
    import torch

    from carb_lib.families import get_family
    from carb_lib.families._common import meta_model
    from carb_lib.families.space import _row_family

    torch.set_num_threads(1)
    built: dict[tuple, tuple[Any, list[tuple[Any, str]], float]] = {}
    out: list[dict[str, int]] = []
    weights: list[float] = []
    for row in rows:
        family = get_family(_row_family(row))
        config = family.from_row(row)
        arch = (family.name, config.precision,
                *(str(row.get(c)) for c in family.arch_columns))
        if arch not in built:
            built.clear()  # rows come sorted by architecture: one model alive at a time
            model = meta_model(config).eval()
            mib = sum(p.numel() * p.element_size() for p in model.parameters()) / 2**20
            built[arch] = (model, _block_signatures(model, torch), mib)
        model, sigs, mib = built[arch]
        weights.append(mib)
        shape = tuple(getattr(config, "input_shape", None)
                      or (3, config.resolution, config.resolution))
        out.append(_record_keys(model, (int(config.batch), *shape), config.precision,
                                prepared=sigs))
    keys = {k for counts in out for k in counts}
    return out, weights, {k: (c.aten, c.kind, c.bytes, c.spec) for k in keys
                          for c in (_KNOWN[k],)}


class ScreenCalls(NamedTuple):
    """:func:`screen_calls`' answer."""

    #: Per candidate, in the rows' order: each distinct call key and how often it runs.
    counts: list[dict[str, int]]
    #: One row per distinct key of the screen (key, aten, kind, bytes, spec, count).
    calls: pd.DataFrame
    #: Per candidate: its weights, MiB (at its precision).
    weight_mib: np.ndarray


def screen_calls(candidates: pd.DataFrame, *, processes: int = 1, chunk: int = 200,
                 progress: bool = False) -> ScreenCalls:
    """The calls of every candidate's network, recorded on the ``meta`` device.

    Each architecture (family, precision and the family's architecture columns) is built once
    per task; a call seen before in the process is described from memory and, when pure, not
    run again (:data:`_KNOWN`).

    Parameters
    ----------
    candidates : pandas.DataFrame
        Config rows of any registered family (``family`` column; the ResNet family where
        absent), with ``batch``, ``resolution`` and ``precision``. Validated first
        (:func:`carb_lib.families.space.validate_config_frame`: ``ConfigError`` naming the row).
    processes : int, default=1
        Processes recording the candidates (``spawn``; each imports torch, about 2 s).
    chunk : int, default=200
        Candidates per task handed to a process.
    progress : bool, default=False
        A progress bar over the candidates.

    Returns
    -------
    ScreenCalls
        ``counts``: per candidate, in the rows' order, each distinct call key of its forward
        pass and how often it runs; ``calls``: one row per distinct key of the screen,
        ``key``, ``aten``, ``kind``, ``bytes`` (read and written per call), ``spec`` (to time
        it) and ``count`` (calls over the screen); ``weight_mib``: each candidate's weights.
    """
    import concurrent.futures as cf
    import multiprocessing as mp

    from tqdm.auto import tqdm

    from carb_lib.families import get_family
    from carb_lib.families.space import family_of, validate_config_frame

    if int(processes) < 1 or int(chunk) < 1:
        raise ValueError(f"processes >= 1 and chunk >= 1 are needed; got {processes}, {chunk}")
    validate_config_frame(candidates, "candidates")
    fam = family_of(candidates).to_numpy()
    arch = sorted({c for f in set(fam) for c in get_family(f).arch_columns} | {"precision"})
    arch_text = candidates[[c for c in arch if c in candidates.columns]].astype(str).agg(
        "|".join, axis=1).to_numpy()
    order = np.lexsort((arch_text, fam.astype(str)))  # one architecture's rows together
    rows = candidates.iloc[order].to_dict("records")
    parts = [rows[i:i + int(chunk)] for i in range(0, len(rows), int(chunk))]
    counts: list[dict[str, int]] = []
    weights: list[float] = []
    info: dict[str, tuple] = {}
    with tqdm(total=len(rows), desc="candidates", unit="net", disable=not progress) as bar:
        if int(processes) == 1:
            done = map(_screen_chunk, parts)
        else:
            pool = cf.ProcessPoolExecutor(int(processes), mp_context=mp.get_context("spawn"))
            done = pool.map(_screen_chunk, parts)
        try:
            for got, mib, known in done:
                counts += got
                weights += mib
                info.update(known)
                bar.update(len(got))
        finally:
            if int(processes) > 1:
                pool.shutdown(cancel_futures=True)
    back = np.argsort(order, kind="stable")
    in_rows = [counts[i] for i in back]
    total: dict[str, int] = {}
    for c in in_rows:
        for k, v in c.items():
            total[k] = total.get(k, 0) + v
    calls = pd.DataFrame([(k, *info[k], total[k]) for k in info],
                         columns=["key", "aten", "kind", "bytes", "spec", "count"])
    return ScreenCalls(in_rows, calls, np.asarray(weights, dtype=float)[back])


def screen_times(candidates: pd.DataFrame, *, cache: CallCache, budget_s: float = 0.0,
                 law: Any = None, processes: int = 1, chunk: int = 200,
                 progress: bool = False) -> pd.DataFrame:
    """Latency of every candidate of a design space as the sum of its calls' cached times.

    Each candidate's calls are recorded (:func:`screen_calls`) and looked up in ``cache``;
    every distinct call the cache lacks is timed once for the whole screen, most frequent
    first, within ``budget_s``. Nothing else is timed, so a screen whose calls are cached
    costs only the recording (``benchmarks/replay_screen.py`` measures it).

    Parameters
    ----------
    candidates : pandas.DataFrame
        As :func:`screen_calls` takes them.
    cache : CallCache
        The call times (its protocol: ``cpu_id``, torch version, threads, heap, windows).
    budget_s : float, default=0.0
        Seconds to spend timing the distinct calls the cache lacks; the calls left are
        untimed: flagged per candidate, never zero.
    law : CompositionLaw, optional
        A composition law fitted on this host with ``cache``'s protocol
        (:func:`carb_lib.kernels.composition.load_law`): ``law_ms`` applies it to each
        candidate whose calls are all timed (NaN elsewhere).
    processes, chunk, progress
        As :func:`screen_calls` takes them.

    Returns
    -------
    pandas.DataFrame
        The candidates (same index and order) with :data:`SCREEN_COLUMNS`: ``predicted_ms``
        (the timed calls' sum, each times its count; NaN when none is timed), ``upper_ms``
        (plus each untimed call's bytes at the slowest bytes-per-ms any timed call of the
        candidate ran), ``untimed_share`` (of the candidate's bytes), ``n_calls``,
        ``n_distinct`` (views excepted), ``n_untimed``, the law's traffic terms
        ``weight_mib`` and ``call_mib`` (what its calls read and write), with ``law``
        ``law_ms``, and the cache's protocol columns;
        ``attrs["calls"]``: the screen's distinct calls, how many the cache held, how many
        were timed now (in ``timing_s`` seconds) and how many are left untimed.

    Examples
    --------
    >>> from carb_lib.families.resnet import paper_grid
    >>> grid = paper_grid().query("batch == 1 and precision == 'fp32'").head(20)
    >>> out = screen_times(grid, cache=CallCache(tmp_dir), budget_s=60)  # doctest: +SKIP
    >>> out[["config_id", "predicted_ms", "n_untimed"]].head(3)          # doctest: +SKIP
    """
    if budget_s < 0:
        raise ValueError(f"budget_s >= 0 is needed; got {budget_s}")
    counts, calls, weight_mib = screen_calls(candidates, processes=processes, chunk=chunk,
                                             progress=progress)
    calls = calls[calls["kind"] != "view"].reset_index(drop=True)
    keys = calls["key"].tolist()
    timed = cache.times_ms(keys)
    cached = len(timed)
    todo = calls[~calls["key"].isin(timed.keys())].sort_values("count", ascending=False)
    n_new, spent = 0, 0.0
    if len(todo) and budget_s > 0:
        n_new, _left, spent = cache.time_calls(todo.assign(func=todo["aten"].map(_aten)),
                                               budget_s=budget_s, progress=progress)
        timed = cache.times_ms(keys)

    index = {k: i for i, k in enumerate(keys)}
    size = len(counts)
    t_key = np.array([timed.get(k, np.nan) for k in keys], dtype=float)
    b_key = calls["bytes"].to_numpy(dtype=float)
    real = [[(index[k], v) for k, v in c.items() if k in index] for c in counts]
    cand = np.repeat(np.arange(size), [len(r) for r in real])
    key_i = np.fromiter((i for r in real for i, _ in r), dtype=np.int64, count=len(cand))
    n = np.fromiter((v for r in real for _, v in r), dtype=float, count=len(cand))
    tk, bk = t_key[key_i], b_key[key_i]
    done = ~np.isnan(tk)
    predicted = np.bincount(cand, weights=np.where(done, tk * n, 0.0), minlength=size)
    predicted[np.bincount(cand, weights=done.astype(float), minlength=size) == 0] = np.nan
    total_b = np.bincount(cand, weights=bk * n, minlength=size)
    untimed_b = np.bincount(cand, weights=np.where(done, 0.0, bk * n), minlength=size)
    rate = np.full(size, -np.inf)
    ok = done & (bk > 0)
    np.maximum.at(rate, cand[ok], tk[ok] / bk[ok])
    rate[np.isinf(rate)] = np.nan
    out = {
        "predicted_ms": predicted,
        "upper_ms": predicted + np.where(untimed_b > 0, untimed_b * rate, 0.0),
        "untimed_share": np.divide(untimed_b, total_b, out=np.zeros(size), where=total_b > 0),
        "n_calls": np.array([sum(c.values()) for c in counts], dtype=int),
        "n_distinct": np.bincount(cand, minlength=size).astype(int),
        "n_untimed": np.bincount(cand, weights=(~done).astype(float),
                                 minlength=size).astype(int),
        "weight_mib": weight_mib, "call_mib": total_b / 2**20}
    if law is not None:
        terms = pd.DataFrame({"sum_ms": predicted, "n_calls": out["n_calls"],
                              "weight_mib": weight_mib, "call_mib": out["call_mib"]})
        out["law_ms"] = np.where(out["n_untimed"] == 0, law.predict(terms), np.nan)
    proto = {**cache.protocol, "window_s": cache.window_s, "n_windows": cache.n_windows}
    result = candidates.assign(**out, **proto)
    result.attrs["calls"] = {"distinct": len(keys), "cached": cached, "timed_now": n_new,
                             "untimed": len(keys) - len(timed), "timing_s": spent}
    return result
