"""Developer option ``COLORIZER_UNTRAINED=1`` (gui/app.py): a colorizer with random weights, for the screenshots
(tools/gui_screenshots.sh) and demos before training has finished, and for the GUI tests. Not for users.
"""

from __future__ import annotations

import numpy as np

from engine.color import ab_grid
from engine.colorizer import Colorizer
from engine.model import CVUNet, ModelConfig
from engine.options import ColorizeSettings


def untrained_factory(settings: ColorizeSettings) -> Colorizer:
    """A colorizer with random weights: for tests and screenshots before training has finished.

    Its bins are the 98 ab grid points nearest grey and its head has a fixed random bias (a fresh
    model's bins are all zero, which would colour nothing), so the output has a visible, meaningless tint.
    """
    model = CVUNet(ModelConfig(num_bins=98)).eval()
    grid = ab_grid()
    nearest = np.ascontiguousarray(grid[np.argsort(np.hypot(grid[:, 0], grid[:, 1]), kind="stable")[:98]])
    bias = np.random.default_rng(0).normal(0.0, 2.0, 98).astype(np.float32)
    bins, head_bias = model.get_buffer("bins"), model.head.get_parameter("bias")
    bins.copy_(bins.new_tensor(nearest))
    head_bias.data.copy_(head_bias.new_tensor(bias))
    return Colorizer.create(settings, model=model)
