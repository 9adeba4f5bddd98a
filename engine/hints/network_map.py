"""The hint map a hinted model reads: each hint's chroma (fitted to the photo's own lightness) and a mask."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..color import AB_RANGE, lab_to_rgb, rgb_to_lab
from .point import HINT_CHANNELS, HINT_RADIUS, Hint


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
