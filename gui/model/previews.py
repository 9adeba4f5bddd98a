"""The previews the window keeps: each photo's small L and predicted ab (``engine.options.Preview``), held to a
memory budget, and read back from the files on disk when dropped. Qt-free: numpy and OpenCV only.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import cv2
import numpy as np

from engine.color import join_lab, lightness, rgb_to_lab, to_uint8


def colour_image(L: np.ndarray, ab: np.ndarray, strength: float) -> np.ndarray:
    """The colour version with its chroma scaled by ``strength`` (1 = as predicted)."""
    return join_lab(L, ab * np.float32(strength))


# Doubt (``Colorizer.doubt``) striped not at all .. fully, one scale for every photo: on the 66 validation photos
# (shipped model) doubt above 0.35 is about the least sure third of the pixels, their mean ab error 16 to 21 against
# 3 to 13 below (docs/experiments, "Where the model is unsure").
UNSURE_FROM, UNSURE_TO = 0.35, 0.55
UNSURE_RGB = np.array([255, 0, 200], np.float32)  # magenta stripes: no photo's own colour reads as them
UNSURE_STRIPE = 6  # px, at the preview's size


def shade_unsure(rgb: np.ndarray, doubt: np.ndarray) -> np.ndarray:
    """``rgb`` (h x w x 3, uint8 or float 0..1) as uint8, with diagonal stripes where the model is unsure of its
    colour, the stronger the less sure. A fixed scale, not each photo's own: a photo the model is sure of shows none.
    """
    rgb = rgb if rgb.dtype == np.uint8 else to_uint8(rgb)
    h, w = rgb.shape[:2]
    strength = np.clip((doubt - UNSURE_FROM) / (UNSURE_TO - UNSURE_FROM), 0.0, 1.0) * 0.8
    stripes = ((np.arange(h)[:, None] + np.arange(w)[None, :]) // UNSURE_STRIPE) % 2 == 0
    alpha = (strength * stripes)[..., None].astype(np.float32)
    return (rgb * (1.0 - alpha) + UNSURE_RGB * alpha + 0.5).astype(np.uint8)


def unsure_caption(doubt: np.ndarray) -> str:
    """What the After caption adds while the stripes are on: a photo without any says why, not "striped"."""
    if (doubt > UNSURE_FROM).any():
        return " · striped where the model is unsure"
    return " · no stripes: the model is sure of every part"


def preview_from_files(source: Path, output: Path | None, size: int) -> tuple[np.ndarray, np.ndarray | None]:
    """(L, ab) at most ``size`` px from the files on disk, for photos whose cached preview was dropped.
    ab comes from the written output (None when there is none yet).
    """
    from engine.imageio import decode  # pure PIL/OpenCV; imported here as only this fallback needs it

    def small(pixels: np.ndarray) -> np.ndarray:
        h, w = pixels.shape[:2]
        s = min(1.0, size / max(h, w))
        if s >= 1:
            return pixels
        return cv2.resize(pixels, (max(1, round(w * s)), max(1, round(h * s))), interpolation=cv2.INTER_AREA)

    L = small(lightness(decode(source).pixels))
    if output is None or not output.is_file():
        return L, None
    out = decode(output).pixels
    if out.ndim == 2:
        return L, np.zeros(L.shape + (2,), np.float32)
    ab = rgb_to_lab(small(out))[..., 1:]
    if ab.shape[:2] != L.shape:
        ab = cv2.resize(ab, (L.shape[1], L.shape[0]), interpolation=cv2.INTER_LINEAR).reshape(L.shape + (2,))
    return L, np.ascontiguousarray(ab)


class PreviewCache:
    """The most recent previews by queue key, held to a memory budget (each is a few MB of float arrays):
    what a 10,000-photo batch keeps is bounded by ``budget_mb``, not by the queue's length.
    """

    def __init__(self, budget_mb: float = 160.0, capacity: int = 40) -> None:
        self.budget_bytes = int(budget_mb * 2**20)
        self.capacity = capacity
        self._items: OrderedDict[int, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._bytes = 0

    def put(self, key: int, L: np.ndarray, ab: np.ndarray) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self._bytes -= old[0].nbytes + old[1].nbytes
        self._items[key] = (L, ab)
        self._bytes += L.nbytes + ab.nbytes
        while len(self._items) > 1 and (len(self._items) > self.capacity or self._bytes > self.budget_bytes):
            _, (oL, oab) = self._items.popitem(last=False)
            self._bytes -= oL.nbytes + oab.nbytes

    def get(self, key: int) -> tuple[np.ndarray, np.ndarray] | None:
        item = self._items.get(key)
        if item is not None:
            self._items.move_to_end(key)
        return item

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        self._items.clear()
        self._bytes = 0
