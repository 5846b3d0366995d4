"""The operators a network runs, per image: the rows :mod:`carb_lib.kernels.law` predicts and sums.

:func:`network_ops` lists them once per architecture and resolution: from the family's
analytic pass (``Family.op_list``) where it has one, else recorded on the ``meta`` device by a
dispatch mode (:func:`recorded_ops`, also the reference the analytic passes are checked
against). Each operator is a tuple in :data:`~carb_lib.kernels.operators.OP_COLUMNS` order; a row's
batch and precision apply at prediction. :mod:`carb_lib.kernels.law` re-exports both names.

Examples
--------
>>> import pandas as pd
>>> from carb_lib.kernels.op_lists import network_ops
>>> ops, arch_id = network_ops(pd.DataFrame([{"family": "vgg", "depth": 11, "width": 0.25,
...     "batch_norm": False, "resolution": 32, "batch": 1, "precision": "fp32"}]))
>>> ops["kind"].value_counts().to_dict()
{'conv': 8, 'relu': 8, 'maxpool': 5, 'avgpool': 1, 'linear': 1}
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.families import get_family
from carb_lib.families._common import factorize_rows, meta_model
from carb_lib.kernels.operators import OP_COLUMNS

__all__ = ["network_ops", "recorded_ops"]

_ACT = {"relu": "relu", "relu_": "relu", "hardtanh": "relu6", "hardtanh_": "relu6",
        "silu": "silu", "silu_": "silu", "sigmoid": "sigmoid", "sigmoid_": "sigmoid"}
_ARCH_CACHE: dict[tuple, list[tuple]] = {}


def _recorder():
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.ops: list[tuple] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            rec = _classify(func.overloadpacket.__name__, args, out, torch)
            if rec is not None:
                self.ops.append(rec)
            return out

    return Recorder()


def _classify(name: str, args: tuple, out: Any, torch: Any) -> tuple | None:
    """One recorded aten call as an operator row (per image), or None (views, copies...)."""
    x = args[0] if args and isinstance(args[0], torch.Tensor) else None
    if name == "convolution":
        w, stride, pad, groups = args[1], args[3], args[4], int(args[8])
        cin = int(x.shape[1])
        kind = "dwconv" if groups > 1 and groups == cin else "conv"
        return (kind, cin, int(w.shape[0]), int(w.shape[-1]), int(stride[0]), int(pad[0]),
                groups, int(x.shape[-1]), int(out.shape[-1]))
    if name in ("addmm", "mm"):
        a = args[1] if name == "addmm" else args[0]
        tokens = int(a.shape[0])  # rows of one image (the recorders run at batch 1)
        if tokens > 1:  # a linear layer on every pixel (ConvNeXt's blocks): a 1x1 convolution
            side = math.isqrt(tokens)  # on the h x h pixels it runs on
            side = side if side * side == tokens else round(math.sqrt(tokens))
            return ("conv", int(a.shape[1]), int(out.shape[1]), 1, 1, 0, 1, side, side)
        return ("linear", int(a.shape[1]), int(out.shape[1]), 1, 1, 0, 1, 1, 1)
    if x is None or x.dim() != 4:
        return None
    c, h = int(x.shape[1]), int(x.shape[-1])
    if "batch_norm" in name:
        return ("bn", c, c, 1, 1, 0, 1, h, h)
    if name in _ACT:
        return (_ACT[name], c, c, 1, 1, 0, 1, h, h)
    if name in ("add", "add_") and len(args) > 1 and isinstance(args[1], torch.Tensor):
        return ("add", c, c, 1, 1, 0, 1, h, h)
    if name in ("mul", "mul_") and isinstance(out, torch.Tensor) and out.dim() == 4:
        return ("mul", int(out.shape[1]), int(out.shape[1]), 1, 1, 0, 1, int(out.shape[-1]),
                int(out.shape[-1]))
    if name.startswith("max_pool2d"):
        k, s = args[1], args[2] if len(args) > 2 and args[2] else args[1]
        p = args[3] if len(args) > 3 else [0]
        return ("maxpool", c, c, int(k[0]), int(s[0]), int(p[0]), 1, h,
                int(out[0].shape[-1] if isinstance(out, tuple) else out.shape[-1]))
    if name in ("mean", "_adaptive_avg_pool2d", "avg_pool2d", "adaptive_avg_pool2d"):
        return ("avgpool", c, c, 1, 1, 0, 1, h, 1)
    return None


def recorded_ops(family: Any, row: dict) -> list[tuple]:
    """The operators of ``row``'s network recorded on the model built on the ``meta`` device
    (the reference the analytic passes are checked against)."""
    return _arch_ops(family, row, {}, ())


def _arch_ops(family: Any, row: dict, models: dict[tuple, Any], model_key: tuple) -> list[tuple]:
    """The operators of ``row``'s network at batch 1; ``models`` caches the meta-device
    networks by ``model_key`` (the key without the resolution: one build serves them all)."""
    import torch

    config = family.from_row({**row, "batch": 1, "precision": "fp32"})
    if model_key not in models:
        models[model_key] = meta_model(config)
    model = models[model_key]
    x = torch.empty(1, 3, config.resolution, config.resolution, device="meta")
    rec = _recorder()
    with torch.no_grad(), rec:  # (inference_mode would show conv2d / linear undecomposed)
        model(x)
    return rec.ops


def network_ops(df: pd.DataFrame, *, progress: bool = False) -> tuple[pd.DataFrame, np.ndarray]:
    """The operators of every row's network, once per architecture and resolution.

    A family's analytic pass (``Family.op_list``: ResNet, MobileNetV2, VGG, EfficientNet) lists
    them in microseconds; otherwise (NB201, a user module) a dispatch mode records the aten
    calls of one forward pass on the ``meta`` device at batch 1 (:func:`recorded_ops`). A
    row's batch and precision apply at prediction.

    Returns
    -------
    ops : pandas.DataFrame
        ``arch_id`` and :data:`OP_COLUMNS`, one row per operator call.
    arch_id : numpy.ndarray
        Each row's ``arch_id``.
    """
    from tqdm.auto import tqdm

    if "family" not in df.columns:
        raise ValueError("rows need a 'family' column to list their networks' operators")
    arch_id = np.empty(len(df), dtype=np.int64)
    keys: list[tuple] = []  # one per distinct architecture and resolution, in arch_id order
    first: list[int] = []  # the position of each one's first row in df
    family = df["family"].astype(str).to_numpy()
    for name in pd.unique(family):
        at = np.flatnonzero(family == name)
        cols = [c for c in get_family(name).config_columns
                if c in df.columns and c not in ("batch", "precision")]
        codes, uniq = factorize_rows(df.iloc[at].reset_index(drop=True), cols)
        arch_id[at] = len(keys) + codes
        keys += [(name, *zip(cols, vals, strict=True))
                 for vals in uniq.astype(str).itertuples(index=False, name=None)]
        first += at[uniq.index.to_numpy()].tolist()
    todo = [j for j, k in enumerate(keys) if k not in _ARCH_CACHE]
    records = df.iloc[[first[j] for j in todo]].to_dict("records") if todo else []
    models: dict[tuple, Any] = {}
    for j, row in tqdm(zip(todo, records, strict=True), total=len(todo), desc="operators",
                       disable=not progress):
        key = keys[j]
        fam = get_family(key[0])
        ops = fam.op_list(row)  # the family's analytic pass, else recorded on the meta device
        if ops is None:
            model_key = tuple(kv for kv in key
                              if not (isinstance(kv, tuple) and kv[0] == "resolution"))
            ops = _arch_ops(fam, row, models, model_key)
        _ARCH_CACHE[key] = ops
    ops = pd.DataFrame(
        [(j, *op) for j, k in enumerate(keys) for op in _ARCH_CACHE[k]],
        columns=["arch_id", *OP_COLUMNS],
    )
    return ops, arch_id
