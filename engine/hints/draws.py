"""Hints not given by a person: drawn from a training crop's true colours, or simulated as a user's.

Training draws a hint map straight from the crop (``sample_hints``); evaluation and benchmarks simulate a
user who picks points and gives each the original's colour there (``simulate_hints``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..color import AB_RANGE
from .point import HINT_CHANNELS, Hint, relative_pixel

TRAIN_PATCHES = (1, 3, 5, 7)  # side of a training hint's patch, drawn uniformly (Zhang et al.: 1..9)


def sample_hints(ab: np.ndarray, rng: np.random.Generator, p_none: float = 0.5, geometric_p: float = 1 / 8,
                 patch: Sequence[int] = TRAIN_PATCHES) -> np.ndarray:
    """A training hint map (3 x H x W) drawn from a crop's true ab (2 x H x W, Lab units).

    No hints with probability ``p_none`` (the model must still colorize alone); otherwise a geometric
    number of points (mean 1/geometric_p), each a square patch of a side drawn from ``patch`` at a
    uniform position, given the patch's mean ab.
    """
    _, h, w = ab.shape
    out = np.zeros((HINT_CHANNELS, h, w), np.float32)
    if rng.random() < p_none:
        return out
    for _ in range(int(rng.geometric(geometric_p))):
        side = int(rng.choice(np.asarray(patch)))
        r = int(rng.integers(0, max(1, h - side + 1)))
        c = int(rng.integers(0, max(1, w - side + 1)))
        mean = ab[:, r : r + side, c : c + side].reshape(2, -1).mean(axis=1) / AB_RANGE
        out[0, r : r + side, c : c + side] = mean[0]
        out[1, r : r + side, c : c + side] = mean[1]
        out[2, r : r + side, c : c + side] = 1.0
    return out


def simulate_hints(rgb_original: np.ndarray, n: int, seed: int, patch: int = 5) -> list[Hint]:
    """Seeded random hints (n) as a user would give them: each the original's mean colour in a patch x patch square.

    ``rgb_original``: H x W x 3 uint8 RGB, the upright colour original.
    """
    rng = np.random.default_rng(seed)
    hints = []
    for _ in range(n):
        x, y = float(rng.random()), float(rng.random())
        hints.append(Hint(x, y, patch_colour(rgb_original, x, y, patch)))
    return hints


def patch_colour(rgb_original: np.ndarray, x: float, y: float, patch: int = 5) -> tuple[int, int, int]:
    """The colour a simulated user gives a hint at (x, y): the original's mean in a patch x patch square there."""
    r, c = relative_pixel(x, y, *rgb_original.shape[:2])
    half = patch // 2
    block = rgb_original[max(0, r - half) : r + half + 1, max(0, c - half) : c + half + 1].reshape(-1, 3)
    mean = np.clip(np.rint(block.astype(np.float64).mean(axis=0)), 0, 255).astype(int)
    return int(mean[0]), int(mean[1]), int(mean[2])
