"""The torch modules of the ``resnet`` family (ResNet); see :mod:`carb_lib.families.resnet`.

Defined inside a function so that importing the family does not import torch.
"""

from __future__ import annotations


def resnet_modules():
    """Define the torch modules lazily so that importing this module does not import torch."""
    from torch import nn

    class _Block(nn.Module):
        """A residual block: ``relu(residual(x) + shortcut(x))``; the shortcut is the input, or a
        1x1 conv (stride ``stride``) + BN when the stride or the channels change."""

        def _shortcut(self, cin: int, cout: int, stride: int) -> None:
            self.relu = nn.ReLU(inplace=True)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, 0, bias=False), nn.BatchNorm2d(cout)
                )

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.residual(x)
            out += identity
            return self.relu(out)

    class BasicBlock(_Block):
        expansion = 1

        def __init__(self, cin: int, width: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, width, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.conv2 = nn.Conv2d(width, width * self.expansion, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(width * self.expansion)
            self._shortcut(cin, width * self.expansion, stride)

        def residual(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            return self.bn2(self.conv2(out))

    class Bottleneck(_Block):
        expansion = 4

        def __init__(self, cin: int, width: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, width, 1, 1, 0, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(width)
            self.conv3 = nn.Conv2d(width, width * self.expansion, 1, 1, 0, bias=False)
            self.bn3 = nn.BatchNorm2d(width * self.expansion)
            self._shortcut(cin, width * self.expansion, stride)

        def residual(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            return self.bn3(self.conv3(out))

    class ResNet(nn.Module):
        def __init__(self, block_cls, blocks, widths, early_downsample, num_classes):
            super().__init__()
            stem_w = widths[0]
            if early_downsample:
                self.stem = nn.Sequential(
                    nn.Conv2d(3, stem_w, 7, 2, 3, bias=False), nn.BatchNorm2d(stem_w),
                    nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1),
                )
            else:
                self.stem = nn.Sequential(
                    nn.Conv2d(3, stem_w, 3, 1, 1, bias=False), nn.BatchNorm2d(stem_w),
                    nn.ReLU(inplace=True),
                )
            stages = []
            cin = stem_w
            for i, (n, w) in enumerate(zip(blocks, widths, strict=True)):
                layers = []
                for j in range(n):
                    stride = 2 if (i > 0 and j == 0) else 1
                    layers.append(block_cls(cin, w, stride))
                    cin = w * block_cls.expansion
                stages.append(nn.Sequential(*layers))
            self.stages = nn.Sequential(*stages)
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(cin, num_classes)

        def forward(self, x):
            x = self.stages(self.stem(x))
            return self.fc(self.avgpool(x).flatten(1))

    return BasicBlock, Bottleneck, ResNet
