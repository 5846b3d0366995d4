"""The torchvision model zoo as a source of candidates: its convolutional ImageNet classifiers,
each one a config of the ``module`` family (``module="torchvision.models:resnet50"``) at a
given resolution, batch and precision, with its published ImageNet accuracy.

* :func:`zoo_names` lists the classification CNNs of ``torchvision.models`` (ConvNeXt included;
  the transformers ViT, Swin and MaxViT left out); :func:`zoo_table` adds each one's published
  ImageNet-1K acc@1/acc@5, parameter count and GFLOPs from its default weights' metadata (no
  weight is downloaded).
* :func:`resolve_names` checks names given by a user: an unknown name gets the nearest names, a
  detection, segmentation, video or optical-flow model (not an ImageNet classifier) and a
  transformer are refused, named.
* :func:`zoo_candidates` gives config rows with their static features (the ``module`` family's,
  measured on the ``meta`` device) and ``imagenet_acc1``, ready for
  :func:`carb_lib.screening.screen` and a fitted model's ``predict_interval``. Features are
  cached in a Parquet file per (network, resolution, batch, precision) across processes
  (:func:`cache_path`); a network whose forward fails at a shape is left out with one line
  naming it and the reason (:attr:`ZooCandidates.failures`), the others go on.
* :func:`campaign_configs` writes the measurement campaign's config list for ``carb profile
  --configs`` (:data:`CAMPAIGN_NETWORKS`, phase 1: batches 1 and 16; phase 2: the rest).

The command line is ``carb zoo list|predict|screen|configs`` (docs/zoo.md).
"""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.vocab import (
    ALLOC_FEATURES,
    EXTRA_STATIC_FEATURES,
    PRECISIONS,
    STATIC_FEATURES,
    coverage_value,
)
from carb_lib.families import ConfigError
from carb_lib.families._common import BATCH_RANGE
from carb_lib.families._torchvision import import_torchvision
from carb_lib.families.module import FAMILY, describe, module_config_id, module_static_features

logger = logging.getLogger(__name__)

#: Name prefixes of the torchvision classifiers that are not CNNs (transformers).
TRANSFORMER_PREFIXES: tuple[str, ...] = ("vit_", "swin_", "maxvit")
#: Subpackages of ``torchvision.models`` whose models are not ImageNet classifiers.
OTHER_TASKS: tuple[str, ...] = ("detection", "segmentation", "video", "optical_flow",
                                "quantization")
#: The factory of every zoo network: ``torchvision.models:<name>``.
FACTORY = "torchvision.models:{}"
#: Factory arguments of the networks whose factory without weights builds another network than
#: the published weights run: GoogLeNet's auxiliary heads (training only) are dropped with its
#: weights.
NETWORK_KWARGS: dict[str, str] = {"googlenet": '{"aux_logits":false}'}
#: Column of the published ImageNet-1K top-1 accuracy (%), the screening's ``max:`` objective.
ACC1 = "imagenet_acc1"
#: Columns a zoo candidate carries beside its config and features.
ZOO_COLUMNS: tuple[str, ...] = ("network", "network_kind", ACC1, "imagenet_acc5", "weights")
#: Version of the cached features' definition: bump when the module family's features change.
FEATURES_VERSION = 2
#: The measurement campaign's networks: the kinds of the zoo, the heaviest members left out
#: (at batch 64 on one CPU thread they take minutes per forward).
CAMPAIGN_NETWORKS: tuple[str, ...] = (
    "resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "resnext50_32x4d",
    "wide_resnet50_2", "mobilenet_v2", "mobilenet_v3_large", "mobilenet_v3_small",
    "efficientnet_b0", "efficientnet_b1", "efficientnet_b2", "efficientnet_b3", "efficientnet_b4",
    "efficientnet_v2_s", "regnet_x_400mf", "regnet_x_800mf", "regnet_x_1_6gf", "regnet_x_3_2gf",
    "regnet_x_8gf", "regnet_y_400mf", "regnet_y_800mf", "regnet_y_1_6gf", "regnet_y_3_2gf",
    "regnet_y_8gf", "shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "shufflenet_v2_x1_5",
    "shufflenet_v2_x2_0", "squeezenet1_0", "squeezenet1_1", "mnasnet0_5", "mnasnet0_75",
    "mnasnet1_0", "mnasnet1_3", "densenet121", "densenet169", "densenet201", "googlenet",
    "inception_v3", "vgg11", "vgg11_bn", "vgg16", "alexnet", "convnext_tiny",
)  # fmt: skip
#: The campaign's (batch, precision) pairs by phase: phase 1 (batches 1 and 16) first.
CAMPAIGN_PHASES: dict[int, tuple[tuple[int, str], ...]] = {
    1: ((1, "fp32"), (16, "fp32"), (1, "fp16")),
    2: ((4, "fp32"), (64, "fp32"), (4, "fp16")),
}
#: The campaign's resolutions (px): ImageNet's 224 and a smaller one.
CAMPAIGN_RESOLUTIONS: tuple[int, ...] = (224, 160)


def _tv() -> Any:
    return import_torchvision()


def zoo_names() -> list[str]:
    """The classification CNNs of ``torchvision.models``, sorted.

    Raises
    ------
    carb_lib.families._torchvision.TorchvisionUnavailable
        torchvision is not installed or not importable.
    """
    tv = _tv()
    return sorted(n for n in tv.models.list_models(module=tv.models)
                  if not n.startswith(TRANSFORMER_PREFIXES))


#: Network kinds, by name prefix (the first match wins).
KINDS: tuple[str, ...] = (
    "wide_resnet", "resnext", "resnet", "efficientnet_v2", "efficientnet", "mobilenet_v2",
    "mobilenet_v3", "shufflenet_v2", "regnet_x", "regnet_y", "squeezenet", "mnasnet",
    "densenet", "googlenet", "inception", "vgg", "alexnet", "convnext",
)  # fmt: skip


def network_kind(name: str) -> str:
    """The kind of a zoo network (:data:`KINDS`: ``resnet``, ``regnet_y``,
    ``efficientnet_v2``, ...); the name itself for a network of no known kind."""
    return next((k for k in KINDS if name.startswith(k)), name)


def network_meta(name: str) -> dict[str, Any]:
    """Published metadata of a zoo network's default ImageNet weights (nothing downloaded):
    ``imagenet_acc1``, ``imagenet_acc5`` (%), ``published_params``, ``published_gflops`` and
    ``weights`` (the weights' name); NaN where the metadata lacks a value."""
    tv = _tv()
    try:
        w = tv.models.get_model_weights(name).DEFAULT
    except (ValueError, KeyError, AttributeError):
        return {ACC1: np.nan, "imagenet_acc5": np.nan, "published_params": np.nan,
                "published_gflops": np.nan, "weights": None}
    meta = w.meta
    metrics = meta.get("_metrics", {}).get("ImageNet-1K", {})
    return {ACC1: float(metrics.get("acc@1", np.nan)),
            "imagenet_acc5": float(metrics.get("acc@5", np.nan)),
            "published_params": float(meta.get("num_params", np.nan)),
            "published_gflops": float(meta.get("_ops", np.nan)), "weights": str(w)}


def zoo_table(names: Iterable[str] | None = None) -> pd.DataFrame:
    """One row per zoo network: ``network``, ``network_kind``, the published metadata
    (:func:`network_meta`) and ``module`` (its factory)."""
    names = zoo_names() if names is None else resolve_names(names)
    rows = [dict(network=n, network_kind=network_kind(n), **network_meta(n),
                 module=FACTORY.format(n)) for n in names]
    return pd.DataFrame(rows)


def _other_task(name: str) -> str | None:
    tv = _tv()
    for task in OTHER_TASKS:
        sub = getattr(tv.models, task, None)
        if sub is not None and name in tv.models.list_models(module=sub):
            return task
    return None


def resolve_names(names: Iterable[str] | str | None) -> list[str]:
    """Zoo network names from user input (a list, or comma-separated text; None or "all":
    every network), each checked, in the given order without duplicates.

    Raises
    ------
    ConfigError
        One line naming the first bad name: an unknown one with the nearest zoo names, a
        detection/segmentation/video model or a transformer refused with the reason.
    """
    if names is None or (isinstance(names, str) and names.strip() in ("", "all")):
        return zoo_names()
    if isinstance(names, str):
        names = names.split(",")
    zoo = zoo_names()
    out: list[str] = []
    for raw in names:
        n = str(raw).strip()
        if n in zoo:
            if n not in out:
                out.append(n)
            continue
        task = _other_task(n)
        if task is not None:
            raise ConfigError(f"network {n!r} is a {task} model, not an ImageNet classifier: "
                              "the zoo holds classification CNNs only")
        if n.startswith(TRANSFORMER_PREFIXES) and n in _tv().models.list_models():
            raise ConfigError(f"network {n!r} is a vision transformer, not a CNN: the zoo "
                              "holds convolutional classifiers only")
        near = difflib.get_close_matches(n, zoo, n=3, cutoff=0.5)
        hint = f"; nearest: {', '.join(near)}" if near else ""
        raise ConfigError(f"network {n!r} is not in the zoo ({len(zoo)} torchvision "
                          f"classification CNNs: carb zoo list){hint}")
    return out


#: Input resolutions a zoo network is described at (px); the feature cache's rows are checked
#: against the same range.
ZOO_RESOLUTION_RANGE: tuple[int, int] = (8, 1024)


def parse_ints(text: str | Sequence[int], what: str) -> list[int]:
    """Comma-separated positive integers (``--batches``, ``--resolutions``)."""
    if not isinstance(text, str):
        return [int(v) for v in text]
    try:
        vals = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ConfigError(f"{what} {text!r} must be comma-separated integers, e.g. 1,8") from None
    if not vals or min(vals) < 1:
        raise ConfigError(f"{what} {text!r} must be positive integers")
    return vals


def parse_precisions(text: str | Sequence[str]) -> list[str]:
    """``fp32,fp16`` as a list, each checked."""
    vals = [p.strip() for p in text.split(",")] if isinstance(text, str) else list(text)
    vals = [p for p in vals if p]
    bad = [p for p in vals if p not in PRECISIONS]
    if bad or not vals:
        raise ConfigError(f"--precisions {text!r}: valid values are {list(PRECISIONS)}")
    return vals


# --------------------------------------------------------------------------- the feature cache
def cache_path(cache_dir: str | Path | None = None) -> Path:
    """The feature cache file: ``zoo_features.parquet`` in ``cache_dir``, ``$CARB_CACHE_DIR``
    or ``$XDG_CACHE_HOME/carb`` (``~/.cache/carb``)."""
    if cache_dir is None:
        base = os.environ.get("CARB_CACHE_DIR") or Path(
            os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "carb"
        cache_dir = base
    return Path(cache_dir) / "zoo_features.parquet"


def _versions() -> str:
    import torch

    return f"v{FEATURES_VERSION}|torch {torch.__version__}|torchvision {_tv().__version__}"


_KEY = ("network", "resolution", "batch", "precision")


def _read_cache(path: Path) -> pd.DataFrame:
    if not path.is_file():
        return pd.DataFrame()
    try:
        df = pd.read_parquet(path)
    except Exception as exc:  # noqa: BLE001 - a damaged cache is rebuilt, not fatal
        logger.warning("zoo feature cache %s unreadable (%s): rebuilding it", path, exc)
        return pd.DataFrame()
    if "versions" not in df.columns:
        return pd.DataFrame()
    df = df[df["versions"] == _versions()].reset_index(drop=True)
    bad, why = _failed_rows(df)
    if bad.any():
        logger.warning("zoo feature cache %s: %d row(s) fail their check (%s): rebuilding them",
                       path, int(bad.sum()), why)
        df = df[~bad].reset_index(drop=True)
    return df.drop(columns=DIGEST, errors="ignore")


#: The cache's column holding each row's digest (:func:`_digest`).
DIGEST = "row_digest"


def _digest(df: pd.DataFrame) -> list[str]:
    """A content digest per row (every column but :data:`DIGEST`, by name): a row edited
    since it was written no longer matches its digest."""
    import hashlib
    import math

    def text(v: Any) -> str:
        if isinstance(v, (bool, np.bool_)):
            return str(bool(v))
        if isinstance(v, (int, np.integer)):
            return str(int(v))
        if isinstance(v, (float, np.floating)):
            return "nan" if math.isnan(v) else repr(float(v))
        return "nan" if v is None else str(v)

    cols = sorted(c for c in df.columns if c != DIGEST)
    return [hashlib.sha256("\x1f".join(f"{c}={text(v)}" for c, v in zip(cols, row, strict=True))
                           .encode()).hexdigest()[:32]
            for row in df[cols].itertuples(index=False, name=None)]


def _failed_rows(df: pd.DataFrame) -> tuple[np.ndarray, str]:
    """Rows of the cache that cannot be trusted: no or a wrong digest (edited), a key held
    twice, a network name that is not a string, a batch or resolution out of range, or a
    feature that is negative or infinite (FLOPs and parameters: not a finite number > 0).
    Returns the mask
    and the reasons found."""
    n = len(df)
    bad = np.zeros(n, dtype=bool)
    why: list[str] = []
    if not n:
        return bad, ""
    if DIGEST not in df.columns or set(_KEY) - set(df.columns):
        return np.ones(n, dtype=bool), "no row digest or key"

    def flag(mask: Any, reason: str) -> None:
        mask = np.asarray(mask, dtype=bool)
        if mask.any():
            why.append(reason)
            bad[:] |= mask

    flag(np.asarray(_digest(df), dtype=object) != df[DIGEST].to_numpy(dtype=object),
         "edited since written")
    flag(df.duplicated(list(_KEY), keep=False).to_numpy(), "a key held twice")
    flag(~df["network"].map(lambda v: isinstance(v, str)).to_numpy(dtype=bool),
         "a network that is not a name")
    for col, lo in (("batch", 1), ("resolution", ZOO_RESOLUTION_RANGE[0])):
        v = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float)
        flag(~(np.isfinite(v) & (v >= lo)), f"{col} out of range")

    features = {*STATIC_FEATURES, *EXTRA_STATIC_FEATURES, *ALLOC_FEATURES.values()}
    for col in [c for c in df.columns if c in features]:
        v = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float)
        if col in ("flops", "params"):  # every network has them
            flag(~(np.isfinite(v) & (v > 0)), f"{col} not a finite number > 0")
        else:  # a feature a family lacks is missing (NaN), never negative or infinite
            flag(np.isinf(v) | (v < 0), f"{col} negative or infinite")
    return bad, ", ".join(why)


def _write_cache(path: Path, df: pd.DataFrame) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        df = df.drop(columns=[DIGEST], errors="ignore").reset_index(drop=True)
        df = df.assign(**{DIGEST: _digest(df)})
        df.to_parquet(tmp, index=False)
        os.replace(tmp, path)
    except OSError as exc:  # a read-only cache folder costs speed, not results
        logger.warning("zoo feature cache %s not written (%s)", path, exc)


# --------------------------------------------------------------------------- candidates
@dataclass
class ZooCandidates:
    """Config rows of zoo networks with static features (``table``) and the networks left
    out (``failures``: ``(network, resolution, reason)``)."""

    table: pd.DataFrame
    failures: list[tuple[str, int, str]] = field(default_factory=list)

    def failure_lines(self) -> list[str]:
        """One line per network and resolution left out."""
        return [f"skipped {n} at {r} px: {why}" for n, r, why in self.failures]


def _describe(name: str, resolution: int) -> Any:
    return describe(FACTORY.format(name), network_kwargs(name), (3, resolution, resolution))


def network_kwargs(name: str) -> str:
    """The ``module_kwargs`` (JSON) of a zoo network: :data:`NETWORK_KWARGS`, else ``{}``."""
    return NETWORK_KWARGS.get(name, "{}")


def _compute(keys: list[tuple[str, int, int, str]], failures: list) -> pd.DataFrame:
    """Config rows with features for ``keys`` (network, resolution, batch, precision); a
    network that fails at a resolution goes to ``failures`` (once)."""
    rows, bad = [], {}
    for name, res, batch, prec in keys:
        if (name, res) in bad:
            continue
        try:
            info = _describe(name, res)
        except ConfigError as exc:
            reason = str(exc).split(": ", 1)[-1]
            bad[(name, res)] = reason
            failures.append((name, res, reason))
            continue
        shape = (3, res, res)
        rows.append(dict(config_id=module_config_id(info.structure, shape, batch, prec),
                         family=FAMILY, module=FACTORY.format(name),
                         module_kwargs=network_kwargs(name), input_shape=f"3,{res},{res}",
                         resolution=res, batch=batch, precision=prec,
                         num_classes=info.num_classes, network=name))
    if not rows:
        return pd.DataFrame()
    df = pd.DataFrame(rows)
    feats = module_static_features(df)
    return pd.concat([df, feats], axis=1)


def zoo_candidates(names: Iterable[str] | str | None = None, batches: Sequence[int] = (1,),
                   precisions: Sequence[str] = ("fp32",), resolutions: Sequence[int] = (224,),
                   cache_dir: str | Path | None = None, use_cache: bool = True
                   ) -> ZooCandidates:
    """Config rows (``module`` family) of zoo networks at every batch x precision x
    resolution, with static features, ``config_id`` and :data:`ZOO_COLUMNS`.

    Features come from the cache (:func:`cache_path`) where it holds them, are computed
    otherwise (once per network and resolution on the ``meta`` device, scaled in batch and
    precision; the allocator model's peak per row) and added to it.

    Raises
    ------
    ConfigError
        A bad network name (:func:`resolve_names`), batch, precision or resolution.
    """
    nets = resolve_names(names)
    batches = parse_ints(batches, "--batches")
    precisions = parse_precisions(precisions)
    resolutions = parse_ints(resolutions, "--resolutions")

    lo, hi = BATCH_RANGE
    if min(batches) < lo or max(batches) > hi:
        raise ConfigError(f"--batches {batches}: each must be in {lo}..{hi}")
    lo, hi = ZOO_RESOLUTION_RANGE
    if min(resolutions) < lo or max(resolutions) > hi:
        raise ConfigError(f"--resolutions {resolutions}: each must be in {lo}..{hi} px")
    keys = [(n, r, b, p) for n in nets for r in resolutions for b in batches for p in precisions]
    path = cache_path(cache_dir)
    cached = _read_cache(path) if use_cache else pd.DataFrame()
    have = set(map(tuple, cached[list(_KEY)].itertuples(index=False))) if len(cached) else set()
    missing = [k for k in keys if k not in have]
    failures: list[tuple[str, int, str]] = []
    if missing:
        new = _compute(missing, failures)
        if len(new):
            new["versions"] = _versions()
            cached = pd.concat([cached, new], ignore_index=True) if len(cached) else new
            if use_cache:
                _write_cache(path, cached)
    if not len(cached):
        return ZooCandidates(pd.DataFrame(), failures)
    index = cached.set_index(list(_KEY))
    want = [k for k in keys if k in index.index]
    table = index.loc[want].reset_index().drop(columns="versions")
    meta = zoo_table(nets).set_index("network")
    for c in ZOO_COLUMNS[1:]:
        table[c] = meta.loc[table["network"], c].to_numpy()
    first = ["config_id", "family", "module", "module_kwargs", "input_shape", "resolution",
             "batch", "precision", "num_classes", *ZOO_COLUMNS]
    return ZooCandidates(table[first + [c for c in table.columns if c not in first]], failures)


# --------------------------------------------------------------------------- predict
def predict_zoo(model: Any, table: pd.DataFrame, coverage: float) -> pd.DataFrame:
    """Zoo candidates with a fitted model's predictions: ``{t}_pred``, ``{t}_pred_lo``,
    ``{t}_pred_hi`` per target, ``extrapolated`` and ``model_platform`` (as ``carb
    predict``)."""
    coverage_value(coverage, "--coverage", ConfigError)
    pred = model.predict_interval(table, coverage=coverage)
    rename = {f"{t}{x}": f"{t}_pred{x}" for t in model.targets_ for x in ("", "_lo", "_hi")
              if f"{t}{x}" in pred.columns}
    pred = pred.rename(columns=rename)
    pred["model_platform"] = str(getattr(model, "platform_", "?"))
    keep = [c for c in table.columns if c not in pred.columns]
    return pd.concat([table[keep].reset_index(drop=True), pred.reset_index(drop=True)], axis=1)


def _interval(r: Any, t: str, scale: float = 1.0, fmt: str = "{:.1f}") -> str:
    if f"{t}_pred" not in r:
        return "-"
    v, lo, hi = (r.get(f"{t}_pred{x}", np.nan) * scale for x in ("", "_lo", "_hi"))
    return f"{fmt.format(v)} [{fmt.format(lo)}, {fmt.format(hi)}]"


def format_predictions(pred: pd.DataFrame) -> str:
    """One line per row: network, resolution, batch, precision, latency and peak memory (and
    energy, where the model predicts it) with their intervals, accuracy, and ``extrapolated``
    where the model extrapolates."""
    energy = "energy_j_pred" in pred.columns
    head = (f"{'network':<20} {'px':>4} {'batch':>5} {'prec':<4}  {'latency ms [lo, hi]':<26} "
            f"{'peak MiB [lo, hi]':<26} " + (f"{'energy J [lo, hi]':<26} " if energy else "")
            + f"{'acc@1':>6}")
    lines = [head]
    for _, r in pred.iterrows():
        flag = "  extrapolated" if bool(r.get("extrapolated", False)) else ""
        joules = f"{_interval(r, 'energy_j', fmt='{:.3g}'):<26} " if energy else ""
        lines.append(f"{r['network']:<20} {int(r['resolution']):>4} {int(r['batch']):>5} "
                     f"{r['precision']:<4}  {_interval(r, 'latency_ms'):<26} "
                     f"{_interval(r, 'peak_mem_mib'):<26} {joules}{r[ACC1]:>6.2f}{flag}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- the campaign
def campaign_configs(phase: int | None = None, names: Iterable[str] | None = None,
                     resolutions: Sequence[int] = CAMPAIGN_RESOLUTIONS,
                     cache_dir: str | Path | None = None) -> pd.DataFrame:
    """The measurement campaign's config list (``carb profile --configs``): config columns of
    the ``module`` family only, one row per network x resolution x (batch, precision) of
    :data:`CAMPAIGN_PHASES` (``phase`` 1 or 2; None: both), checked on the ``meta`` device,
    and ``flops`` (whole batch: the campaign's compute, for an estimate of its duration;
    drop it for a list of config columns only).

    Raises
    ------
    ConfigError
        An unknown phase or network name.
    """
    if phase is not None and phase not in CAMPAIGN_PHASES:
        raise ConfigError(f"--phase {phase!r} must be one of {sorted(CAMPAIGN_PHASES)} "
                          "(1: batches 1 and 16, first; 2: the rest)")
    nets = resolve_names(list(CAMPAIGN_NETWORKS) if names is None else names)
    pairs = [bp for ph, bps in sorted(CAMPAIGN_PHASES.items()) if phase in (None, ph)
             for bp in bps]
    parts = []
    for b, p in pairs:
        c = zoo_candidates(nets, (b,), (p,), resolutions, cache_dir=cache_dir)
        for line in c.failure_lines() if b == pairs[0][0] and p == pairs[0][1] else ():
            logger.warning(line)
        parts.append(c.table)
    cols = ["config_id", "family", "module", "module_kwargs", "input_shape", "resolution",
            "batch", "precision", "num_classes"]
    return pd.concat(parts, ignore_index=True)[cols + ["flops"]]


__all__ = [
    "ACC1", "CAMPAIGN_NETWORKS", "CAMPAIGN_PHASES", "CAMPAIGN_RESOLUTIONS", "FACTORY", "KINDS",
    "NETWORK_KWARGS", "OTHER_TASKS", "TRANSFORMER_PREFIXES", "ZOO_COLUMNS", "ZooCandidates",
    "cache_path", "campaign_configs", "format_predictions", "network_kind", "network_kwargs",
    "network_meta", "parse_ints", "parse_precisions", "predict_zoo", "resolve_names",
    "zoo_candidates", "zoo_names", "zoo_table",
]
