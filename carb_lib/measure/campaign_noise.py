"""Noise study and measurement in fresh processes.

:func:`noise_study` re-measures configs ``repeats`` times (back to back, or spread over
rounds), each measurement in a fresh Python process by default
(:func:`measure_in_subprocess`: ``python -m carb_lib.measure.campaign_noise one --config JSON``), and
:func:`noise_summary` gives the spread per target. :func:`run_one` (one config given as a row of
config columns -> one schema row) is the independent task a distributed engine can map.
Every name is importable from :mod:`carb_lib.measure.campaign` too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.vocab import TARGETS
from carb_lib.families.space import config_from_row
from carb_lib.measure.profiling import NAN, Device, Protocol, get_device, profile_config

__all__ = ["TARGET_COLUMNS", "measure_in_subprocess", "measure_many_in_subprocess",
           "noise_study", "noise_summary", "run_one"]

#: Targets of the noise summary (:data:`carb_lib.core.vocab.TARGETS`, the old name).
TARGET_COLUMNS: tuple[str, ...] = TARGETS


def run_one(
    config_row: Mapping[str, Any],
    device: str | Device = "cpu",
    protocol: Protocol | None = None,
    idle_power_w: float = NAN,
) -> dict[str, Any]:
    """Measure one config given as a row of config columns; returns one schema row.

    Independent of any campaign state: usable as the task of a distributed engine.
    """
    return profile_config(
        config_from_row(dict(config_row)), device, protocol, idle_power_w=idle_power_w
    )


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, (np.bool_,)):
        return bool(o)
    if o is pd.NA:
        return None
    return str(o)


def measure_in_subprocess(
    config_row: Mapping[str, Any],
    device: str = "cpu",
    protocol: Protocol | None = None,
    platform: str | None = None,
    timeout_s: float = 900.0,
) -> dict[str, Any]:
    """Run :func:`run_one` in a fresh Python process and return its row."""
    return measure_many_in_subprocess([config_row], device, protocol, platform, timeout_s)[0]


def measure_many_in_subprocess(
    config_rows: list[Mapping[str, Any]],
    device: str = "cpu",
    protocol: Protocol | None = None,
    platform: str | None = None,
    timeout_s: float = 900.0,
) -> list[dict[str, Any]]:
    """Run :func:`run_one` on each config, in order, in ONE fresh Python process; its rows."""
    protocol = protocol or Protocol()
    cmd = [
        sys.executable, "-m", "carb_lib.measure.campaign_noise", "one",
        "--config", json.dumps([dict(r) for r in config_rows], default=_json_default),
        "--device", device,
        "--protocol", json.dumps(protocol.to_dict()),
    ]  # fmt: skip
    if platform:
        cmd += ["--platform", platform]
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
    if proc.returncode != 0:
        raise RuntimeError(
            f"measurement subprocess failed ({proc.returncode}): {proc.stderr[-2000:]}"
        )
    rows = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if len(rows) != len(config_rows):
        raise RuntimeError(
            f"measurement subprocess returned {len(rows)} rows for {len(config_rows)} configs"
        )
    return rows


def noise_study(
    configs: pd.DataFrame,
    device: str = "cpu",
    protocol: Protocol | None = None,
    *,
    repeats: int = 3,
    modes: tuple[str, ...] = ("back_to_back", "spread"),
    separate_processes: bool = True,
    platform: str | None = None,
    spread_gap_s: float = 0.0,
    progress: bool = True,
    spread_process_per_round: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Re-measure each config ``repeats`` times and report the spread per target.

    Modes: ``back_to_back`` measures a config ``repeats`` times in a row; ``spread`` runs
    ``repeats`` rounds over all configs (repeats of one config are separated by every other
    config, plus ``spread_gap_s`` seconds of idle between rounds). With
    ``separate_processes`` every measurement is a fresh Python process
    (:func:`measure_in_subprocess`), so process-level state (allocator, thread pools, cuDNN
    handles) is not shared; otherwise they run in this process (a GPU self-check does this).
    ``spread_process_per_round`` runs each spread round (all configs, in order) in one fresh
    process instead: repeats of a config are still in separate processes, at a fraction of the
    start-up cost, so that many configs can be studied.

    Returns
    -------
    rows : pandas.DataFrame
        Every measurement with ``noise_mode``, ``repeat`` and ``seq`` columns.
    summary : pandas.DataFrame
        Per mode and target: median, mean and max over configs of the CV (std/mean, ddof=1)
        across repeats, and the number of configs with ``repeats`` ok rows.
    """
    from tqdm.auto import tqdm

    protocol = protocol or Protocol()
    cfg_rows = [
        {c: v for c, v in r.items() if c != "config_id"} for r in configs.to_dict(orient="records")
    ]
    plan: list[tuple[str, int, int]] = []
    for mode in modes:
        if mode == "back_to_back":
            plan += [(mode, i, r) for i in range(len(cfg_rows)) for r in range(repeats)]
        elif mode == "spread":
            plan += [(mode, i, r) for r in range(repeats) for i in range(len(cfg_rows))]
        else:
            raise ValueError(f"mode {mode!r} unknown; use back_to_back or spread")
    dev: str | Device = device
    if not separate_processes:
        dev = get_device(device, platform=platform)
    rows = []
    batched: dict[int, dict[str, Any]] = {}  # spread rows measured one process per round
    for seq, (mode, i, r) in enumerate(tqdm(plan, desc="noise", disable=not progress)):
        if mode == "spread" and spread_gap_s > 0 and r > 0 and i == 0:
            time.sleep(spread_gap_s)
        if mode == "spread" and separate_processes and spread_process_per_round:
            if i == 0:
                batched = dict(enumerate(
                    measure_many_in_subprocess(cfg_rows, device, protocol, platform,
                                               timeout_s=900.0 * len(cfg_rows))
                ))
            row = batched[i]
        elif separate_processes:
            row = measure_in_subprocess(cfg_rows[i], device, protocol, platform)
        else:
            row = run_one(cfg_rows[i], dev, protocol)
        row.update(noise_mode=mode, repeat=r, seq=seq)
        rows.append(row)
    df = pd.DataFrame(rows)
    return df, noise_summary(df)


def noise_summary(rows: pd.DataFrame) -> pd.DataFrame:
    """CV across repeats per (mode, config) and target, summarised over configs."""
    out = []
    ok = rows[rows["status"] == "ok"]
    for mode, g in ok.groupby("noise_mode", sort=False):
        for target in TARGET_COLUMNS:
            vals = pd.to_numeric(g[target], errors="coerce")
            per = vals.groupby(g["config_id"]).agg(["std", "mean", "count"])
            per = per[(per["count"] >= 2) & per["mean"].notna()]
            cv = (per["std"] / per["mean"]).dropna()
            out.append({
                "noise_mode": mode, "target": target, "n_configs": int(len(cv)),
                "median_cv": float(cv.median()) if len(cv) else NAN,
                "mean_cv": float(cv.mean()) if len(cv) else NAN,
                "max_cv": float(cv.max()) if len(cv) else NAN,
            })  # fmt: skip
    return pd.DataFrame(out)


# ----------------------------------------------------------------------------------------
def _main(argv: list[str] | None = None) -> int:
    """``python -m carb_lib.measure.campaign_noise one --config JSON [--device D] [--protocol JSON]``:
    measure one config (a JSON object) or several in order (a JSON list) and print one JSON row
    per line (used by :func:`measure_in_subprocess` / :func:`measure_many_in_subprocess`)."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m carb_lib.measure.campaign_noise")
    sub = p.add_subparsers(dest="cmd", required=True)
    one = sub.add_parser("one")
    one.add_argument("--config", required=True)
    one.add_argument("--device", default="cpu")
    one.add_argument("--protocol", default="{}")
    one.add_argument("--platform", default=None)
    a = p.parse_args(argv)
    protocol = Protocol(**json.loads(a.protocol))
    dev = get_device(a.device, platform=a.platform)
    cfg = json.loads(a.config)
    for c in cfg if isinstance(cfg, list) else [cfg]:
        # the rows are this entry point's output (read by measure_many_in_subprocess)
        sys.stdout.write(json.dumps(run_one(c, dev, protocol), default=_json_default) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
