"""``--cluster SPEC``: parse it, open the Dask cluster it names, close it whatever happens.

Specs
-----
``local:N``
    A ``distributed.LocalCluster`` of ``N`` worker **processes**, one thread each, each worker
    pinned to one core (:class:`carb_lib.distributed.pinning.PinToCore`, where
    ``os.sched_setaffinity`` exists) and declaring the resource ``measure=1``.
``cuda``
    ``dask_cuda.LocalCUDACluster``: one worker per visible GPU (``measure=1`` each). Needs a
    CUDA GPU and the ``dask-cuda`` package.
``slurm:FILE.yaml``
    ``dask_jobqueue.SLURMCluster`` with the options of the YAML file (a mapping of
    ``SLURMCluster`` keyword arguments) plus ``jobs``, the number of SLURM jobs to start.
    Required: :data:`SLURM_REQUIRED`; ``wait_s`` (default 600) bounds the wait for the first
    worker. Workers get ``--resources measure=1`` added to ``worker_extra_args``. E.g.::

        jobs: 8                 # SLURM jobs (here one GPU each)
        cores: 8
        processes: 1            # one worker (one measurement slot) per job
        memory: 64GB
        walltime: "12:00:00"
        queue: gpu
        job_extra_directives: ["--gres=gpu:1"]

``tcp://host:port``
    An existing scheduler. Its workers must declare the ``measure`` resource to run a
    campaign (``dask worker tcp://host:port --nthreads 1 --resources measure=1``).

Every failure is one line: an unknown scheme, ``local:0``, a SLURM file missing options, an
unreachable scheduler (within ``timeout_s``), ``cuda`` without a GPU, a missing package
(``ImportError`` naming what to install). :func:`open_cluster` logs the dashboard link and
closes the client and the cluster on exit, including on Ctrl-C.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger("carb.cluster")

__all__ = ["MEASURE_RESOURCE", "SLURM_REQUIRED", "ClusterSpec", "ClusterSpecError",
           "ClusterUnavailableError", "open_cluster", "parse_cluster_spec", "require_dask"]

#: Worker resource of one measurement slot: tasks that measure ask for one unit of it, so a
#: worker (one GPU, or one pinned core) runs one measurement at a time.
MEASURE_RESOURCE = "measure"
#: Options a ``slurm:FILE.yaml`` must give (``jobs`` is CARB's; the others SLURMCluster's).
SLURM_REQUIRED: tuple[str, ...] = ("jobs", "cores", "memory", "walltime")
#: How to get the optional dependencies.
INSTALL_HINT = "pip install 'carb_lib[dask]'"


class ClusterSpecError(ValueError):
    """A ``--cluster`` spec that cannot name a cluster (one line, names the spec)."""


class ClusterUnavailableError(RuntimeError):
    """The cluster a valid spec names cannot be reached or started here."""


@dataclass(frozen=True)
class ClusterSpec:
    """A parsed ``--cluster`` spec.

    Attributes
    ----------
    kind : {"local", "cuda", "slurm", "tcp"}
    text : str
        The spec as given.
    n_workers : int or None
        ``local:N``.
    path : pathlib.Path or None
        ``slurm:FILE.yaml``.
    address : str or None
        ``tcp://host:port``.
    """

    kind: str
    text: str
    n_workers: int | None = None
    path: Path | None = None
    address: str | None = None


_TCP = re.compile(r"^tcp://[^\s:/]+:\d{1,5}$")


def parse_cluster_spec(text: str) -> ClusterSpec:
    """Parse ``local:N``, ``cuda``, ``slurm:FILE.yaml`` or ``tcp://host:port``.

    Raises
    ------
    ClusterSpecError
        Unknown scheme, ``N`` not a positive integer, no file name after ``slurm:``, a tcp
        address without a port.

    Examples
    --------
    >>> parse_cluster_spec("local:2").n_workers
    2
    >>> parse_cluster_spec("tcp://10.0.0.5:8786").address
    'tcp://10.0.0.5:8786'
    """
    s = str(text).strip()
    head = f"--cluster {s!r}"
    if s.startswith("local:"):
        n = s.split(":", 1)[1]
        if not re.fullmatch(r"\d+", n) or int(n) < 1:
            raise ClusterSpecError(f"{head}: N in local:N must be an integer >= 1")
        return ClusterSpec("local", s, n_workers=int(n))
    if s == "cuda":
        return ClusterSpec("cuda", s)
    if s.startswith("slurm:"):
        p = s.split(":", 1)[1]
        if not p:
            raise ClusterSpecError(f"{head}: give the options file, slurm:FILE.yaml")
        return ClusterSpec("slurm", s, path=Path(p))
    if s.startswith("tcp://"):
        if not _TCP.match(s):
            raise ClusterSpecError(f"{head}: a scheduler address is tcp://HOST:PORT")
        return ClusterSpec("tcp", s, address=s)
    raise ClusterSpecError(
        f"{head}: unknown cluster; use local:N, cuda, slurm:FILE.yaml or tcp://HOST:PORT"
    )


def require_dask() -> None:
    """Raise one ``ImportError`` line if ``dask.distributed`` is missing."""
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError:
        raise ImportError(
            f"--cluster needs Dask, which is not installed: {INSTALL_HINT}"
        ) from None


def read_slurm_options(path: Path) -> dict[str, Any]:
    """The ``SLURMCluster`` options of a ``slurm:FILE.yaml`` (``jobs`` and ``wait_s``
    included), checked for :data:`SLURM_REQUIRED` before anything is imported or started."""
    import yaml

    head = f"--cluster slurm:{path}"
    if not path.is_file():
        raise ClusterSpecError(f"{head}: no such options file")
    try:
        opts = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ClusterSpecError(f"{head}: not valid YAML ({' '.join(str(exc).split())})") from None
    if not isinstance(opts, dict):
        raise ClusterSpecError(f"{head}: expected a mapping of SLURMCluster options")
    missing = [k for k in SLURM_REQUIRED if opts.get(k) in (None, "")]
    if missing:
        raise ClusterSpecError(
            f"{head}: missing required option(s) {', '.join(missing)} "
            f"(needed: {', '.join(SLURM_REQUIRED)})"
        )
    if not isinstance(opts["jobs"], int) or isinstance(opts["jobs"], bool) or opts["jobs"] < 1:
        raise ClusterSpecError(f"{head}: jobs must be an integer >= 1, got {opts['jobs']!r}")
    return opts


def _usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _cuda_visible() -> int:
    try:
        import torch
    except ImportError:
        return 0
    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


def _worker_log_level() -> int:
    """Local workers' log level: silent (errors come back to the client, one line each)
    unless the ``carb`` logger is at DEBUG (``carb --debug``)."""
    return logging.ERROR if logging.getLogger("carb").isEnabledFor(logging.DEBUG) else (
        logging.CRITICAL)


def _start(spec: ClusterSpec, timeout_s: float, log: Callable[[str], None]) -> tuple[Any, Any]:
    """(client, cluster or None) for ``spec``; the caller closes both."""
    from distributed import Client

    resources = {MEASURE_RESOURCE: 1}
    if spec.kind == "tcp":
        try:
            client = Client(spec.address, timeout=f"{timeout_s}s")
        except (OSError, TimeoutError) as exc:
            raise ClusterUnavailableError(
                f"--cluster {spec.address}: no scheduler reachable within {timeout_s:g} s "
                f"({type(exc).__name__})"
            ) from None
        return client, None
    if spec.kind == "local":
        from distributed import LocalCluster

        cores = _usable_cores()
        if spec.n_workers > cores:
            log(f"[cluster] warning: local:{spec.n_workers} on {cores} usable core(s): workers "
                "share cores (fine for screening, not for measuring)")
        cluster = LocalCluster(
            n_workers=spec.n_workers, threads_per_worker=1, processes=True, resources=resources,
            dashboard_address=":0", silence_logs=_worker_log_level(),
        )  # fmt: skip
        try:
            client = Client(cluster)
            if hasattr(os, "sched_setaffinity"):
                from carb_lib.distributed.pinning import PinToCore

                client.register_plugin(PinToCore(), name="carb-pin-to-core")
        except BaseException:  # Ctrl-C while starting: no stray worker processes
            cluster.close()
            raise
        return client, cluster
    if spec.kind == "cuda":
        if _cuda_visible() == 0:
            raise ClusterUnavailableError(
                "--cluster cuda: no CUDA GPU visible here (torch.cuda.is_available() is False)"
            )
        try:
            from dask_cuda import LocalCUDACluster
        except ImportError:
            raise ImportError("--cluster cuda needs dask-cuda: pip install dask-cuda") from None
        cluster = LocalCUDACluster(threads_per_worker=1, resources=resources,
                                   dashboard_address=":0", silence_logs=_worker_log_level())
        try:
            return Client(cluster), cluster
        except BaseException:
            cluster.close()
            raise
    # slurm
    opts = read_slurm_options(spec.path)
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError:
        raise ImportError(
            "--cluster slurm: needs dask-jobqueue: pip install dask-jobqueue"
        ) from None
    jobs = int(opts.pop("jobs"))
    wait_s = float(opts.pop("wait_s", 600))
    extra = list(opts.pop("worker_extra_args", []) or [])
    if "--resources" not in extra:
        extra += ["--resources", f"{MEASURE_RESOURCE}=1"]
    cluster = SLURMCluster(worker_extra_args=extra, **opts)
    client = None
    try:
        cluster.scale(jobs=jobs)
        client = Client(cluster)
        client.wait_for_workers(1, timeout=wait_s)
    except BaseException as exc:
        if client is not None:
            client.close()
        cluster.close()  # cancels the submitted jobs
        if isinstance(exc, TimeoutError):
            raise ClusterUnavailableError(
                f"--cluster {spec.text}: no SLURM worker started within {wait_s:g} s (wait_s)"
            ) from None
        raise
    return client, cluster


@contextmanager
def open_cluster(
    spec: str | ClusterSpec,
    *,
    timeout_s: float = 10.0,
    log: Callable[[str], None] | None = None,
) -> Iterator[Any]:
    """Open the cluster ``spec`` names and yield a ``distributed.Client`` to it.

    The dashboard link is logged. On exit (normal, an exception or Ctrl-C) the client is
    closed, then the cluster this call started (an existing ``tcp://`` scheduler is left
    running).

    Parameters
    ----------
    spec : str or ClusterSpec
    timeout_s : float
        How long to try reaching a ``tcp://`` scheduler.
    log : callable, optional
        ``log(str)`` (default: the ``carb.cluster`` logger).

    Raises
    ------
    ClusterSpecError, ClusterUnavailableError, ImportError
        One line each (see the module docstring).
    """
    log = log or logger.info
    spec = parse_cluster_spec(spec) if isinstance(spec, str) else spec
    if spec.kind == "slurm":
        read_slurm_options(spec.path)  # a bad file fails before Dask is even imported
    require_dask()
    client, cluster = _start(spec, timeout_s, log)
    try:
        link = getattr(cluster, "dashboard_link", None) or getattr(client, "dashboard_link", None)
        n = len(client.scheduler_info().get("workers", {}))
        log(f"[cluster] {spec.text}: {n} worker(s); dashboard {link or 'unavailable'}")
        yield client
    finally:
        for obj in (client, cluster):
            if obj is None:
                continue
            try:
                obj.close()
            except Exception as exc:  # closing must not mask what happened
                logger.debug("closing %s: %s", type(obj).__name__, exc)
