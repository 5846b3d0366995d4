"""A wall-clock cap that holds for user code: :func:`wall_clock_cap`.

The profiler's per-config cap (``Protocol.timeout_s``, ``--timeout-s``) used to be checked
between inferences only, so a user ``--module`` whose build or forward never returns hung the
command (and kept its campaign folder locked). :func:`wall_clock_cap` runs a block under two
stages of watchdog, in the same process (the campaign keeps its one long-lived process: the
kept heap and the page-fault findings depend on it):

1. at the cap, ``SIGALRM`` raises :class:`~carb_lib.measure.protocol.ConfigTimeoutError` in the main
   thread, wherever the Python code is (a loop, a ``sleep``, a forward between two operators):
   the caller records the config as a timeout and goes on;
2. if the block still has not returned ``grace_s`` later (code stuck inside one C call never
   returns to Python), a watchdog thread runs the :func:`before_hard_exit` callbacks (a
   campaign records the config as a timeout), releases the folder locks this process holds
   (:func:`carb_lib.measure.lock.release_all`), prints one line and ends the process (exit code 3).

Both stages cost nothing while the block runs (a kernel timer and a thread asleep on an event);
outside the main thread, only the in-code checks of the caller apply.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator

from carb_lib.measure.lock import release_all
from carb_lib.measure.protocol import ConfigTimeoutError

__all__ = ["HARD_EXIT_CODE", "UserExitError", "before_hard_exit", "exits_trapped",
           "wall_clock_cap"]

#: Callbacks the second stage runs before it ends the process (:func:`before_hard_exit`).
_HOOKS: list[Callable[[], None]] = []


@contextlib.contextmanager
def before_hard_exit(callback: Callable[[], None]) -> Iterator[None]:
    """Within the block, the second stage of :func:`wall_clock_cap` calls ``callback`` before
    it ends the process (a campaign records the stuck config as a timeout, so that a resumed
    campaign goes past it instead of getting stuck on it again)."""
    _HOOKS.append(callback)
    try:
        yield
    finally:
        _HOOKS.remove(callback)

#: Exit code of a process ended by the second stage (a block stuck in C code).
HARD_EXIT_CODE = 3


def _grace(cap_s: float) -> float:
    return max(10.0, 0.5 * cap_s)


@contextlib.contextmanager
def wall_clock_cap(cap_s: float | None, what: str, grace_s: float | None = None,
                   on_hang: Callable[[], None] | None = None,
                   slack_s: float = 0.0) -> Iterator[None]:
    """Run the block under a wall-clock cap of ``cap_s`` seconds (None or inf: no cap).

    An exception raised by a signal can land anywhere in Python code, so the first stage is a
    backstop: where the caller checks the cap itself (the profiler's deadline checks between
    inferences), ``slack_s`` lets those checks end the block first, cleanly.

    Parameters
    ----------
    cap_s : float or None
    what : str
        Names the block in the timeout message (``"building and timing the config"``).
    grace_s : float, optional
        Seconds past the first stage before the process is ended (default
        ``max(10, cap / 2)``).
    on_hang : callable, optional
        Called by the second stage before the process ends (default: release every folder
        lock this process holds).
    slack_s : float
        Seconds past the cap before the first stage fires.

    Raises
    ------
    ConfigTimeoutError
        In the block, once ``cap_s`` has passed.
    """
    main = threading.current_thread() is threading.main_thread()
    if cap_s is None or cap_s == float("inf") or not main or not hasattr(signal, "setitimer"):
        yield
        return
    grace = _grace(float(cap_s)) if grace_s is None else grace_s
    cap_s = max(float(cap_s) + max(float(slack_s), 0.0), 1e-3)
    t0 = time.monotonic()
    old_handler = signal.getsignal(signal.SIGALRM)
    old_delay, old_interval = signal.getitimer(signal.ITIMER_REAL)
    outer = {"first": 0 < old_delay <= cap_s, "fired": False}

    def on_alarm(signum, frame):
        if outer["first"]:  # an enclosing timer (e.g. a test's) is due first: its turn
            outer["first"], outer["fired"] = False, True
            signal.setitimer(signal.ITIMER_REAL, max(cap_s - (time.monotonic() - t0), 1e-3))
            if callable(old_handler):
                old_handler(signum, frame)
            return
        raise ConfigTimeoutError(f"timeout: per-config wall-clock cap exceeded during {what}")

    done = threading.Event()

    def hard_stop() -> None:
        if done.wait(cap_s + grace):
            return
        try:
            (on_hang or _release_locks)()
        finally:
            sys.stderr.write(f"error: {what} did not return {grace:g} s past its wall-clock cap "
                             "(stuck in native code); the folder lock is released and the "
                             "process ends: rerun to resume, lower the config's size, or "
                             "raise --timeout-s\n")
            sys.stderr.flush()
            os._exit(HARD_EXIT_CODE)

    guard = threading.Thread(target=hard_stop, name="carb-watchdog", daemon=True)
    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, old_delay if outer["first"] else cap_s)
    guard.start()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        done.set()
        signal.signal(signal.SIGALRM, old_handler)
        if old_delay > 0 and not outer["fired"]:  # an enclosing timer: its remaining time
            left = old_delay - (time.monotonic() - t0)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-6), old_interval)


def _release_locks() -> None:
    for hook in list(_HOOKS):
        try:
            hook()
        except Exception as exc:  # noqa: BLE001 - the process ends anyway: say why, go on
            sys.stderr.write(f"warning: {type(exc).__name__}: {exc}\n")
    release_all()


class UserExitError(RuntimeError):
    """User code (a ``--module`` network's build or forward) tried to end the process."""


@contextlib.contextmanager
def exits_trapped(what: str) -> Iterator[None]:
    """Run user code whose ``sys.exit(...)`` or ``os._exit(...)`` must not end CARB's process:
    either becomes a :class:`UserExitError` naming ``what`` (the network's failure, reported
    as such). ``os._exit`` is trapped in this thread only; the watchdog's own hard exit
    (another thread) still ends the process."""
    import threading

    real, me = os._exit, threading.get_ident()

    def trapped(code: int = 0) -> None:
        if threading.get_ident() != me:
            real(code)
        raise UserExitError(f"{what}: the network's code called os._exit({code}), which would "
                            "end the process; a network must return or raise")

    os._exit = trapped
    try:
        yield
    except SystemExit as exc:
        raise UserExitError(f"{what}: the network's code called sys.exit({exc.code!r}), which "
                            "would end the process; a network must return or raise") from None
    finally:
        os._exit = real
