"""Measurement quality on a shared machine: detect interference, repeat windows, record why.

A latency number is only as good as the window it was timed in. On a shared machine another
process can take the core for part of a window (the row then comes out 1.5x slow and looks
like any other row). This module gives every timed window a verdict and every row a
``quality`` flag:

* **CPU.** Over each window the measuring thread's CPU time (``time.thread_time`` with one
  intra-op thread; process CPU time / threads otherwise) is compared with wall time. A window
  in which the measuring thread got less than ``min_cpu_share`` (default 0.95) of a core was
  disturbed: something else ran on its core. That alone misses the worst case on a small VM:
  a job on the *other* vCPU (often the SMT sibling of the same physical core) slowed a
  single-threaded ResNet-18 x0.5 window ~3x while the measuring thread kept 100 % of its
  core. So the machine-wide busy time (``/proc/stat``, steal included) minus this process's
  CPU time gives the **other load** during the window, as a share of the remaining cores'
  capacity; above ``max_other_busy`` (default 0.3) the window is disturbed. The host's
  1-minute load is recorded beside it.
* **CUDA.** Other compute processes on the device (NVML) and the clock-throttle reasons
  (bitmask, start and end of the window) are recorded; a window during which another compute
  process was present is disturbed.
* **Agreement.** Accepted windows must also agree: the relative range of their medians
  ``(max - min) / median`` must be at most ``max_window_spread`` (default 0.05). This catches
  what CPU time cannot see (a neighbour sharing caches and memory bandwidth).

:func:`run_windows` takes windows until ``n_windows`` accepted, mutually agreeing windows are
in hand, re-measuring after a disturbed window with exponential backoff, up to
``max_windows`` windows in all. The row records ``n_windows`` (taken), ``n_rejected``,
``latency_window_cv`` (CV of the used windows' medians: the row's own noise estimate),
``cpu_share`` (lowest share among the used windows) and ``quality``: ``clean`` (the first
``n_windows`` windows were used), ``retried`` (accepted after re-measuring) or ``disturbed``
(limit reached: the row keeps its best estimate and the flag; it is never dropped silently).

Provenance of the software (:func:`software_provenance`): package version, git commit and a
dirty flag, and the backend flags that change speed.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from carb_lib.core.vocab import QUALITIES  # noqa: F401  (values of the ``quality`` column, best first)

logger = logging.getLogger("carb.interference")

NAN = float("nan")

@dataclass(frozen=True)
class WindowPolicy:
    """How many windows, what counts as disturbed, how hard to retry.

    Attributes
    ----------
    n_windows : int, default 3
        Accepted, mutually agreeing windows a row needs.
    max_windows : int, default 8
        Windows taken at most (accepted or not) before the row is flagged ``disturbed``.
    min_cpu_share : float, default 0.95
        A CPU window whose measuring thread got less of a core than this is disturbed.
    max_window_spread : float, default 0.05
        Largest allowed ``(max - min) / median`` of the used windows' medians.
    backoff_s : float, default 0.05
        Sleep after a disturbed window, doubled after each further one (capped at 1 s).
    max_other_busy : float, default 0.3
        A CPU window during which other processes kept more than this share of the other
        cores busy is disturbed (``/proc/stat`` ticks are 10 ms, so shorter windows are noisy).
    """

    n_windows: int = 3
    max_windows: int = 8
    min_cpu_share: float = 0.95
    max_window_spread: float = 0.05
    backoff_s: float = 0.05
    max_other_busy: float = 0.3

    def __post_init__(self) -> None:
        if self.n_windows < 1:
            raise ValueError(f"n_windows must be >= 1, got {self.n_windows}")
        if self.max_windows < self.n_windows:
            raise ValueError(
                f"max_windows ({self.max_windows}) must be >= n_windows ({self.n_windows})"
            )
        if not 0 <= self.min_cpu_share <= 1:
            raise ValueError(f"min_cpu_share must be in [0, 1], got {self.min_cpu_share}")
        if self.max_window_spread < 0:
            raise ValueError(f"max_window_spread must be >= 0, got {self.max_window_spread}")


@dataclass
class Window:
    """One timed window: per-inference times and what the machine did meanwhile.

    ``share`` is the measuring thread's CPU time / wall time (NaN where not measured, e.g. on a
    GPU); ``disturbed_by`` is a reason when the window is known to be disturbed for another
    cause (e.g. another process on the GPU), else empty.
    """

    times_ms: np.ndarray
    wall_s: float
    share: float = NAN
    other_busy: float = NAN
    disturbed_by: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def median_ms(self) -> float:
        return float(np.median(self.times_ms))

    def verdict(self, policy: WindowPolicy) -> str:
        """Empty string if the window is accepted, else the reason it is not."""
        if self.disturbed_by:
            return self.disturbed_by
        if not math.isnan(self.share) and self.share < policy.min_cpu_share:
            return f"cpu share {self.share:.3f} < {policy.min_cpu_share}"
        if not math.isnan(self.other_busy) and self.other_busy > policy.max_other_busy:
            return f"other load {self.other_busy:.2f} > {policy.max_other_busy}"
        return ""


@dataclass
class WindowsResult:
    """The windows a row used and the bookkeeping of the ones it did not."""

    used: list[Window]
    n_windows: int
    n_rejected: int
    quality: str
    reasons: list[str]

    @property
    def times_ms(self) -> np.ndarray:
        return np.concatenate([w.times_ms for w in self.used])

    @property
    def wall_s(self) -> float:
        return float(sum(w.wall_s for w in self.used))

    @property
    def window_cv(self) -> float:
        meds = np.array([w.median_ms for w in self.used])
        if len(meds) < 2 or meds.mean() <= 0:
            return NAN
        return float(meds.std(ddof=1) / meds.mean())

    @property
    def cpu_share(self) -> float:
        shares = [w.share for w in self.used if not math.isnan(w.share)]
        return float(min(shares)) if shares else NAN

    @property
    def other_busy(self) -> float:
        vals = [w.other_busy for w in self.used if not math.isnan(w.other_busy)]
        return float(max(vals)) if vals else NAN

    def columns(self) -> dict[str, Any]:
        """The quality columns of a dataset row."""
        return {
            "quality": self.quality,
            "n_windows": self.n_windows,
            "n_rejected": self.n_rejected,
            "latency_window_cv": self.window_cv,
            "cpu_share": self.cpu_share,
            "other_busy": self.other_busy,
            "rejected_by": self.rejected_by,
        }

    @property
    def rejected_by(self) -> str:
        """Why windows were not used: ``share=a,other=b,spread=c`` (counts)."""
        a = sum(r.startswith("cpu share") for r in self.reasons)
        b = sum(r.startswith("other load") for r in self.reasons)
        return f"share={a},other={b},spread={max(self.n_rejected - a - b, 0)}"


def spread(windows: list[Window]) -> float:
    """``(max - min) / median`` of the windows' medians (0 for one window)."""
    meds = np.array([w.median_ms for w in windows])
    if len(meds) < 2:
        return 0.0
    return float((meds.max() - meds.min()) / np.median(meds))


def _best_agreeing(accepted: list[Window], k: int) -> list[Window]:
    """The ``k`` accepted windows whose medians are closest together (consecutive in
    sorted order), or all of them if fewer than ``k``."""
    if len(accepted) <= k:
        return list(accepted)
    order = sorted(range(len(accepted)), key=lambda i: accepted[i].median_ms)
    best, best_s = None, math.inf
    for j in range(len(order) - k + 1):
        group = [accepted[i] for i in order[j : j + k]]
        s = spread(group)
        if s < best_s:
            best, best_s = group, s
    return best  # type: ignore[return-value]


def run_windows(
    take_window: Callable[[], Window],
    policy: WindowPolicy,
    *,
    deadline_check: Callable[[], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> WindowsResult:
    """Take windows with ``take_window`` until ``policy.n_windows`` accepted windows agree.

    Parameters
    ----------
    take_window : callable
        Measures one window and returns a :class:`Window`.
    policy : WindowPolicy
    deadline_check : callable, optional
        Called between windows; raises to abort (the per-config wall-clock cap).
    sleep : callable
        ``time.sleep`` (tests replace it).

    Returns
    -------
    WindowsResult
        ``quality`` is ``clean`` when the first ``n_windows`` windows were accepted and agree,
        ``retried`` when agreement needed more windows, ``disturbed`` when ``max_windows``
        were taken without it (the most agreeing accepted windows are used, or, if none was
        accepted, the windows with the highest CPU share).
    """
    k = policy.n_windows
    taken: list[Window] = []
    accepted: list[Window] = []
    reasons: list[str] = []
    n_bad_in_row = 0
    while len(taken) < policy.max_windows:
        w = take_window()
        taken.append(w)
        why = w.verdict(policy)
        if why:
            reasons.append(why)
            n_bad_in_row += 1
            sleep(min(policy.backoff_s * 2 ** (n_bad_in_row - 1), 1.0))
        else:
            n_bad_in_row = 0
            accepted.append(w)
            if len(accepted) >= k:
                group = _best_agreeing(accepted, k)
                if spread(group) <= policy.max_window_spread:
                    quality = "clean" if len(taken) == k else "retried"
                    return WindowsResult(group, len(taken), len(taken) - k, quality, reasons)
        if deadline_check is not None and len(taken) < policy.max_windows:
            deadline_check()
    if accepted:
        used = _best_agreeing(accepted, k)
        reasons.append(f"windows disagree: spread {spread(used):.3f} > {policy.max_window_spread}")
    else:
        used = sorted(taken, key=lambda w: -w.share if not math.isnan(w.share) else 0.0)[:k]
    return WindowsResult(used, len(taken), len(taken) - len(used), "disturbed", reasons)


# ----------------------------------------------------------------------------------------
# CPU


def cpu_clock(threads: int) -> Callable[[], float]:
    """The CPU-time clock matching ``threads`` intra-op threads: this thread's CPU time for
    one thread, else process CPU time divided by ``threads``."""
    if threads <= 1:
        return time.thread_time
    return lambda: time.process_time() / threads


_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def machine_busy_s(stat_path: str = "/proc/stat") -> float:
    """Busy CPU seconds of the whole machine so far (all CPUs: user, nice, system, irq,
    softirq and steal ticks of ``/proc/stat``); NaN where unreadable."""
    try:
        with open(stat_path) as fh:
            first = fh.readline().split()
    except OSError:
        return NAN
    if not first or first[0] != "cpu":
        return NAN
    v = [int(x) for x in first[1:9]] + [0] * max(0, 8 - len(first[1:9]))
    user, nice, system, _idle, _iowait, irq, softirq, steal = v[:8]
    return (user + nice + system + irq + softirq + steal) / _CLK_TCK


class OtherLoad:
    """Share of the other cores kept busy by other processes (and the hypervisor) between
    :meth:`start` and :meth:`stop`: (machine busy time - this process's CPU time) / (wall time
    x (cores - 1)). NaN where ``/proc/stat`` is unreadable."""

    def __init__(self, stat_path: str = "/proc/stat", cores: int | None = None):
        self.stat_path = stat_path
        self.cores = cores or os.cpu_count() or 1

    def start(self) -> None:
        self._b0 = machine_busy_s(self.stat_path)
        self._p0 = time.process_time()
        self._t0 = time.perf_counter()

    def stop(self) -> float:
        b1 = machine_busy_s(self.stat_path)
        wall = time.perf_counter() - self._t0
        mine = time.process_time() - self._p0
        if math.isnan(b1) or math.isnan(self._b0) or wall <= 0:
            return NAN
        other = max((b1 - self._b0) - mine, 0.0)
        return other / (wall * max(self.cores - 1, 1))


def host_load() -> float:
    """The host's 1-minute load average (NaN where unavailable)."""
    try:
        return float(os.getloadavg()[0])
    except (OSError, AttributeError):
        return NAN


# ----------------------------------------------------------------------------------------
# provenance


def _git(root: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


#: Tracked paths whose changes do not make the measuring code dirty: a campaign appends to
#: tracked data files while it runs (e.g. ``carb kernels --anchors-only`` before the rows).
NOT_CODE: tuple[str, ...] = ("data", "results", "figures")


def code_dirty(root: Path) -> bool | None:
    """Whether the checkout at ``root`` has uncommitted changes to tracked files outside
    :data:`NOT_CODE` (None where git cannot tell)."""
    status = _git(root, "status", "--porcelain", "--untracked-files=no", "--", ".",
                  *(f":(exclude){p}" for p in NOT_CODE))
    return bool(status) if status is not None else None


@functools.lru_cache(maxsize=1)
def code_version() -> dict[str, Any]:
    """``carb_version``, ``git_commit`` and ``git_dirty`` of the running package (once per
    process). Outside a git checkout the commit comes from ``CARB_GIT_COMMIT`` if set (a
    copied tree, e.g. a borrowed GPU machine), else it is missing."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        ver = version("carb_lib")
    except PackageNotFoundError:
        ver = "unknown"
    root = Path(__file__).resolve().parents[2]
    commit = _git(root, "rev-parse", "HEAD")
    dirty: bool | None = None
    if commit:
        dirty = code_dirty(root)
    else:
        commit = os.environ.get("CARB_GIT_COMMIT") or None
    return {"carb_version": ver, "git_commit": commit, "git_dirty": dirty}


def backend_flags() -> dict[str, Any]:
    """The torch backend flags that change speed, as they are now (None where absent)."""
    import torch

    def get(fn: Callable[[], Any]) -> Any:
        try:
            return bool(fn())
        except Exception:
            return None

    return {
        "mkldnn_enabled": get(lambda: torch.backends.mkldnn.enabled),
        "cudnn_benchmark": get(lambda: torch.backends.cudnn.benchmark),
        "tf32_matmul": get(lambda: torch.backends.cuda.matmul.allow_tf32),
        "tf32_cudnn": get(lambda: torch.backends.cudnn.allow_tf32),
        "deterministic": get(torch.are_deterministic_algorithms_enabled),
    }


def software_provenance() -> dict[str, Any]:
    """:func:`code_version` and :func:`backend_flags` together (the provenance columns)."""
    return {**code_version(), **backend_flags()}
