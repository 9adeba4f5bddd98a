"""What every runtime is: L in, half-size ab out, with the same input checks."""

from __future__ import annotations

from typing import Protocol

import numpy as np
import torch

from ..model import MULTIPLE


class Runtime(Protocol):
    """Takes L (N x 1 x H x W float32 numpy, H and W multiples of 32) and returns ab
    (N x 2 x H/2 x W/2 float32 numpy, Lab units)."""

    name: str
    device: torch.device
    precision: str

    def run(self, L: np.ndarray) -> np.ndarray: ...

    def release_memory(self) -> None:
        """Give back what is kept between calls (after running out of memory)."""
        ...


def check_input(L: np.ndarray) -> None:
    if L.ndim != 4 or L.shape[1] != 1 or L.dtype != np.float32:
        raise ValueError(f"expected N x 1 x H x W float32 L, got {L.shape} {L.dtype}")
    if L.shape[2] % MULTIPLE or L.shape[3] % MULTIPLE:
        raise ValueError(f"H and W must be multiples of {MULTIPLE}, got {L.shape[2:]}")
