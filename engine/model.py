"""The CV_UNet: an EfficientNet-Lite0 encoder, an ASPP bottleneck and a U-Net decoder.

It reads L (N x 1 x H x W, 0..100, H and W multiples of 32), and in a hinted model also a
colour-hint map (N x 3 x H x W, see ``hints.py``), and predicts, at a quarter
of the input size, logits over quantized ab bins; their annealed mean, refined at half
size with the stride-2 skip, is the ab output (N x 2 x H/2 x W/2, Lab units). How the
distribution becomes colours (temperature, doubt pull, gain) is the read-out (``readout.py``).

This file holds modules only: no I/O, devices or weight files (see ``weights.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn

from .color import AB_RANGE
from .encoder import ENCODERS, ConvBN, EfficientNetLite
from .hints import HINT_CHANNELS
from .readout import Readout, annealed_mean

MULTIPLE = 32  # the encoder's total stride: inputs are padded to a multiple of it
# The encoder sees L * L_SCALE - L_SHIFT: L 0..100 to the -1..1 range of its ImageNet training.
L_SCALE = 1.0 / 50.0
L_SHIFT = 1.0


@dataclass(frozen=True)
class ModelConfig:
    """Architecture settings, stored beside the weights (the read-out, ``readout.Readout``, is not one).

    Args:
        num_bins: how many ab bins the head predicts over (fitted to the training photos).
        aspp: put an ASPP block at the bottleneck.
        aspp_width: channels of each ASPP branch.
        aspp_rates: dilation rates of the 3x3 branches; (2, 4, 6) were chosen for the 16x16
            bottleneck of a 512 px working size (8x8 at today's 256, where rate 6 reaches mostly padding).
        aspp_separable: depthwise-separable dilated branches (fewer FLOPs).
        aspp_out: channels after the ASPP projection.
        decoder: widths of the decoder stages at strides 16, 8 and 4.
        refine: width of the half-resolution refinement.
        encoder: the ImageNet encoder, "lite0" or "lite2" (EfficientNet-Lite; Lite2 is wider and deeper).
        hint_channels: 0, or 3 for a model that also reads a colour-hint map (ab and mask) beside L.
        hint_decoder: a hinted model also gets the hint map straight into each decoder stage and the
            refinement (``hint_features``), not only through the encoder's stem: a frozen ImageNet
            encoder passes a zero-started hint input on too weakly to learn from (docs/experiments).

    """

    num_bins: int = 313
    aspp: bool = True
    aspp_width: int = 64
    aspp_rates: tuple[int, ...] = (2, 4, 6)
    aspp_separable: bool = False
    aspp_out: int = 160
    decoder: tuple[int, int, int] = (128, 96, 64)
    refine: int = 16
    encoder: str = "lite0"
    hint_channels: int = 0
    hint_decoder: bool = False

    def __post_init__(self) -> None:
        if self.encoder not in ENCODERS:
            raise ValueError(f"encoder is one of {', '.join(ENCODERS)}, got {self.encoder!r}")
        if self.hint_channels not in (0, HINT_CHANNELS):
            raise ValueError(f"hint_channels is 0 or {HINT_CHANNELS}, got {self.hint_channels}")
        if self.hint_decoder and not self.hint_channels:
            raise ValueError("hint_decoder needs hint_channels")

    @property
    def decoder_hint_channels(self) -> int:
        """Extra inputs of each decoder stage and of the refinement: the hint features, or none."""
        return HINT_FEATURES if self.hint_decoder else 0

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> ModelConfig:
        """The architecture of a stored dict; other keys (a weights file keeps the read-out beside it) are ignored."""
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        for key in ("aspp_rates", "decoder"):
            if key in known:
                known[key] = tuple(known[key])
        return cls(**known)


HINT_FEATURES = 6  # local a, b, present; spread a, b, present
HINT_SPREAD = 0.25  # the spread features' box, as a share of the shorter side at each stage


def box_mean(x: torch.Tensor, k: int) -> torch.Tensor:
    """The mean over a k x k box around each pixel (in-image pixels only), as two 1-D passes.

    The same as one k x k ``avg_pool2d`` with ``count_include_pad=False`` (the in-image count of a box is
    the product of its row and column counts), at 2k instead of k² operations a pixel: a 65 px box at a
    256 px stage took 190 ms in one pass.
    """
    x = F.avg_pool2d(x, (k, 1), 1, (k // 2, 0), count_include_pad=False)
    return F.avg_pool2d(x, (1, k), 1, (0, k // 2), count_include_pad=False)


def hint_features(hints: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """The hint map (N x 3 x H x W) as a decoder stage at ``size`` reads it (N x 6 x h x w, float32).

    Per cell: the mean hint ab there and whether there is one; and the same over a box of a quarter of
    the image (normalized convolution), which carries a hint's colour to its surroundings so the
    decoder only has to learn where to stop it. Relative sizes keep training crops and working sizes alike.
    The box is relative to the canvas the photo is on: a photo batched with one of another shape gets a
    slightly different box than alone (the hint spread after the network, which sees the photo's own size,
    does most of a hint's work).
    """
    hints = hints.float()
    h, w = size
    ab, mask = hints[:, :2], hints[:, 2:3]
    H, W = hints.shape[2:]
    if (H, W) != (h, w):
        if H % h or W % w:  # a size the encoder's strides do not divide (a training crop): cells of uneven size
            ab, mask = F.adaptive_avg_pool2d(ab, size), F.adaptive_avg_pool2d(mask, size)
        else:
            ab, mask = F.avg_pool2d(ab, (H // h, W // w)), F.avg_pool2d(mask, (H // h, W // w))
    k = max(3, round(min(h, w) * HINT_SPREAD)) | 1
    wide_ab, wide_mask = box_mean(ab, k), box_mean(mask, k)
    return torch.cat([ab / mask.clamp_min(1e-6), (mask > 0).float(),
                      wide_ab / wide_mask.clamp_min(1e-6), (wide_mask > 0).float()], dim=1)


class ConvBNReLU(nn.Sequential):
    """Conv, BatchNorm, ReLU: the unit of the ASPP and the decoder (a Sequential, so its keys are 0.* and 1.*)."""

    def __init__(self, cin: int, cout: int, k: int = 3, dilation: int = 1, groups: int = 1) -> None:
        pad = dilation * (k // 2)
        super().__init__(
            nn.Conv2d(cin, cout, k, padding=pad, dilation=dilation, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True),
        )

    def layer(self) -> ConvBN:
        conv, bn = self[0], self[1]
        assert isinstance(conv, nn.Conv2d) and isinstance(bn, nn.BatchNorm2d)
        return ConvBN(conv, bn, "relu")


class ASPP(nn.Module):
    """Atrous spatial pyramid pooling: 1x1, dilated 3x3 branches and image pooling."""

    def __init__(self, cin: int, width: int, rates: tuple[int, ...], separable: bool, cout: int) -> None:
        super().__init__()
        branches: list[nn.Module] = [ConvBNReLU(cin, width, 1)]
        for r in rates:
            if separable:
                branches.append(
                    nn.Sequential(ConvBNReLU(cin, cin, 3, r, groups=cin), ConvBNReLU(cin, width, 1))
                )
            else:
                branches.append(ConvBNReLU(cin, width, 3, r))
        self.branches = nn.ModuleList(branches)
        # Image pooling: one global context vector, no BatchNorm (a 1x1 map per sample).
        self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(cin, width, 1), nn.ReLU(inplace=True))
        self.project = ConvBNReLU(width * (len(branches) + 1), cout, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outs = [b(x) for b in self.branches]
        outs.append(self.pool(x).expand(-1, -1, x.shape[2], x.shape[3]))
        return self.project(torch.cat(outs, dim=1))

    def branch_convs(self) -> list[list[ConvBN]]:
        """Each spatial branch as its chain of convolutions: one, or two where it is depthwise-separable."""
        chains = []
        for branch in self.branches:
            units = [branch] if isinstance(branch, ConvBNReLU) else list(branch.children())
            chains.append([u.layer() for u in units if isinstance(u, ConvBNReLU)])
        return chains

    def pool_conv(self) -> ConvBN:
        """The image-pooling branch's 1x1 convolution (it has a bias and no BatchNorm)."""
        conv = self.pool[1]
        assert isinstance(conv, nn.Conv2d)
        return ConvBN(conv, None, "relu")


def zero_inputs_after(conv: nn.Conv2d, first: int) -> None:
    """Zero a convolution's weights for inputs ``first`` on: new inputs that start out ignored."""
    with torch.no_grad():
        conv.weight[:, first:].zero_()


class DecoderStage(nn.Module):
    """Upsample x2, join the encoder skip (and the hint features), two 3x3 convs."""

    def __init__(self, cin: int, cskip: int, cout: int, chint: int = 0) -> None:
        super().__init__()
        self.cin, self.cskip, self.chint = cin, cskip, chint
        self.conv1 = ConvBNReLU(cin + cskip + chint, cout)
        self.conv2 = ConvBNReLU(cout, cout)
        if chint:
            zero_inputs_after(self.conv1.layer().conv, cin + cskip)

    def forward(self, x: torch.Tensor, skip: torch.Tensor, hint: torch.Tensor | None = None) -> torch.Tensor:
        x = F.interpolate(x, size=skip.shape[-2:], mode="bilinear", align_corners=False)
        parts = [x, skip] if hint is None else [x, skip, hint.to(skip.dtype)]
        return self.conv2(self.conv1(torch.cat(parts, dim=1)))


class Refine(nn.Module):
    """Half-resolution correction of the upsampled ab from the stride-2 skip (sharper edges)."""

    def __init__(self, cskip: int, width: int, chint: int = 0) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(2 + cskip + chint, width, 3, padding=1)
        self.conv2 = nn.Conv2d(width, 2, 3, padding=1)
        if chint:
            zero_inputs_after(self.conv1, 2 + cskip)
        nn.init.zeros_(self.conv2.weight)  # starts as the identity
        assert self.conv2.bias is not None
        nn.init.zeros_(self.conv2.bias)

    def forward(self, ab: torch.Tensor, skip: torch.Tensor, hint: torch.Tensor | None = None) -> torch.Tensor:
        ab = F.interpolate(ab, size=skip.shape[-2:], mode="bilinear", align_corners=False)
        parts = [ab * (1.0 / AB_RANGE), skip] if hint is None else [ab * (1.0 / AB_RANGE), skip, hint.to(ab.dtype)]
        return ab + AB_RANGE * self.conv2(F.relu(self.conv1(torch.cat(parts, dim=1))))


class CVUNet(nn.Module):
    """The colorization U-Net (the textbook form: what the baseline runtime runs).

    Args:
        config: the architecture; fixed for the module's life.
        readout: how its ab distribution becomes colours; ``self.readout`` may be replaced at any time
            (a runtime built from the model reads it when built).

    """

    bins: torch.Tensor  # Q x 2 ab bin centres, a buffer fitted to the training photos

    def __init__(self, config: ModelConfig | None = None, readout: Readout | None = None) -> None:
        super().__init__()
        config = config or ModelConfig()
        self.config = config
        self.readout = readout or Readout()
        d4, d3, d2 = config.decoder
        # A hinted model's stem reads L and the hint map; the hint inputs' weights start at zero.
        self.encoder = EfficientNetLite(config.encoder, in_channels=1 + config.hint_channels, head=False)
        c1, c2, c3, c4, c5 = self.encoder.skip_channels
        if config.hint_channels:
            with torch.no_grad():
                self.encoder._conv_stem.weight[:, 1:].zero_()
        if config.aspp:
            self.bottleneck: nn.Module = ASPP(c5, config.aspp_width, config.aspp_rates,
                                              config.aspp_separable, config.aspp_out)
            cb = config.aspp_out
        else:
            self.bottleneck = nn.Identity()
            cb = c5
        ch = config.decoder_hint_channels
        self.dec4 = DecoderStage(cb, c4, d4, ch)
        self.dec3 = DecoderStage(d4, c3, d3, ch)
        self.dec2 = DecoderStage(d3, c2, d2, ch)
        self.head = nn.Conv2d(d2, config.num_bins, 1)
        self.refine = Refine(c1, config.refine, ch)
        self.register_buffer("bins", torch.zeros(config.num_bins, 2))

    @staticmethod
    def normalize(L: torch.Tensor) -> torch.Tensor:
        """L 0..100 to the -1..1 range the ImageNet encoder was trained on."""
        return L * L_SCALE - L_SHIFT

    def decoder_stages(self) -> tuple[DecoderStage, DecoderStage, DecoderStage]:
        """The decoder stages at strides 16, 8 and 4, in forward order."""
        return self.dec4, self.dec3, self.dec2

    def encoder_input(self, L: torch.Tensor, hints: torch.Tensor | None = None) -> torch.Tensor:
        """The normalized L, and in a hinted model the hint map beside it (zeros for no hints)."""
        x = self.normalize(L)
        if not self.config.hint_channels:
            if hints is not None:
                raise ValueError("these weights take no colour hints")
            return x
        if hints is None:
            hints = torch.zeros((L.shape[0], self.config.hint_channels, *L.shape[2:]), dtype=x.dtype, device=x.device)
        elif hints.shape != (L.shape[0], self.config.hint_channels, *L.shape[2:]):
            raise ValueError(f"expected hints of shape N x {self.config.hint_channels} x H x W like L "
                             f"{tuple(L.shape)}, got {tuple(hints.shape)}")
        return torch.cat([x, hints.to(x.dtype)], dim=1)

    def logits(self, L: torch.Tensor, hints: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(ab-bin logits at 1/4 size, the stride-2 skip feature the refinement reads)."""
        logits, f1, _ = self._network(L, hints)
        return logits, f1

    def _network(self, L: torch.Tensor,
                 hints: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """(logits, the stride-2 skip, the hint map the decoder reads: None without a hint decoder or hints)."""
        x = self.encoder_input(L, hints)
        f1, f2, f3, f4, f5 = self.encoder.features(x)
        # Looked at once: an empty mask (no hint anywhere) gives all-zero features at every stage.
        hint_map = x[:, 1:] if self.config.hint_decoder and bool(x[:, 3].any()) else None
        y = self.bottleneck(f5)
        for stage, skip in zip(self.decoder_stages(), (f4, f3, f2), strict=True):
            y = stage(y, skip, self._hint_features(hint_map, skip))
        return self.head(y), f1, hint_map

    def _hint_features(self, hint_map: torch.Tensor | None, like: torch.Tensor) -> torch.Tensor | None:
        """The hint input of a stage whose other input is ``like`` (None: the model has no hint decoder)."""
        if not self.config.hint_decoder:
            return None
        if hint_map is None:  # shaped like ``like`` without reading its size, so a trace keeps the size free
            return torch.zeros_like(like[:, :1], dtype=torch.float32).expand(-1, HINT_FEATURES, -1, -1)
        return hint_features(hint_map, (int(like.shape[2]), int(like.shape[3])))

    def forward_train(self, L: torch.Tensor, temperature: float | None = None,
                      hints: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Returns (logits at 1/4 size, ab at 1/2 size)."""
        ((logits, ab),) = self.forward_temperatures(L, (self.readout.temperature if temperature is None
                                                        else temperature,), hints)
        return logits, ab

    def forward_temperatures(self, L: torch.Tensor, temperatures: Sequence[float],
                             hints: torch.Tensor | None = None) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The forward_train of several read-out temperatures, the network run once: [(logits, ab at 1/2 size)]."""
        logits, f1, hint_map = self._network(L, hints)
        features = self._hint_features(hint_map, f1)
        scores = logits.float()
        out = []
        for t in temperatures:
            ab = annealed_mean(scores, self.bins, t)  # Readout.mean at temperature t
            out.append((logits, self.refine(ab, f1.to(ab.dtype), features)))
        return out

    def forward(self, L: torch.Tensor, hints: torch.Tensor | None = None) -> torch.Tensor:
        logits, ab = self.forward_train(L, hints=hints)
        return self.readout.apply(ab, logits, self.bins)

    def ab_distribution(self, L: torch.Tensor, hints: torch.Tensor | None = None) -> torch.Tensor:
        """Probabilities over the ab bins (N x Q x H/4 x W/4, at the model's temperature): what the
        annealed mean averages, and where the colour suggestions come from.
        """
        logits = self.logits(L, hints)[0]
        return self.readout.probabilities(logits)


def with_hint_channels(model: CVUNet, hint_channels: int = HINT_CHANNELS) -> CVUNet:
    """A copy of the model that reads ``hint_channels`` hint inputs: the same weights, the new stem inputs zero.

    So an unhinted model (or the ImageNet start) is where a hinted training begins: with the new
    weights at zero, it colorizes exactly as before whatever the hints say.
    """
    out = CVUNet(replace(model.config, hint_channels=hint_channels), model.readout)
    state = model.state_dict()
    state["encoder._conv_stem.weight"] = fit_stem(state["encoder._conv_stem.weight"], 1 + hint_channels)
    out.load_state_dict(state, strict=True)
    return out.train(model.training)


def with_hint_decoder(model: CVUNet) -> CVUNet:
    """A copy of a hinted model whose decoder stages and refinement also read the hint features.

    Their new inputs start at zero, so the copy colorizes exactly as the model did, hints or not.
    """
    if not model.config.hint_channels:
        raise ValueError("a hint decoder needs a model with hint channels")
    out = CVUNet(replace(model.config, hint_decoder=True), model.readout)
    state = model.state_dict()
    for key in ("dec4.conv1.0.weight", "dec3.conv1.0.weight", "dec2.conv1.0.weight", "refine.conv1.weight"):
        w = state[key]
        state[key] = torch.cat([w, torch.zeros((w.shape[0], HINT_FEATURES, *w.shape[2:]), dtype=w.dtype)], dim=1)
    out.load_state_dict(state, strict=True)
    return out.train(model.training)


def fit_stem(weight: torch.Tensor, in_channels: int) -> torch.Tensor:
    """A stem weight with ``in_channels`` inputs: extra inputs (hints) get zero weights, missing ones are dropped."""
    have = weight.shape[1]
    if have >= in_channels:
        return weight[:, :in_channels].clone()
    pad = torch.zeros((weight.shape[0], in_channels - have, *weight.shape[2:]), dtype=weight.dtype)
    return torch.cat([weight, pad], dim=1)


def init_encoder_from_imagenet(model: CVUNet, imagenet_state: dict[str, torch.Tensor]) -> None:
    """Copy the ImageNet Lite weights into the colorizer's 1-channel encoder.

    The stem sees L/50-1 where ImageNet saw RGB/127.5-1 with R=G=B; summing the stem
    weights over their input channels keeps its response to grey photos.
    """
    state = {k: v for k, v in imagenet_state.items()
             if not k.startswith(("_conv_head", "_bn1.", "_fc"))}
    stem = state["_conv_stem.weight"].sum(dim=1, keepdim=True)
    state["_conv_stem.weight"] = fit_stem(stem, 1 + model.config.hint_channels)  # hint inputs start at zero
    model.encoder.load_state_dict(state, strict=True)
