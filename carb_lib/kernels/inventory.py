"""Every operator a network dispatches, classified: what the kernel law sums and what it does not.

The kernel law (:mod:`carb_lib.kernels.law`) sums the predicted times of the operators
:func:`~carb_lib.kernels.op_lists.network_ops` lists, in twelve kinds
(:data:`~carb_lib.kernels.operators.KERNEL_KINDS`); an aten call of any other kind (LayerNorm,
GELU, Hardswish, a concatenation, ShuffleNet's channel-shuffle copy) is left out of that sum.
:func:`inventory` records one forward pass of a network on the ``meta`` device (nothing is
allocated) and returns *every* aten call, one row each:

* a **classified** call has a kind (:data:`KIND_OF` and a few rules: convolutions, dense,
  depthwise and transposed, matrix products, normalizations, pooling, element-wise operators, concatenation, copies), its
  input and output shapes, dtype, the bytes it reads and writes, its FLOPs and, where
  relevant, channels, kernel, stride, padding, groups and spatial sizes (``OP_COLUMNS``);
* a call on the **views and no-ops** list (:data:`VIEW_OPS`: views, aliases, detaches and
  allocations without a fill) moves no data and has kind ``"view"``, 0 bytes and 0 FLOPs;
* anything else has kind ``"unclassified"`` (``strict=True`` raises instead), so a test can
  assert that a network has none: nothing is dropped silently.

``modelled`` says whether the kernel law sums the call: it is True exactly where
:func:`~carb_lib.kernels.op_lists.recorded_ops` records a row for it (``law_op``, the same
classifier), and ``law_flops`` / ``law_bytes`` are what that row counts at this batch, so a
call the law models with another shape shows it (ConvNeXt's linear layers run on every pixel:
the law's row is a 1x1 convolution on those pixels). :func:`unmodelled_share` gives the share of a network's FLOPs and
bytes outside the law's sum, for a prediction to flag.

Conventions: FLOPs are 2 per multiply-add for convolutions and matrix products, one per output
element for every other computing call (the law's convention for its memory-bound kinds), 0
for copies and views. Bytes read are the sizes of the distinct tensors a call takes (weights,
bias, statistics included), bytes written those of every tensor it returns (max pooling's
indices included; an in-place call writes its input). AlexNet's adaptive pooling to 6x6 has
``h_out`` 6 here; the law's row keeps ``h_out`` 1, as ``network_ops`` always listed it.

Examples
--------
>>> import torch
>>> from carb_lib.kernels.inventory import inventory, unmodelled_share
>>> with torch.device("meta"):
...     net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.GELU())
>>> inv = inventory(net, (1, 3, 16, 16))
>>> inv[["kind", "modelled", "flops"]].values.tolist()
[['conv', True, 110592], ['gelu', False, 2048]]
>>> round(unmodelled_share(inv)["unmodelled_flops_share"], 4)
0.0182
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.families import get_family
from carb_lib.families._common import meta_model
from carb_lib.kernels.op_lists import _classify
from carb_lib.kernels.operators import OP_COLUMNS, _byte_parts, _op_flops

__all__ = ["INVENTORY_COLUMNS", "KIND_OF", "VIEW_OPS", "check_complete", "inventory",
           "network_inventory", "on_meta", "record_on_meta", "unmodelled_share"]

#: aten operators (overload packet names) that move no data: views and aliases of their input,
#: detaches, and allocations without a fill. Their rows have kind ``"view"``. A ``reshape``
#: that must copy dispatches as ``clone`` + ``_unsafe_view`` (the copy is classified).
VIEW_OPS: frozenset[str] = frozenset({
    "view", "_unsafe_view", "reshape", "_reshape_alias", "view_as", "permute", "transpose",
    "t", "expand", "expand_as", "squeeze", "unsqueeze", "flatten", "unflatten", "slice",
    "select", "split", "split_with_sizes", "unbind", "chunk", "narrow", "diagonal", "movedim",
    "as_strided", "as_strided_", "alias", "detach", "detach_", "lift_fresh", "empty",
    "empty_like", "empty_strided", "new_empty", "new_empty_strided",
})  # fmt: skip
#: Kind of each aten operator classified by name alone (in-place variants, ``relu_``, strip
#: their trailing underscore first). Convolutions, matrix products, pooling, reductions, copies
#: and ``hardtanh`` follow rules (:func:`_kind`).
KIND_OF: dict[str, str] = {
    # normalizations
    "native_batch_norm": "bn", "_native_batch_norm_legit_no_training": "bn",
    "_native_batch_norm_legit": "bn", "batch_norm": "bn", "native_layer_norm": "layernorm",
    "layer_norm": "layernorm", "native_group_norm": "groupnorm", "group_norm": "groupnorm",
    # element-wise, one input
    "relu": "relu", "silu": "silu", "sigmoid": "sigmoid", "gelu": "gelu",
    "hardswish": "hardswish", "hardsigmoid": "hardsigmoid", "tanh": "tanh",
    "leaky_relu": "leaky_relu", "elu": "elu", "selu": "selu", "mish": "mish",
    "softplus": "softplus", "_prelu_kernel": "prelu", "prelu": "prelu", "clamp": "clamp",
    "clamp_min": "clamp", "clamp_max": "clamp", "exp": "exp", "sqrt": "sqrt", "rsqrt": "rsqrt",
    "neg": "neg", "abs": "abs", "erf": "erf", "reciprocal": "reciprocal", "pow": "pow",
    "_softmax": "softmax", "softmax": "softmax", "_log_softmax": "log_softmax",
    "log_softmax": "log_softmax", "fill": "fill", "zero": "fill",
    # element-wise, two inputs
    "add": "add", "sub": "sub", "rsub": "sub", "mul": "mul", "div": "div",
    "maximum": "maximum", "minimum": "minimum", "where": "where",
    # data movement
    "cat": "cat", "stack": "cat", "channel_shuffle": "channel_shuffle",
    "native_channel_shuffle": "channel_shuffle", "pixel_shuffle": "pixel_shuffle",
    "pixel_unshuffle": "pixel_shuffle", "constant_pad_nd": "pad",
    # reductions other than a spatial mean
    "sum": "sum", "amax": "amax", "var_mean": "var_mean", "var": "var",
}  # fmt: skip
_CONVS = ("convolution", "_convolution", "conv2d")
_COPIES = ("clone", "contiguous", "_to_copy", "copy", "to")
_MATMUL = ("addmm", "mm", "bmm", "baddbmm", "matmul")
_POOLS = ("max_pool2d_with_indices", "max_pool2d", "avg_pool2d", "_adaptive_avg_pool2d",
          "adaptive_avg_pool2d", "adaptive_max_pool2d", "mean")
_NO_FLOPS = ("cat", "channel_shuffle", "pixel_shuffle", "copy", "pad", "view")
#: Columns of :func:`inventory`'s table.
INVENTORY_COLUMNS: tuple[str, ...] = (
    "aten", "kind", "modelled", "in_shapes", "out_shapes", "dtype", *OP_COLUMNS[1:], "flops",
    "bytes_read", "bytes_written", "law_op", "law_flops", "law_bytes")
_PRECISION = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def _tensors(obj: Any, torch: Any) -> Iterator[Any]:
    """The tensors in an argument or a result (lists and tuples followed)."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _tensors(o, torch)


def _nbytes(ts: list[Any]) -> int:
    """Bytes of the distinct tensors ``ts`` (a tensor passed twice is read once)."""
    seen: dict[int, int] = {}
    for t in ts:
        seen[id(t)] = t.numel() * t.element_size()
    return sum(seen.values())


def _pool_kind(name: str, x: Any, args: tuple) -> str | None:
    """``maxpool`` / ``avgpool`` for a pooling call or a mean over the spatial axes of a 4-D
    tensor; ``"mean"`` for another mean."""
    if name == "mean":
        dims = args[1] if len(args) > 1 else None
        spatial = x is not None and x.dim() == 4 and dims is not None and \
            sorted(int(d) % 4 for d in dims) == [2, 3]
        return "avgpool" if spatial else "mean"
    return "maxpool" if "max" in name else "avgpool"


def _conv_params(name: str, args: tuple) -> tuple[list, list, int, bool]:
    """Stride, padding, groups and ``transposed`` of a convolution call (``conv2d``: the
    arguments it was given, else PyTorch's defaults)."""
    if name == "conv2d":  # (input, weight, bias, stride, padding, dilation, groups)
        get = dict(enumerate(args)).get
        return list(get(3, [1])), list(get(4, [0])), int(get(6, 1)), False
    # convolution / _convolution: (input, weight, bias, stride, padding, dilation,
    # transposed, output_padding, groups, ...)
    return list(args[3]), list(args[4]), int(args[8]), bool(args[6])


def _kind(name: str, args: tuple, torch: Any) -> str:
    """The kind of one aten call (overload packet ``name``) from its name and arguments."""
    x = args[0] if args and isinstance(args[0], torch.Tensor) else None
    if name in VIEW_OPS:
        return "view"
    if name in _CONVS:
        _, _, groups, transposed = _conv_params(name, args)
        if transposed:
            return "conv_transpose"
        return "dwconv" if groups > 1 and groups == int(x.shape[1]) else "conv"
    if name in _MATMUL:
        return "linear" if name in ("addmm", "mm") else "matmul"
    if name in _POOLS:
        return _pool_kind(name, x, args)
    base = name[:-1] if name.endswith("_") and not name.endswith("__") else name
    if base in _COPIES:
        if x is not None and x.dim() == 5 and not x.is_contiguous() and x.stride(1) < x.stride(2):
            return "channel_shuffle"  # (N, g, C/g, H, W) transposed to (N, C/g, g, H, W)
        return "copy"
    if base == "hardtanh":
        lo = float(args[1]) if len(args) > 1 else -1.0
        hi = float(args[2]) if len(args) > 2 else 1.0
        return "relu6" if (lo, hi) == (0.0, 6.0) else "hardtanh"
    return KIND_OF.get(base, "unclassified")


def _structure(kind: str, name: str, args: tuple, out: Any, torch: Any) -> dict[str, int]:
    """The ``OP_COLUMNS`` values a call of ``kind`` has (per image), where they are defined."""
    x = args[0] if args and isinstance(args[0], torch.Tensor) else None
    y = next(_tensors(out, torch), None)
    if kind in ("conv", "dwconv", "conv_transpose"):
        w = args[1]
        stride, pad, groups, transposed = _conv_params(name, args)
        cout = int(w.shape[1]) * groups if transposed else int(w.shape[0])
        return dict(cin=int(x.shape[1]), cout=cout, k=int(w.shape[-1]),
                    stride=int(stride[0]), pad=int(pad[0]), groups=groups,
                    h_in=int(x.shape[-1]), h_out=int(y.shape[-1]))
    if kind == "linear":
        a, b = (args[1], args[2]) if name == "addmm" else (args[0], args[1])
        return dict(cin=int(a.shape[-1]), cout=int(b.shape[-1]), k=1, stride=1, pad=0,
                    groups=1)
    if kind in ("maxpool", "avgpool") and x is not None and x.dim() == 4:
        c, h_in, h_out = int(x.shape[1]), int(x.shape[-1]), int(y.shape[-1]) if y.dim() == 4 else 1
        if name in ("max_pool2d_with_indices", "max_pool2d", "avg_pool2d"):
            k = args[1]
            s = args[2] if len(args) > 2 and args[2] else k
            p = args[3] if len(args) > 3 else [0]
            return dict(cin=c, cout=c, k=int(k[0]), stride=int(s[0]), pad=int(p[0]), groups=1,
                        h_in=h_in, h_out=h_out)
        return dict(cin=c, cout=c, groups=1, h_in=h_in, h_out=h_out)  # adaptive or global
    if kind == "layernorm":  # channels: the normalized size; ConvNeXt's input is N, H, W, C
        c = math.prod(int(v) for v in args[1])
        hw = dict(h_in=int(x.shape[-2]), h_out=int(x.shape[-2])) if x.dim() == 4 else {}
        return dict(cin=c, cout=c, groups=1, **hw)
    if kind == "channel_shuffle" and x is not None:
        if x.dim() == 5:  # the (N, C/g, g, H, W) copy: groups g
            c, g = int(x.shape[1]) * int(x.shape[2]), int(x.shape[2])
        else:
            c, g = int(x.shape[1]), int(args[1])
        return dict(cin=c, cout=c, groups=g, h_in=int(x.shape[-1]), h_out=int(x.shape[-1]))
    if kind == "cat" and y is not None and y.dim() == 4:
        return dict(cout=int(y.shape[1]), h_in=int(y.shape[-1]), h_out=int(y.shape[-1]))
    if kind in ("bn", "groupnorm") and x is not None and x.dim() == 4:
        c, h = int(x.shape[1]), int(x.shape[-1])
        return dict(cin=c, cout=c, k=1, stride=1, pad=0, groups=1, h_in=h, h_out=h)
    return {}


def _flops(kind: str, name: str, args: tuple, out: Any, torch: Any) -> int:
    """FLOPs of one call (the module's conventions)."""
    y = next(_tensors(out, torch), None)
    if kind in ("conv", "dwconv", "conv_transpose"):  # each output (input) element's taps
        w, taps = args[1], math.prod(int(v) for v in args[1].shape[2:])
        if kind == "conv_transpose":
            return 2 * args[0].numel() * int(w.shape[1]) * taps
        return 2 * y.numel() * int(w.shape[1]) * taps
    if kind in ("linear", "matmul"):
        a, b = (args[1], args[2]) if name in ("addmm", "baddbmm") else (args[0], args[1])
        return 2 * y.numel() * int(a.shape[-1]) if a.shape[-1] == b.shape[-2] else 0
    if kind in _NO_FLOPS or y is None:
        return 0
    return int(y.numel())


def _row(func: Any, args: tuple, kwargs: Mapping, out: Any, torch: Any) -> dict[str, Any]:
    """One aten call as an inventory row (the law's row and counts filled later)."""
    name = func.overloadpacket.__name__
    kind = _kind(name, args, torch)
    ins = [t for a in (*args, *kwargs.values()) for t in _tensors(a, torch)]
    outs = list(_tensors(out, torch))
    first = (ins or outs or [None])[0]
    view = kind == "view"
    row: dict[str, Any] = {
        "aten": str(func), "kind": kind, "in_shapes": tuple(tuple(t.shape) for t in ins),
        "out_shapes": tuple(tuple(t.shape) for t in outs),
        "dtype": str(first.dtype).removeprefix("torch.") if first is not None else "",
        "flops": 0 if view else _flops(kind, name, args, out, torch),
        "bytes_read": 0 if view else _nbytes(ins),
        "bytes_written": 0 if view else _nbytes(outs),
        "law_op": None if view else _classify(name, args, out, torch),
    }
    if not view and kind != "unclassified":
        shape = _structure(kind, name, args, out, torch)
        if not shape and row["law_op"] is not None:  # an element-wise call: the law's row
            shape = dict(zip(OP_COLUMNS[1:], row["law_op"][1:], strict=True))
        row.update(shape)
    return row


def _recorder(torch: Any, row: Callable[..., dict[str, Any]]) -> Any:
    """A dispatch mode that runs each aten call and keeps ``row(func, args, kwargs, out,
    torch)`` of it in ``.rows``."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class CallRecorder(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.rows: list[dict[str, Any]] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            self.rows.append(row(func, args, kwargs, out, torch))
            return out

    return CallRecorder()


def record_on_meta(module: Any, input_shape: tuple[int, ...], dtype: Any,
                   row: Callable[..., dict[str, Any]] | None = None, *,
                   recorder: Any = None) -> list[Any]:
    """``row(func, args, kwargs, out, torch)`` of every aten call of one forward pass of
    ``module`` (a copy on the ``meta`` device in ``dtype`` where it is not; ``module`` is left
    as it is), under ``torch.no_grad()`` (as :func:`recorded_ops`: ``inference_mode`` shows
    ``conv2d`` undecomposed); or, given ``recorder`` (a dispatch mode keeping its own
    ``.rows``), that mode's rows."""
    import torch

    if (row is None) == (recorder is None):
        raise TypeError("record_on_meta needs one of row and recorder")
    dt = _torch_dtype(dtype, torch)
    module = on_meta(module, dt)
    x = torch.empty(*input_shape, device="meta", dtype=dt)
    rec = recorder if recorder is not None else _recorder(torch, row)
    with torch.no_grad(), rec:
        module(x)
    return rec.rows


def on_meta(module: Any, dtype: Any) -> Any:
    """``module`` where it is on the ``meta`` device in ``dtype`` (str or torch dtype), else a
    copy moved there (``module`` is left as it is)."""
    import torch

    dt = _torch_dtype(dtype, torch)
    params = list(module.parameters()) + list(module.buffers())
    if any(p.device.type != "meta" or (p.is_floating_point() and p.dtype != dt) for p in params):
        module = copy.deepcopy(module).to(device="meta", dtype=dt)
    return module


def _torch_dtype(dtype: Any, torch: Any) -> Any:
    if isinstance(dtype, str):
        name = _PRECISION.get(dtype, dtype)
        if not isinstance(getattr(torch, name, None), torch.dtype):
            raise ValueError(f"dtype={dtype!r} is not a torch dtype (fp32, fp16, bf16 or a "
                             "torch.dtype)")
        return getattr(torch, name)
    return dtype


def inventory(module: Any, input_shape: tuple[int, ...] = (1, 3, 224, 224),
              dtype: Any = "fp32", *, strict: bool = False) -> pd.DataFrame:
    """Every aten call of one forward pass of ``module`` on the ``meta`` device, classified.

    Parameters
    ----------
    module : torch.nn.Module
        The network. It runs on a copy moved to the ``meta`` device and ``dtype`` (nothing is
        allocated); ``module`` itself is left as it is. It should be in eval mode.
    input_shape : tuple of int, default=(1, 3, 224, 224)
        The input batch's shape (batch first).
    dtype : str or torch.dtype, default="fp32"
        ``"fp32"``, ``"fp16"``, ``"bf16"`` or a ``torch.dtype``: the network's and the input's.
    strict : bool, default=False
        Raise a ``ValueError`` naming the calls neither classified nor on :data:`VIEW_OPS`
        (default: they are rows of kind ``"unclassified"``).

    Returns
    -------
    pandas.DataFrame
        :data:`INVENTORY_COLUMNS`, one row per aten call in dispatch order: ``aten`` (the
        overload, ``aten.convolution.default``), ``kind`` (``"view"`` for the views and
        no-ops), ``modelled`` (the kernel law sums it), ``in_shapes`` and ``out_shapes`` (of
        every tensor taken and returned), ``dtype``, the ``OP_COLUMNS`` shape columns (per
        image) of convolutions, pooling, linear layers, normalizations, concatenations and
        channel shuffles, and of the element-wise calls the law models (its row's values;
        missing elsewhere: the shapes say it), ``flops``, ``bytes_read``, ``bytes_written``,
        and the law's
        row (``law_op``, a tuple in ``OP_COLUMNS`` order, or None), with the FLOPs and bytes
        it counts at this batch (``law_flops``, ``law_bytes``; 0 where not modelled).

    Examples
    --------
    >>> import torch
    >>> with torch.device("meta"):
    ...     net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.Flatten(),
    ...                               torch.nn.LayerNorm(8 * 14 * 14))
    >>> inventory(net, (2, 3, 16, 16))["kind"].tolist()
    ['conv', 'view', 'layernorm']
    """
    import torch

    dt = _torch_dtype(dtype, torch)
    inv = pd.DataFrame(record_on_meta(module, input_shape, dt, _row)).reindex(
        columns=INVENTORY_COLUMNS)
    for c in OP_COLUMNS[1:]:
        inv[c] = inv[c].astype("Int64")
    inv["modelled"] = inv["law_op"].notna()
    _law_counts(inv, int(input_shape[0]), int(torch.empty((), dtype=dt).element_size()))
    if strict:
        check_complete(inv)
    return inv


def _law_counts(inv: pd.DataFrame, batch: int, itemsize: int) -> None:
    """Fill ``law_flops`` and ``law_bytes``: what the law's row of each call counts."""
    inv["law_flops"] = 0
    inv["law_bytes"] = 0
    at = np.flatnonzero(inv["modelled"].to_numpy())
    if not len(at):
        return
    law = pd.DataFrame(list(inv["law_op"].iloc[at]), columns=list(OP_COLUMNS))
    law["batch"] = batch
    law["precision"] = "fp16" if itemsize == 2 else "fp32"
    weighted = law["kind"].isin(("conv", "dwconv", "linear")).to_numpy()
    flops = _op_flops(weighted, batch, *(law[c].to_numpy(dtype=float) for c in (
        "cin", "cout", "k", "groups", "h_out")))
    inv.loc[inv.index[at], "law_flops"] = np.rint(flops).astype(np.int64)
    inv.loc[inv.index[at], "law_bytes"] = np.rint(sum(_byte_parts(law))).astype(np.int64)


def check_complete(inv: pd.DataFrame) -> None:
    """Raise a ``ValueError`` naming the aten calls of ``inv`` that are neither classified nor
    on :data:`VIEW_OPS` (kind ``"unclassified"``).

    Examples
    --------
    >>> import pandas as pd
    >>> check_complete(pd.DataFrame({"aten": ["aten.relu.default"], "kind": ["relu"]}))
    """
    bad = inv.loc[inv["kind"] == "unclassified", "aten"]
    if len(bad):
        counts = bad.value_counts().to_dict()
        raise ValueError(f"{len(bad)} aten call(s) neither classified nor views: {counts} "
                         "(add them to KIND_OF or VIEW_OPS in carb_lib.kernels.inventory)")


def unmodelled_share(inv: pd.DataFrame) -> dict[str, Any]:
    """How much of a network the kernel law's sum leaves out, from its :func:`inventory`.

    Returns
    -------
    dict
        ``unmodelled_flops_share`` and ``unmodelled_bytes_share``: the share of the network's
        FLOPs and bytes (read + written) in calls the law does not sum; ``law_flops_share``
        and ``law_bytes_share``: what the law's rows count over the network's FLOPs and
        bytes (below 1 - the unmodelled share where a modelled call is counted with a smaller
        shape, e.g. a linear layer applied to every pixel); ``unmodelled_kinds``: calls per
        unmodelled kind (views left out), most first.

    Examples
    --------
    >>> import torch
    >>> with torch.device("meta"):
    ...     net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 1), torch.nn.Hardswish())
    >>> share = unmodelled_share(inventory(net, (1, 3, 8, 8)))
    >>> share["unmodelled_kinds"]
    {'hardswish': 1}
    """
    moved = (inv["bytes_read"] + inv["bytes_written"]).to_numpy(dtype=float)
    flops = inv["flops"].to_numpy(dtype=float)
    off = ~inv["modelled"].to_numpy(dtype=bool)
    kinds = inv.loc[off & (inv["kind"] != "view").to_numpy(), "kind"].value_counts()

    def share(part: float, whole: float) -> float:
        return float(part / whole) if whole > 0 else 0.0

    return {
        "unmodelled_flops_share": share(flops[off].sum(), flops.sum()),
        "unmodelled_bytes_share": share(moved[off].sum(), moved.sum()),
        "law_flops_share": share(inv["law_flops"].sum(), flops.sum()),
        "law_bytes_share": share(inv["law_bytes"].sum(), moved.sum()),
        "unmodelled_kinds": {str(k): int(v) for k, v in kinds.items()},
    }


def network_inventory(row: Mapping[str, Any], *, strict: bool = False) -> pd.DataFrame:
    """:func:`inventory` of a config row's network (any family, the ``module`` family and the
    torchvision zoo included), built on the ``meta`` device as
    :func:`~carb_lib.kernels.op_lists.recorded_ops` builds it: one image (batch 1), the row's
    precision.

    Examples
    --------
    >>> inv = network_inventory({"family": "vgg", "depth": 11, "width": 0.25,
    ...     "batch_norm": False, "resolution": 32, "batch": 1, "precision": "fp32"})
    >>> int((inv["kind"] == "unclassified").sum())
    0
    """
    family = get_family(str(row["family"]))
    config = family.from_row({**row, "batch": 1})
    shape = tuple(getattr(config, "input_shape", None) or (3, config.resolution,
                                                           config.resolution))
    return inventory(meta_model(config), (1, *shape), config.precision, strict=strict)
