"""The CV_UNet's convolutions with BatchNorm folded in, as plain tensors and one oneDNN call each on the CPU: a
primitive built once per input shape where the ``onednn-cpu-gomp`` wheel is installed (``dnnl.py``), else PyTorch's
call with the weight packed into oneDNN's blocked layout once per input shape.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TypeVar

import torch
import torch.nn.functional as F

from ..devices import cpu_has_fast_bf16
from ..encoder import ConvBN, SameConv2d
from . import dnnl

log = logging.getLogger(__name__)
K = TypeVar("K")
V = TypeVar("V")

CL = torch.channels_last
# oneDNN convolution with a fused activation (what Inductor emits on CPUs); None where absent.
_POINTWISE = getattr(getattr(torch.ops, "mkldnn", None), "_convolution_pointwise", None)
PACKED_SHAPES = 4  # input shapes a convolution keeps a packed weight for (a batch and its last chunk, twice)


@dataclass
class FConv:
    """A convolution with BatchNorm folded in and an optional in-place activation."""

    weight: torch.Tensor
    bias: torch.Tensor | None
    stride: int = 1
    padding: int = 0
    dilation: int = 1
    groups: int = 1
    act: str | None = None  # "relu" or "relu6"
    fused: bool = False  # one oneDNN call with the activation as a post-op (CPU only)
    direct: bool = False  # fused, through a oneDNN primitive built once per input shape (FusedCVUNet.set_direct)
    tf_same: bool = False  # a stride-2 "same" convolution: the weight's first row and column are zero padding
    # oneDNN tensors or primitives by input shape (``_packed``, ``_built``); opaque, so an FConv that has run cannot
    # be deep-copied or pickled
    packed: OrderedDict[tuple[object, ...], torch.Tensor | dnnl.Convolution] = field(
        default_factory=OrderedDict, repr=False, compare=False)

    def __call__(self, x: torch.Tensor, row_padding: int | None = None) -> torch.Tensor:
        """``row_padding``: another zero padding above and below than the one at the sides (a strip's)."""
        p, s, d = self.padding, self.stride, self.dilation
        ph = p if row_padding is None else row_padding
        if self.direct and row_padding is None and (conv := self._built(x)) is not None:
            return conv.run(x)
        if self.fused:
            assert _POINTWISE is not None
            attr, scalars = {None: ("none", []), "relu": ("relu", []), "relu6": ("hardtanh", [0.0, 6.0])}[self.act]
            w = self._packed(x, ph)
            return _POINTWISE(x, w, self.bias, [ph, p], [s, s], [d, d], self.groups, attr, scalars, "")
        y = F.conv2d(x, self.weight, self.bias, s, (ph, p), d, self.groups)
        if self.act == "relu":
            y.relu_()
        elif self.act == "relu6":
            y.clamp_(0.0, 6.0)
        return y

    def plus(self, x: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
        """conv(x) + other, the add a post-op of the convolution where fused (no activation)."""
        assert self.act is None
        if self.direct and (conv := self._built(x, other)) is not None:
            return conv.run(x, other)
        if not self.fused:
            return self(x).add_(other)
        assert _POINTWISE is not None
        p, s, d = self.padding, self.stride, self.dilation
        return _POINTWISE.binary(x, other, self._packed(x, p), self.bias, [p, p], [s, s], [d, d], self.groups,
                                 "add", None, None, [], None)

    def _built(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> dnnl.Convolution | None:
        """The oneDNN primitive for this input's shape and layout (and the residual's), built on first use; the last
        few kept. None where the input's channels are not dense or oneDNN has only a generic kernel for it: PyTorch's
        call takes those.
        """
        # keyed by what the tensors give at once: a call costs ~10 us at batch 1, so nothing is worked out first
        key = (x.dtype, x.shape, x.stride()) if residual is None else (
            x.dtype, x.shape, x.stride(), residual.dtype, residual.shape, residual.stride())
        if key not in self.packed and (dnnl.nhwc_strides(x) is None or (
                residual is not None and dnnl.nhwc_strides(residual) is None)):
            return None

        def build() -> dnnl.Convolution:
            weight, pad = self.weight, ((self.padding,) * 2,) * 2
            if self.tf_same:  # the uneven padding as it is: the k x k kernel without its zero row and column
                weight, pad = weight[:, :, 1:, 1:], ((self.padding - 1, self.padding),) * 2
            return dnnl.Convolution(weight, self.bias, x, self.stride, pad, self.dilation, self.groups, self.act,
                                    residual)

        try:
            conv = remember(self.packed, key, build, PACKED_SHAPES)
        except (dnnl.DnnlError, ValueError) as err:  # e.g. a kind this CPU's oneDNN 3.2 has no kernel for
            log.warning("convolution %s on %s: PyTorch's call from now on (%s)", tuple(self.weight.shape),
                        tuple(x.shape), err)
            self.direct = False
            return None
        assert isinstance(conv, dnnl.Convolution)
        return None if conv.generic else conv

    def _packed(self, x: torch.Tensor, row_padding: int) -> torch.Tensor:
        """The weight in oneDNN's blocked layout for this input shape: reordered once, not on every call (5-15% of
        a small convolution's time). The last few shapes are kept, so memory stays bounded when shapes vary.
        """
        p, s, d = self.padding, self.stride, self.dilation
        w = remember(self.packed, (*x.shape, row_padding), lambda: torch.ops.mkldnn._reorder_convolution_weight(
            self.weight, [row_padding, p], [s, s], [d, d], self.groups, list(x.shape)), PACKED_SHAPES)
        assert isinstance(w, torch.Tensor)
        return w

    def first_inputs(self, k: int) -> FConv:
        """The convolution of the first ``k`` input channels alone: the same result where the rest are zeros."""
        return replace(self, weight=self.weight[:, :k].contiguous(memory_format=CL), packed=OrderedDict())

    def to(self, dtype: torch.dtype, device: torch.device) -> FConv:
        cast = lambda t: None if t is None else t.to(device=device, dtype=dtype)  # noqa: E731
        w = cast(self.weight)
        assert w is not None
        fused = _POINTWISE is not None and device.type == "cpu" and (
            dtype == torch.float32 or (dtype == torch.bfloat16 and cpu_has_fast_bf16()))
        return FConv(w.contiguous(memory_format=CL), cast(self.bias), self.stride, self.padding,
                     self.dilation, self.groups, self.act, fused, tf_same=self.tf_same)  # ``direct``: set_direct


def remember(cache: OrderedDict[K, V], key: K, make: Callable[[], V], limit: int) -> V:
    """``cache[key]``, made on first use; the ``limit`` most recently used kept. Pop and put back: the most recent
    last, and no window for a KeyError.
    """
    value = cache.pop(key, None)
    if value is None:
        value = make()
    cache[key] = value
    while len(cache) > limit:
        cache.popitem(last=False)
    return value


def fold(layer: ConvBN) -> FConv:
    """The convolution with its BatchNorm folded in (in float64, then rounded once to float32)."""
    conv, bn, act = layer.conv, layer.bn, layer.act
    w = conv.weight.detach().double()
    b = conv.bias.detach().double() if conv.bias is not None else torch.zeros(w.shape[0], dtype=torch.float64)
    if bn is not None:
        assert bn.running_var is not None and bn.running_mean is not None
        scale = bn.weight.detach().double() / torch.sqrt(bn.running_var.double() + bn.eps)
        w = w * scale[:, None, None, None]
        b = (b - bn.running_mean.double()) * scale + bn.bias.detach().double()
    stride, pad = conv.stride[0], conv.padding[0]
    assert isinstance(pad, int)
    tf_same = isinstance(conv, SameConv2d) and stride != 1
    if isinstance(conv, SameConv2d):
        k = conv.kernel_size[0]
        if stride == 1:
            pad = (k - 1) // 2
        else:  # pad (before, after) = ((k-2)//2, k-2-(k-2)//2) for even sizes: one more tap in front
            w = F.pad(w, (1, 0, 1, 0))
            pad = k - 2 - (k - 2) // 2
    return FConv(w.float(), b.float(), stride, pad, conv.dilation[0], conv.groups, act, tf_same=tf_same)


@dataclass
class FBlock:
    expand: FConv | None
    dw: FConv
    project: FConv
    residual: bool


@dataclass
class FDecoder:
    cin: int
    cskip: int
    chint: int
    conv1: FConv
    conv2: FConv
    conv1_plain: FConv  # conv1 without the hint slice: a photo without hints has zeros there
