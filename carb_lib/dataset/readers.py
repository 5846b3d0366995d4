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

A small subset in HELP's own format is committed under ``tests/fixtures/help_nb201/`` (with its
provenance and licence) so that the importer is tested everywhere.

:func:`load_measurements` reads any CSV/Parquet table of measurements (config columns, targets,
``platform``) with :func:`carb_lib.core.tables.read_table`, validates it with the one validator
(:func:`carb_lib.dataset.schema.validate_table`, measurement level) and adds ``config_id`` where
missing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.safe_io import check_output, table_with, write_set
from carb_lib.core.tables import read_table
from carb_lib.core.vocab import TARGETS
from carb_lib.dataset.schema import SchemaError, validate_table
from carb_lib.families import ConfigError
from carb_lib.families.nb201 import FAMILY as NB201_FAMILY
from carb_lib.families.nb201 import NUM_CLASSES as NB201_NUM_CLASSES
from carb_lib.families.nb201 import RESOLUTION as NB201_RESOLUTION
from carb_lib.families.nb201 import config_ids as nb201_config_ids
from carb_lib.families.nb201 import parse_arch
from carb_lib.families.space import (
    add_config_ids,
    check_config_ids,
    family_of,
    validate_config_frame,
)

HELP_REPO = "github.com/HayeonLee/HELP"
HELP_COMMIT = "45f70eb9"
HELP_LICENCE = "MIT, Copyright (c) 2024 HayeonLee (see data/external/LICENSE-HELP)"
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
#: Pixel 3 values below this are flagged (see the module docstring).
PIXEL3_MIN_PLAUSIBLE_MS = 1.0
TARGET_COLUMNS: tuple[str, ...] = TARGETS
HELP_COLUMNS: tuple[str, ...] = (
    "config_id", "family", "arch", "arch_index", "resolution", "batch", "precision",
    "num_classes", "platform", "device_name", "device_kind", "latency_ms", "energy_j",
    "peak_mem_mib", "status", "error", "source", "licence",
)


#: A measurement table that does not fit the schema (the one error type of the validator:
#: :class:`carb_lib.dataset.schema.SchemaError`); the message names column, row and value.
DatasetError = SchemaError


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
        ``resolution=32``, ``precision="fp32"``, ``num_classes=10`` (CIFAR-10 input).

    Raises
    ------
    FileNotFoundError
        If the folder or its index file is missing.
    DatasetError
        For an unknown device, a file of the wrong length or a non-positive latency.
    """
    folder = Path(folder)
    index_path = folder / "str_arch2idx.pt"
    if not index_path.exists():
        raise FileNotFoundError(f"HELP index file not found: {index_path}")
    arch2idx = _load_tensor_file(index_path)
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
        lat = _load_tensor_file(folder / f"{stem}.pt")
        try:
            lat = np.asarray(lat, dtype=np.float64)
        except (TypeError, ValueError):
            raise DatasetError(f"{folder / f'{stem}.pt'} does not hold latencies (a HELP "
                               f"latency file holds one number per architecture)") from None
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
            "family": NB201_FAMILY, "arch": archs, "arch_index": np.arange(n, dtype=np.int64),
            "resolution": np.int64(NB201_RESOLUTION), "batch": np.int64(batch),
            "precision": "fp32", "num_classes": np.int64(NB201_NUM_CLASSES), "platform": f"help_{dev}", "device_name": name,
            "device_kind": kind, "latency_ms": lat, "energy_j": np.nan,
            "peak_mem_mib": np.nan, "status": status, "error": error,
            "source": f"{HELP_REPO}@{HELP_COMMIT}:data/nasbench201/{stem}.pt",
            "licence": HELP_LICENCE,
        }))
    if not frames:
        return pd.DataFrame(columns=list(HELP_COLUMNS))
    df = pd.concat(frames, ignore_index=True)
    df.insert(0, "config_id", nb201_config_ids(df))
    return df[list(HELP_COLUMNS)]


def _load_tensor_file(path: Path) -> Any:
    """A HELP ``.pt`` file read with ``torch.load(weights_only=True)`` (tensors and plain
    containers only: nothing in the file is run); one :class:`DatasetError` naming the file if
    it is not such a file."""
    import torch

    try:
        return torch.load(path, weights_only=True)
    except Exception as exc:
        kind = type(exc).__name__
        raise DatasetError(f"{path} is not a HELP data file (torch.load with weights_only=True "
                           f"could not read it: {kind}); CARB reads only tensors and plain "
                           "containers from .pt files") from None


def convert_help(folder: str | Path, out: str | Path = "data/external/help_nb201.parquet", *,
                 force: bool = False) -> Path:
    """Convert HELP's folder to ``out`` (Parquet) and copy its licence next to it, the two
    written together or not at all (:func:`carb_lib.core.safe_io.write_set`).

    The licence goes to ``<out folder>/LICENSE-HELP`` (MIT: the notice must travel with the
    numbers). A previous conversion (a table with HELP's columns, the same licence) is replaced;
    any other existing file only with ``force``, keeping a numbered backup. Returns the Parquet
    path.

    Raises
    ------
    FileNotFoundError
        If the folder, its index file or its ``LICENSE`` is missing (nothing is written).
    carb_lib.core.safe_io.OutputError
        If an output exists and is not a previous conversion (without ``force``), or cannot be
        written (nothing is written).
    """
    folder, out = Path(folder), Path(out)
    lic = folder / "LICENSE"
    if folder.is_dir() and not lic.exists():
        raise FileNotFoundError(f"HELP licence not found: {lic}; it must ship with the data")
    df = load_help_latency(folder)
    if df.empty:
        raise DatasetError(f"--folder {folder} holds no HELP latency file (<device>_<batch>.pt "
                           "beside str_arch2idx.pt); nothing written")
    lic_out = out.parent / "LICENSE-HELP"
    common = {"force": force, "command": "carb convert-help", "owns": ("data",)}
    backup = {p for p, own in (
        (out, table_with("arch", "device_name", "licence")),
        (lic_out, lambda p: p.read_bytes() == lic.read_bytes()))
        if check_output(p, "--out", inputs=[("--folder", lic)], own=own, **common)}
    write_set({out: lambda fh: df.to_parquet(fh, index=False, compression="zstd"),
               lic_out: lic.read_bytes()}, backup=backup)
    return out


# --------------------------------------------------------------------------- generic tables
#: Columns read as text from a CSV whatever they look like (a config_id may be all digits).
_TEXT_COLUMNS: tuple[str, ...] = ("config_id", "platform")


def validate_measurements(df: pd.DataFrame, name: str = "table",
                          require_target: bool = True) -> pd.DataFrame:
    """Validate a measurement table and return a copy with ``config_id`` filled in.

    The one validator at the measurement level (:func:`carb_lib.dataset.schema.validate_table` with
    ``complete=False``): a ``platform`` column without blanks; per family the config columns,
    each distinct config validated once; targets numeric, and in ``ok`` rows finite and > 0
    where present; ``status`` in :data:`STATUSES`; a given ``config_id`` equal to the content
    hash of the row's config.

    Raises
    ------
    DatasetError
        Naming the column, the row (0-based position in the table) and the value.
    """
    return validate_table(df, complete=False, what=name, require_target=require_target)


def load_measurements(path: str | Path, require_target: bool = True) -> pd.DataFrame:
    """Read a CSV or Parquet measurement table and validate it (see :func:`validate_measurements`).

    Parameters
    ----------
    path : str or Path
        ``.csv``, ``.parquet`` or ``.pq`` file: config columns (``family`` selects the family,
        default :data:`~carb_lib.families.DEFAULT_FAMILY`), ``platform``, and at least one of
        ``energy_j``, ``latency_ms``, ``peak_mem_mib`` (unless ``require_target`` is False,
        e.g. for query configs).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist (a :class:`carb_lib.core.tables.MissingTableError`).
    carb_lib.core.tables.TableError
        Unsupported suffix or unreadable content.
    DatasetError
        Naming the column, row and value of the first problem.
    """
    df = read_table(path, "measurement table", allow_empty=True, text_columns=_TEXT_COLUMNS)
    return validate_measurements(df, name=str(path), require_target=require_target)


def read_configs(path: str | Path, what: str = "config table") -> pd.DataFrame:
    """Read a CSV/Parquet table of configs (no platform or target needed) with ``config_id``.

    Every row is validated against its family's space first
    (:func:`carb_lib.families.space.validate_config_frame`; a table without ``batch`` is checked with
    batch 1): an out-of-range value is one error naming the file, the row and the value, and
    so is a given ``config_id`` that is not its config's."""
    df = read_table(path, what, text_columns=_TEXT_COLUMNS).reset_index(drop=True)
    df["family"] = family_of(df)
    try:
        validate_config_frame(df if "batch" in df.columns else df.assign(batch=1),
                              f"{what} {path}")
    except ConfigError as exc:
        raise DatasetError(str(exc)) from None
    if "batch" in df.columns:  # a given config_id must be its config's, not copied through
        try:
            check_config_ids(df, f"{what} {path}")
        except ConfigError as exc:
            raise DatasetError(str(exc)) from None
    try:
        out = add_config_ids(df)
    except (ConfigError, KeyError, ValueError) as exc:
        raise DatasetError(f"{path}: {exc}") from None
    return out


__all__ = [
    "HELP_DEVICES", "HELP_COLUMNS", "DatasetError", "parse_help_file", "load_help_latency",
    "convert_help", "validate_measurements", "load_measurements", "read_configs",
]
