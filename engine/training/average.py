"""Averages of weights: a moving one during training (``TrainSettings.ema_decay``), and a blend of two models."""

from __future__ import annotations

import copy

import torch

from ..model import CVUNet


class WeightAverage:
    """An exponential moving average of the weights.

    With a few hundred photos the weights wander from step to step (held-out scores move by a few
    tenths of a dB between checkpoints); their average is steadier than any one of them.
    """

    def __init__(self, model: CVUNet, decay: float) -> None:
        self.decay = decay
        self.shadow = {k: v.detach().clone() for k, v in model.state_dict().items()}
        self.updates = 0

    @torch.no_grad()
    def update(self, model: CVUNet) -> None:
        self.updates += 1
        d = min(self.decay, (1 + self.updates) / (10 + self.updates))
        for k, v in model.state_dict().items():
            if v.dtype.is_floating_point:
                self.shadow[k].mul_(d).add_(v.detach(), alpha=1 - d)
            else:
                self.shadow[k].copy_(v)

    def averaged(self, model: CVUNet) -> CVUNet:
        avg = copy.deepcopy(model)
        avg.load_state_dict(self.shadow)
        return avg.eval()


def blend_into(start: CVUNet, other: CVUNet, share: float) -> CVUNet:
    """``other`` becomes ``(1 - share) * start + share * other``, tensor by tensor; the colour bins (a table, not a
    weight) are ``start``'s. Two fine-tunes of one start often keep most of what each knows (WiSE-FT).
    """
    a, b = start.state_dict(), other.state_dict()
    if a.keys() != b.keys() or any(a[k].shape != b[k].shape for k in a):
        raise ValueError("the two models are not the same architecture")
    other.load_state_dict({k: torch.lerp(v, b[k], share) if v.is_floating_point() and k != "bins" else v
                           for k, v in a.items()})
    return other
