"""One colour hint: a point on the upright photo (relative x, y) and the sRGB colour a person gave it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..color import rgb_to_lab

HINT_CHANNELS = 3  # a/AB_RANGE, b/AB_RANGE, mask


HINT_RADIUS = 2  # a hint covers a (2r+1)^2 square at the working size


def relative_pixel(x: float, y: float, h: int, w: int) -> tuple[int, int]:
    """(row, column) of the relative point (x, y), 0..1, in an h x w image."""
    return min(h - 1, int(y * h)), min(w - 1, int(x * w))


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
        return relative_pixel(self.x, self.y, h, w)

    def ab(self) -> tuple[float, float]:
        """The chroma (a, b in Lab units) of the hint's colour."""
        lab = rgb_to_lab(np.array([[self.rgb]], np.uint8))[0, 0]
        return float(lab[1]), float(lab[2])
