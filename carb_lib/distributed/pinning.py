"""Pin each CPU worker of a ``local:N`` cluster to one core (imports ``distributed``).

A measurement on a core that another worker also uses is disturbed by design; the CPU
protocol's per-thread CPU-share check assumes the measuring thread owns its core. The plugin
runs in every worker process (again in a worker the nanny restarts) and pins all its threads,
and every thread it starts later, to core ``cores[name % len(cores)]`` of the cores the
worker may use.
"""

from __future__ import annotations

import logging
import os
import zlib

from distributed import WorkerPlugin

logger = logging.getLogger("carb.cluster")

#: The core this process was pinned to (None: not pinned).
PINNED_CORE: int | None = None


def pin_process_to(core: int) -> None:
    """Pin every thread of this process (and so the threads it starts later) to ``core``."""
    global PINNED_CORE
    tids = [int(t) for t in os.listdir("/proc/self/task")] if os.path.isdir(
        "/proc/self/task") else [0]
    for tid in tids:
        try:
            os.sched_setaffinity(tid, {core})
        except OSError:  # a thread that just ended
            pass
    PINNED_CORE = core


class PinToCore(WorkerPlugin):
    """Worker plugin: pin the worker named ``i`` (LocalCluster names workers 0..N-1) to the
    ``i``-th usable core, modulo their number (other names: a CRC of the name)."""

    name = "carb-pin-to-core"

    def setup(self, worker) -> None:  # noqa: D102
        if not hasattr(os, "sched_setaffinity"):
            return
        cores = sorted(os.sched_getaffinity(0))
        try:
            idx = int(worker.name)
        except (TypeError, ValueError):
            idx = zlib.crc32(str(worker.name).encode())
        core = cores[idx % len(cores)]
        pin_process_to(core)
        logger.debug("worker %s pinned to core %d", worker.name, core)
