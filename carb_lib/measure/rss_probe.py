"""The process's peak resident-set growth during one forward, beside the allocator's peak.

``peak_mem_mib`` on the CPU is the allocator's peak (torch's profiler); what the operating
system charges a process is its resident set (RSS), which adds allocator and library overheads
and keeps freed memory resident. A campaign measures its configs one after another in one
process whose heap is kept, so an RSS read there sees only growth beyond the heap earlier
configs left: this probe measures each config in a fresh process instead, on the first forward
after the model is built (:func:`carb_lib.measure.counters.rss_peak_growth_bytes`; Linux), then the
allocator's peak of a second forward as the profiler measures it.

One row per config: ``config_id``, ``rss_before_forward_mib`` (the process with torch, the
model and its input), ``rss_peak_growth_mib``, ``alloc_peak_mib`` (parameters, buffers and input
plus the peak increment: ``peak_mem_mib``'s definition), ``alloc_peak_increment_mib``,
``threads``, ``status`` (ok | oom | error) and ``error``. ``carb zoo rss --configs LIST --out
FILE`` runs it over a config list (resuming: configs already in ``FILE`` are skipped).
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from carb_lib.core.tables import read_table, table_format, write_table
from carb_lib.families import space
from carb_lib.families.module import OWN_COLUMNS
from carb_lib.measure.counters import _status_kib, cpu_peak_memory_bytes, rss_peak_growth_bytes
from carb_lib.measure.devices import _dtype, _make_input
from carb_lib.measure.profiling import Protocol, _is_oom

logger = logging.getLogger(__name__)
MIB = 2**20
#: The probe's columns, in order.
COLUMNS: tuple[str, ...] = (
    "config_id", "rss_before_forward_mib", "rss_peak_growth_mib", "alloc_peak_mib",
    "alloc_peak_increment_mib", "threads", "status", "error",
)  # fmt: skip


def probe_config(row: dict[str, Any], threads: int = 1) -> dict[str, Any]:
    """Measure one config in this process (call it in a fresh one: :func:`probe_configs`)."""
    import gc

    import torch

    torch.set_num_threads(int(threads))
    cfg = space.config_from_row(row)
    out: dict[str, Any] = dict.fromkeys(COLUMNS, float("nan"))
    out.update(config_id=cfg.config_id, threads=int(threads), status="ok", error=None)
    try:
        dtype = _dtype(cfg.precision)
        model = space.build_model(cfg).to(dtype=dtype).eval()
        x = _make_input(cfg, Protocol(), "cpu", dtype)
        gc.collect()
        out["rss_before_forward_mib"] = _status_kib("VmRSS") * 1024 / MIB
        with torch.inference_mode():
            _, growth = rss_peak_growth_bytes(lambda: model(x))
        mem = cpu_peak_memory_bytes(model, x)
        out.update(rss_peak_growth_mib=growth / MIB, alloc_peak_mib=mem["peak_bytes"] / MIB,
                   alloc_peak_increment_mib=mem["peak_increment_bytes"] / MIB)
    except Exception as exc:  # noqa: BLE001 - a failing config is a row, as in the profiler
        out.update(status="oom" if _is_oom(exc) else "error",
                   error=f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}")
    return out


def _label(row: dict[str, Any]) -> str:
    """A config's factory where it has one (family ``module``), else its id."""
    return str(row.get(OWN_COLUMNS[0].name) or row["config_id"])


def probe_configs(configs: pd.DataFrame, out: str | Path, threads: int = 1,
                  timeout_s: float = 300.0, echo: Any = None) -> pd.DataFrame:
    """Probe every config of ``configs`` (config columns, e.g. from
    :func:`carb_lib.measure.campaign.read_config_list`), each in a fresh Python process, appending
    to ``out`` (.parquet or .csv; configs already there are skipped) after each config."""
    table_format(out, "--out")
    out = Path(out)
    done = read_table(out, "--out") if out.exists() else pd.DataFrame(columns=list(COLUMNS))
    have = set(done["config_id"].astype(str))
    todo = configs[~configs["config_id"].astype(str).isin(have)]
    rows = done.to_dict(orient="records")
    for i, row in enumerate(todo.to_dict(orient="records")):
        cfg = {k: v for k, v in row.items() if not (not isinstance(v, str) and pd.isna(v))}
        try:
            res = subprocess.run(
                [sys.executable, "-m", "carb_lib.measure.rss_probe", json.dumps(cfg, default=str),
                 str(threads)], capture_output=True, text=True, timeout=timeout_s, check=False)
            lines = res.stdout.strip().splitlines()
            rec = json.loads(lines[-1]) if res.returncode == 0 and lines else {
                **dict.fromkeys(COLUMNS, float("nan")), "config_id": row["config_id"],
                "threads": threads, "status": "error",
                "error": f"probe process exited {res.returncode}: {res.stderr.strip()[-300:]}"}
        except subprocess.TimeoutExpired:
            rec = {**dict.fromkeys(COLUMNS, float("nan")), "config_id": row["config_id"],
                   "threads": threads, "status": "error", "error": f"timeout ({timeout_s} s)"}
        rows.append(rec)
        write_table(pd.DataFrame(rows, columns=list(COLUMNS)), out, "--out")
        if echo is not None:
            echo(f"{i + 1}/{len(todo)} {_label(row)} batch "
                 f"{row.get('batch')} {row.get('precision')}: {rec['status']}, RSS growth "
                 f"{rec['rss_peak_growth_mib']:.1f} MiB, allocator peak "
                 f"{rec['alloc_peak_mib']:.1f} MiB")
    return pd.DataFrame(rows, columns=list(COLUMNS))


if __name__ == "__main__":  # one config, in this fresh process: its row as JSON on stdout
    sys.stdout.write(json.dumps(probe_config(json.loads(sys.argv[1]), int(sys.argv[2])),
                                default=float) + "\n")
