"""Colour hints: a few user points, each an sRGB colour, as the hint map a hinted model reads.

A hinted model (``ModelConfig.hint_channels == 3``) reads L plus a 3-channel hint map, as in
Zhang et al. 2017: the hint's ab (/ AB_RANGE) and a mask of 1 at the hinted pixels, zero elsewhere.
Only a hint colour's chroma is used: the photo's own lightness stays. Training draws hints from the
original photo (``sample_hints``); evaluation and benchmarks simulate a user (``simulate_hints``).

numpy only (no torch): the GUI can build hints without the model's libraries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .color import AB_RANGE, lab_to_rgb, rgb_to_lab

HINT_CHANNELS = 3  # a/AB_RANGE, b/AB_RANGE, mask
HINT_RADIUS = 2  # a hint covers a (2r+1)^2 square at the working size
TRAIN_PATCHES = (1, 3, 5, 7)  # side of a training hint's patch, drawn uniformly (Zhang et al.: 1..9)


@dataclass(frozen=True)
class Hint:
    """One colour hint: relative x, y (0..1, left/top to right/bottom) in the upright photo and an sRGB colour."""

    x: float
    y: float
    rgb: tuple[int, int, int]

    def __post_init__(self) -> None:
        if not (0.0 <= self.x <= 1.0 and 0.0 <= self.y <= 1.0):
            raise ValueError(f"a hint's x and y are relative (0..1), got ({self.x}, {self.y})")
        if len(self.rgb) != 3 or not all(isinstance(v, (int, np.integer)) and 0 <= v <= 255 for v in self.rgb):
            raise ValueError(f"a hint's colour is three integers 0..255, got {self.rgb}")

    def pixel(self, h: int, w: int) -> tuple[int, int]:
        """(row, column) of the hint in an h x w image of the same photo (any size, same aspect)."""
        return min(h - 1, int(self.y * h)), min(w - 1, int(self.x * w))

    def ab(self) -> tuple[float, float]:
        """The chroma (a, b in Lab units) of the hint's colour."""
        lab = rgb_to_lab(np.array([[self.rgb]], np.uint8))[0, 0]
        return float(lab[1]), float(lab[2])


def fit_chroma(L: np.ndarray, ab: np.ndarray, steps: int = 12) -> np.ndarray:
    """Scale ab (N x 2) towards grey until (L, a, b) is an sRGB colour: the hue kept, the chroma what fits.

    A vivid colour asked for at a dark or bright pixel cannot be shown there as it is; the model only
    ever saw colours real photos have at that lightness.
    """
    L = np.asarray(L, np.float32).reshape(-1)
    ab = np.asarray(ab, np.float32).reshape(-1, 2)
    lo, hi = np.zeros(len(ab), np.float32), np.ones(len(ab), np.float32)

    def fits(scale: np.ndarray) -> np.ndarray:
        lab = np.concatenate([L[:, None], ab * scale[:, None]], axis=1)[None].astype(np.float32)
        raw = rgb_to_lab(lab_to_rgb(lab))[0]
        return np.abs(raw - lab[0]).max(axis=1) < 0.5

    ok = fits(hi)
    for _ in range(steps):  # bisection on the scale, where it does not fit as it is
        mid = (lo + hi) / 2
        good = fits(mid)
        lo = np.where(good, mid, lo)
        hi = np.where(good, hi, mid)
    return ab * np.where(ok, 1.0, lo)[:, None]


def hint_map(hints: Sequence[Hint], h: int, w: int, L: np.ndarray | None = None,
             radius: int = HINT_RADIUS) -> np.ndarray:
    """3 x h x w float32: (a/AB_RANGE, b/AB_RANGE, mask) of the hints, zero elsewhere.

    With ``L`` (h x w lightness at the same size) each hint's chroma is reduced to what fits at the
    photo's lightness there (``fit_chroma``). Later hints overwrite earlier ones where they overlap.
    """
    out = np.zeros((HINT_CHANNELS, h, w), np.float32)
    if not hints:
        return out
    ab = np.array([hint.ab() for hint in hints], np.float32)
    pixels = [hint.pixel(h, w) for hint in hints]
    if L is not None:
        ab = fit_chroma(np.array([L[r, c] for r, c in pixels], np.float32), ab)
    for (r, c), (a, b) in zip(pixels, ab, strict=True):
        r0, r1, c0, c1 = max(0, r - radius), min(h, r + radius + 1), max(0, c - radius), min(w, c + radius + 1)
        out[0, r0:r1, c0:c1] = a / AB_RANGE
        out[1, r0:r1, c0:c1] = b / AB_RANGE
        out[2, r0:r1, c0:c1] = 1.0
    return out


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
    h, w = rgb_original.shape[:2]
    rng = np.random.default_rng(seed)
    hints = []
    for _ in range(n):
        x, y = float(rng.random()), float(rng.random())
        r, c = min(h - 1, int(y * h)), min(w - 1, int(x * w))
        half = patch // 2
        block = rgb_original[max(0, r - half) : r + half + 1, max(0, c - half) : c + half + 1].reshape(-1, 3)
        mean = np.clip(np.rint(block.astype(np.float64).mean(axis=0)), 0, 255).astype(int)
        hints.append(Hint(x, y, (int(mean[0]), int(mean[1]), int(mean[2]))))
    return hints
