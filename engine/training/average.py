"""A moving average of the weights during training (``TrainSettings.ema_decay``)."""

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
