"""One writer per campaign folder: a lock file with the holder's pid and host.

Two ``carb profile`` runs on one folder would measure the same configs twice, each under the
other's contention. :class:`FolderLock` creates ``<folder>/.carb-lock`` atomically
(``O_CREAT | O_EXCL``) holding ``{"pid", "host", "since"}``. A lock left by a process that is
no longer alive on this host is stale and taken over (logged); a live holder, or a holder on
another host (whose liveness cannot be checked), is refused with :class:`FolderLockedError`
naming it.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

logger = logging.getLogger("carb.lock")
LOCK_NAME = ".carb-lock"


class FolderLockedError(RuntimeError):
    """Another live process holds the folder's lock."""


#: The locks this process holds (released by :func:`release_all` before a forced exit).
_HELD: list[FolderLock] = []


def release_all() -> None:
    """Release every folder lock this process holds (the watchdog's last act before it ends a
    process stuck in native code: :mod:`carb_lib.measure.watchdog`)."""
    for lock in list(_HELD):
        try:
            lock.release()
        except OSError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


class FolderLock:
    """Context manager holding ``<folder>/.carb-lock`` for this process.

    Examples
    --------
    >>> import tempfile
    >>> with FolderLock(tempfile.mkdtemp()) as lock:
    ...     lock.path.name
    '.carb-lock'
    """

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self.took_over: dict[str, Any] | None = None

    def _holder(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None

    def acquire(self) -> FolderLock:
        self.folder.mkdir(parents=True, exist_ok=True)
        me = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self._holder()
                if holder is None:  # unreadable or being written: treat as stale
                    self.path.unlink(missing_ok=True)
                    continue
                pid, host = int(holder.get("pid", -1)), str(holder.get("host", ""))
                if host == me["host"] and (pid == me["pid"] or not _alive(pid)):
                    logger.warning("taking over a stale lock of pid %s (%s)", pid, self.path)
                    self.took_over = holder
                    self.path.unlink(missing_ok=True)
                    continue
                where = "this host" if host == me["host"] else f"host {host!r}"
                raise FolderLockedError(
                    f"{self.folder} is in use by pid {pid} on {where} since "
                    f"{holder.get('since', '?')}; wait for it to finish (or, if that process "
                    f"is gone, delete {self.path})"
                ) from None
            with os.fdopen(fd, "w") as fh:
                json.dump(me, fh)
            _HELD.append(self)
            return self
        raise FolderLockedError(f"could not take the lock {self.path}")

    def release(self) -> None:
        if self in _HELD:
            _HELD.remove(self)
        holder = self._holder()
        if holder is not None and int(holder.get("pid", -1)) == os.getpid():
            self.path.unlink(missing_ok=True)

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
