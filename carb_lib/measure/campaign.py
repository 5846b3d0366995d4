"""Measurement campaigns: many configs on one device, crash-safe, resumable, drift-controlled.

A campaign measures configs in a **seeded random order** (so slow drift of the machine is not
confounded with any config column) and appends each result as a small Parquet **part file**
written atomically (temporary file in the same folder, fsync, rename): a ``SIGKILL`` at any
moment loses at most the config in flight and never leaves a partial or duplicate row. A rerun
with the same output folder **resumes**: config_ids already present in ``results-*.parquet``
parts (for the same platform) are skipped.

Drift control: a fixed **reference config** is measured at the start and every ``ref_every``
configs (default 50); its rows go to ``reference-*.parquet`` parts (kept, never merged into
the dataset). :func:`merge_parts` fills ``latency_norm_ms = latency_ms / (r(t) / r0)`` where
``r(t)`` is the reference latency linearly interpolated at the row's ``measured_at`` (held
constant outside the measured span) and ``r0`` the first reference latency; the raw
``latency_ms`` is never changed. On a GPU the idle power baseline is measured at the start
and every ``ref_every`` configs and passed to :func:`carb_lib.measure.profiling.profile_config`.

Each config is an independent task (:func:`run_one`), so a distributed engine can map it over
workers; :func:`shard_mask` splits a config list deterministically by a hash of config_id.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.tables import TableError, read_table
from carb_lib.dataset.features import static_features
from carb_lib.dataset.schema import COLUMNS, clean_temporary_files
from carb_lib.families import DEFAULT_FAMILY, get_family, space
from carb_lib.families.space import add_config_ids, config_from_row
from carb_lib.measure.campaign_noise import (  # noqa: F401  (re-exported: the old home of these names)
    TARGET_COLUMNS,
    _json_default,
    measure_in_subprocess,
    measure_many_in_subprocess,
    noise_study,
    noise_summary,
    run_one,
)
from carb_lib.measure.campaign_parts import (  # noqa: F401  (re-exported)
    REFERENCE_PREFIX,
    RESULTS_PREFIX,
    PartWriter,
    _part_files,
    check_one_cpu,
    dedupe,
    done_ids,
    drift_summary,
    drift_table,
    merge_parts,
    normalise_latency,
    parse_shard,
    part_cpu_ids,
    part_heaps,
    part_threads,
    read_parts,
    reference_rows,
    shard_mask,
    shard_of,
)
from carb_lib.measure.devices import refuse_other_cpu
from carb_lib.measure.lock import FolderLock
from carb_lib.measure.profiling import NAN, Device, Protocol, base_row, get_device, profile_config
from carb_lib.measure.watchdog import before_hard_exit

logger = logging.getLogger("carb.campaign")

#: Reference measurements tried at each checkpoint until one is accepted.
REFERENCE_TRIES = 3
#: Default reference config: the default family's ``reference_config`` (ResNet-18 at width
#: 0.5, 64 px, batch 8, fp32: a few ms on a CPU; launch-bound on a large GPU).
DEFAULT_REFERENCE: dict[str, Any] = dict(get_family(DEFAULT_FAMILY).reference_config or {})



def skipped_row(config: Any, device: Device, protocol: Protocol, reason: str) -> dict[str, Any]:
    """A ``status == "skipped"`` row (config and provenance filled)."""
    row = base_row(config, device, protocol)
    row.update(status="skipped", error=reason)
    return row


def stuck_row(config: Any, device: Device, protocol: Protocol) -> dict[str, Any]:
    """The ``status == "error"`` row of a config whose measurement stayed stuck in native code
    past its wall-clock cap (written by the watchdog before it ends the process, so that a
    resumed campaign goes past the config: :mod:`carb_lib.measure.watchdog`)."""
    row = skipped_row(config, device, protocol, "timeout: stuck in native code past the "
                      f"per-config wall-clock cap (cap {protocol.timeout_s} s); the process "
                      "was ended")
    row["status"] = "error"
    return row


def _flops(configs: pd.DataFrame) -> pd.Series:
    if "flops" in configs.columns:
        return configs["flops"].astype(float)

    return static_features(configs)["flops"].astype(float)


# ----------------------------------------------------------------------------------------
# campaign


@dataclass
class CampaignResult:
    """What a campaign run did."""

    out_dir: str
    platform: str
    n_total: int = 0
    n_already_done: int = 0
    n_planned: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    n_reference: int = 0
    stopped_by_budget: bool = False
    elapsed_s: float = 0.0
    drift: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ConfigListError(ValueError):
    """A config list (``--configs``) is unreadable or holds an invalid row; nothing measured."""


def read_config_list(path: str | Path) -> pd.DataFrame:
    """Read and validate a config list: exactly the configs to measure.

    The file (``.parquet`` or ``.csv``) holds either config columns (any family; other columns
    of the dataset schema are allowed and ignored, so a shipped dataset can be passed to
    re-measure its rows) or only the ``config_id`` column (configs of the paper grid). Every
    row is validated by its family before anything is measured.

    Raises
    ------
    ConfigListError
        Unreadable or empty file, unknown columns, an invalid value (names row, column and
        value), an unknown ``config_id``, a ``config_id`` that does not match its config
        columns, or a duplicated config.
    """
    p = Path(path)
    try:
        df = read_table(p, "config list")
    except TableError as exc:
        raise ConfigListError(str(exc)) from None
    unknown = [c for c in df.columns if c not in COLUMNS]
    if unknown:
        raise ConfigListError(
            f"{p}: unknown column(s) {unknown}; give config columns "
            f"({', '.join(space.CONFIG_COLUMNS)}) or config_id"
        )
    config_cols = [c for c in df.columns if COLUMNS[c].group == "config" and c != "config_id"]
    if not config_cols:
        if "config_id" not in df.columns:
            raise ConfigListError(f"{p}: neither config columns nor config_id")
        grid = space.paper_grid().set_index("config_id")
        ids = df["config_id"].astype(str)
        bad = ~ids.isin(grid.index)
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise ConfigListError(
                f"{p}: row {i}, column 'config_id': {ids.iloc[i]!r} is not a config of the "
                f"paper grid ({int(bad.sum())} unknown id(s)); give config columns instead"
            )
        out = grid.loc[ids.to_numpy()].reset_index()
    else:
        configs = []
        for i, row in enumerate(df[config_cols].to_dict(orient="records")):
            row = {k: v for k, v in row.items() if not (np.isscalar(v) and pd.isna(v))}
            try:
                configs.append(space.config_from_row(row))
            except (space.ConfigError, ValueError, TypeError, KeyError) as exc:
                raise ConfigListError(f"{p}: row {i}: {exc}") from None
        out = pd.DataFrame([c.to_dict() for c in configs])
        out["config_id"] = [c.config_id for c in configs]
        if "config_id" in df.columns:
            given = df["config_id"].astype(str).to_numpy()
            bad = given != out["config_id"].to_numpy()
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ConfigListError(
                    f"{p}: row {i}, column 'config_id': {given[i]!r} does not match the row's "
                    f"config (its id is {out['config_id'].iloc[i]!r})"
                )
    dup = out["config_id"].duplicated(keep="first").to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        raise ConfigListError(
            f"{p}: row {i}: config_id {out['config_id'].iloc[i]!r} is duplicated "
            f"({int(dup.sum())} duplicate row(s)); list each config once"
        )
    return out.reset_index(drop=True)


def sample_configs(
    n_sample: int | None = None,
    seed: int = 0,
    configs_file: str | Path | None = None,
    max_gflops: float | None = None,
    sample_under_cap: bool = False,
) -> pd.DataFrame:
    """Configs for a campaign: from a file (:func:`read_config_list`) or the paper grid,
    optionally a seeded stratified sample of ``n_sample`` rows. With ``sample_under_cap`` the
    sample is drawn from configs whose ``flops`` (whole batch) are within ``max_gflops``."""
    if configs_file is not None:
        df = read_config_list(configs_file)
    else:
        df = space.paper_grid()
    if sample_under_cap and max_gflops is not None:
        df = df[_flops(df).to_numpy() <= max_gflops * 1e9]
    if n_sample is not None and n_sample < len(df):
        df = space.stratified_sample(df, n_sample, seed)
    return df.reset_index(drop=True)


def sigint_ignored_note() -> str | None:
    """What to say when Ctrl-C cannot stop this campaign, else None.

    A process started with SIGINT ignored (``carb profile ... &`` from a script, ``nohup``)
    inherits that, and Python then never raises KeyboardInterrupt: Unix convention, kept; the
    user gets the way to stop it. Said once the campaign holds its folder and is about to
    measure, so that bad input still gets its one line.
    """
    import os
    import signal

    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        return None
    return (f"note: Ctrl-C (SIGINT) is ignored in this process (started in the background); "
            f"stop it with `kill {os.getpid()}` (SIGTERM): every part file already written is "
            "kept and a rerun resumes")


def run_campaign(
    configs: pd.DataFrame,
    out_dir: str | Path,
    device: str | Device = "cpu",
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
    progress: bool = True,
    log: Any = None,
    desc: str | None = None,
) -> CampaignResult:
    """Measure ``configs`` on one device into part files under ``out_dir``.

    Parameters
    ----------
    configs : pandas.DataFrame
        Config columns (``config_id`` added if absent).
    out_dir : path
        Folder of part files (created). Rerunning resumes.
    device : str or Device
    protocol : Protocol, optional
    platform : str, optional
        Platform name of the rows (default: the device's).
    seed : int
        Seed of the measurement order.
    ref_every : int
        Reference config (and GPU idle power) every this many configs, and at the start;
        0 disables both.
    reference : mapping, optional
        Reference config columns (default :data:`DEFAULT_REFERENCE`).
    time_budget_s : float, optional
        Stop cleanly before a config that would not fit (median duration so far) and abort
        (without recording) a config still running when the budget is over.
    max_gflops : float, optional
        Compute cap: configs with ``flops`` (whole batch) above ``max_gflops * 1e9`` get a
        ``skipped`` row without being run.
    shard : (i, n) or "i/n", optional
        Run only configs whose :func:`shard_of` is ``i``.
    idle_seconds : float
        Length of each GPU idle-power measurement.
    progress : bool
        Show a tqdm bar with ETA.
    log : callable, optional
        ``log(str)`` for messages (default: ``logger.info`` of the ``carb.campaign`` logger,
        which ``carb`` shows on stderr).
    desc : str, optional
        Label of the progress bar (default ``carb <platform>``).

    Returns
    -------
    CampaignResult
    """
    t_begin = time.perf_counter()
    log = log or logger.info
    protocol = protocol or Protocol()
    dev = get_device(device, platform=platform)
    if platform is not None and isinstance(device, Device):
        dev._platform = platform
    dev.setup(protocol)
    plat = dev.platform
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out {out} is a file; give a folder for the part files")
    out.mkdir(parents=True, exist_ok=True)
    shard_t = parse_shard(shard) if isinstance(shard, str) or shard is None else shard
    with FolderLock(out):
        stale = clean_temporary_files(out)
        if stale:
            log(f"[campaign] removed {len(stale)} temporary file(s) of an interrupted write")
        return _run_locked(
            configs, out, dev, protocol, plat=plat, seed=seed, ref_every=ref_every,
            reference=reference, time_budget_s=time_budget_s, max_gflops=max_gflops,
            shard_t=shard_t, idle_seconds=idle_seconds, progress=progress, log=log,
            t_begin=t_begin, desc=desc,
        )  # fmt: skip


def _run_locked(
    configs: pd.DataFrame,
    out: Path,
    dev: Device,
    protocol: Protocol,
    *,
    plat: str,
    seed: int,
    ref_every: int,
    reference: Mapping[str, Any] | None,
    time_budget_s: float | None,
    max_gflops: float | None,
    shard_t: tuple[int, int] | None,
    idle_seconds: float,
    progress: bool,
    log: Any,
    t_begin: float,
    desc: str | None = None,
) -> CampaignResult:
    """The body of :func:`run_campaign`, run while holding the folder's lock."""
    from tqdm.auto import tqdm

    cfg = configs.copy()
    if "config_id" not in cfg.columns:
        cfg = add_config_ids(cfg)
    cfg = cfg.drop_duplicates("config_id").reset_index(drop=True)
    cfg = cfg[shard_mask(cfg["config_id"], shard_t)]
    rng = np.random.default_rng(seed)
    cfg = cfg.iloc[rng.permutation(len(cfg))].reset_index(drop=True)
    res = CampaignResult(out_dir=str(out), platform=plat, n_total=len(cfg))
    done = done_ids(out, plat)
    if dev.kind == "cpu":  # resuming another machine's campaign would mix two CPUs
        refuse_other_cpu(part_cpu_ids(out, plat), f"{out} holds rows of platform {plat!r}",
                         "give it its own --platform and --out")
        import torch

        recorded, used = part_threads(out, plat), int(torch.get_num_threads())
        if recorded and recorded != {used}:  # one platform, one thread count
            how = "--threads" if protocol.threads is not None else "PyTorch's default"
            raise ValueError(f"--out {out} holds rows of platform {plat!r} timed with "
                             f"{'/'.join(map(str, sorted(recorded)))} thread(s); this campaign "
                             f"would time with {used} ({how}): resume it with --threads "
                             f"{min(recorded)}, or give it its own --out and --platform")
        heaps, want = part_heaps(out, plat), bool(protocol.cpu_keep_heap)
        if heaps and heaps != {want}:  # a campaign of before 2026-12-03, resumed with its default
            raise ValueError(f"{out} holds rows timed with cpu_keep_heap {sorted(heaps)}; this "
                             f"campaign's protocol has {want}: resume it with --protocol "
                             f"'{{\"cpu_keep_heap\": {str(not want).lower()}}}', or give it "
                             "its own --out")
    todo = cfg[~cfg["config_id"].isin(done)].reset_index(drop=True)
    res.n_already_done = len(cfg) - len(todo)
    res.n_planned = len(todo)
    note = sigint_ignored_note()
    if note and len(todo):
        log(note)
    writer = PartWriter(out, RESULTS_PREFIX)
    counts = {"ok": 0, "oom": 0, "error": 0, "skipped": 0}
    if max_gflops is not None and len(todo):
        flops = _flops(todo).to_numpy()
        over = flops > max_gflops * 1e9
        skipped = [
            skipped_row(
                config_from_row({c: v for c, v in rec.items() if c != "config_id"}), dev, protocol,
                f"compute cap: flops {f:.4g} (whole batch) > max_gflops {max_gflops:g} x 1e9",
            )
            for rec, f in zip(todo[over].to_dict(orient="records"), flops[over], strict=True)
        ]  # fmt: skip
        for i in range(0, len(skipped), 2000):
            writer.write(skipped[i : i + 2000])
        counts["skipped"] = len(skipped)
        todo = todo[~over].reset_index(drop=True)
    log(
        f"[campaign] platform={plat} configs={len(cfg)} already done={res.n_already_done} "
        f"skipped by compute cap={counts['skipped']} to measure={len(todo)} out={out}"
    )
    log(f"[campaign] protocol: {protocol.describe(dev.kind)}")

    ref_writer = PartWriter(out, REFERENCE_PREFIX, unique=False)
    ref_cfg = config_from_row(dict(reference or DEFAULT_REFERENCE))
    durations: list[float] = []
    idle_w = NAN

    def budget_left() -> float:
        if time_budget_s is None:
            return math.inf
        return time_budget_s - (time.perf_counter() - t_begin)

    def checkpoint() -> bool:
        """Idle power + reference; returns False if the budget ran out.

        A reference measurement that is not clean (``quality == "disturbed"`` or a failure)
        is kept with its flag but re-measured, up to :data:`REFERENCE_TRIES` times: drift
        normalisation uses only accepted reference rows."""
        nonlocal idle_w
        if dev.kind == "cuda":
            idle_w = dev.idle_power_w(idle_seconds)
        for _ in range(REFERENCE_TRIES):
            if budget_left() <= 0:
                return False
            row = profile_config(ref_cfg, dev, protocol, idle_power_w=idle_w)
            ref_writer.write([row])
            res.n_reference += 1
            if row["status"] == "ok" and row.get("quality") != "disturbed":
                break
            log(f"[campaign] reference measurement not clean ({row.get('quality')}, "
                f"{row.get('error')}); re-measuring")  # fmt: skip
        return True

    n_measured = 0
    bar = tqdm(total=len(todo), desc=desc or f"carb {plat}", unit="cfg", disable=not progress,
               dynamic_ncols=True, smoothing=0.05)  # fmt: skip
    try:
        if ref_every and len(todo) and not checkpoint():
            res.stopped_by_budget = True
        for rec in todo.to_dict(orient="records"):
            if res.stopped_by_budget:
                break
            config_row = {c: v for c, v in rec.items() if c != "config_id"}
            config = config_from_row(config_row)
            if ref_every and n_measured and n_measured % ref_every == 0:
                if not checkpoint():
                    res.stopped_by_budget = True
                    break
            left = budget_left()
            est = float(np.median(durations)) if durations else 0.0
            if left <= 0 or (durations and est > left):
                res.stopped_by_budget = True
                break
            proto = protocol
            budget_bound = False
            if math.isfinite(left):
                cap = protocol.timeout_s if protocol.timeout_s is not None else math.inf
                if left < cap:
                    proto = Protocol(**{**protocol.to_dict(), "timeout_s": left})
                    budget_bound = True
            t0 = time.perf_counter()
            with before_hard_exit(lambda c=config, p=proto: writer.write([stuck_row(c, dev, p)])):
                row = profile_config(config, dev, proto, idle_power_w=idle_w)
            dur = time.perf_counter() - t0
            if (
                budget_bound
                and row["status"] == "error"
                and str(row["error"]).startswith("timeout")
            ):
                res.stopped_by_budget = True  # not the config's fault: do not record it
                break
            if row["config_id"] != rec["config_id"]:
                raise RuntimeError(
                    f"config_id mismatch: row {rec['config_id']} measured as {row['config_id']}"
                )
            writer.write([row])
            durations.append(dur)
            counts[row["status"]] += 1
            n_measured += 1
            bar.update(1)
            bar.set_postfix({k2: v for k2, v in counts.items() if v}, refresh=False)
        if (
            ref_every
            and n_measured
            and not res.stopped_by_budget
            and budget_left() > 0
            and n_measured % ref_every != 0
        ):
            checkpoint()  # close the campaign with a reference point
    finally:
        bar.close()
    res.counts = counts
    res.elapsed_s = time.perf_counter() - t_begin
    res.drift = drift_summary(reference_rows(out))
    d = res.drift
    if d.get("n_reference", 0) >= 1:
        log(
            f"[campaign] drift: {d['n_reference']} reference runs, latency first "
            f"{d['first_latency_ms']:.3f} ms, last {d['last_latency_ms']:.3f} ms "
            f"(x{d['last_over_first']:.3f}), max |drift| {d['max_abs_drift_pct']:.1f}%"
        )
    log(
        f"[campaign] done in {res.elapsed_s:.0f} s: {counts}"
        + (" (stopped by the time budget)" if res.stopped_by_budget else "")
    )
    return res

