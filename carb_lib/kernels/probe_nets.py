"""Probe networks: generic CNNs drawn from the operator vocabulary, to characterise a platform
at the network level without measuring any named family.

The cross-family question (docs/families.md) is whether a model fitted on one family predicts
another. A source that holds depthwise networks of *another* family predicts a depthwise family
far better than ResNet rows alone (docs/experiments.md), but a user asking about a new
family has not measured its siblings. A probe network is a network of no family: a random chain
of stages, each built from the vocabulary the kernel benchmark times
(:data:`carb_lib.kernels.operators.KERNEL_KINDS`: dense and depthwise convolutions, batch norm, ReLU /
ReLU6 / SiLU, sigmoid gates, residual adds, pooling, a linear head), so that a platform can be
characterised once, at the network level, with rows that cover depthwise, pointwise and gated
blocks in every mix.

A probe network is measured as a ``module``-family config (:mod:`carb_lib.families.module`):
its factory is :data:`PROBE_FACTORY` (this module's ``probe_network``) and its ``module_kwargs`` are
``{"seed": S, "version": V}``. The draw is a pure function of both, so a config list names the
network exactly; ``config_id`` is the module family's structure hash.

Examples
--------
>>> from carb_lib.kernels.probe_nets import probe_network, describe_probe
>>> net = probe_network(seed=3)
>>> describe_probe(3)["stages"] >= 3
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["PROBE_FACTORY", "PROBE_VERSION", "describe_probe", "probe_network"]

#: The factory a ``module``-family config names for a probe network.
#: The factory as stored in measured rows (``module`` column). It names this module's path
#: before the folders by stage; :data:`carb_lib.families.module.MOVED_MODULES` maps it here, so
#: that stored rows and their ``config_id`` (a hash of the description) stay valid.
PROBE_FACTORY = "carb_lib.probe_nets:probe_network"
#: Version of the draw (a changed draw gets a new number; old numbers keep drawing as before).
PROBE_VERSION = 1

_ACTS = ("relu", "relu6", "silu")
_KINDS = ("conv", "separable", "inverted")  # dense kxk / depthwise + pointwise / expand-dw-project
_KIND_P = (0.2, 0.3, 0.5)
_KERNELS = (3, 5, 7)
_EXPANSIONS = (1, 2, 3, 4, 6)
_WIDTHS = (0.5, 0.75, 1.0, 1.25, 1.5)


def _round8(x: float) -> int:
    return max(8, int(round(x / 8.0)) * 8)


def describe_probe(seed: int, version: int = PROBE_VERSION) -> dict[str, Any]:
    """The drawn structure of probe network ``seed`` (plain data: what :func:`probe_network`
    builds): ``act``, ``stem`` channels, ``stages`` count, ``blocks`` (one dict per block:
    ``kind``, ``cin``, ``cout``, ``k``, ``stride``, ``expansion``, ``se``, ``residual``) and
    ``head`` channels.

    Raises
    ------
    ValueError
        A negative seed or an unknown version.
    """
    if int(seed) != seed or seed < 0:
        raise ValueError(f"probe seed must be a non-negative integer, got {seed!r}")
    if version != 1:
        raise ValueError(f"unknown probe version {version!r}; valid: [1]")
    rng = np.random.default_rng([int(version), int(seed)])
    act = str(rng.choice(_ACTS))
    width = float(rng.choice(_WIDTHS))
    stem = _round8(32 * width)
    n_stages = int(rng.integers(3, 7))  # 3..6
    # strides: the stem halves the input; up to four more halvings spread over the stages
    n_down = int(rng.integers(2, min(4, n_stages) + 1))
    down = set(rng.choice(n_stages, size=n_down, replace=False).tolist())
    blocks: list[dict[str, Any]] = []
    cin, base = stem, 16.0
    for s in range(n_stages):
        base *= float(rng.uniform(1.3, 2.0))
        cout = _round8(base * width)
        kind = str(rng.choice(_KINDS, p=_KIND_P))
        k = int(rng.choice(_KERNELS)) if kind != "conv" else int(rng.choice((1, 3, 3, 5)))
        e = int(rng.choice(_EXPANSIONS)) if kind == "inverted" else 1
        se = bool(kind != "conv" and rng.random() < 0.4)
        for b in range(int(rng.integers(1, 5))):
            stride = 2 if (b == 0 and s in down) else 1
            blocks.append({"kind": kind, "cin": cin, "cout": cout, "k": k, "stride": stride,
                           "expansion": e, "se": se,
                           "residual": kind != "conv" and stride == 1 and cin == cout})
            cin = cout
    head = _round8(float(rng.choice((640, 1024, 1280))) * width)
    return {"version": int(version), "seed": int(seed), "act": act, "width": width,
            "stem": stem, "stages": n_stages, "blocks": blocks, "head": head}


def probe_network(seed: int = 0, version: int = PROBE_VERSION, num_classes: int = 1000):
    """Build probe network ``seed`` (:func:`describe_probe`) as a ``torch.nn.Module``.

    Parameters
    ----------
    seed : int, default=0
        Which network of the draw.
    version : int, default=PROBE_VERSION
        The draw's version.
    num_classes : int, default=1000
        Outputs of the linear head.

    Examples
    --------
    >>> import torch
    >>> net = probe_network(seed=1).eval()
    >>> net(torch.zeros(2, 3, 64, 64)).shape
    torch.Size([2, 1000])
    """
    from torch import nn

    d = describe_probe(seed, version)
    Act = {"relu": nn.ReLU, "relu6": nn.ReLU6, "silu": nn.SiLU}[d["act"]]

    def cba(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, act: bool = True):
        layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
                  nn.BatchNorm2d(cout)]
        return layers + ([Act(inplace=True)] if act else [])

    class SE(nn.Module):
        def __init__(self, c: int, squeeze: int) -> None:
            super().__init__()
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.reduce = nn.Conv2d(c, squeeze, 1)
            self.act = Act(inplace=True)
            self.expand = nn.Conv2d(squeeze, c, 1)
            self.gate = nn.Sigmoid()

        def forward(self, x):
            return x * self.gate(self.expand(self.act(self.reduce(self.pool(x)))))

    class Block(nn.Module):
        def __init__(self, b: dict[str, Any]) -> None:
            super().__init__()
            cin, cout, k, s = b["cin"], b["cout"], b["k"], b["stride"]
            if b["kind"] == "conv":
                layers = cba(cin, cout, k, s)
            else:
                mid = cin * b["expansion"]
                layers = cba(cin, mid, 1) if b["kind"] == "inverted" and mid != cin else []
                layers += cba(mid, mid, k, s, groups=mid)
                if b["se"]:
                    layers.append(SE(mid, max(8, cin // 4)))
                # a separable block keeps its pointwise activation; an inverted one projects
                layers += cba(mid, cout, 1, act=b["kind"] == "separable")
            self.body = nn.Sequential(*layers)
            self.residual = b["residual"]

        def forward(self, x):
            y = self.body(x)
            return x + y if self.residual else y

    last = d["blocks"][-1]["cout"]
    return nn.Sequential(
        *cba(3, d["stem"], 3, 2),
        *(Block(b) for b in d["blocks"]),
        *cba(last, d["head"], 1),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(d["head"], num_classes),
    )
