"""A user network for CARB's ``module`` family (README, *Your own network*).

Any function that returns a ``torch.nn.Module`` works; CARB builds it on the ``meta`` device
(nothing is allocated) to read its FLOPs, parameters, layers and activation bytes, and runs it
for real only when you profile it. Keyword arguments come from ``--module-kwargs``.
"""

from torch import nn


def block(cin: int, cout: int, stride: int) -> nn.Sequential:
    """Depthwise 3x3 then pointwise 1x1, each with batch norm and ReLU (MobileNet v1 style)."""
    return nn.Sequential(
        nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False), nn.BatchNorm2d(cin),
        nn.ReLU(inplace=True),
        nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
    )


def my_cnn(width: int = 32, classes: int = 1000) -> nn.Module:
    """A small depthwise-separable CNN: a stride-2 stem and four blocks, doubling the width."""
    w = [width, 2 * width, 4 * width, 8 * width, 8 * width]
    return nn.Sequential(
        nn.Conv2d(3, w[0], 3, 2, 1, bias=False), nn.BatchNorm2d(w[0]), nn.ReLU(inplace=True),
        block(w[0], w[1], 2), block(w[1], w[2], 2), block(w[2], w[3], 2), block(w[3], w[4], 1),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(w[4], classes),
    )
