"""What every runtime is: L in, half-size ab out, with the same input checks."""

from __future__ import annotations

from typing import Protocol

import numpy as np
import torch

from ..model import MULTIPLE
from ..options import AGREEMENT, Agreement

__all__ = ["AGREEMENT", "Agreement", "Runtime", "ab_difference", "check_input"]


class Runtime(Protocol):
    """Takes L (N x 1 x H x W float32 numpy, H and W multiples of 32) and returns ab
    (N x 2 x H/2 x W/2 float32 numpy, Lab units). A hinted model also takes a hint map
    (N x 3 x H x W float32, ``engine.hints``); None means no hints.
    """

    name: str
    device: torch.device
    precision: str

    def run(self, L: np.ndarray, hints: np.ndarray | None = None) -> np.ndarray: ...

    def release_memory(self) -> None:
        """Give back what is kept between calls (after running out of memory)."""
        ...

    def release_buffers(self) -> None:
        """Between batches: give back the buffers reused from call to call, not what is slow to make again (records,
        compiled models, CUDA graphs).
        """
        ...


def check_input(L: np.ndarray, hints: np.ndarray | None = None, hint_channels: int | None = None) -> None:
    """Raise ValueError unless L (and the hint map, for a model with ``hint_channels``) can be run."""
    if L.ndim != 4 or L.shape[1] != 1 or L.dtype != np.float32:
        raise ValueError(f"expected N x 1 x H x W float32 L, got {L.shape} {L.dtype}")
    if L.shape[2] % MULTIPLE or L.shape[3] % MULTIPLE:
        raise ValueError(f"H and W must be multiples of {MULTIPLE}, got {L.shape[2:]}")
    if hints is None:
        return
    if hint_channels == 0:
        raise ValueError("these weights take no colour hints")
    want = (L.shape[0], hint_channels or 3, *L.shape[2:])
    if hints.shape != want or hints.dtype != np.float32:
        raise ValueError(f"expected {' x '.join(map(str, want))} float32 hints, got {hints.shape} {hints.dtype}")


def ab_difference(ab: np.ndarray, reference: np.ndarray) -> tuple[float, float]:
    """(99.9th percentile, max) of |ab - reference|: the two figures ``Agreement`` (engine.options) bounds."""
    d = np.abs(np.asarray(ab, np.float32) - np.asarray(reference, np.float32))
    return float(np.percentile(d, 99.9)), float(d.max())
