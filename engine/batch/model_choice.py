""""auto": the model for a batch chosen by how its photos look. A box of old prints goes to the old-prints model, a
folder of modern photos to the shipped one; a batch's majority decides, since the gate misjudges a few photos one
at a time (``docs/experiments``, "auto"). A preview is a batch of one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..imageio import ImageError, decode
from ..named_models import BUNDLED, OLD_PRINTS, SHIPPED
from ..options import ColorizeSettings
from ..print_look import looks_like_old_print

SAMPLE = 24  # photos looked at, evenly spaced through the batch: about 0.3 s for 1 MP photos, 5 s for 12 MP scans
OLD_SHARE = 0.5  # the share of them that must read as old prints: the batch's majority


@dataclass(frozen=True)
class BatchLook:
    """How many of the photos looked at read as old prints' scans, and the model that follows."""

    sampled: int
    looks_old: int

    @property
    def model(self) -> str:
        old = self.sampled > 0 and self.looks_old >= OLD_SHARE * self.sampled
        return OLD_PRINTS if old else SHIPPED

    @property
    def weights(self) -> Path | None:
        """``ColorizeSettings.weights`` for the model: None for the shipped one (the engine's default)."""
        return BUNDLED[OLD_PRINTS] if self.model == OLD_PRINTS else None

    def why(self) -> str:
        """Why this model, for the terminal and the window's summary."""
        if not self.sampled:
            return "no photo could be read before the run to choose by look"
        return (f"chosen by the photos' look: {self.looks_old} of the {self.sampled} looked at seem to be scans of "
                "old prints")

    def line(self) -> str:
        return f"model {self.model}{':' if not self.sampled else ','} {self.why()}"


def evenly(items: Sequence[Path], n: int) -> list[Path]:
    """Up to ``n`` of ``items``, spread from first to last."""
    if len(items) <= n:
        return list(items)
    step = (len(items) - 1) / (n - 1) if n > 1 else 0
    return [items[round(i * step)] for i in range(n)]


def look_of_batch(paths: Sequence[Path], sample: int = SAMPLE,
                  stop: Callable[[], bool] | None = None) -> BatchLook:
    """Reads up to ``sample`` of the photos; one that cannot be read is left out (its error comes in the batch),
    one in real colour counts as not an old print. ``stop``: asked between photos (a cancel), ends the look early.
    """
    looked = old = 0
    for path in evenly(paths, sample):
        if stop is not None and stop():
            break
        try:
            image = decode(path)
        except (ImageError, OSError, MemoryError):
            continue
        looked += 1
        old += not image.is_colour and looks_like_old_print(image.pixels)
    return BatchLook(looked, old)


def look_of_lightness(L: np.ndarray) -> BatchLook:
    """One photo as its own batch (the window's preview, which holds only its lightness: no tone to read)."""
    return BatchLook(1, int(looks_like_old_print(L, L)))


def chosen(settings: ColorizeSettings, look: BatchLook) -> ColorizeSettings:
    """``settings`` with the model ``look`` calls for, when they ask for one by look; unchanged otherwise."""
    if not settings.by_look:
        return settings
    return replace(settings, by_look=False, weights=look.weights)
