"""A campaign folder's identity (``carb profile --out``): the protocol it is timed with, its
platform and its thread count.

``protocol.json`` is written once, when a campaign starts in a folder without result parts,
and never replaced. A resume (a run into a folder that already holds parts or a
``protocol.json``) is refused before anything is written when its protocol differs (a field
other than the per-config caps ``timeout_s`` and ``cooldown_s``), when ``--platform`` names
another platform than the folder's rows, or, on the CPU, when its thread count differs from
that of any row already there (whatever their platform name).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["IDENTITY_IGNORED", "PROTOCOL_FILE", "check_campaign_folder", "folder_rows",
           "write_protocol_once"]

#: The file of a campaign folder that holds its protocol.
PROTOCOL_FILE = "protocol.json"
#: Protocol fields a resume may change: caps on a config, not how it is timed.
IDENTITY_IGNORED = ("timeout_s", "cooldown_s")


def folder_rows(out: str | Path) -> list[tuple[str, Any]]:
    """(platform, threads) of every row in the folder's result parts (its ``pass<p>/``
    sub-folders included); threads is None where a part lacks the column."""
    import pyarrow.parquet as pq

    from carb_lib.measure.campaign_parts import RESULTS_PREFIX, _part_files, pass_dirs

    out = Path(out)
    rows: list[tuple[str, Any]] = []
    for folder in [out, *pass_dirs(out)]:
        for f in _part_files(folder, RESULTS_PREFIX):
            names = pq.read_schema(f).names
            cols = ["platform", *(["threads"] if "threads" in names else [])]
            t = pq.read_table(f, columns=cols).to_pydict()
            rows += list(zip(t["platform"], t.get("threads", [None] * len(t["platform"])),
                             strict=True))
    return rows


def check_campaign_folder(out: str | Path, protocol: dict[str, Any], *, platform: str | None,
                          threads: int, cpu: bool, how: str = "--threads") -> None:
    """Refuse resuming ``out`` under another protocol, platform or thread count (nothing is
    written).

    Parameters
    ----------
    protocol : dict
        The protocol this run times with (:meth:`Protocol.to_dict`, ``threads`` resolved).
    platform : str, optional
        ``--platform`` as given (None: the device's name, not checked here).
    threads : int
        The thread count this run times with.
    cpu : bool
        Whether the run times on the CPU (thread counts are checked only there).
    how : str
        Where the thread count comes from, for the message.

    Raises
    ------
    ValueError
        Naming the folder, the field or the platform, and both values.
    """
    out = Path(out)
    if not out.is_dir():
        return
    saved = out / PROTOCOL_FILE
    if saved.is_file():
        try:
            old = json.loads(saved.read_text())
            if not isinstance(old, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            raise ValueError(f"--out {out}: {saved.name} cannot be read ({exc}); this folder's "
                             "protocol is unknown: give the campaign a new --out") from None
        for key in sorted(set(old) & set(protocol)):  # a field added since is not compared
            if key in IDENTITY_IGNORED or (key == "threads" and old.get(key) is None):
                continue
            if old.get(key) != protocol.get(key):
                raise ValueError(
                    f"--out {out} is a campaign timed with {key}={old.get(key)!r} "
                    f"({saved.name}); this run would time with {key}={protocol.get(key)!r}: "
                    "resume it with its protocol, or give this run its own --out")
    rows = folder_rows(out)
    plats = sorted({str(p) for p, _ in rows})
    recorded = sorted({int(t) for _, t in rows if t is not None})
    if cpu and recorded and recorded != [threads]:
        raise ValueError(f"--out {out} holds rows of platform(s) "
                         f"{', '.join(map(repr, plats))} timed with "
                         f"{'/'.join(map(str, recorded))} thread(s); this campaign would time "
                         f"with {threads} ({how}): resume it with --threads {recorded[0]}, or "
                         "give this run its own --out")
    if platform is not None and plats and platform not in plats:
        raise ValueError(f"--out {out} holds rows of platform(s) {plats}, not {platform!r}: "
                         "one campaign folder is one platform; give this run its own --out")


def write_protocol_once(out: str | Path, protocol: dict[str, Any]) -> Path | None:
    """Write ``out/protocol.json`` if the folder has neither one nor result parts yet (a fresh
    campaign); never replace one. Returns the path written, or None."""
    out = Path(out)
    saved = out / PROTOCOL_FILE
    if saved.exists() or (out.is_dir() and folder_rows(out)):
        return None
    out.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".tmp-{saved.name}.", dir=out)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(protocol, indent=1) + "\n")
        os.chmod(tmp, 0o644)
        os.link(tmp, saved)  # complete or absent; never over one written meanwhile
    except FileExistsError:
        return None
    finally:
        os.unlink(tmp)
    return saved
