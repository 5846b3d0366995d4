"""One ``carb kernels`` run: a draw of generic operators timed alone into a benchmark file,
with the anchor campaigns around it (or the anchors alone).

:func:`time_draw` samples ``n`` operators (:func:`~carb_lib.kernels.operators.sample_kernels`), times
them (:func:`~carb_lib.kernels.law.bench_kernels`) with the heap kept by default, and writes them,
beside any earlier draw of the file (``append``: same platform, CPU, threads, PyTorch, heap and
denormal handling, a seed it does not hold; :func:`~carb_lib.kernels.operators.check_append`). Every
200 operators and on Ctrl-C the rows so far are written atomically: an interrupted run keeps
every operator it measured. :func:`time_anchors_only` times the anchor set beside an existing
benchmark (:mod:`carb_lib.kernels.anchors`). The command line (:mod:`carb_lib.app.cli`) only parses options.

Examples
--------
>>> from pathlib import Path
>>> from carb_lib.kernels.draw import time_draw
>>> rows = time_draw(Path("mydata/my_cpu/design/kernels.parquet"), n=3000, seed=0)  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from carb_lib.core.tables import atomic_write
from carb_lib.dataset.schema import atomic_write_parquet
from carb_lib.kernels import anchors as anc
from carb_lib.kernels import cache_probe
from carb_lib.kernels.cache_probe import cache_knee
from carb_lib.measure import heap
from carb_lib.measure.devices import CpuDevice, cpu_identity, refuse_other_cpu

__all__ = ["cache_probe_path", "probe_read_bandwidth", "time_anchors_only", "time_draw"]

logger = logging.getLogger(__name__)


def time_anchors_only(out: Path, *, campaigns: int = 5, threads: int = 1,
                      platform: str | None = None, echo: Callable[[str], None] = print) -> None:
    """Time the anchor operators ``campaigns`` times beside the benchmark ``out`` (on the
    machine that timed it) and ``echo`` each campaign's speed."""
    from carb_lib.kernels.law import read_bench

    if out.suffix != ".parquet":
        raise ValueError(f"--out {out} must end in .parquet")
    if not out.exists():
        raise FileNotFoundError(f"--anchors-only: {out} does not exist (time the anchors "
                                "beside an existing benchmark)")
    bench = read_bench(out)
    refuse_other_cpu(bench.get("cpu_id", ()), f"the benchmark {out} was",
                     "time its anchors on the machine that timed it")
    if campaigns < 1:
        raise ValueError(f"--campaigns must be >= 1, got {campaigns}")
    plats = sorted(set(bench["platform"].astype(str)))
    log = anc.AnchorFile(out)
    for _ in range(campaigns):
        log.time(phase="check", threads=threads, platform=platform or (plats[0] if plats else None))
    echo(log.report(last=campaigns))


def default_kernel_platform(threads: int) -> str:
    """This CPU's default platform name for operators timed with ``threads`` threads: the
    profiler's name (:meth:`carb_lib.measure.devices.CpuDevice.default_platform`) with its thread
    suffix ``_<k>t`` set to ``threads`` (the process's own thread count may differ)."""
    import re

    return re.sub(r"_\d+t$", f"_{threads}t", CpuDevice().platform)


def time_draw(out: Path, *, n: int = 3000, seed: int = 0, sampler: int | None = None,
              threads: int = 1, platform: str | None = None, append: bool = False,
              anchors: bool = True, anchor_every: int = 500, progress: bool = True,
              keep_heap: bool = True, echo: Callable[[str], None] = print) -> pd.DataFrame:
    """Time ``n`` generic operators (sample ``seed``, sampler version ``sampler``, default the
    current one) alone into the new benchmark ``out`` (or, with ``append``, after its rows).

    The anchors are timed before, every ``anchor_every`` operators (0: before and after only)
    and after the draw, into ``<out>.anchors.parquet``. ``keep_heap`` keeps the process's heap
    first (:func:`carb_lib.measure.heap.keep_heap`). Returns the rows timed in this run; ``echo`` gets
    the anchor report and a summary."""
    import torch

    from carb_lib.kernels.law import (
        SAMPLER_VERSION,
        bench_kernels,
        check_append,
        read_bench,
        sample_kernels,
    )

    if out.suffix != ".parquet":
        raise ValueError(f"--out {out} must end in .parquet")
    if out.exists() and not append:
        raise FileExistsError(f"--out {out} exists; give a new file (a benchmark is never "
                              "overwritten) or --append to add operators to it")
    if append and not out.exists():
        raise FileNotFoundError(f"--append: {out} does not exist")
    if n < 1 or threads < 1 or anchor_every < 0:
        raise ValueError(f"--n and --threads must be >= 1 and --anchor-every >= 0, got {n}, "
                         f"{threads} and {anchor_every}")
    version = SAMPLER_VERSION if sampler is None else sampler
    if version not in range(1, SAMPLER_VERSION + 1):
        raise ValueError(f"--sampler must be 1-{SAMPLER_VERSION}, got {version}")
    plat = platform or default_kernel_platform(threads)
    old = read_bench(out) if append else None
    if old is not None:
        check_append(old, platform=plat, threads=threads, seed=seed,
                     torch_version=torch.__version__, cpu_id=cpu_identity(), heap_kept=keep_heap,
                     denormals_flushed=torch.set_flush_denormal(False) or None)  # None: no FTZ
        if "cpu_id" not in old.columns or old["cpu_id"].isna().any():
            echo(f"note: rows of {out} carry no cpu_id (timed before it was recorded); this "
                 f"CPU is {cpu_identity()!r}: append only on the machine that timed them (its "
                 "data card says which)")
    out.parent.mkdir(parents=True, exist_ok=True)
    ops = sample_kernels(n, seed=seed, version=version)
    log = anc.AnchorFile(out)

    def save(rows: pd.DataFrame) -> None:
        rows = rows.assign(sample_seed=seed, sampler=version)
        atomic_write_parquet(rows if old is None else pd.concat([old, rows], ignore_index=True),
                             out)

    if keep_heap:  # before the first anchor campaign: every timing of the run with the heap kept
        heap.keep_heap()
    step = anchor_every if anchors and anchor_every else len(ops)
    done: list[pd.DataFrame] = []
    for start in range(0, len(ops), step):
        if anchors:  # the host's speed now, kept even if the draw is interrupted
            log.time(phase="during" if start else "before", sample_seed=seed,
                     threads=threads, platform=plat)
        part = bench_kernels(ops.iloc[start:start + step], threads=threads, platform=plat,
                             progress=progress,
                             on_chunk=lambda part: save(pd.concat([*done, part],
                                                                  ignore_index=True)))
        done.append(part)
        save(pd.concat(done, ignore_index=True))
    rows = pd.concat(done, ignore_index=True)
    if anchors:
        log.time(phase="after", sample_seed=seed, threads=threads, platform=plat)
        echo(log.report())
    med = rows.groupby(["kind", "precision"])["time_ms"].median().unstack()
    echo(f"median ms per operator:\n{med.round(3).to_string()}")
    total = len(rows) + (0 if old is None else len(old))
    echo(f"wrote {out}: {len(rows)} operators (seed {seed}, sampler v{version}), {total} in "
         f"all, platform {plat}")
    return rows


def cache_probe_path(out: Path) -> Path:
    """Where a benchmark's read-bandwidth probe lives: ``<bench stem>_cache_probe.csv``."""
    return Path(out).with_name(f"{Path(out).stem}_cache_probe.csv")


def probe_read_bandwidth(out: Path, *, threads: int = 1,
                         echo: Callable[[str], None] = print) -> Path:
    """Probe one core's read bandwidth by working set (:func:`carb_lib.kernels.cache_probe.read_bandwidth`,
    about a minute) beside the benchmark ``out`` (:func:`cache_probe_path`), with the CPU's
    ``cpu_id`` and the time; ``echo`` the knee it finds
    (:func:`~carb_lib.kernels.cache_probe.cache_knee`). A probe already there is kept."""
    path = cache_probe_path(out)
    if path.exists():  # an appended draw: the machine's probe is already beside the file
        echo(f"read bandwidth: kept the probe {path}")
        return path
    probe = cache_probe.read_bandwidth(threads=threads).assign(cpu_id=cpu_identity(),
                                                               measured_at=pd.Timestamp.now(tz="UTC"))
    atomic_write(path, lambda fh: probe.to_csv(fh, index=False))
    knee = cache_knee(probe)
    echo(f"read bandwidth: {knee.cache_gb_per_s:.1f} GB/s in cache, {knee.memory_gb_per_s:.1f} "
         f"GB/s from memory, knee at {knee.cache_mib:.0f} MiB; wrote {path}")
    return path
