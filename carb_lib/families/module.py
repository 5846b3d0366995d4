"""Family ``module``: any user ``torch.nn.Module``, given by a factory and an input shape.

A config names

``module``
    The factory: ``package.module:function`` (imported) or ``path/to/file.py:function`` (loaded
    from the file; relative paths from the working directory). ``function`` may be a dotted
    attribute path (``models:Net.small``); it is called with ``module_kwargs`` and returns the
    network.
``module_kwargs``
    The factory's keyword arguments as a JSON object (``"{}"`` by default).
``input_shape``
    The shape of one input sample, ``C,H,W`` (three positive integers); the batch is the
    ``batch`` column, the input a ``batch x C x H x W`` tensor.

plus ``batch`` and ``precision``. ``resolution`` is ``H`` and ``num_classes`` the number of output
elements per sample; both are derived from the module (a value given in a row must agree).
``config_id`` is the content hash of the module's *structure* — the ``repr`` of its module tree
and the names, shapes and dtypes of its parameters and buffers — with the input shape, batch and
precision: the same network from two factories has one id, a changed layer a new one.

Static features are measured, not derived: the network is built on the ``meta`` device
(nothing is allocated, no weight is initialised in memory) and run once on a batch of one
sample in fp32 under ``FlopCounterMode``, with forward hooks on every leaf module and a dispatch
mode for residual adds and SE gating multiplies (:func:`measure_module`). The first meta
forward of a process pays torch's one-time lazy imports (its meta kernels import
``torch._dynamo``, 1-2 s); later modules take tens to hundreds of milliseconds. The result
is cached per factory, arguments and input shape (a file factory also by the file's
modification time) and scaled analytically in batch and precision (FLOPs and activation
bytes proportional to the batch, bytes to the element size), so a cached call costs
microseconds. Conventions (as for the built-in families, :mod:`carb_lib.dataset.features`):

* ``n_conv``: calls of any ``Conv1d/2d/3d`` (and transposed) module; ``n_bn``: any
  ``BatchNorm``; ``n_act``: ReLU, ReLU6, SiLU, GELU, Sigmoid, Tanh, Hardswish, Hardsigmoid,
  LeakyReLU, ELU, SELU, Mish, PReLU, Softplus, Hardtanh modules; ``n_fc``: ``Linear``;
  ``n_pool``: max/average (adaptive) pooling; ``n_dwconv``: convs with
  ``groups == in_channels > 1``; ``max_channels``: the widest conv output;
* ``activation_bytes``: the outputs of every leaf module call; ``memory_bound_bytes``: inputs +
  output of BN, activation and pooling calls, residual adds and gating multiplies;
* ``peak_act_bytes``: an estimate — the input batch plus the largest inputs + output of one
  leaf module call (no liveness analysis of a user graph);
* functional calls (``torch.relu``, ``F.max_pool2d``) are not layers: they count in
  ``flops`` where they have FLOPs, not in the layer counts;
* ``se_flops``: FLOPs of the conv and ``Linear`` modules whose outputs lie on the path from
  each gating multiply's gate back to its squeeze: every op's inputs, followed through tensors
  that are 1 x 1 in space (the squeeze's input is not), functional calls (``x.mean``,
  ``torch.sigmoid``) included; a functional conv in the branch is not counted.

Bad input raises a :class:`ModuleError` (a :class:`~carb_lib.families.ConfigError`) whose one-line
message names the factory and, where user code failed, the exception it raised.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import logging
import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

import carb_lib.families.allocator as allocator
from carb_lib.core.vocab import (
    ALLOC_FEATURES,
    COMMON_CONFIG_COLUMNS,
    PRECISIONS,
    STATIC_FEATURES,
)
from carb_lib.families._alloc import variant_case
from carb_lib.families._base import ConfigColumn, ConfigError, Family
from carb_lib.families._base import ConfigTimeoutError as _Timeout  # a cap, not a module fault
from carb_lib.families._common import (
    BATCH_RANGE,
    BATCH_SIZES,
    BYTES_PER_ELEMENT,
    _is_depthwise,
    _residual_adds,
    content_hash,
    is_missing,
    structure_hash,
)
from carb_lib.families._meta_build import parameters_on_meta as on_meta
from carb_lib.families._torchvision import import_torchvision

logger = logging.getLogger(__name__)
FAMILY = "module"
OWN_COLUMNS: tuple[ConfigColumn, ...] = (
    ConfigColumn("module", "str", "factory: package.module:function or path/file.py:function"),
    ConfigColumn("module_kwargs", "str", "the factory's keyword arguments, a JSON object"),
    ConfigColumn("input_shape", "str", "shape of one input sample, C,H,W"),
)
REQUIRED_COLUMNS: tuple[str, ...] = ("module", "input_shape", "batch", "precision")
#: Config columns of the family, in order.
MODULE_COLUMNS: tuple[str, ...] = (
    COMMON_CONFIG_COLUMNS[0], *(c.name for c in OWN_COLUMNS), *COMMON_CONFIG_COLUMNS[1:]
)
#: Extra static features measured for user modules (the family-agnostic ones).
EXTRA_COLUMNS: tuple[str, ...] = (
    "n_dwconv", "n_pool", "n_add", "n_se", "dw_flops_share", "se_flops", "memory_bound_bytes",
)  # fmt: skip
#: Every static feature column of the family.
FEATURE_COLUMNS: tuple[str, ...] = (*STATIC_FEATURES, *EXTRA_COLUMNS)
#: Columns measured exactly (and compared by the tests): all but the ``peak_act_bytes`` estimate
#: and the derived ``arith_intensity_flop_per_byte``.
EXACT_COLUMNS: tuple[str, ...] = tuple(
    c for c in FEATURE_COLUMNS if c not in ("peak_act_bytes", "arith_intensity_flop_per_byte")
)
INPUT_RANK = 3
#: Factory modules of carb_lib that moved, as stored rows name them -> where they are now.
#: Stored rows keep their description (and so their ``config_id``); the factory is found here.
MOVED_MODULES: dict[str, str] = {"carb_lib.probe_nets": "carb_lib.kernels.probe_nets"}


class ModuleError(ConfigError):
    """A user module that cannot be imported, built or run on its input (one-line message)."""


# --------------------------------------------------------------------------- parsing
def parse_input_shape(value: Any) -> tuple[int, ...]:
    """``C,H,W`` (text, or a sequence of ints) as a tuple of three positive ints.

    Raises
    ------
    ConfigError
        Naming the value, for the wrong rank or a non-positive or non-integer entry.
    """
    if isinstance(value, str):
        parts = [p.strip() for p in value.replace("x", ",").split(",") if p.strip()]
    elif isinstance(value, (Sequence, np.ndarray)):
        parts = list(value)
    else:
        raise ConfigError(f"input_shape={value!r} must be C,H,W (3 positive integers)")
    try:
        dims = tuple(int(p) for p in parts)
        if any(float(p) != d for p, d in zip(parts, dims, strict=True)):
            raise ValueError
    except (TypeError, ValueError):
        raise ConfigError(f"input_shape={value!r} must be C,H,W (3 positive integers)") from None
    if len(dims) != INPUT_RANK:
        raise ConfigError(f"input_shape={value!r} has rank {len(dims)}; it must be C,H,W "
                          f"({INPUT_RANK} positive integers, the batch excluded)")
    if min(dims) < 1:
        raise ConfigError(f"input_shape={value!r} must be C,H,W (3 positive integers)")
    return dims


def shape_text(shape: Sequence[int]) -> str:
    """The canonical text of an input shape: ``"3,224,224"``."""
    return ",".join(str(int(d)) for d in shape)


def parse_kwargs(value: Any) -> str:
    """The canonical JSON text (sorted keys) of the factory's keyword arguments."""
    if is_missing(value) or value == "":
        return "{}"
    if isinstance(value, Mapping):
        obj = dict(value)
    else:
        try:
            obj = json.loads(value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"module_kwargs={value!r} is not a JSON object: {exc}") from None
    if not isinstance(obj, dict):
        raise ConfigError(f"module_kwargs={value!r} must be a JSON object, e.g. "
                          '\'{"width": 0.5}\'')
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def split_spec(spec: Any) -> tuple[str, str]:
    """``(target, attribute path)`` of a factory spec; a :class:`ConfigError` if malformed."""
    if not isinstance(spec, str) or spec.count(":") < 1:
        raise ConfigError(f"module={spec!r} must be 'package.module:function' or "
                          "'path/to/file.py:function'")
    target, _, attr = spec.rpartition(":")
    if not target or not attr or not all(p.isidentifier() for p in attr.split(".")):
        raise ConfigError(f"module={spec!r} must be 'package.module:function' or "
                          "'path/to/file.py:function'")
    return target, attr


def _user_error(spec: str, what: str, exc: BaseException) -> ModuleError:
    text = " ".join(str(exc).split())[:300]
    return ModuleError(f"module {spec!r}: {what}: {type(exc).__name__}: {text}")


def _is_file(target: str) -> bool:
    return target.endswith(".py") or os.sep in target or "/" in target


def _stamp(spec: str) -> int:
    """The factory file's modification time (ns; 0 for an importable module)."""
    target, _ = split_spec(spec)
    if not _is_file(target):
        return 0
    try:
        return Path(target).stat().st_mtime_ns
    except OSError as exc:
        raise _user_error(spec, f"cannot read {target}", exc) from None


def load_factory(spec: str, stamp: int = 0) -> Any:
    """The factory callable of ``spec`` (a file is loaded fresh when its ``stamp`` changes).

    Raises
    ------
    ModuleError
        The file or module cannot be imported (with the exception it raised), or the attribute
        is missing or not callable.
    """
    target, attr = split_spec(spec)
    if _is_file(target):
        path = Path(target)
        if not path.is_file():
            raise ModuleError(f"module {spec!r}: no such file {target!r}")
        name = f"carb_user_module_{content_hash(f'{path.resolve()}|{stamp}')}"
        obj = sys.modules.get(name)
        if obj is None:
            try:
                loader_spec = importlib.util.spec_from_file_location(name, path)
                obj = importlib.util.module_from_spec(loader_spec)
                loader_spec.loader.exec_module(obj)
            except BaseException as exc:  # noqa: BLE001 - user code: any error is reported
                if isinstance(exc, (KeyboardInterrupt, SystemExit, _Timeout)):
                    raise
                raise _user_error(spec, f"importing {target} failed", exc) from None
            sys.modules[name] = obj
    else:
        target = MOVED_MODULES.get(target, target)
        if target.split(".")[0] == "torchvision":  # its C++ operators may not match torch
            import_torchvision()
        try:
            obj = importlib.import_module(target)
        except BaseException as exc:  # noqa: BLE001
            if isinstance(exc, (KeyboardInterrupt, SystemExit, _Timeout)):
                raise
            raise _user_error(spec, f"cannot import {target!r}", exc) from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ModuleError(f"module {spec!r}: {target!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ModuleError(f"module {spec!r}: {attr!r} is not callable")
    return obj


# --------------------------------------------------------------------------- building
def build_from_spec(spec: str, kwargs_json: str = "{}", stamp: int | None = None,
                    meta: bool = False) -> Any:
    """Call the factory of ``spec`` with ``kwargs_json`` and return the module in eval mode.

    ``meta=True`` builds under ``torch.device("meta")`` (and moves what the factory put
    elsewhere to ``meta``); a factory that fails there (it computes with tensors, as
    torchvision's RegNets) runs again on the CPU with every parameter moved to ``meta`` as it
    is registered (:func:`~carb_lib.families._meta_build.parameters_on_meta`).

    Raises
    ------
    ModuleError
        The factory cannot be loaded, raises, or returns something else than an ``nn.Module``.
    """
    import torch

    factory = load_factory(spec, _stamp(spec) if stamp is None else stamp)
    kwargs = json.loads(kwargs_json)
    try:
        if meta:
            try:
                with torch.device("meta"):
                    model = factory(**kwargs)
            except (NotImplementedError, RuntimeError) as exc:  # tensor data read on meta
                if isinstance(exc, _Timeout):  # the wall-clock cap, not a meta failure
                    raise
                with on_meta():
                    model = factory(**kwargs)
        else:
            model = factory(**kwargs)
    except BaseException as exc:  # noqa: BLE001
        if isinstance(exc, (KeyboardInterrupt, SystemExit, _Timeout)):
            raise
        raise _user_error(spec, "the factory raised", exc) from None
    if not isinstance(model, torch.nn.Module):
        raise ModuleError(f"module {spec!r}: the factory returned {type(model).__name__}, not "
                          "a torch.nn.Module")
    if meta and any(t.device.type != "meta" for t in (*model.parameters(), *model.buffers())):
        model = model.to("meta")
    return model.eval()


_ACT = ("ReLU", "ReLU6", "SiLU", "GELU", "Sigmoid", "Tanh", "Hardswish", "Hardsigmoid",
        "LeakyReLU", "ELU", "SELU", "Mish", "PReLU", "Softplus", "Hardtanh")  # fmt: skip


def _kind(module: Any) -> str | None:
    from torch import nn

    if isinstance(module, nn.modules.conv._ConvNd):
        return "conv"
    if isinstance(module, nn.modules.batchnorm._BatchNorm):
        return "bn"
    if isinstance(module, nn.Linear):
        return "fc"
    if isinstance(module, (nn.modules.pooling._MaxPoolNd, nn.modules.pooling._AvgPoolNd,
                           nn.modules.pooling._AdaptiveAvgPoolNd,
                           nn.modules.pooling._AdaptiveMaxPoolNd)):
        return "pool"
    if isinstance(module, tuple(getattr(nn, a) for a in _ACT)):
        return "act"
    return None


def measure_module(model: Any, input_shape: Sequence[int], batch: int = 1,
                   precision: str = "fp32", spec: str = "module") -> dict[str, Any]:
    """Run ``model`` (on the ``meta`` device, at ``precision``) once on a ``batch`` x
    ``input_shape`` input and measure :data:`FEATURE_COLUMNS` (see the module docstring), plus
    ``num_classes`` (output elements per sample) and ``dw_flops``.

    FLOPs with ``FlopCounterMode`` (depthwise FLOPs from its per-module counts); layers and
    bytes from forward hooks on every leaf module; residual adds and gating multiplies from a
    dispatch mode (:func:`carb_lib.families._common._residual_adds`).

    Raises
    ------
    ModuleError
        The forward fails on that input (with the exception it raised).
    """
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    dtype = torch.float16 if precision == "fp16" else torch.float32
    counts = dict.fromkeys(("conv", "bn", "act", "fc", "pool", "dwconv"), 0)
    tot = {"act": 0, "mb": 0, "max_c": 0, "peak": 0}
    leaves = [(n, m) for n, m in model.named_modules() if not any(True for _ in m.children())]
    kinds = {id(m): (n, _kind(m)) for n, m in leaves}
    dw_leaves = {n for n, m in leaves if kinds[id(m)][1] == "conv" and _is_depthwise(m)}

    def nbytes(t: Any) -> int:
        return t.numel() * t.element_size() if isinstance(t, torch.Tensor) else 0

    # id of a leaf's output -> (leaf name, kind); the dispatch mode keeps the tensors alive
    made: dict[int, tuple] = {}

    def hook(module, inputs, out):
        name, kind = kinds[id(module)]
        if isinstance(out, torch.Tensor):  # the first producer wins (in-place ops return it)
            made.setdefault(id(out), (name, kind))
        out_b = sum(nbytes(o) for o in (out if isinstance(out, (tuple, list)) else (out,)))
        in_b = sum(nbytes(i) for i in inputs)
        tot["act"] += out_b
        tot["peak"] = max(tot["peak"], in_b + out_b)
        if kind is None:
            return
        counts[kind] += 1
        if kind in ("bn", "act", "pool"):
            tot["mb"] += in_b + out_b
        if kind == "conv":
            tot["max_c"] = max(tot["max_c"], int(out.shape[1]))
            counts["dwconv"] += _is_depthwise(module)

    handles = []
    for _, m in leaves:
        handles.append(m.register_forward_hook(hook))
    x = torch.empty(batch, *input_shape, dtype=dtype, device="meta")
    binary = _residual_adds()
    try:
        with torch.no_grad(), FlopCounterMode(display=False) as fcm, binary:
            out = model(x)
    except BaseException as exc:  # noqa: BLE001
        if isinstance(exc, (KeyboardInterrupt, SystemExit, _Timeout)):
            raise
        raise _user_error(spec, f"forward on input shape {tuple(x.shape)} failed", exc) from None
    finally:
        for h in handles:
            h.remove()
    if not isinstance(out, torch.Tensor) or out.dim() < 1 or out.shape[0] != batch:
        raise ModuleError(f"module {spec!r}: forward must return one tensor with the batch first,"
                          f" got {type(out).__name__}"
                          f"{tuple(out.shape) if isinstance(out, torch.Tensor) else ''}")
    flops = int(fcm.get_total_flops())
    per_module, root = fcm.get_flop_counts(), type(model).__name__

    def leaf_flops(names) -> int:
        return sum(sum(per_module.get(f"{root}.{n}" if n else root, {}).values()) for n in names)

    dw, se = leaf_flops(dw_leaves), leaf_flops(_se_leaves(made, binary))
    params = int(sum(p.numel() for p in model.parameters()))
    bpe = BYTES_PER_ELEMENT[precision]
    act = tot["act"]
    return {
        "n_conv": counts["conv"], "n_bn": counts["bn"], "n_act": counts["act"],
        "n_fc": counts["fc"], "max_channels": tot["max_c"], "flops": flops, "params": params,
        "param_bytes": params * bpe, "activation_bytes": act,
        "peak_act_bytes": nbytes(x) + tot["peak"],
        "arith_intensity_flop_per_byte": flops / (params * bpe + act) if params + act else 0.0,
        "n_dwconv": counts["dwconv"], "n_pool": counts["pool"], "n_add": binary.n,
        "n_se": binary.n_gate, "dw_flops_share": dw / flops if flops else 0.0,
        "se_flops": int(se),
        "memory_bound_bytes": tot["mb"] + binary.nbytes + binary.gate_bytes,
        "num_classes": int(out[0].numel()), "dw_flops": int(dw),
    }  # fmt: skip


def _se_leaves(made: dict[int, tuple], binary: Any) -> set[str]:
    """Names of the conv and linear leaves that compute the SE gates of ``binary`` (the
    dispatch mode): from each gate back through every op's inputs, only into tensors that are
    1 x 1 in space (so the trace stops at the squeeze), collecting leaves whose outputs it
    reaches (``made``, from the forward hooks)."""
    small = {id(o) for o, _ in binary.held if all(d == 1 for d in o.shape[2:])}
    found: set[str] = set()
    seen: set[int] = set()
    stack = [id(g) for g in binary.gates]
    while stack:
        t = stack.pop()
        if t in seen or t not in small:
            continue
        seen.add(t)
        name, kind = made.get(t, ("", None))
        if kind in ("conv", "fc"):
            found.add(name)
        stack.extend(binary.inputs_of.get(t, ()))
    return found


class ModuleInfo(NamedTuple):
    """What one module at one input shape is, per sample in fp32 (cached)."""

    structure: str
    num_classes: int
    units: dict[str, Any]


@lru_cache(maxsize=8)  # read-only users: measure_module and simulate_peak copy or hook only
def _meta_model(spec: str, kwargs_json: str, stamp: int) -> Any:
    return build_from_spec(spec, kwargs_json, stamp, meta=True)


@lru_cache(maxsize=512)
def _describe(spec: str, kwargs_json: str, shape: tuple[int, ...], stamp: int) -> ModuleInfo:
    model = _meta_model(spec, kwargs_json, stamp)
    units = measure_module(model, shape, 1, "fp32", spec)
    return ModuleInfo(structure_hash(model), units.pop("num_classes"), units)


def describe(spec: str, kwargs_json: str = "{}", input_shape: Any = (3, 224, 224)) -> ModuleInfo:
    """The structure hash, output size and per-sample fp32 features of a user module at one
    input shape: measured once (:func:`measure_module`), then from a cache.

    Raises
    ------
    ModuleError, ConfigError
        Naming the factory and what failed.
    """
    split_spec(spec)
    return _describe(spec, parse_kwargs(kwargs_json), parse_input_shape(input_shape),
                     _stamp(spec))


# --------------------------------------------------------------------------- config
@dataclass(frozen=True)
class ModuleConfig:
    """One user module at one input shape, batch and precision (validated: the module is
    built and run on the ``meta`` device once per factory, arguments and input shape).

    Parameters
    ----------
    module : str
        The factory, ``package.module:function`` or ``path/to/file.py:function``.
    input_shape : str or sequence of int
        ``C,H,W`` of one sample.
    batch : int
    precision : {"fp32", "fp16"}
    module_kwargs : str or mapping
        The factory's keyword arguments (JSON object text).
    resolution, num_classes : int, optional
        Derived (``H``; output elements per sample); a given value must agree.
    """

    module: str
    input_shape: tuple[int, ...]
    batch: int
    precision: str
    module_kwargs: str = "{}"
    resolution: int | None = None
    num_classes: int | None = None
    family: str = field(default=FAMILY, init=False)

    def __post_init__(self) -> None:
        shape = parse_input_shape(self.input_shape)
        kwargs = parse_kwargs(self.module_kwargs)
        batch = _check_batch(self.batch)
        if self.precision not in PRECISIONS:
            raise ConfigError(f"precision={self.precision!r} is unknown; valid values: "
                              f"{list(PRECISIONS)}")
        info = describe(self.module, kwargs, shape)
        for name, derived, given in (("resolution", shape[1], self.resolution),
                                     ("num_classes", info.num_classes, self.num_classes)):
            if not is_missing(given) and _as_int(given) != derived:
                raise ConfigError(f"{name}={given!r} does not match the module (input_shape "
                                  f"{shape_text(shape)} gives {name} {derived})")
        for k, v in (("input_shape", shape), ("module_kwargs", kwargs), ("batch", batch),
                     ("resolution", shape[1]), ("num_classes", info.num_classes),
                     ("_structure", info.structure)):
            object.__setattr__(self, k, v)

    @property
    def config_id(self) -> str:
        """Content hash of the module's structure, input shape, batch and precision."""
        return module_config_id(self._structure, self.input_shape, self.batch, self.precision)

    def to_dict(self) -> dict[str, Any]:
        """Config columns as a plain dict (``input_shape`` as ``"C,H,W"``)."""
        d = {c: getattr(self, c) for c in MODULE_COLUMNS}
        d["input_shape"] = shape_text(self.input_shape)
        return d

    def build_model(self):
        """Build the network (fp32, eval mode, default device)."""
        return build_module(self)

    def build_meta_model(self):
        """The network on ``meta`` (fp32), also where the factory computes with tensors."""
        return build_from_spec(self.module, self.module_kwargs, meta=True)


def _as_int(v: Any) -> int | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return int(f) if f.is_integer() else None


def _check_batch(value: Any) -> int:
    b = _as_int(value)
    lo, hi = BATCH_RANGE
    if isinstance(value, bool) or b is None or not lo <= b <= hi:
        raise ConfigError(f"batch={value!r} must be an integer in {lo}..{hi} "
                          f"(grid: {list(BATCH_SIZES)})")
    return b


def module_config_id(structure: str, input_shape: Sequence[int], batch: int,
                     precision: str) -> str:
    """The content hash of a module config (see :attr:`ModuleConfig.config_id`)."""
    return content_hash(f"{FAMILY}|structure={structure}|input_shape={shape_text(input_shape)}"
                        f"|batch={int(batch)}|precision={precision}")


def config_from_row(row: Mapping[str, Any]) -> ModuleConfig:
    """Validate one row (mapping) into a :class:`ModuleConfig`."""
    missing = [c for c in REQUIRED_COLUMNS if c not in row or is_missing(row[c])]
    if missing:
        raise ConfigError(f"module config is missing column(s) {missing}")
    return ModuleConfig(module=row["module"], input_shape=row["input_shape"],
                        batch=row["batch"], precision=row["precision"],
                        module_kwargs=row.get("module_kwargs", "{}"),
                        resolution=row.get("resolution"), num_classes=row.get("num_classes"))


def _keys(df: pd.DataFrame) -> list[tuple[Any, Any, Any]]:
    """``(module, module_kwargs, input_shape)`` of every row (kwargs ``"{}"`` where missing)."""
    missing = [c for c in ("module", "input_shape") if c not in df.columns]
    if missing:
        raise ConfigError(f"module configs are missing column(s) {missing}")
    kw = df["module_kwargs"].tolist() if "module_kwargs" in df.columns else ["{}"] * len(df)
    kw = ["{}" if is_missing(k) else k for k in kw]
    shapes = [v if isinstance(v, str) else shape_text(v) for v in df["input_shape"].tolist()]
    return list(zip(df["module"].tolist(), kw, shapes, strict=True))


def _infos(df: pd.DataFrame) -> tuple[np.ndarray, list[ModuleInfo]]:
    """Codes of every row's (module, kwargs, input shape) and the info of each distinct one;
    a :class:`ConfigError` names the first row of a failing one."""
    first: dict[tuple, int] = {}
    codes = np.empty(len(df), dtype=np.int64)
    infos: list[ModuleInfo] = []
    for i, key in enumerate(_keys(df)):
        j = first.get(key)
        if j is None:
            try:
                infos.append(describe(*key))
            except ConfigError as exc:
                label = df.index[[i]].tolist()[0]
                raise type(exc)(f"row {label!r}: {exc}") from None
            j = first[key] = len(infos) - 1
        codes[i] = j
    return codes, infos


def config_ids(df: pd.DataFrame) -> list[str]:
    """Content hashes of every row (one module description per distinct module)."""
    codes, infos = _infos(df)
    shapes = [parse_input_shape(k[2]) for k in _keys(df)]
    return [module_config_id(infos[c].structure, s, b, p) for c, s, b, p in
            zip(codes, shapes, df["batch"].tolist(), df["precision"].tolist(), strict=True)]


def module_configs(spec: str, input_shape: Any, batches: Sequence[int] = (1,),
                   precisions: Sequence[str] = ("fp32",), module_kwargs: Any = "{}"
                   ) -> pd.DataFrame:
    """Configs of one user module over batch sizes x precisions: ``config_id`` + the family's
    config columns (for ``carb profile/predict/screen --module``).

    Raises
    ------
    ConfigError
        Before anything else happens, for a factory that cannot be imported or built, a
        forward that fails, a wrong input shape, batch or precision.
    """
    if not batches or not precisions:
        raise ConfigError("give at least one batch size and one precision")
    configs = [ModuleConfig(spec, input_shape, b, p, module_kwargs)
               for b in batches for p in precisions]
    df = pd.DataFrame([c.to_dict() for c in configs])
    df.insert(0, "config_id", [c.config_id for c in configs])
    return df.drop_duplicates("config_id").reset_index(drop=True)


def cli_configs(module: str | None, input_shape: str | None, module_kwargs: str = "{}",
                batches: str = "1", precisions: str = "fp32") -> pd.DataFrame | None:
    """The configs of ``carb profile/predict/screen --module SPEC --input-shape C,H,W
    [--module-kwargs JSON] [--batches 1,8] [--precisions fp32,fp16]``; None without
    ``--module``.

    Raises
    ------
    ConfigError
        Naming the option, or the module's problem (:func:`module_configs`).
    """
    if module is None:
        if input_shape is not None:
            raise ConfigError("--input-shape needs --module (a user network)")
        return None
    if input_shape is None:
        raise ConfigError("--module needs --input-shape C,H,W (the shape of one input sample)")
    try:
        bs = [int(b) for b in str(batches).split(",") if b.strip()]
    except ValueError:
        raise ConfigError(f"--batches {batches!r} must be comma-separated integers, e.g. "
                          "1,8,32") from None
    ps = [p.strip() for p in str(precisions).split(",") if p.strip()]
    return module_configs(module, input_shape, bs, ps, module_kwargs)


# --------------------------------------------------------------------------- model / features
def build_module(config: ModuleConfig):
    """Build the user module of ``config`` (fp32, eval mode, default device; build under
    ``torch.device("meta")`` to count without allocating)."""
    return build_from_spec(config.module, config.module_kwargs)


def module_static_features(df: pd.DataFrame) -> pd.DataFrame:
    """Static features of module rows: per-sample measurements (cached per module and input
    shape) scaled by batch and bytes per element; :data:`FEATURE_COLUMNS`, index-aligned.

    Raises
    ------
    ConfigError
        Naming the first row of a module that fails, or of a bad batch or precision.
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise ConfigError(f"module configs are missing column(s) {missing}")
    codes, infos = _infos(df)
    batch = pd.to_numeric(df["batch"], errors="coerce").to_numpy(dtype=float)
    bpe = np.array([BYTES_PER_ELEMENT.get(p, np.nan) if isinstance(p, str) else np.nan
                    for p in df["precision"].tolist()], dtype=float)
    lo, hi = BATCH_RANGE
    for bad, what in ((~((batch >= lo) & (batch <= hi) & (np.mod(batch, 1) == 0)), "batch"),
                      (np.isnan(bpe), "precision")):
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            label = df.index[[i]].tolist()[0]
            raise ConfigError(f"row {label!r}: {what}={df[what].tolist()[i]!r} is not valid "
                              f"(batch: integer in {lo}..{hi}; precision: {list(PRECISIONS)})")
    cols = [*FEATURE_COLUMNS, "dw_flops"]
    table = np.array([[i.units[c] for c in cols] for i in infos], dtype=float)[codes]
    u = dict(zip(cols, table.T, strict=True))
    out = {c: u[c].astype(np.int64) for c in ("n_conv", "n_bn", "n_act", "n_fc",
                                               "max_channels", "params")}
    el = 1.0 / BYTES_PER_ELEMENT["fp32"]  # per-sample bytes were measured in fp32
    out["flops"] = (u["flops"] * batch).astype(np.int64)
    out["param_bytes"] = (u["params"] * bpe).astype(np.int64)
    for c in ("activation_bytes", "peak_act_bytes"):
        out[c] = (u[c] * el * batch * bpe).astype(np.int64)
    denom = out["param_bytes"] + out["activation_bytes"]
    out["arith_intensity_flop_per_byte"] = out["flops"] / np.maximum(denom, 1)
    for c in ("n_dwconv", "n_pool", "n_add", "n_se"):
        out[c] = u[c].astype(np.int64)
    dw = (u["dw_flops"] * batch).astype(np.int64)
    out["se_flops"] = (u["se_flops"] * batch).astype(np.int64)
    out["dw_flops_share"] = np.where(out["flops"] > 0, dw / np.maximum(out["flops"], 1), 0.0)
    out["memory_bound_bytes"] = (u["memory_bound_bytes"] * el * batch * bpe).astype(np.int64)
    out.update(_alloc_peaks(df, batch))
    return pd.DataFrame({c: out[c] for c in (*FEATURE_COLUMNS, *ALLOC_FEATURES.values())},
                        index=df.index, copy=False)


@lru_cache(maxsize=4096)
def _alloc_peak_cases(spec: str, kwargs_json: str, shape: tuple[int, ...], stamp: int,
                      batch: int, precision: str, cases: tuple) -> tuple[float, ...]:
    """The allocator model's peak of each variant of ``cases`` from one meta forward; NaN
    for a module the simulator cannot follow."""
    try:
        peaks = allocator.simulate_peaks(_meta_model(spec, kwargs_json, stamp), (batch, *shape),
                                         precision=precision, blocks=cases)
    except Exception as exc:  # an op the simulator cannot follow: the law's fallback
        logger.warning("allocator simulation of %s failed (%s: %s); alloc_peak_bytes is NaN",
                       spec, type(exc).__name__, exc)
        return tuple(float("nan") for _ in cases)
    return tuple(float(peaks[c].peak_bytes) for c in cases)


def _alloc_peaks(df: pd.DataFrame, batch: np.ndarray) -> dict[str, np.ndarray]:
    """The allocator model's peak of every row, per allocator variant
    (:data:`~carb_lib.core.vocab.ALLOC_FEATURES`; :func:`carb_lib.families.allocator.simulate_peaks`,
    cached per module, input shape, batch and precision; NaN for other precisions). A
    variant's channel block matters for fp32 rows only and its fp16 path for fp16 rows only,
    so each row simulates its distinct cases, all in one forward pass."""
    rows = list(zip(_keys(df), batch.astype(int).tolist(), df["precision"].tolist(),
                    strict=True))
    peaks: dict[tuple, dict[int | str, float]] = {}  # once per module, shape, batch, precision
    for key, b, p in dict.fromkeys(rows):
        case_of = {v: variant_case(v, p) for v in ALLOC_FEATURES}
        cases = tuple(dict.fromkeys(case_of.values()))
        values = dict(zip(cases, _alloc_peak_cases(
            key[0], parse_kwargs(key[1]), parse_input_shape(key[2]), _stamp(key[0]), b, p,
            cases) if p in ("fp32", "fp16") else [float("nan")] * len(cases), strict=True))
        peaks[(key, b, p)] = {v: values[c] for v, c in case_of.items()}
    return {name: np.array([peaks[r][block] for r in rows], dtype=float)
            for block, name in ALLOC_FEATURES.items()}


def measured_module_features(config: ModuleConfig, model=None) -> dict[str, int | float]:
    """:data:`EXACT_COLUMNS` measured on the module built on the ``meta`` device at the
    config's batch and precision (``model``: that network already on ``meta``)."""
    import torch

    if model is None:
        model = build_from_spec(config.module, config.module_kwargs, meta=True)
    model = model.to(dtype=torch.float16 if config.precision == "fp16" else torch.float32)
    meas = measure_module(model, config.input_shape, config.batch, config.precision,
                          config.module)
    return {c: meas[c] for c in EXACT_COLUMNS}


def encode_module_config(df: pd.DataFrame, rows: np.ndarray | None = None) -> pd.DataFrame:
    """The learners' encoding of the module config columns: none (a user module is described
    by its static features only); an empty frame index-aligned with ``df``."""
    return pd.DataFrame(index=df.index)


# --------------------------------------------------------------------------- the family
class ModuleFamily(Family):
    """The ``module`` family (see the module docstring)."""

    name = FAMILY
    config_type = ModuleConfig
    own_columns = OWN_COLUMNS
    required_columns = REQUIRED_COLUMNS
    categories = {}
    extra_feature_columns = EXTRA_COLUMNS
    matrix_columns = ()
    not_applicable = math.nan
    predict_unseen = True

    from_row = staticmethod(config_from_row)
    config_ids = staticmethod(config_ids)
    build_model = staticmethod(build_module)
    static_features = staticmethod(module_static_features)
    measured_features = staticmethod(measured_module_features)
    encode_config = staticmethod(encode_module_config)


#: The family object (registered by :mod:`carb_lib.families`).
MODULE = ModuleFamily()

__all__ = [
    "EXACT_COLUMNS", "EXTRA_COLUMNS", "FAMILY", "FEATURE_COLUMNS", "MODULE", "MODULE_COLUMNS",
    "ModuleConfig", "ModuleError", "ModuleFamily", "ModuleInfo", "build_from_spec", "build_module",
    "cli_configs", "config_from_row", "config_ids", "describe", "encode_module_config",
    "load_factory", "measure_module", "measured_module_features", "module_config_id",
    "module_configs", "module_static_features", "parse_input_shape", "parse_kwargs", "shape_text",
    "split_spec", "structure_hash",
]
