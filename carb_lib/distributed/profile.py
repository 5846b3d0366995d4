"""A measurement campaign on a Dask cluster: the workers measure, the client writes.

:func:`run_cluster_campaign` plans exactly as :func:`carb_lib.measure.campaign.run_campaign` does
(config ids, de-duplication, shard, seeded order, configs already in the folder's parts
skipped, compute cap) and then dispatches the configs as tasks, ``chunk_size`` configs each,
asking for one unit of the workers' ``measure`` resource (one measurement per GPU, or per
pinned CPU core, at a time). Each worker measures with the unchanged protocol,
:func:`carb_lib.measure.profiling.profile_config` (the function the local campaign calls), keeping
its own drift control (reference config at its first task and every ``ref_every`` configs,
GPU idle power) and returns rows. The **client** writes every task's rows as one atomic
Parquet part (:class:`carb_lib.measure.campaign_parts.PartWriter`) in the local campaign's folder
layout, under the folder's lock, so resume, ``carb merge`` and de-duplication by
``(platform, config_id)`` work unchanged; a restarted client with the same command
dispatches only the configs not in the parts yet.

Exactly once
    At most one task per worker is in flight (the scheduler counts a worker's death against
    every task assigned to it, not only the running one). A worker that dies mid-task
    (SIGKILL, out of host memory, a native crash) has its task retried on a worker by Dask;
    the scheduler's ``allowed-failures`` is set to ``max_tries - 1``, so after ``max_tries``
    deaths the task fails with ``KilledWorker``. A chunk of several configs is then split
    into one task per config; a single config gets a ``status="error"`` row carrying the
    ``KilledWorker`` message instead of looping. The client writes each config's row once.

Platforms
    Rows carry the platform of the worker's device. Each config is measured once, by the
    worker that takes it; in a cluster of different devices :func:`carb_lib.measure.campaign.merge_parts`
    then yields one dataset per platform (merge each into its own file). Configs already
    recorded for any platform of the cluster are not measured again.

Interference (CPU workers)
    The CPU protocol rejects a window when other processes kept more than
    ``max_other_busy`` (0.3) of the *other* cores busy. In a cluster the other cores run the
    sibling workers on purpose: on ``local:2`` of a 2-core machine each worker would see the
    other as load 1.0 and reject every window. The client therefore tells each worker how
    many sibling workers share its host (``siblings``), and the worker raises the threshold
    by the share of the other cores they are expected to keep busy,
    ``min(siblings, cores - 1) / (cores - 1)`` (:func:`cluster_protocol`): only load beyond
    the siblings' counts as interference. Equivalently, the other-load check subtracts the
    expected sibling load. The per-thread CPU-share check (each worker is pinned to its own
    core) and the agreement of the windows are unchanged. With as many workers as cores the
    other-load check can no longer fire, and quality rests on the CPU-share check and window
    agreement; every row of a cluster campaign carries the dataset column ``siblings`` (the
    number K of other measuring workers on its host; 0 when it measured alone) so such rows
    can be told apart from rows of a local campaign (no ``siblings`` value).
"""

from __future__ import annotations

import logging
import os
import signal
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.dataset.schema import clean_temporary_files, empty_row
from carb_lib.distributed.cluster import MEASURE_RESOURCE
from carb_lib.families.space import add_config_ids, config_from_row
from carb_lib.measure.campaign import (
    DEFAULT_REFERENCE,
    REFERENCE_TRIES,
    CampaignResult,
    _flops,
    sigint_ignored_note,
    skipped_row,
)
from carb_lib.measure.campaign_parts import (
    REFERENCE_PREFIX,
    RESULTS_PREFIX,
    PartWriter,
    done_ids,
    drift_summary,
    parse_shard,
    reference_rows,
    shard_mask,
)
from carb_lib.measure.lock import FolderLock
from carb_lib.measure.profiling import NAN, Protocol, get_device, profile_config, utc_now

logger = logging.getLogger("carb.cluster")

__all__ = ["ClusterCampaignResult", "cluster_protocol", "run_cluster_campaign"]


def cluster_protocol(protocol: Protocol, siblings: int, cores: int) -> Protocol:
    """``protocol`` with ``max_other_busy`` raised by the expected load of ``siblings``
    workers on the other ``cores - 1`` cores (see the module docstring).

    Examples
    --------
    >>> cluster_protocol(Protocol(), siblings=1, cores=2).max_other_busy
    1.3
    >>> round(cluster_protocol(Protocol(), siblings=3, cores=16).max_other_busy, 3)
    0.5
    """
    if siblings <= 0:
        return protocol
    others = max(cores - 1, 1)
    share = min(siblings, others) / others
    return Protocol(**{**protocol.to_dict(),
                       "max_other_busy": round(protocol.max_other_busy + share, 12)})


# ----------------------------------------------------------------------------------------
# worker side


@dataclass(frozen=True)
class _Settings:
    """What every task of one campaign needs (sent with each task; small)."""

    campaign: str
    device: str
    platform: str | None
    protocol: dict[str, Any]
    ref_every: int
    reference: dict[str, Any]
    idle_seconds: float
    siblings: dict[str, int]
    kill: tuple[tuple[str, str | None], ...] = ()  # test hook: (config_id, flag file or None)


class _Measurer:
    """Per worker process and campaign: the device, the protocol with the sibling load of
    this host, the reference schedule and the GPU idle power."""

    def __init__(self, s: _Settings):
        import socket

        self.s = s
        self.siblings = int(s.siblings.get(socket.gethostname(), 0))
        base = Protocol(**s.protocol)
        self.protocol = cluster_protocol(base, self.siblings, os.cpu_count() or 1)
        self.dev = get_device(s.device, platform=s.platform)
        self.dev.setup(self.protocol)
        self.n_measured = 0
        self.idle_w = NAN

    def _tag(self, row: dict[str, Any]) -> dict[str, Any]:
        row["siblings"] = self.siblings
        return row

    def checkpoint(self) -> list[dict[str, Any]]:
        """Idle power (GPU) and the reference config, re-measured while not clean (as the
        local campaign's checkpoint)."""
        if self.dev.kind == "cuda":
            self.idle_w = self.dev.idle_power_w(self.s.idle_seconds)
        ref_cfg = config_from_row(dict(self.s.reference))
        rows = []
        for _ in range(REFERENCE_TRIES):
            row = self._tag(profile_config(ref_cfg, self.dev, self.protocol,
                                           idle_power_w=self.idle_w))
            rows.append(row)
            if row["status"] == "ok" and row.get("quality") != "disturbed":
                break
        return rows

    def measure(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        rows, refs = [], []
        for rec in records:
            if self.s.ref_every and self.n_measured % self.s.ref_every == 0:
                refs += self.checkpoint()
            config = config_from_row({c: v for c, v in rec.items() if c != "config_id"})
            row = self._tag(profile_config(config, self.dev, self.protocol,
                                           idle_power_w=self.idle_w))
            if row["config_id"] != rec["config_id"]:
                raise RuntimeError(
                    f"config_id mismatch: row {rec['config_id']} measured as {row['config_id']}"
                )
            rows.append(row)
            self.n_measured += 1
        return {"rows": rows, "reference": refs}


def _test_kill_hook(kill: tuple[tuple[str, str | None], ...], config_id: str) -> None:
    """Test hook: SIGKILL this worker before measuring a config named in ``kill``; with a
    flag file, only while the file does not exist (it is created first, so the retry
    measures normally); without, every time."""
    for cid, flag in kill:
        if cid != config_id:
            continue
        if flag is not None:
            if os.path.exists(flag):
                return
            Path(flag).touch()
        os.kill(os.getpid(), signal.SIGKILL)


_STATE: dict[str, _Measurer] = {}


def _measurer(s: _Settings) -> _Measurer:
    m = _STATE.get(s.campaign)
    if m is None:
        _STATE.clear()  # one campaign at a time per worker process
        m = _STATE[s.campaign] = _Measurer(s)
    return m


def _worker_info() -> dict[str, Any]:
    from distributed import get_worker

    try:
        w = get_worker()
        return {"worker": w.address, "name": str(w.name)}
    except ValueError:
        return {"worker": None, "name": None}


def measure_task(records: list[dict[str, Any]], s: _Settings) -> dict[str, Any]:
    """Task: measure ``records`` (config columns + ``config_id``) in order on this worker."""
    t0 = time.perf_counter()
    for rec in records:
        _test_kill_hook(s.kill, rec["config_id"])
    out = _measurer(s).measure(records)
    out.update(_worker_info(), pid=os.getpid(), busy_s=time.perf_counter() - t0)
    return out


def skip_task(records: list[dict[str, Any]], s: _Settings) -> dict[str, Any]:
    """Task: ``status == "skipped"`` rows (compute cap) with this worker's provenance."""
    m = _measurer(s)
    rows = [
        skipped_row(config_from_row({c: v for c, v in r.items() if c not in ("config_id", "_why")}),
                    m.dev, m.protocol, r["_why"])
        for r in records
    ]  # fmt: skip
    return {"rows": rows, "reference": [], "busy_s": 0.0, **_worker_info(), "pid": os.getpid()}


def probe_worker(device: str, platform: str | None, protocol: dict[str, Any]) -> dict[str, Any]:
    """``client.run`` probe: can this worker measure on ``device``, and as which platform?
    Also imports torch and carb_lib once, before the first task."""
    import socket

    try:
        dev = get_device(device, platform=platform)
        proto = Protocol(**protocol)
        dev.setup(proto)
        return {"ok": True, "platform": dev.platform, "host": socket.gethostname(),
                "provenance": dev.provenance(proto), "cores": os.cpu_count() or 1}
    except Exception as exc:
        return {"ok": False, "error": f"{type(exc).__name__}: {' '.join(str(exc).split())}",
                "host": socket.gethostname()}


def _set_allowed_failures(n: int, dask_scheduler=None) -> int:
    dask_scheduler.allowed_failures = int(n)
    return int(n)


# ----------------------------------------------------------------------------------------
# client side


@dataclass
class ClusterCampaignResult(CampaignResult):
    """What a cluster campaign did (:class:`carb_lib.measure.campaign.CampaignResult` plus the
    cluster's side)."""

    workers: int = 0
    platforms: list[str] = field(default_factory=list)
    n_tasks: int = 0
    n_split: int = 0
    n_killed: int = 0
    task_overhead_ms: float = NAN
    siblings: dict[str, int] = field(default_factory=dict)


def _error_row(rec: Mapping[str, Any], provenance: Mapping[str, Any], message: str
               ) -> dict[str, Any]:
    """A ``status == "error"`` row built on the client (the worker died before answering)."""
    cfg = config_from_row({c: v for c, v in rec.items() if c != "config_id"})
    row = empty_row()
    row.update(cfg.to_dict())
    row["config_id"] = cfg.config_id
    row.update(provenance)
    row.update(measured_at=utc_now(), status="error", error=message)
    return row


def _probe(client: Any, device: str, platform: str | None, protocol: Protocol,
           wait_s: float) -> dict[str, dict[str, Any]]:
    try:
        client.wait_for_workers(1, timeout=wait_s)
    except TimeoutError:
        raise RuntimeError(f"the cluster has no worker after {wait_s:g} s") from None
    info = client.run(probe_worker, device, platform, protocol.to_dict())
    bad = {a: r for a, r in info.items() if not r["ok"]}
    if bad:
        addr, r = next(iter(bad.items()))
        raise RuntimeError(
            f"{len(bad)} of {len(info)} worker(s) cannot measure on {device!r}; worker {addr} "
            f"(host {r['host']}): {r['error']}"
        )
    workers = client.scheduler_info().get("workers", {})
    if not any(MEASURE_RESOURCE in (w.get("resources") or {}) for w in workers.values()):
        raise RuntimeError(
            f"no worker declares the '{MEASURE_RESOURCE}' resource (one measurement at a time "
            f"per worker): start workers with `dask worker ADDRESS --nthreads 1 --resources "
            f"{MEASURE_RESOURCE}=1`"
        )
    return info


def run_cluster_campaign(
    configs: pd.DataFrame,
    out_dir: str | Path,
    client: Any,
    device: str = "cpu",
    protocol: Protocol | None = None,
    *,
    platform: str | None = None,
    seed: int = 0,
    ref_every: int = 50,
    reference: Mapping[str, Any] | None = None,
    time_budget_s: float | None = None,
    max_gflops: float | None = None,
    shard: tuple[int, int] | str | None = None,
    idle_seconds: float = 2.0,
    chunk_size: int = 1,
    max_tries: int = 3,
    wait_s: float = 60.0,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
    _kill: tuple[tuple[str, str | None], ...] = (),
) -> ClusterCampaignResult:
    """Measure ``configs`` on the workers of ``client`` into part files under ``out_dir``.

    Parameters are those of :func:`carb_lib.measure.campaign.run_campaign` (``time_budget_s`` is
    checked whenever a task finishes: no task starts after it and the tasks still running
    are cancelled, their configs left to do), plus:

    Parameters
    ----------
    client : distributed.Client
        E.g. from :func:`carb_lib.distributed.open_cluster`. Not closed here.
    chunk_size : int
        Configs per task (1: a worker's death costs one config's retry).
    max_tries : int
        Worker deaths a task may cause before its config gets a ``status="error"`` row.
    wait_s : float
        How long to wait for the first worker.
    _kill : tuple of (config_id, flag file or None)
        Test hook: workers kill themselves on these configs (:func:`_test_kill_hook`).

    Returns
    -------
    ClusterCampaignResult

    Raises
    ------
    RuntimeError
        A worker cannot measure on ``device`` (nothing is written), no worker declares the
        ``measure`` resource, or a task failed for another reason than its worker dying
        (the parts written so far are kept; rerunning resumes).
    """
    t_begin = time.perf_counter()
    log = log or logger.info
    protocol = protocol or Protocol()
    if chunk_size < 1 or max_tries < 1:
        raise ValueError(f"chunk_size and max_tries must be >= 1, got {chunk_size}, {max_tries}")
    info = _probe(client, device, platform, protocol, wait_s)
    plat_of = {a: r["platform"] for a, r in info.items()}
    provenance = {r["platform"]: r["provenance"] for r in info.values()}
    platforms = sorted(provenance)
    siblings = {h: n - 1 for h, n in Counter(r["host"] for r in info.values()).items()}
    try:
        client.run_on_scheduler(_set_allowed_failures, max_tries - 1)
    except Exception as exc:  # e.g. run_on_scheduler blocked on a shared scheduler
        log(f"[campaign] warning: cannot set the scheduler's allowed-failures to "
            f"{max_tries - 1} ({type(exc).__name__}); its own setting applies")

    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out {out} is a file; give a folder for the part files")
    out.mkdir(parents=True, exist_ok=True)
    shard_t = parse_shard(shard) if isinstance(shard, str) or shard is None else shard
    settings = _Settings(
        campaign=f"{out.resolve()}|{uuid.uuid4().hex}", device=device, platform=platform,
        protocol=protocol.to_dict(), ref_every=int(ref_every),
        reference=dict(reference or DEFAULT_REFERENCE), idle_seconds=idle_seconds,
        siblings=siblings, kill=tuple(_kill),
    )  # fmt: skip
    res = ClusterCampaignResult(out_dir=str(out), platform=",".join(platforms),
                                workers=len(info), platforms=platforms, siblings=siblings)
    with FolderLock(out):
        stale = clean_temporary_files(out)
        if stale:
            log(f"[campaign] removed {len(stale)} temporary file(s) of an interrupted write")
        cfg = configs.copy()
        if "config_id" not in cfg.columns:
            cfg = add_config_ids(cfg)
        cfg = cfg.drop_duplicates("config_id").reset_index(drop=True)
        cfg = cfg[shard_mask(cfg["config_id"], shard_t)]
        rng = np.random.default_rng(seed)
        cfg = cfg.iloc[rng.permutation(len(cfg))].reset_index(drop=True)
        res.n_total = len(cfg)
        done: set[str] = set()
        for p in platforms:
            done |= done_ids(out, p)
        todo = cfg[~cfg["config_id"].isin(done)].reset_index(drop=True)
        res.n_already_done = len(cfg) - len(todo)
        res.n_planned = len(todo)
        over = np.zeros(len(todo), dtype=bool)
        flops = np.zeros(len(todo))
        if max_gflops is not None and len(todo):
            flops = _flops(todo).to_numpy()
            over = flops > max_gflops * 1e9
        recs = todo.to_dict(orient="records")
        chunks: list[tuple[str, list[dict[str, Any]]]] = []
        skipped = [dict(r, _why=f"compute cap: flops {f:.4g} (whole batch) > max_gflops "
                                f"{max_gflops:g} x 1e9")
                   for r, f, o in zip(recs, flops, over, strict=True) if o]  # fmt: skip
        chunks += [("skip", skipped[i : i + 2000]) for i in range(0, len(skipped), 2000)]
        meas = [r for r, o in zip(recs, over, strict=True) if not o]
        chunks += [("measure", meas[i : i + chunk_size]) for i in range(0, len(meas), chunk_size)]
        log(f"[campaign] cluster of {len(info)} worker(s), platform(s) {platforms}: "
            f"configs={len(cfg)} already done={res.n_already_done} skipped by compute "
            f"cap={len(skipped)} to measure={len(meas)} in {len(chunks)} task(s) out={out}")
        note = sigint_ignored_note()
        if note and chunks:
            log(note)
        _Dispatcher(client, settings, res, out, plat_of, provenance, log).run(
            chunks, time_budget_s, t_begin, progress)
    res.elapsed_s = time.perf_counter() - t_begin
    res.drift = drift_summary(reference_rows(out))
    log(f"[campaign] done in {res.elapsed_s:.0f} s: {res.counts}"
        + (" (stopped by the time budget)" if res.stopped_by_budget else "")
        + (f"; {res.n_killed} config(s) killed their worker {max_tries} times"
           if res.n_killed else ""))
    return res


class _Dispatcher:
    """The client's loop: one task in flight per worker; the rows of the tasks that finished
    since the last write written together as one part (one task at a low rate, many when the
    workers outpace the writes: a part costs ~0.1 s of schema checks whatever its size);
    ``KilledWorker`` turned into per-config retries and error rows."""

    def __init__(self, client: Any, settings: _Settings, res: ClusterCampaignResult,
                 out: Path, plat_of: dict[str, str], provenance: dict[str, dict[str, Any]],
                 log: Callable[[str], None]):
        self.client, self.settings, self.res, self.log = client, settings, res, log
        self.plat_of, self.provenance = plat_of, provenance
        self.writer = PartWriter(out, RESULTS_PREFIX)
        self.ref_writer = PartWriter(out, REFERENCE_PREFIX, unique=False)
        self.counts = {"ok": 0, "oom": 0, "error": 0, "skipped": 0}
        self.written: set[tuple[str, str]] = set()
        self.rows: list[dict[str, Any]] = []
        self.refs: list[dict[str, Any]] = []
        self.queue: list[tuple[str, list[dict[str, Any]]]] = []
        self.pending: dict[Any, tuple[str, list[dict[str, Any]], float]] = {}
        self.overheads: list[float] = []
        self.bar: Any = None

    def slots(self) -> int:
        """Workers with a measurement slot now (one task in flight each)."""
        ws = self.client.scheduler_info().get("workers", {})
        return max(1, sum(MEASURE_RESOURCE in (w.get("resources") or {}) for w in ws.values()))

    def submit(self, kind: str, recs: list[dict[str, Any]]) -> None:
        fn = measure_task if kind == "measure" else skip_task
        key = f"carb-{kind}-{recs[0]['config_id']}-{uuid.uuid4().hex[:8]}"
        fut = self.client.submit(fn, recs, self.settings, key=key, pure=False, retries=0,
                                 resources={MEASURE_RESOURCE: 1})
        self.pending[fut] = (kind, recs, time.perf_counter())
        self.ac.add(fut)
        self.res.n_tasks += 1

    def fill(self) -> None:
        while self.queue and len(self.pending) < self.slots():
            self.submit(*self.queue.pop())

    def record(self, rows: list[dict[str, Any]]) -> None:
        """Queue the rows not recorded yet for the next part (exactly once per
        (platform, config_id))."""
        for r in rows:
            key = (r["platform"], r["config_id"])
            if key not in self.written:
                self.written.add(key)
                self.rows.append(r)

    def flush(self) -> None:
        """Write the queued rows as one results part (and references as one part)."""
        if self.refs:
            self.ref_writer.write(self.refs)
            self.res.n_reference += len(self.refs)
            self.refs = []
        if not self.rows:
            return
        rows, self.rows = self.rows, []
        self.writer.write(rows)
        for r in rows:
            self.counts[r["status"]] += 1
        self.bar.update(len(rows))
        self.bar.set_postfix({k: v for k, v in self.counts.items() if v}, refresh=False)

    def finished(self, kind: str, r: dict[str, Any], roundtrip_s: float) -> None:
        if r.get("worker") and r["rows"]:
            self.plat_of[r["worker"]] = r["rows"][0]["platform"]
        if kind == "measure":
            self.overheads.append(roundtrip_s - r["busy_s"])
        self.refs += r["reference"]
        self.record(r["rows"])

    def failed(self, fut: Any, kind: str, recs: list[dict[str, Any]]) -> None:
        from distributed.scheduler import KilledWorker

        exc = fut.exception()
        if not isinstance(exc, KilledWorker):
            raise RuntimeError(
                f"task {fut.key} failed on the cluster ({type(exc).__name__}: "
                f"{' '.join(str(exc).split())[:500]}); the parts written so far are kept: "
                "rerun to resume"
            ) from None
        if len(recs) > 1:  # which config killed it? one task per config tells
            self.res.n_split += 1
            self.queue += [(kind, [rec]) for rec in reversed(recs)]
            return
        plat = self.plat_of.get(getattr(exc.last_worker, "address", None))
        plat = plat if plat in self.provenance else self.res.platforms[0]
        msg = (f"worker died {exc.allowed_failures + 1} time(s) while measuring this config "
               f"(KilledWorker: {' '.join(str(exc).split())[:400]})")
        self.log(f"[campaign] {recs[0]['config_id']}: {msg}")
        self.record([_error_row(recs[0], self.provenance[plat], msg)])
        self.res.n_killed += 1

    def run(self, chunks: list[tuple[str, list[dict[str, Any]]]], time_budget_s: float | None,
            t_begin: float, progress: bool) -> None:
        from distributed import as_completed
        from tqdm.auto import tqdm

        self.queue = list(reversed(chunks))  # pop() from the end keeps the planned order
        self.ac = as_completed(with_results=True, raise_errors=False)
        self.bar = tqdm(total=sum(len(c) for _, c in chunks), unit="cfg",
                        desc=f"carb {','.join(self.res.platforms)}", disable=not progress,
                        dynamic_ncols=True, smoothing=0.05)  # fmt: skip
        try:
            self.fill()
            for batch in self.ac.batches():
                t_done = time.perf_counter()
                over = time_budget_s is not None and t_done - t_begin > time_budget_s
                for fut, result in batch:
                    kind, recs, t_sub = self.pending.pop(fut)
                    if fut.status == "finished":
                        self.finished(kind, result, t_done - t_sub)
                    elif fut.status == "cancelled":
                        self.queue.append((kind, recs))  # the scheduler lost it: again
                    else:
                        self.failed(fut, kind, recs)
                    fut.release()
                if over:
                    self.res.stopped_by_budget = True
                    break
                self.fill()  # freed workers get their next task before the write
                self.flush()
        finally:
            for fut in list(self.pending):  # Ctrl-C, the budget or an error: nothing left
                fut.cancel()
            try:
                self.flush()  # rows already in hand are kept (a Ctrl-C in a write loses
            finally:          # at most that part: its configs are measured again on resume)
                self.bar.close()
                self.res.counts = self.counts
                if self.overheads:
                    self.res.task_overhead_ms = float(np.median(self.overheads) * 1e3)
