"""The read-out: how the model's distribution over ab bins becomes colours.

The network predicts logits over quantized ab bins; the read-out takes their annealed mean at a
temperature, pulls the colour toward grey where the distribution is broad (the doubt pull), scales
it by a chroma gain, and says how a user's colour hint spreads. None of it is learned: it is chosen
on photos after training (``training/readout.py``) and can change without touching the weights, so
it lives apart from the architecture (``model.ModelConfig``). The model, the runtimes and the
training's searches all read colours through this one module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import torch
import torch.nn.functional as F

from .color import AB_RANGE
from .hints import HintSpread

# The stored names of the hint spread's fields (as weights files have always had them, flat beside the
# read-out's own): the one mapping between ``HintSpread`` and the stored dict.
SPREAD_KEYS = {"reach": "hint_spread", "lightness": "hint_spread_lightness", "floor": "hint_spread_floor",
               "gain": "hint_gain", "colour": "hint_spread_colour", "fade": "hint_spread_fade",
               "restraint": "hint_spread_restraint"}


def ab_variance(logits: torch.Tensor, centres: torch.Tensor, temperature: float) -> torch.Tensor:
    """How broad the predicted colour is: the ab variance (Lab units squared) under softmax(logits / T).

    logits: N x Q x H x W; centres: Q x 2. Returns N x 1 x H x W float32.
    """
    probs = torch.softmax(logits.float() / temperature, dim=1)
    c = centres.float()
    mean = torch.einsum("nqhw,qc->nchw", probs, c)
    square = torch.einsum("nqhw,q->nhw", probs, (c * c).sum(dim=1))[:, None]
    return (square - (mean * mean).sum(dim=1, keepdim=True)).clamp_min(0.0)


def doubt_scale(variance: torch.Tensor, pull: float) -> torch.Tensor:
    """The factor on ab for a given variance: 1 where the model is sure, toward 0 as its colour spreads.

    1 / (1 + pull * var / AB_RANGE^2): with a spread of 50 ab units (a guess between, say, a red and a
    blue) and pull 4, the colour keeps 0.45 of its chroma.
    """
    return 1.0 / (1.0 + (pull / AB_RANGE**2) * variance)


DISPLAY_PULL = 32.0  # the shipped read-out's pull: the scale a read-out without a pull shows its doubt on


def unsure(variance: torch.Tensor, pull: float) -> torch.Tensor:
    """How unsure the colour is, 0 sure .. 1: the share of it a doubt pull takes away at this variance. The
    read-out's own pull, so that what is striped is what it greys; ``DISPLAY_PULL`` for a read-out that greys
    nothing, whose doubt is still worth showing.
    """
    return 1.0 - doubt_scale(variance, pull or DISPLAY_PULL)


def pull_toward_grey(ab: torch.Tensor, variance: torch.Tensor, pull: float) -> torch.Tensor:
    """The ab (N x 2 x H x W) with the doubt pull: ``doubt_scale`` at the variance's size, upsampled to ab's."""
    scale = doubt_scale(variance, pull)
    return ab * F.interpolate(scale, size=ab.shape[-2:], mode="bilinear", align_corners=False)


def annealed_mean(logits: torch.Tensor, centres: torch.Tensor, temperature: float) -> torch.Tensor:
    """Expected ab under softmax(logits / T): T < 1 sharpens towards the mode (more vivid).

    logits: N x Q x H x W; centres: Q x 2. Returns N x 2 x H x W in the logits' dtype.
    """
    probs = torch.softmax(logits / temperature, dim=1)
    # The expectation is a 1x1 convolution with the centres as weights (fast oneDNN path).
    return torch.nn.functional.conv2d(probs, centres.t().to(probs.dtype)[:, :, None, None])


def spread_of(row: dict[str, Any]) -> HintSpread:
    """The hint spread of a search row (``training.tuning.choose_spread``: keys named as HintSpread's fields;
    ``fade`` and ``restraint`` came later, and a row without one is of the form before, 0).
    """
    later = ("fade", "restraint")
    return HintSpread(**{f.name: row[f.name] for f in fields(HintSpread) if f.name not in later},
                      **{name: row.get(name, 0.0) for name in later})


@dataclass(frozen=True)
class Readout:
    """The read-out settings, stored beside the weights (a model holds one as ``CVUNet.readout``).

    Args:
        temperature: annealed-mean temperature (lower is more vivid).
        doubt_pull: where the predicted ab distribution is broad, pull the colour toward grey
            (``doubt_scale``): a muted colour where the model is unsure, not a vivid wrong guess.
            0 leaves the colour as it is. Chosen with the temperature and gain on tuning photos.
        chroma_gain: scale on the predicted ab; a loss that favours PSNR undershoots colourfulness,
            and training sets this to give back what it lost.
        spread: how each hint's correction is carried to the pixels around it (``hints.HintSpread``;
            reach 0: not at all), with the chroma gain of a hinted photo's own colour.

    """

    temperature: float = 0.38
    doubt_pull: float = 0.0
    chroma_gain: float = 1.0
    spread: HintSpread = field(default_factory=HintSpread)

    def probabilities(self, logits: torch.Tensor) -> torch.Tensor:
        """softmax(logits / T) over the bins (dim 1), float32: what the annealed mean averages."""
        return torch.softmax(logits.float() / self.temperature, dim=1)

    def mean(self, logits: torch.Tensor, centres: torch.Tensor) -> torch.Tensor:
        """The annealed mean at this temperature (N x 2 x H x W, at the logits' size and dtype)."""
        return annealed_mean(logits, centres, self.temperature)

    def variance(self, logits: torch.Tensor, centres: torch.Tensor) -> torch.Tensor:
        """What the doubt pull reads: the ab variance at this temperature (N x 1 x H x W float32)."""
        return ab_variance(logits, centres, self.temperature)

    def doubt(self, variance: torch.Tensor, size: Sequence[int]) -> torch.Tensor:
        """The doubt pull's factor on ab (N x 1 x size): ``doubt_scale`` at the variance's size, upsampled."""
        return F.interpolate(doubt_scale(variance, self.doubt_pull), size=size, mode="bilinear",
                             align_corners=False)

    def apply(self, ab: torch.Tensor, logits: torch.Tensor, centres: torch.Tensor) -> torch.Tensor:
        """The colours: ``ab`` (N x 2 x h x w, the refined ``mean`` of ``logits``) with the doubt pull and gain.

        The network refines the annealed mean at half size before this (``model.Refine``), so the read-out
        comes in two steps: ``mean`` on the logits, then this on the refined ab; the pull is worked out at
        the logits' size (N x Q x H x W, ``centres`` Q x 2) and upsampled to ab's.
        """
        if self.doubt_pull:
            ab = pull_toward_grey(ab, self.variance(logits, centres), self.doubt_pull)
        return ab * self.chroma_gain if self.chroma_gain != 1.0 else ab

    def to_dict(self) -> dict[str, float]:
        """The stored form: flat, the spread's fields under their ``SPREAD_KEYS`` names."""
        out = {"temperature": self.temperature, "chroma_gain": self.chroma_gain, "doubt_pull": self.doubt_pull}
        out.update({key: getattr(self.spread, name) for name, key in SPREAD_KEYS.items()})
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Readout:
        """The read-out of a stored dict (other keys, e.g. the architecture's, are ignored; missing: defaults)."""
        base, spread = cls(), HintSpread()
        return cls(temperature=d.get("temperature", base.temperature),
                   doubt_pull=d.get("doubt_pull", base.doubt_pull),
                   chroma_gain=d.get("chroma_gain", base.chroma_gain),
                   spread=HintSpread(**{name: d.get(key, getattr(spread, name)) for name, key in SPREAD_KEYS.items()}))
