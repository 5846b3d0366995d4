"""The aten calls of one forward pass, recorded on the ``meta`` device, each with its key.

A call's key is its overload and the text of every argument (:func:`_text`: each tensor's
shape, stride and dtype, every other value's ``repr``, the ``meta`` device read as the CPU):
equal keys run the same kernel on the same sizes. :func:`network_calls` gives a network's
distinct calls with their counts, kinds, bytes and what it takes to time each again
(:class:`_TensorSpec`, :func:`_make`); :mod:`carb_lib.kernels.replay` times and sums them.

Recording remembers, within a process, what it has seen, so that a screen of thousands of
networks (:func:`carb_lib.kernels.replay.screen_times`) records each in milliseconds:

- a call seen before (:data:`_KNOWN`) is not described again and, when pure (it neither
  mutates nor aliases its arguments), its outputs are made from the shapes it returned the
  first time instead of running its meta kernel; an in-place call that returned its first
  argument unchanged in shape returns it again; eval-mode batch norm, whose meta kernel is a
  Python decomposition (about 2 ms a call), is made at once (:func:`_shortcut`);
- a module met before with the same signature (:func:`_signature`: its class, every plain
  attribute of its own, its parameters' and buffers' shapes, its children's signatures) and
  the same input adds its calls and makes its output without running (:data:`_BLOCKS`). A
  module with a hook, or an attribute whose value cannot be told (a closure), is always run.

The tests check that the memoized recording gives the calls, order and counts of running every
meta kernel, on zoo networks and on every design family.

Examples
--------
>>> import torch
>>> from carb_lib.kernels.calls import network_calls
>>> with torch.device("meta"):
...     net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(),
...                               torch.nn.Conv2d(8, 8, 3), torch.nn.ReLU())
>>> calls = network_calls(net, (1, 3, 16, 16))
>>> calls[["kind", "count"]].values.tolist()
[['conv', 1], ['relu', 1], ['conv', 1], ['relu', 1]]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from carb_lib.kernels.inventory import _kind, _nbytes, _tensors, on_meta, record_on_meta

__all__ = ["KEY_VERSION", "network_calls"]

#: Version of the call key (:func:`_text`): a change re-times every call.
KEY_VERSION = 1

@dataclass(frozen=True)
class _TensorSpec:
    """A tensor argument of a recorded call: what it takes to make one like it."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: Any

    def key(self) -> str:
        dt = str(self.dtype).removeprefix("torch.")
        return f"T({','.join(map(str, self.shape))};{','.join(map(str, self.stride))};{dt})"

    def make(self, torch: Any) -> Any:
        t = torch.empty_strided(self.shape, self.stride, dtype=self.dtype)
        if t.is_floating_point():  # positive values: no square root of a negative variance
            t.uniform_(0.1, 1.0)
        else:
            t.zero_()
        return t


def _spec(obj: Any, torch: Any) -> Any:
    """An argument with each tensor replaced by its :class:`_TensorSpec` and the ``meta``
    device by the CPU."""
    if isinstance(obj, torch.Tensor):
        return _TensorSpec(tuple(obj.shape), tuple(obj.stride()), obj.dtype)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_spec(o, torch) for o in obj)
    if isinstance(obj, torch.device):
        return torch.device("cpu")
    return obj


def _make(obj: Any, torch: Any) -> Any:
    """A spec'd argument with random tensors in place of the specs."""
    if isinstance(obj, _TensorSpec):
        return obj.make(torch)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_make(o, torch) for o in obj)
    if isinstance(obj, dict):
        return {k: _make(v, torch) for k, v in obj.items()}
    return obj


def _text(obj: Any, torch: Any) -> str:
    """The canonical text of an argument, the meta device read as the CPU (a call's key is
    built from it: each tensor's shape, stride and dtype, every other value's ``repr``)."""
    kind = type(obj)
    if kind in _PLAIN:
        return repr(obj)
    if isinstance(obj, torch.Tensor):
        dt = _DTYPE_TEXT.get(obj.dtype) or _DTYPE_TEXT.setdefault(
            obj.dtype, str(obj.dtype).removeprefix("torch."))
        return f"T({','.join(map(str, obj.shape))};{','.join(map(str, obj.stride()))};{dt})"
    if isinstance(obj, list):
        return "[" + ",".join([_text(o, torch) for o in obj]) + "]"
    if isinstance(obj, tuple):
        return "(" + ",".join([_text(o, torch) for o in obj]) + ")"
    if isinstance(obj, torch.device):
        return _CPU_TEXT
    if isinstance(obj, dict):
        return "{" + ",".join(f"{k}={_text(v, torch)}" for k, v in sorted(obj.items())) + "}"
    return repr(obj)


#: Argument types written as their ``repr`` at once.
_PLAIN = frozenset({int, float, bool, type(None), str})
_DTYPE_TEXT: dict[Any, str] = {}
_CPU_TEXT = "device(type='cpu')"


@dataclass(frozen=True)
class _Call:
    """What a call key stands for: the overload, its kind, the bytes it reads and writes, its
    arguments as specs (to time it) and, for a pure call, its outputs as specs."""

    func: Any
    aten: str
    kind: str
    bytes: int
    spec: tuple[Any, dict]
    out: Any


#: Every call recorded in this process, by key (:class:`_Call`): a call seen before is not
#: described again, and a pure one makes its outputs from ``out`` instead of running its
#: meta kernel (batch norm's is a Python decomposition, about 2 ms a call: three quarters of
#: recording a ResNet). A key fixes every argument's shape, stride, dtype and value, hence the
#: outputs' shapes; the bytes are those of its first sight (a tensor passed twice is read once).
_KNOWN: dict[str, _Call] = {}
#: Keys kept at most (each well under a kilobyte); then the table starts again.
_KNOWN_MAX = 200_000
_PURE: dict[Any, bool] = {}


def _pure(func: Any) -> bool:
    """Whether ``func`` neither mutates nor returns a view of its arguments (its outputs are
    new tensors whose shapes its arguments fix)."""
    pure = _PURE.get(func)
    if pure is None:
        schema = func._schema
        pure = _PURE[func] = not schema.is_mutable and all(
            r.alias_info is None for r in schema.returns)
    return pure


def _out_spec(out: Any, torch: Any) -> Any:
    """``out`` as specs (a tensor, or a tuple or list of tensors), or None for anything else."""
    if isinstance(out, torch.Tensor):
        return _TensorSpec(tuple(out.shape), tuple(out.stride()), out.dtype)
    if isinstance(out, (list, tuple)) and all(isinstance(o, torch.Tensor) for o in out):
        return type(out)(_out_spec(o, torch) for o in out)
    return None


def _on_meta(spec: Any, torch: Any) -> Any:
    if isinstance(spec, _TensorSpec):
        return torch.empty_strided(spec.shape, spec.stride, dtype=spec.dtype, device="meta")
    return type(spec)(_on_meta(s, torch) for s in spec)


#: :attr:`_Call.out` of an in-place call that returns its first argument, its shape and
#: strides unchanged (``relu_``, ``add_``): a later call of the key returns that argument.
_SELF = "self"


def _batch_norm_meta(x: Any, *_: Any) -> Any:
    """The outputs of batch norm in eval mode on ``meta`` (``native_batch_norm`` with
    ``training=False``, ``_native_batch_norm_legit_no_training``), made at once (their meta
    kernel is a Python decomposition, about 2 ms a call): the input's shape, strides and dtype,
    and two vectors of its channels in its accumulation dtype (tested against the kernel)."""
    import torch

    acc = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
    c = x.shape[1]
    return (torch.empty_strided(tuple(x.shape), x.stride(), dtype=x.dtype, device="meta"),
            torch.empty((c,), dtype=acc, device="meta"),
            torch.empty((c,), dtype=acc, device="meta"))


def _shortcut(func: Any, args: tuple, kwargs: dict, torch: Any) -> Any:
    """A function making ``func``'s outputs without its meta kernel, or None."""
    aten = torch.ops.aten
    eval_bn = (func is aten._native_batch_norm_legit_no_training.default or
               (func is aten.native_batch_norm.default and len(args) > 5 and args[5] is False))
    if not eval_bn or kwargs:
        return None
    x = args[0]
    dense = x.is_contiguous() or (x.dim() == 4 and
                                  x.is_contiguous(memory_format=torch.channels_last))
    return _batch_norm_meta if dense and x.dim() >= 2 else None


def _describe(func: Any, args: tuple, kwargs: dict, out: Any, torch: Any,
              before: tuple | None) -> _Call:
    kind = _kind(func.overloadpacket.__name__, args, torch)
    ins = [t for a in (*args, *kwargs.values()) for t in _tensors(a, torch)]
    moved = 0 if kind == "view" else _nbytes(ins) + _nbytes(list(_tensors(out, torch)))
    spec = (_spec(args, torch), {k: _spec(v, torch) for k, v in kwargs.items()})
    if _pure(func):
        made = _out_spec(out, torch)
    else:  # in place: returns its first argument, shape and strides as they were
        made = _SELF if (before is not None and out is args[0]
                         and (tuple(out.shape), out.stride()) == before) else None
    return _Call(func, str(func), kind, moved, spec, made)


def _replay_recorder(torch: Any) -> Any:
    """A dispatch mode keeping the key of every call in ``.rows`` (and its :class:`_Call` in
    :data:`_KNOWN`)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class ReplayRecorder(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.rows: list[str] = []
            self.quiet = False  # making a memoized block's output: not a call of the network

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if self.quiet:
                return func(*args, **kwargs)
            key = f"v{KEY_VERSION}|{func}|{_text(args, torch)}|{_text(kwargs, torch)}"
            self.rows.append(key)
            known = _KNOWN.get(key)
            if known is not None and known.out is not None:
                return args[0] if known.out is _SELF else _on_meta(known.out, torch)
            first = args[0] if args and isinstance(args[0], torch.Tensor) else None
            before = None if first is None else (tuple(first.shape), first.stride())
            fast = _shortcut(func, args, kwargs, torch)
            out = fast(*args) if fast is not None else func(*args, **kwargs)
            if known is None:
                _KNOWN[key] = _describe(func, args, kwargs, out, torch, before)
            return out

    return ReplayRecorder()


#: The calls of modules already run on ``meta`` in this process, by the module's structure
#: and its input (:func:`_signature`): a block met again (a ResNet's bottleneck of the same
#: widths at the same size, in another candidate) adds its keys and makes its output without
#: running a call.
_BLOCKS: dict[tuple[str, str], tuple[list[str], Any]] = {}
#: Instance attributes of every ``nn.Module`` (its hook and state tables), left out of a
#: module's signature but for ``training``.
_MODULE_BASE: frozenset[str] | None = None


def _attr_text(value: Any, torch: Any) -> str | None:
    """The text of a module attribute a forward may read, or None where it cannot be told by
    its value (a closure, an object of unknown kind)."""
    if type(value) in _PLAIN or isinstance(value, (torch.dtype, torch.device)):
        return repr(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        parts = [_attr_text(v, torch) for v in value]
        if None in parts:
            return None
        if isinstance(value, (set, frozenset)):
            parts.sort()
        return f"{type(value).__name__}({','.join(parts)})"
    if callable(value) and "<" not in getattr(value, "__qualname__", "<"):
        return f"{getattr(value, '__module__', '')}.{value.__qualname__}"
    return None


def _signature(module: Any, torch: Any, memo: dict[int, str | None]) -> str | None:
    """What fixes the calls of ``module``'s forward on a given input: its class, every
    attribute of its own (values of plain kinds), its parameters' and buffers' shapes and its
    children's signatures; None where one of those cannot be told (then it is always run)."""
    global _MODULE_BASE
    if id(module) in memo:
        return memo[id(module)]
    if _MODULE_BASE is None:
        _MODULE_BASE = frozenset(vars(torch.nn.Module())) - {"training"}
    sig: str | None = None
    hooked = any(getattr(module, h, None) for h in (
        "_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks"))
    parts = [f"{type(module).__module__}.{type(module).__qualname__}"]
    if not hooked and not isinstance(module, torch.nn.modules.lazy.LazyModuleMixin):
        for name, value in sorted(vars(module).items()):
            if name in _MODULE_BASE or name == "forward":
                continue
            text = _attr_text(value, torch)
            if text is None:
                break
            parts.append(f"{name}={text}")
        else:
            for table in ("_parameters", "_buffers"):
                for name, t in getattr(module, table).items():
                    parts.append(f"{name}:{'None' if t is None else _text(t, torch)}")
            for name, child in module._modules.items():
                inner = None if child is None else _signature(child, torch, memo)
                if child is not None and inner is None:
                    break
                parts.append(f"{name}<{inner}>")
            else:
                sig = "|".join(parts)
    memo[id(module)] = sig
    return sig


def _block_signatures(module: Any, torch: Any) -> list[tuple[Any, str]]:
    """Every module of ``module`` whose calls can be memoized, with its signature (none while
    a global forward hook is set: it sees every module run)."""
    if any(getattr(torch.nn.modules.module, h, None) for h in (
            "_global_forward_hooks", "_global_forward_pre_hooks")):
        return []
    memo: dict[int, str | None] = {}
    return [(m, sig) for m in module.modules()
            if (sig := _signature(m, torch, memo)) is not None]


def _record_keys(module: Any, input_shape: tuple[int, ...], dtype: Any, *,
                 blocks: bool = True, prepared: list[tuple[Any, str]] | None = None
                 ) -> dict[str, int]:
    """Each distinct call key of one forward pass of ``module``, in order of first call, with
    its count (the calls themselves in :data:`_KNOWN`). ``blocks``: a module met before with
    the same signature and input adds its calls without running (:data:`_BLOCKS`);
    ``prepared``: the signatures of ``module``, already on ``meta`` in ``dtype``, unchanged
    since (:func:`_block_signatures`; a screen's own models)."""
    import torch

    if len(_KNOWN) >= _KNOWN_MAX:
        _KNOWN.clear()
        _BLOCKS.clear()
    if prepared is None:
        module = on_meta(module, dtype)
        prepared = _block_signatures(module, torch) if blocks else []
    rec = _replay_recorder(torch)
    for m, sig in prepared:
        m.__dict__["forward"] = _memo_forward(m.forward, sig, rec, torch)
    try:
        keys = record_on_meta(module, input_shape, dtype, recorder=rec)
    finally:
        for m, _ in prepared:
            m.__dict__.pop("forward", None)
    counts: dict[str, int] = {}
    for k in keys:
        counts[k] = counts.get(k, 0) + 1
    return counts


def _memo_forward(forward: Any, sig: str, rec: Any, torch: Any) -> Any:
    """``forward`` answering from :data:`_BLOCKS` when its one tensor input was seen."""

    def run(*args: Any, **kwargs: Any) -> Any:
        if kwargs or len(args) != 1 or not isinstance(args[0], torch.Tensor):
            return forward(*args, **kwargs)
        key = (sig, _text(args[0], torch))
        hit = _BLOCKS.get(key)
        if hit is not None:
            rec.rows.extend(hit[0])
            rec.quiet = True
            try:
                return _on_meta(hit[1], torch)
            finally:
                rec.quiet = False
        start = len(rec.rows)
        out = forward(*args)
        made = _out_spec(out, torch)
        if made is not None and not any(o is args[0] for o in (
                out if isinstance(out, (list, tuple)) else (out,))):
            _BLOCKS[key] = (rec.rows[start:], made)
        return out

    return run


def network_calls(module: Any, input_shape: tuple[int, ...] = (1, 3, 224, 224),
                  dtype: Any = "fp32") -> pd.DataFrame:
    """The distinct aten calls of one forward pass of ``module``, in order of first call.

    Parameters
    ----------
    module : torch.nn.Module
        The network, in eval mode. It runs on a copy moved to the ``meta`` device and
        ``dtype`` (unless it is there already); ``module`` is left as it is.
    input_shape : tuple of int, default=(1, 3, 224, 224)
        The input batch's shape (batch first).
    dtype : str or torch.dtype, default="fp32"

    Returns
    -------
    pandas.DataFrame
        One row per distinct call: ``key`` (the overload and every argument's shape, stride,
        dtype and value: equal keys run the same kernel on the same sizes), ``aten``, ``kind``
        (:func:`~carb_lib.kernels.inventory.inventory`'s; ``"view"`` for views and
        allocations), ``count`` (calls per forward pass), ``bytes`` (read and written per call)
        and, for replay, ``func`` and ``spec`` (Python objects, not stored).
    """
    counts = _record_keys(module, input_shape, dtype)
    rows = [(k, c.aten, c.kind, n, c.bytes, c.func, c.spec)
            for k, n in counts.items() for c in (_KNOWN[k],)]
    return pd.DataFrame(rows, columns=["key", "aten", "kind", "count", "bytes", "func", "spec"])
