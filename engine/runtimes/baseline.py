"""The baseline runtime: the textbook module, as the comparison point for the optimized one."""

from __future__ import annotations

import copy

import numpy as np
import torch

from ..model import CVUNet
from .base import check_input


class BaselineRuntime:
    """``torch.cat`` skips, NCHW, fp32, fresh tensors on every call."""

    name = "baseline"
    precision = "fp32"

    def __init__(self, model: CVUNet, device: torch.device) -> None:
        self.device = device
        self.model = copy.deepcopy(model).float().eval().to(device)

    def run(self, L: np.ndarray, hints: np.ndarray | None = None) -> np.ndarray:
        check_input(L, hints, self.model.config.hint_channels)
        with torch.inference_mode():
            h = torch.from_numpy(hints).to(self.device) if hints is not None else None
            ab = self.model(torch.from_numpy(L).to(self.device), h)
            return ab.float().cpu().numpy()

    def release_memory(self) -> None:
        """Nothing is kept between calls: fresh tensors every time."""

    def release_buffers(self) -> None:
        """Nothing to give back: fresh tensors every time."""
