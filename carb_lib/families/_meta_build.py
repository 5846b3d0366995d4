"""Build a network whose factory computes with tensors (so cannot run under
``torch.device("meta")``) without allocating or initialising its weights.

torchvision's RegNet factories compute their block widths with torch tensors and read them back
(``.tolist()``): under a ``meta`` default device that read fails (``Cannot copy out of meta
tensor; no data!``). :func:`parameters_on_meta` lets the factory run on the CPU and moves every
parameter to ``meta`` the moment a module registers it, so the weight initialisation that
follows runs on ``meta`` (free), and at most one layer's uninitialised weights exist in memory
at a time. (The same idea as ``accelerate.init_empty_weights``.)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def parameters_on_meta() -> Iterator[None]:
    """Within the block, every ``nn.Module`` parameter goes to ``meta`` when it is registered
    (buffers stay where they are made: the caller moves the module to ``meta`` afterwards)."""
    from torch import nn

    register = nn.Module.register_parameter

    def on_meta(self, name, param):
        register(self, name, param)
        p = self._parameters.get(name)
        if p is not None and p.device.type != "meta":
            self._parameters[name] = type(p)(p.to("meta"), requires_grad=p.requires_grad)

    nn.Module.register_parameter = on_meta
    try:
        yield
    finally:
        nn.Module.register_parameter = register


__all__ = ["parameters_on_meta"]
