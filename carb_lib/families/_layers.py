"""Analytic layer accounting and its measured counterpart, shared by the families
``mobilenetv2``, ``vgg`` and ``efficientnet``.

The static features keep the meaning they have for ResNet and NB201 (see
:mod:`carb_lib.dataset.features`): ``flops`` are 2 x multiply-accumulates of convolutions and linear
layers (the ``FlopCounterMode`` convention: biases, BN, activations, pooling and elementwise ops
count 0); ``params`` are trainable parameters (conv weights and biases, BN weight + bias, FC
weight + bias); ``activation_bytes`` sums the outputs of every *layer* call (conv, BN,
activation, pooling, FC) for the whole batch — elementwise binary ops (residual adds, the SE
gating multiply) and views (``flatten``) are not layers; ``max_channels`` is the widest conv
output. Counting conventions for the new layer types:

``n_conv``
    Every ``Conv2d`` call, depthwise and squeeze-and-excitation (SE) 1x1 convs included.
``n_act``
    Every activation call of any kind: ReLU, ReLU6, SiLU and the SE's Sigmoid gate.
``n_fc``
    ``Linear`` calls (the SE's 1x1 convs are convs, not FC layers).

New family-agnostic features (:data:`carb_lib.core.vocab.EXTRA_STATIC_FEATURES`, here
:data:`NEW_FEATURE_COLUMNS`):

``n_dwconv``
    Depthwise conv calls (``groups == in_channels > 1``; here also ``== out_channels``).
``n_pool``
    Pooling calls: max pools, average pools, the global average pool of the head and of every SE.
``n_add``
    Residual (elementwise) additions.
``n_se``
    SE gating multiplies (one per SE block).
``dw_flops_share``
    FLOPs of depthwise convs / all FLOPs (0 when there is none).
``se_flops``
    FLOPs of the SE blocks' 1x1 convs, whole batch.
``memory_bound_bytes``
    Bytes moved by the ops with (about) zero FLOPs — BN, activations, pooling, SE gating
    multiplies, residual adds: for each call, the bytes of its tensor inputs (read) plus its
    output (written), at the config's precision, for the whole batch. In-place activations read
    and write their tensor (2x its size); BN parameters and running statistics are not counted.

``alloc_peak_bytes`` is the allocator model's peak (:mod:`carb_lib.families._alloc`, walked by
:class:`Tally` beside its counts; checked against the meta-device simulation and measured
peaks). ``peak_act_bytes`` is an estimate (not checked against a measurement) from the eager forward of
the built models: the input batch stays alive, every tensor still referenced is live (a block's
input until its residual add or the end of the block, the SE input until the gating multiply),
plus the running op's input and output; BN, Sigmoid, adds and multiplies write new tensors,
ReLU/ReLU6/SiLU are in place.

:class:`Tally` does the per-sample accounting of one architecture at one resolution;
:func:`static_frame` evaluates it once per unique architecture x resolution and scales by batch
and bytes per element; :func:`measure` measures the same quantities on a built model on the
``meta`` device (``FlopCounterMode`` with its per-module breakdown, parameter count, forward
hooks); :func:`compare` puts both side by side.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.vocab import ALLOC_FEATURES, EXTRA_STATIC_FEATURES, STATIC_FEATURES
from carb_lib.families._alloc import ALLOC_UNIT_COLUMNS, AllocWalk, alloc_feature_columns
from carb_lib.families._base import ConfigError
from carb_lib.families._common import BATCH_RANGE, BYTES_PER_ELEMENT, broadcast_rows

#: The family-agnostic extra static features (:data:`carb_lib.core.vocab.EXTRA_STATIC_FEATURES`).
NEW_FEATURE_COLUMNS: tuple[str, ...] = EXTRA_STATIC_FEATURES
#: Every static feature column of the new families, in order.
FEATURE_COLUMNS: tuple[str, ...] = (*STATIC_FEATURES, *NEW_FEATURE_COLUMNS,
                                     *ALLOC_FEATURES.values())
#: Columns that :func:`measure` measures and :func:`compare` checks exactly.
EXACT_COLUMNS: tuple[str, ...] = (
    "n_conv", "n_bn", "n_act", "n_fc", "max_channels", "flops", "params", "param_bytes",
    "activation_bytes", *NEW_FEATURE_COLUMNS,
)
#: Per-sample quantities of one architecture at one resolution (:meth:`Tally.unit`).
UNIT_COLUMNS: tuple[str, ...] = (
    "n_conv", "n_bn", "n_act", "n_fc", "max_channels", "macs", "params", "act_elems",
    "peak_elems", "n_dwconv", "n_pool", "n_add", "n_se", "dw_macs", "se_macs", "mb_elems",
)


# --------------------------------------------------------------------------- analytic
class Tally:
    """Per-sample accounting of one forward pass (square inputs; see the module docstring).

    The current tensor has ``c`` channels at ``h`` x ``h``; ``x`` is its element count unless
    it is held elsewhere (the input, a block input), then 0. :meth:`push` holds the current
    tensor (a block or SE input) and :meth:`pop` releases it.
    """

    def __init__(self, resolution: int, channels: int = 3, act: str = "relu") -> None:
        #: The operators of the pass, per image (:data:`carb_lib.kernels.law.OP_COLUMNS`), for the
        #: kernel characterization; ``act`` names the in-place activation's kernel.
        self.ops: list[tuple] = []
        self.act_kind = act
        self.n = dict.fromkeys(("conv", "bn", "act", "fc", "dwconv", "pool", "add", "se"), 0)
        self.macs = self.dw_macs = self.se_macs = self.params = self.act = self.mb = 0
        self.max_c = 0
        self.c, self.h = channels, resolution
        self.inp = channels * resolution * resolution  # the caller holds the input batch
        self.x = 0
        self.held = 0
        self.stack: list[tuple[int, int, int]] = []
        self.peak = self.inp
        self.mem = AllocWalk()  # the allocator model's walk (carb_lib.families._alloc)

    @property
    def elems(self) -> int:
        """Elements of the current tensor."""
        return self.c * self.h * self.h

    @property
    def live(self) -> int:
        """Elements per image referenced before the running op writes its output."""
        return self.inp + self.held + self.x

    def _live(self, new: int) -> None:
        self.peak = max(self.peak, self.live + new)

    def conv(self, cout: int, k: int, stride: int = 1, groups: int = 1, bias: bool = False,
             se: bool = False) -> None:
        """A ``Conv2d(c, cout, k, stride, padding=(k - 1) // 2, groups)``."""
        cin, ho = self.c, (self.h + 2 * ((k - 1) // 2) - k) // stride + 1
        m = cout * (cin // groups) * k * k * ho * ho
        self.n["conv"] += 1
        self.macs += m
        self.params += cout * (cin // groups) * k * k + (cout if bias else 0)
        if groups > 1 and groups == cin:
            self.n["dwconv"] += 1
            self.dw_macs += m
        if se:
            self.se_macs += m
        self.max_c = max(self.max_c, cout)
        self.ops.append(("dwconv" if groups > 1 and groups == cin else "conv", cin, cout, k,
                         stride, (k - 1) // 2, groups, self.h, ho))
        self.mem.conv(self.live, cin, cout, k, stride, (k - 1) // 2, groups, self.h, ho,
                      bias=bias)
        self._new(cout, ho)

    def _new(self, c: int, h: int, mb: bool = False, layer: bool = True) -> None:
        """The running op writes a new ``c`` x ``h`` x ``h`` tensor that replaces the current."""
        e_in, e = self.elems, c * h * h
        if layer:
            self.act += e
        if mb:
            self.mb += e_in + e
        self._live(e)
        self.c, self.h, self.x = c, h, e

    def bn(self) -> None:
        """``BatchNorm2d`` (affine; not in place)."""
        self.n["bn"] += 1
        self.ops.append(("bn", self.c, self.c, 1, 1, 0, 1, self.h, self.h))
        self.params += 2 * self.c
        self.mem.bn(self.live, self.c, self.elems)
        self._new(self.c, self.h, mb=True)

    def activation(self, inplace: bool = True, kind: str | None = None) -> None:
        """Any activation (ReLU, ReLU6, SiLU in place; Sigmoid writes a new tensor); ``kind``:
        its kernel (default: the pass's ``act``)."""
        self.n["act"] += 1
        self.ops.append((kind or self.act_kind, self.c, self.c, 1, 1, 0, 1, self.h, self.h))
        if inplace:
            self.act += self.elems
            self.mb += 2 * self.elems
            self._live(0)
        else:
            self.mem.new(self.live, self.elems)
            self._new(self.c, self.h, mb=True)

    def pool(self, k: int | None = None, stride: int | None = None) -> None:
        """``MaxPool2d(k, stride)`` without padding, or the global average pool (``k=None``)."""
        self.n["pool"] += 1
        h = 1 if k is None else (self.h - k) // stride + 1
        self.ops.append(("avgpool", self.c, self.c, 1, 1, 0, 1, self.h, 1) if k is None else
                        ("maxpool", self.c, self.c, k, stride, 0, 1, self.h, h))
        if k is None:
            self.mem.global_pool(self.live, self.c, self.elems)
        else:
            self.mem.maxpool(self.live, self.c * h * h)
        self._new(self.c, h, mb=True)

    def fc(self, cout: int) -> None:
        """``Linear(c * h * h, cout)`` with bias on the flattened current tensor."""
        cin = self.elems
        self.n["fc"] += 1
        self.ops.append(("linear", cin, cout, 1, 1, 0, 1, 1, 1))
        self.macs += cin * cout
        self.params += cin * cout + cout
        self.mem.new(self.live, cout)
        self._new(cout, 1)

    def push(self) -> None:
        """Hold the current tensor (a block or SE input) until :meth:`pop`/:meth:`scale`."""
        self.stack.append((self.x, self.c, self.h))  # x == 0: held elsewhere already
        self.held += self.x
        self.x = 0

    def pop(self, add: bool = False) -> None:
        """Release the held tensor; ``add=True``: first add it to the current one (residual)."""
        held, _, _ = self.stack.pop()
        if add:
            self.n["add"] += 1
            self.ops.append(("add", self.c, self.c, 1, 1, 0, 1, self.h, self.h))
            self.mb += 3 * self.elems
            self.mem.new(self.live, self.elems)
            self._new(self.c, self.h, layer=False)
        self.held -= held

    def scale(self) -> None:
        """The SE gating multiply: held SE input x current gate (``c`` x 1 x 1), new tensor."""
        held, c, h = self.stack.pop()
        self.n["se"] += 1
        self.ops.append(("mul", c, c, 1, 1, 0, 1, h, h))
        self.mb += 2 * c * h * h + self.elems
        self.mem.new(self.live, c * h * h)
        self._live(c * h * h)
        self.held -= held
        self.c, self.h, self.x = c, h, c * h * h

    def unit(self) -> tuple[int | float, ...]:
        """The :data:`UNIT_COLUMNS` of the pass, then the allocator model's
        (:data:`carb_lib.families._alloc.ALLOC_UNIT_COLUMNS`)."""
        n = self.n
        return (n["conv"], n["bn"], n["act"], n["fc"], self.max_c, self.macs, self.params,
                self.act, self.peak, n["dwconv"], n["pool"], n["add"], n["se"], self.dw_macs,
                self.se_macs, self.mb, *self.mem.unit())


def static_frame(df: pd.DataFrame, family: str, arch_columns: tuple[str, ...],
                 unit_fn: Callable[..., tuple[int, ...]], make_config: Callable[..., Any]
                 ) -> pd.DataFrame:
    """Analytic features of every row: ``unit_fn(*arch, resolution, num_classes)`` once per
    unique key, validated with ``make_config(**kw)``, scaled by batch and bytes per element.

    Returns :data:`FEATURE_COLUMNS`, index-aligned with ``df``; a :class:`ConfigError` names the
    first invalid row.
    """
    missing = [c for c in (*arch_columns, "resolution", "batch", "precision")
               if c not in df.columns]
    if missing:
        raise ConfigError(f"{family} configs are missing column(s) {missing}")
    nc = df["num_classes"].fillna(1000) if "num_classes" in df.columns else 1000
    key = df[list(arch_columns)].assign(resolution=df["resolution"], num_classes=nc)
    if key.isna().any(axis=None):
        i, c = next((i, c) for c in key.columns for i in key.index[key[c].isna()])
        raise ConfigError(f"row {i!r}: column {c!r} is missing (NaN/None)")
    codes, uniques = pd.MultiIndex.from_frame(key).factorize()
    rows = []
    for j, u in enumerate(uniques):
        kw = dict(zip(key.columns, u, strict=True))
        try:
            cfg = make_config(**kw, batch=1, precision="fp32")
        except ConfigError as exc:
            label = _label(key.index, np.argmax(codes == j))
            raise ConfigError(f"row {label!r}: {exc}") from None
        rows.append(unit_fn(*(getattr(cfg, c) for c in arch_columns), cfg.resolution,
                            cfg.num_classes))
    nu = len(UNIT_COLUMNS)
    table = np.array(rows, dtype=np.float64).reshape(len(uniques), nu + len(ALLOC_UNIT_COLUMNS))
    units = broadcast_rows(table[:, :nu], codes, list(UNIT_COLUMNS), df.index)
    batch, bpe = _batches(df["batch"]), bytes_per_element(df["precision"])
    out = scale_units(units, batch, bpe)
    alloc = alloc_feature_columns(table[:, nu:], codes, units["params"].to_numpy(),
                                  df["precision"], batch, bpe)
    for name, values in alloc.items():
        out[name] = values
    return out


def _label(index: pd.Index, i: int) -> Any:
    """The label of row position ``i`` as a plain Python value (for messages)."""
    return index[[int(i)]].tolist()[0]


def _batches(batch: pd.Series) -> np.ndarray:
    b = pd.to_numeric(batch, errors="coerce").to_numpy(dtype=np.float64)
    lo, hi = BATCH_RANGE
    bad = np.isnan(b) | (b < lo) | (b > hi) | (np.mod(b, 1) != 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ConfigError(f"row {_label(batch.index, i)!r}: batch={batch.tolist()[i]!r} must be "
                          f"an integer in {lo}..{hi}")
    return b


def bytes_per_element(precision: pd.Series) -> np.ndarray:
    """Bytes per element of every row's precision; a ConfigError names the first bad row."""
    codes, uniq = pd.factorize(precision)
    table = np.array([BYTES_PER_ELEMENT.get(u, np.nan) for u in uniq] + [np.nan], dtype=float)
    bpe = table[codes]
    if np.isnan(bpe).any():
        i = int(np.flatnonzero(np.isnan(bpe))[0])
        raise ConfigError(f"row {_label(precision.index, i)!r}: precision="
                          f"{precision.tolist()[i]!r} is unknown; valid values: "
                          f"{list(BYTES_PER_ELEMENT)}")
    return bpe


def scale_units(units: pd.DataFrame, batch: np.ndarray, bpe: np.ndarray) -> pd.DataFrame:
    """:data:`FEATURE_COLUMNS` from per-sample ``units``, batch sizes and bytes per element."""
    u = {c: units[c].to_numpy() for c in UNIT_COLUMNS}
    out = pd.DataFrame(index=units.index)
    for c in ("n_conv", "n_bn", "n_act", "n_fc", "max_channels"):
        out[c] = u[c].astype(np.int64)
    out["flops"] = (2.0 * u["macs"] * batch).astype(np.int64)
    out["params"] = u["params"].astype(np.int64)
    out["param_bytes"] = (u["params"] * bpe).astype(np.int64)
    out["activation_bytes"] = (u["act_elems"] * batch * bpe).astype(np.int64)
    out["peak_act_bytes"] = (u["peak_elems"] * batch * bpe).astype(np.int64)
    out["arith_intensity_flop_per_byte"] = out["flops"] / (out["param_bytes"]
                                                           + out["activation_bytes"])
    for c in ("n_dwconv", "n_pool", "n_add", "n_se"):
        out[c] = u[c].astype(np.int64)
    dw = (2.0 * u["dw_macs"] * batch).astype(np.int64)
    out["dw_flops_share"] = np.where(out["flops"] > 0, dw / np.maximum(out["flops"], 1), 0.0)
    out["se_flops"] = (2.0 * u["se_macs"] * batch).astype(np.int64)
    out["memory_bound_bytes"] = (u["mb_elems"] * batch * bpe).astype(np.int64)
    return out[[*STATIC_FEATURES, *NEW_FEATURE_COLUMNS]]


# --------------------------------------------------------------------------- torch modules
@lru_cache(maxsize=1)
def torch_layers() -> SimpleNamespace:
    """The shared torch building blocks (defined lazily: importing a family needs no torch).

    ``Add`` (out-of-place residual add) and ``Mul`` (SE gating multiply) are modules so that
    forward hooks see them; ``SqueezeExcite(c, squeeze)`` is global average pool -> 1x1 conv
    (bias) -> SiLU -> 1x1 conv (bias) -> Sigmoid -> ``Mul``; ``Residual(body)`` returns
    ``Add(x, body(x))``; ``conv_bn_act(cin, cout, k, stride, groups, act)`` is a conv (no bias,
    padding ``(k - 1) // 2``) + BN (+ ``act(inplace=True)`` unless ``act`` is None).
    """
    from torch import nn

    class Add(nn.Module):
        def forward(self, a, b):
            return a + b

    class Mul(nn.Module):
        def forward(self, x, gate):
            return x * gate

    class SqueezeExcite(nn.Module):
        def __init__(self, c: int, squeeze: int) -> None:
            super().__init__()
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc1 = nn.Conv2d(c, squeeze, 1)
            self.act = nn.SiLU(inplace=True)
            self.fc2 = nn.Conv2d(squeeze, c, 1)
            self.gate = nn.Sigmoid()
            self.scale = Mul()

        def forward(self, x):
            return self.scale(x, self.gate(self.fc2(self.act(self.fc1(self.avgpool(x))))))

    class Residual(nn.Module):
        def __init__(self, body: nn.Module) -> None:
            super().__init__()
            self.body = body
            self.add = Add()

        def forward(self, x):
            return self.add(x, self.body(x))

    class Classifier(nn.Module):
        """``features`` -> global average pool -> flatten -> ``Linear(c, num_classes)``."""

        def __init__(self, features: nn.Module, c: int, num_classes: int) -> None:
            super().__init__()
            self.features = features
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.classifier = nn.Linear(c, num_classes)

        def forward(self, x):
            return self.classifier(self.avgpool(self.features(x)).flatten(1))

    def conv_bn_act(cin, cout, k, stride=1, groups=1, act=nn.ReLU6):
        layers = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
                  nn.BatchNorm2d(cout)]
        if act is not None:
            layers.append(act(inplace=True))
        return nn.Sequential(*layers)

    return SimpleNamespace(nn=nn, Add=Add, Mul=Mul, SqueezeExcite=SqueezeExcite,
                           Residual=Residual, Classifier=Classifier, conv_bn_act=conv_bn_act)


# --------------------------------------------------------------------------- measured
def meta_model(config: Any, build: Callable[[Any], Any]):
    """``build(config)`` on the ``meta`` device at the config's precision (allocates nothing)."""
    import torch

    dtype = torch.float16 if config.precision == "fp16" else torch.float32
    with torch.device("meta"):
        return build(config).to(dtype=dtype)


def measure(model: Any, config: Any) -> dict[str, int | float]:
    """Measure :data:`EXACT_COLUMNS` of ``model`` (on the ``meta`` device) on ``config``'s input.

    FLOPs with ``FlopCounterMode`` (depthwise and SE FLOPs from its per-module breakdown),
    parameters by counting, and layer calls, ``max_channels``, ``activation_bytes`` and
    ``memory_bound_bytes`` with forward hooks on every module of a counted type.
    """
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    t = torch_layers()
    nn = t.nn
    kinds = ((nn.Conv2d, "conv"), (nn.BatchNorm2d, "bn"),
             ((nn.ReLU, nn.ReLU6, nn.SiLU, nn.Sigmoid), "act"),
             ((nn.MaxPool2d, nn.AvgPool2d, nn.AdaptiveAvgPool2d), "pool"),
             (nn.Linear, "fc"), (t.Add, "add"), (t.Mul, "se"))
    counts = dict.fromkeys(("conv", "bn", "act", "fc", "dwconv", "pool", "add", "se"), 0)
    tot = {"act": 0, "mb": 0, "max_c": 0}

    def hook_for(kind: str, depthwise: bool):
        def hook(_module, inputs, out):
            counts[kind] += 1
            nbytes = out.numel() * out.element_size()
            if kind in ("conv", "bn", "act", "pool", "fc"):
                tot["act"] += nbytes
            if kind in ("bn", "act", "pool", "add", "se"):
                tot["mb"] += nbytes + sum(i.numel() * i.element_size() for i in inputs
                                          if isinstance(i, torch.Tensor))
            if kind == "conv":
                tot["max_c"] = max(tot["max_c"], int(out.shape[1]))
                counts["dwconv"] += depthwise
        return hook

    handles, dw_names, se_names = [], [], []
    for name, m in model.named_modules():
        if isinstance(m, t.SqueezeExcite):
            se_names.append(name)
        kind = next((k for cls, k in kinds if isinstance(m, cls)), None)
        if kind is None:
            continue
        dw = kind == "conv" and m.groups > 1 and m.groups == m.in_channels
        if dw:
            dw_names.append(name)
        handles.append(m.register_forward_hook(hook_for(kind, dw)))
    x = torch.empty(config.batch, 3, config.resolution, config.resolution, device="meta",
                    dtype=torch.float16 if config.precision == "fp16" else torch.float32)
    try:
        with torch.no_grad(), FlopCounterMode(display=False) as fcm:
            model(x)
    finally:
        for h in handles:
            h.remove()
    per_module = fcm.get_flop_counts()
    root = type(model).__name__

    def flops_of(names: list[str]) -> int:
        return int(sum(sum(per_module.get(f"{root}.{n}", {}).values()) for n in names))

    flops = int(fcm.get_total_flops())
    params = int(sum(p.numel() for p in model.parameters()))
    return {
        "n_conv": counts["conv"], "n_bn": counts["bn"], "n_act": counts["act"],
        "n_fc": counts["fc"], "max_channels": tot["max_c"], "flops": flops, "params": params,
        "param_bytes": params * BYTES_PER_ELEMENT[config.precision],
        "activation_bytes": tot["act"], "n_dwconv": counts["dwconv"], "n_pool": counts["pool"],
        "n_add": counts["add"], "n_se": counts["se"],
        "dw_flops_share": flops_of(dw_names) / flops if flops else 0.0,
        "se_flops": flops_of(se_names), "memory_bound_bytes": tot["mb"],
    }


def compare(configs: pd.DataFrame, static_features: Callable, config_from_row: Callable,
            measured_features: Callable, build: Callable) -> pd.DataFrame:
    """Analytic against measured features, one row per (config, column) of
    :data:`EXACT_COLUMNS`: ``config_id``, ``column``, ``analytic``, ``measured``, ``match``.

    One ``meta`` model per architecture x precision is reused across resolutions and batches.
    """
    analytic = static_features(configs)
    cfgs = [config_from_row(r) for r in configs.to_dict("records")]
    keys = [tuple((k, v) for k, v in c.to_dict().items() if k not in ("resolution", "batch"))
            for c in cfgs]
    models: dict[tuple, Any] = {}
    rows = []
    for idx, cfg, key in zip(configs.index, cfgs, keys, strict=True):
        if key not in models:
            models[key] = meta_model(cfg, build)
        meas = measured_features(cfg, model=models[key])
        for col in EXACT_COLUMNS:
            a, m = analytic.at[idx, col].item(), meas[col]
            rows.append({"config_id": cfg.config_id, "column": col, "analytic": a,
                         "measured": m, "match": a == m})
    return pd.DataFrame(rows)
