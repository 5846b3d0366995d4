"""The torch modules of the ``nb201`` family (NAS-Bench-201; :mod:`carb_lib.families.nb201`).

Defined inside a function so that importing the family does not import torch.
"""

from __future__ import annotations


def nb201_modules():
    """Torch modules, defined lazily so that importing this module does not import torch."""
    from torch import nn

    class ReLUConvBN(nn.Module):
        def __init__(self, cin: int, cout: int, k: int, stride: int, pad: int) -> None:
            super().__init__()
            self.op = nn.Sequential(
                nn.ReLU(inplace=False),
                nn.Conv2d(cin, cout, k, stride=stride, padding=pad, bias=False),
                nn.BatchNorm2d(cout, affine=True),
            )

        def forward(self, x):
            return self.op(x)

    class Zero(nn.Module):
        """The ``none`` operation (C_in == C_out, stride 1): a zero tensor like the input."""

        def forward(self, x):
            return x.mul(0.0)

    class Identity(nn.Module):
        def forward(self, x):
            return x

    class Pool(nn.Module):
        """``avg_pool_3x3`` with C_in == C_out (the reference's POOLING without preprocess)."""

        def __init__(self) -> None:
            super().__init__()
            self.op = nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)

        def forward(self, x):
            return self.op(x)

    def make_op(name: str, c: int) -> nn.Module:
        if name == "none":
            return Zero()
        if name == "skip_connect":
            return Identity()
        if name == "nor_conv_1x1":
            return ReLUConvBN(c, c, 1, 1, 0)
        if name == "nor_conv_3x3":
            return ReLUConvBN(c, c, 3, 1, 1)
        if name == "avg_pool_3x3":
            return Pool()
        raise ValueError(f"unknown NB201 operation {name!r}")  # pragma: no cover

    class InferCell(nn.Module):
        def __init__(self, nodes, c: int) -> None:
            super().__init__()
            self.layers = nn.ModuleList()
            self.node_inputs: list[list[tuple[int, int]]] = []  # (layer index, input node)
            for node in nodes:
                ins = []
                for op, src in node:
                    ins.append((len(self.layers), src))
                    self.layers.append(make_op(op, c))
                self.node_inputs.append(ins)

        def forward(self, x):
            nodes = [x]
            for ins in self.node_inputs:
                nodes.append(sum(self.layers[k](nodes[src]) for k, src in ins))
            return nodes[-1]

    class ResNetBasicblock(nn.Module):
        """The NATS-Bench reduction block (stride 2, C -> 2C)."""

        def __init__(self, cin: int, cout: int) -> None:
            super().__init__()
            self.conv_a = ReLUConvBN(cin, cout, 3, 2, 1)
            self.conv_b = ReLUConvBN(cout, cout, 3, 1, 1)
            self.downsample = nn.Sequential(
                nn.AvgPool2d(kernel_size=2, stride=2, padding=0),
                nn.Conv2d(cin, cout, kernel_size=1, stride=1, padding=0, bias=False),
            )

        def forward(self, x):
            out = self.conv_b(self.conv_a(x))
            return self.downsample(x) + out

    class TinyNetwork(nn.Module):
        def __init__(self, nodes, c: int, n: int, num_classes: int) -> None:
            super().__init__()
            self.stem = nn.Sequential(
                nn.Conv2d(3, c, kernel_size=3, padding=1, bias=False), nn.BatchNorm2d(c)
            )
            channels = [c] * n + [2 * c] + [2 * c] * n + [4 * c] + [4 * c] * n
            reductions = [False] * n + [True] + [False] * n + [True] + [False] * n
            self.cells = nn.ModuleList()
            prev = c
            for ch, red in zip(channels, reductions, strict=True):
                self.cells.append(ResNetBasicblock(prev, ch) if red else InferCell(nodes, ch))
                prev = ch
            self.lastact = nn.Sequential(nn.BatchNorm2d(prev), nn.ReLU(inplace=True))
            self.global_pooling = nn.AdaptiveAvgPool2d(1)
            self.classifier = nn.Linear(prev, num_classes)

        def forward(self, x):
            x = self.stem(x)
            for cell in self.cells:
                x = cell(x)
            x = self.global_pooling(self.lastact(x))
            return self.classifier(x.view(x.size(0), -1))

    return TinyNetwork, Zero, Identity, Pool, ReLUConvBN, InferCell
