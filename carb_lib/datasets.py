"""Load measurement tables: external HELP NAS-Bench-201 latencies and generic CSV/Parquet files.

HELP (Lee et al., "HELP: Hardware-Adaptive Efficient Latency Prediction for NAS via
Meta-Learning", NeurIPS 2021, arXiv 2106.08630, github.com/HayeonLee/HELP, MIT licence) ships
latencies of all 15,625 NAS-Bench-201 networks (CIFAR-10 size input) on 11 devices.
:func:`load_help_latency` turns its ``data/nasbench201`` folder into rows of the CARB schema:

* ``platform`` is ``"help_<device>"`` **without** the batch suffix (``help_titanx``); the batch
  (the ``_1``/``_32``/``_256`` file suffix; files without one are batch 1) goes to the
  ``batch`` column, so ``config_id`` (which includes the batch) identifies the workload and
  ``platform`` the hardware. ``essential_ph_1`` is the Essential PH-1 phone, not a batch suffix.
* ``latency_ms`` is the source value; ``energy_j`` and ``peak_mem_mib`` are NaN.
* ``status`` is ``"ok"`` except for Pixel 3 values below 1 ms, which are implausible for a
  phone (0.003-0.8 ms, 10-1000x below what every other device predicts for the same network;
  283 of 15,625 rows): they keep the source value with ``status="error"`` and the reason in
  ``error``.
* provenance: ``source`` (repository, commit, file) and ``licence`` columns on every row.

:func:`load_measurements` reads any CSV/Parquet table of measurements (config columns, targets,
``platform``), validates it and adds ``config_id`` where missing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd

HELP_REPO = "github.com/HayeonLee/HELP"
HELP_COMMIT = "45f70eb9"
HELP_LICENCE = "MIT, Copyright (c) 2024 HayeonLee (see data/external/LICENSE-HELP)"
HELP_CITATION = (
    "H. Lee, S. Lee, S. Chong, S. J. Hwang. HELP: Hardware-Adaptive Efficient Latency "
    "Prediction for NAS via Meta-Learning. NeurIPS 2021, arXiv:2106.08630."
)
#: HELP device key -> (device name, device kind).
HELP_DEVICES: dict[str, tuple[str, str]] = {
    "1080ti": ("NVIDIA GeForce GTX 1080 Ti", "desktop_gpu"),
    "2080ti": ("NVIDIA GeForce RTX 2080 Ti", "desktop_gpu"),
    "titanx": ("NVIDIA Titan X", "desktop_gpu"),
    "titanxp": ("NVIDIA Titan Xp", "desktop_gpu"),
    "gold_6240": ("Intel Xeon Gold 6240", "desktop_cpu"),
    "silver_4114": ("Intel Xeon Silver 4114", "desktop_cpu"),
    "silver_4210r": ("Intel Xeon Silver 4210R", "desktop_cpu"),
    "samsung_a50": ("Samsung Galaxy A50", "mobile"),
    "samsung_s7": ("Samsung Galaxy S7", "mobile"),
    "pixel3": ("Google Pixel 3", "mobile"),
    "essential_ph_1": ("Essential PH-1", "mobile"),
}
GPU_BATCHES: tuple[int, ...] = (1, 32, 256)
#: Pixel 3 values below this are flagged (see the module docstring).
PIXEL3_MIN_PLAUSIBLE_MS = 1.0
TARGET_COLUMNS: tuple[str, ...] = ("energy_j", "latency_ms", "peak_mem_mib")
STATUSES: tuple[str, ...] = ("ok", "oom", "error", "skipped")
HELP_COLUMNS: tuple[str, ...] = (
    "config_id", "family", "arch", "arch_index", "resolution", "batch", "precision",
    "num_classes", "platform", "device_name", "device_kind", "latency_ms", "energy_j",
    "peak_mem_mib", "status", "error", "source", "licence",
)


class DatasetError(ValueError):
    """A measurement table that does not fit the schema; the message names column/row/value."""


def parse_help_file(stem: str) -> tuple[str, int]:
    """Split a HELP file stem into ``(device key, batch)``.

    ``"titanx_256"`` -> ``("titanx", 256)``; ``"gold_6240"`` -> ``("gold_6240", 1)``;
    ``"essential_ph_1"`` -> ``("essential_ph_1", 1)`` (a device name, not a suffix).

    Raises
    ------
    DatasetError
        If the stem is not a known device with an optional batch suffix.
    """
    if stem in HELP_DEVICES:
        return stem, 1
    head, _, tail = stem.rpartition("_")
    if head in HELP_DEVICES and tail.isdigit():
        return head, int(tail)
    raise DatasetError(
        f"unknown HELP latency file {stem!r}: expected <device>[_<batch>] with device in "
        f"{sorted(HELP_DEVICES)}"
    )


def _select(stems: list[str], devices) -> list[str]:
    if devices is None:
        return stems
    wanted = {devices} if isinstance(devices, str) else set(devices)
    keep = []
    for s in stems:
        dev, _ = parse_help_file(s)
        if s in wanted or dev in wanted or f"help_{dev}" in wanted:
            keep.append(s)
    known = set(stems) | {parse_help_file(s)[0] for s in stems}
    known |= {f"help_{d}" for d in known}
    unknown = sorted(wanted - known)
    if unknown:
        raise DatasetError(f"unknown HELP device(s) {unknown}; available files: {sorted(stems)}")
    return keep


def load_help_latency(folder: str | Path, devices=None) -> pd.DataFrame:
    """Read HELP's NAS-Bench-201 latency folder into CARB-schema rows.

    Parameters
    ----------
    folder : str or Path
        Folder with ``str_arch2idx.pt`` and ``<device>[_<batch>].pt`` files (HELP's
        ``data/nasbench201``).
    devices : str or list of str, optional
        Keep only these: file stems (``"titanx_256"``), device keys (``"titanx"``, all batches)
        or platforms (``"help_titanx"``). Default: every file.

    Returns
    -------
    pandas.DataFrame
        :data:`HELP_COLUMNS`, one row per (platform, batch, arch); ``family="nb201"``,
        ``resolution=32``, ``precision="fp32"``, ``num_classes=10``.

    Raises
    ------
    FileNotFoundError
        If the folder or its index file is missing.
    DatasetError
        For an unknown device, a file of the wrong length or a non-positive latency.
    """
    import torch

    from carb_lib.nb201 import config_ids, parse_arch

    folder = Path(folder)
    index_path = folder / "str_arch2idx.pt"
    if not index_path.exists():
        raise FileNotFoundError(f"HELP index file not found: {index_path}")
    arch2idx = torch.load(index_path, weights_only=True)
    n = len(arch2idx)
    archs = np.empty(n, dtype=object)
    for arch, i in arch2idx.items():
        archs[int(i)] = arch
    if any(a is None for a in archs):
        raise DatasetError(f"{index_path}: indices are not 0..{n - 1}")
    for a in archs:
        parse_arch(a)
    stems = sorted(p.stem for p in folder.glob("*.pt") if p.stem != "str_arch2idx")
    stems = _select(stems, devices)
    frames = []
    for stem in stems:
        dev, batch = parse_help_file(stem)
        lat = np.asarray(torch.load(folder / f"{stem}.pt", weights_only=True), dtype=np.float64)
        if lat.shape != (n,):
            raise DatasetError(f"{stem}.pt holds {lat.shape} values, expected {n}")
        bad = ~(lat > 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DatasetError(f"{stem}.pt: latency_ms={lat[i]!r} at arch index {i} is not > 0")
        name, kind = HELP_DEVICES[dev]
        status = np.full(n, "ok", dtype=object)
        error = np.full(n, None, dtype=object)
        if dev == "pixel3":
            sus = lat < PIXEL3_MIN_PLAUSIBLE_MS
            status[sus] = "error"
            error[sus] = (f"implausible latency < {PIXEL3_MIN_PLAUSIBLE_MS} ms for a phone "
                          "(kept as in source)")
        frames.append(pd.DataFrame({
            "family": "nb201", "arch": archs, "arch_index": np.arange(n, dtype=np.int64),
            "resolution": np.int64(32), "batch": np.int64(batch), "precision": "fp32",
            "num_classes": np.int64(10), "platform": f"help_{dev}", "device_name": name,
            "device_kind": kind, "latency_ms": lat, "energy_j": np.nan,
            "peak_mem_mib": np.nan, "status": status, "error": error,
            "source": f"{HELP_REPO}@{HELP_COMMIT}:data/nasbench201/{stem}.pt",
            "licence": HELP_LICENCE,
        }))
    if not frames:
        return pd.DataFrame(columns=list(HELP_COLUMNS))
    df = pd.concat(frames, ignore_index=True)
    df.insert(0, "config_id", config_ids(df))
    return df[list(HELP_COLUMNS)]


def convert_help(
    folder: str | Path,
    out: str | Path = "data/external/help_nb201.parquet",
) -> Path:
    """Convert HELP's folder to ``out`` (Parquet) and copy its licence next to it.

    The licence goes to ``<out folder>/LICENSE-HELP`` (MIT: the notice must travel with the
    numbers). Returns the Parquet path.
    """
    folder, out = Path(folder), Path(out)
    df = load_help_latency(folder)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_parquet(out, index=False, compression="zstd")
    lic = folder / "LICENSE"
    if not lic.exists():
        raise FileNotFoundError(f"HELP licence not found: {lic}; it must ship with the data")
    shutil.copyfile(lic, out.parent / "LICENSE-HELP")
    return out


# --------------------------------------------------------------------------- generic tables
def _read_table(path: Path) -> pd.DataFrame:
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return pd.read_csv(path)
    if suffix in (".parquet", ".pq"):
        return pd.read_parquet(path)
    raise DatasetError(f"{path}: unsupported file type {suffix!r}; use .csv or .parquet")


def validate_measurements(df: pd.DataFrame, name: str = "table",
                          require_target: bool = True) -> pd.DataFrame:
    """Validate a measurement frame and return a copy with ``config_id`` filled in.

    Checks: a ``platform`` column without blanks; per family the config columns, each unique
    config validated once (the error names the first row that has it); targets numeric and
    positive where present; ``status`` in :data:`STATUSES`; a given ``config_id`` equal to the
    content hash of the row's config.

    Raises
    ------
    DatasetError
        Naming the column, the row (0-based position in the table) and the value.
    """
    from carb_lib.space import ConfigError, add_config_ids, config_from_row, get_family

    df = df.reset_index(drop=True).copy()
    if "platform" not in df.columns:
        raise DatasetError(f"{name}: missing column 'platform'")
    blank = df["platform"].isna() | (df["platform"].astype(str).str.strip() == "")
    if blank.any():
        i = int(np.flatnonzero(blank.to_numpy())[0])
        raise DatasetError(f"{name}: row {i}: column 'platform' is empty")
    targets = [c for c in TARGET_COLUMNS if c in df.columns]
    if require_target and not targets:
        raise DatasetError(f"{name}: no target column; need one of {list(TARGET_COLUMNS)}")
    for c in targets:
        vals = pd.to_numeric(df[c], errors="coerce")
        nonnum = vals.isna() & df[c].notna()
        if nonnum.any():
            i = int(np.flatnonzero(nonnum.to_numpy())[0])
            raise DatasetError(f"{name}: row {i}: column {c!r} value {df[c].iloc[i]!r} is not "
                               "a number")
        neg = vals <= 0
        if neg.any():
            i = int(np.flatnonzero(neg.to_numpy())[0])
            raise DatasetError(f"{name}: row {i}: column {c!r} value {float(vals.iloc[i])!r} "
                               "must be > 0")
        df[c] = vals.astype(np.float64)
    if "status" in df.columns:
        bad = ~df["status"].isin(STATUSES)
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise DatasetError(f"{name}: row {i}: column 'status' value {df['status'].iloc[i]!r} "
                               f"is not one of {list(STATUSES)}")
    if "family" not in df.columns:
        df["family"] = "resnet"
    df["family"] = df["family"].fillna("resnet")
    for fam_name, idx in df.groupby("family", sort=False).groups.items():
        try:
            fam = get_family(fam_name)
        except ConfigError as exc:
            i = int(idx[0])
            raise DatasetError(f"{name}: row {i}: column 'family': {exc}") from None
        required = [c for c in fam.columns if c not in ("family", "num_classes")]
        if fam_name == "nb201":
            required = ["arch"]
        missing = [c for c in required if c not in df.columns]
        if missing:
            raise DatasetError(f"{name}: {fam_name} rows need column(s) {missing}")
        cols = [c for c in fam.columns if c in df.columns]
        first = df.loc[idx, cols].drop_duplicates()
        for i, rec in zip(first.index, first.to_dict(orient="records"), strict=True):
            try:
                config_from_row(rec)
            except ConfigError as exc:
                raise DatasetError(f"{name}: row {int(i)}: {exc}") from None
    given = df["config_id"].astype("string") if "config_id" in df.columns else None
    df = add_config_ids(df)
    if given is not None:
        wrong = given.notna() & (given != df["config_id"])
        if wrong.any():
            i = int(np.flatnonzero(wrong.to_numpy())[0])
            raise DatasetError(
                f"{name}: row {i}: column 'config_id' value {given.iloc[i]!r} does not match "
                f"the row's config (expected {df['config_id'].iloc[i]!r})"
            )
    return df


def load_measurements(path: str | Path, require_target: bool = True) -> pd.DataFrame:
    """Read a CSV or Parquet measurement table and validate it (see :func:`validate_measurements`).

    Parameters
    ----------
    path : str or Path
        ``.csv``, ``.parquet`` or ``.pq`` file: config columns (``family`` selects the family,
        default ``resnet``), ``platform``, and at least one of ``energy_j``, ``latency_ms``,
        ``peak_mem_mib`` (unless ``require_target`` is False, e.g. for query configs).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    DatasetError
        Naming the column, row and value of the first problem.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"measurement table not found: {path}")
    return validate_measurements(_read_table(path), name=str(path), require_target=require_target)


def read_configs(path: str | Path) -> pd.DataFrame:
    """Read a CSV/Parquet table of configs (no platform or target needed) with ``config_id``."""
    from carb_lib.space import ConfigError, add_config_ids

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"config table not found: {path}")
    df = _read_table(path).reset_index(drop=True)
    if "family" not in df.columns:
        df["family"] = "resnet"
    try:
        out = add_config_ids(df)
    except (ConfigError, KeyError, ValueError) as exc:
        raise DatasetError(f"{path}: {exc}") from None
    return out


__all__ = [
    "HELP_DEVICES", "HELP_COLUMNS", "DatasetError", "parse_help_file", "load_help_latency",
    "convert_help", "validate_measurements", "load_measurements", "read_configs",
]
