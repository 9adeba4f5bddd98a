"""What every runtime is: L in, half-size ab out, with the same input checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from ..model import MULTIPLE


class Runtime(Protocol):
    """Takes L (N x 1 x H x W float32 numpy, H and W multiples of 32) and returns ab
    (N x 2 x H/2 x W/2 float32 numpy, Lab units).
    """

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


@dataclass(frozen=True)
class Agreement:
    """How close a runtime's ab (Lab units, -110..110) stays to the fp32 baseline's on the same L.

    ``p999``: 99.9% of the output's ab values are within this of the baseline's (the robust figure,
    what a viewer could notice). ``max_abs``: no value is further than this (one pixel decides it;
    reduced precision flips a few pixels near the edge between two colour bins).
    """

    p999: float
    max_abs: float


# The documented agreement of the optimized runtime with the baseline, per precision. Measured with the
# shipped weights on the sample photos (512 px, batch 1 and 8), then given a margin:
# - fp32 differs only in summation order: measured max 1.2e-3, p99.9 7e-4 (AVX2 and AMX CPUs).
# - bf16 keeps 8 significant bits through ~60 layers; the trained read-out (softmax at temperature 0.55)
#   amplifies that near colour edges: on an AMX Xeon max 31.4, p99.9 up to 17.1 over a batch and 21.1 on the
#   worst photo, mean ~1. Untrained models (the tests' random_model) agree ~100x closer, their softmax being
#   flat: a test of bf16 drift must run the shipped weights.
# - fp16 (CUDA) keeps 11 significant bits, rounding 8x finer than bf16: bf16's bounds / 4 (not measured here).
AGREEMENT: dict[str, Agreement] = {
    "fp32": Agreement(p999=1.5e-3, max_abs=3e-3),
    "bf16": Agreement(p999=24.0, max_abs=48.0),
    "fp16": Agreement(p999=6.0, max_abs=12.0),
}


def ab_difference(ab: np.ndarray, reference: np.ndarray) -> tuple[float, float]:
    """(99.9th percentile, max) of |ab - reference|: the two figures ``Agreement`` bounds."""
    d = np.abs(np.asarray(ab, np.float32) - np.asarray(reference, np.float32))
    return float(np.percentile(d, 99.9)), float(d.max())
