"""How much an input looks like the scan of an old print: grain, a narrow or lifted tonal range, softness, toning.

A few generic measures, chosen so that they describe old prints in general rather than one degradation model's
steps; ``OldPrintGate`` (fitted by ``engine.training.print_gate``) turns them into one score. Every measure is
taken on the lightness at a fixed scale (the longer side at ``SCALE`` pixels), so a photo's size does not move it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import cv2
import numpy as np

from .color import lightness, rgb_to_lab

# Fitted by ``python -m engine.training.print_gate``; beside the weights (``engine.weights.RESOURCES``, not imported:
# the window reads this module and should not load torch for it).
GATE_FILE = Path(__file__).resolve().parent.parent / "resources" / "models" / "old-print-gate.json"

SCALE = 512
NAMES = ("grain", "range", "black", "white", "fine_share", "detail", "tone")
_IMMERKAER = np.array([[1, -2, 1], [-2, 4, -2], [1, -2, 1]], np.float32)

# The advice: enough of a batch that one odd photo does not decide; half, because it is for a box of old prints.
ADVICE_MIN_PHOTOS = 3
ADVICE_SHARE = 0.5
# Which photos of a run are looked at for it: the first ones, then one in so many (each look costs about a tenth
# of a photo's decoding: every photo looked at slowed a run of 1 MP photos by 13%).
MIN_SIDE = 64  # pixels: smaller inputs (icons, thumbnails) have no grain or tonal range to read
LOOK_FIRST = 24
LOOK_EVERY = 8


def _at_scale(image: np.ndarray, side: int) -> np.ndarray:
    """``image`` (grey or 3-channel) shrunk so its longer side is at most ``side``."""
    h, w = image.shape[:2]
    f = side / max(h, w)
    if f >= 1.0:
        return image
    return cv2.resize(image, (max(1, round(w * f)), max(1, round(h * f))), interpolation=cv2.INTER_AREA)


def grain_sigma(L: np.ndarray) -> float:
    """Immerkær's fast noise estimate (L units): the Laplacian-of-Laplacian residue, which most image content
    cancels and grain does not.
    """
    if min(L.shape) < 3:
        return 0.0
    r = cv2.filter2D(L, cv2.CV_32F, _IMMERKAER, borderType=cv2.BORDER_REFLECT)[1:-1, 1:-1]
    return float(np.sqrt(np.pi / 2.0) * np.abs(r).mean() / 6.0)


def tone_chroma(image: np.ndarray) -> float:
    """How far a 3-channel file's midtones are tinted (Lab units): a toned print's tint; 0 for a grey file, and
    for the rounding a grey photo saved in three channels carries (under 1 unit).
    """
    if image.ndim != 3:
        return 0.0
    lab = rgb_to_lab(_at_scale(image, 256))
    mid = (lab[..., 0] > 20) & (lab[..., 0] < 80)
    if not mid.any():
        return 0.0
    a, b = lab[..., 1][mid].mean(), lab[..., 2][mid].mean()
    return max(0.0, float(np.hypot(a, b)) - 1.0)


def measures(image: np.ndarray, L: np.ndarray | None = None) -> np.ndarray:
    """The measures named in ``NAMES`` of one input (H x W grey or H x W x 3), as the gate's features.

    ``L``: the input's lightness, where the caller has it already; otherwise a large input is first shrunk to
    exactly twice the size the measures are taken at (an uneven first step would move the grain measure), so a
    12 MP scan is read in a few ms.
    """
    if L is None:
        h, w = image.shape[:2]
        f = SCALE / max(h, w)
        if f < 0.5:
            size = (2 * max(1, round(w * f)), 2 * max(1, round(h * f)))
            image = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
        L = lightness(image)
    L = np.ascontiguousarray(_at_scale(L.astype(np.float32, copy=False), SCALE))
    lo, hi = np.percentile(L, (0.5, 99.5))
    fine = float(np.std(L - cv2.GaussianBlur(L, (0, 0), 1.0)))
    mid = float(np.std(L - cv2.GaussianBlur(L, (0, 0), 3.0)))
    coarse = _at_scale(L, SCALE // 2)
    detail = float(np.std(coarse - cv2.GaussianBlur(coarse, (0, 0), 1.0)))
    return np.array([
        np.log(grain_sigma(L) + 0.1),
        (hi - lo) / 100.0,
        lo / 100.0,
        hi / 100.0,
        fine / (mid + 1e-3),
        np.log(detail + 0.1),
        np.log1p(tone_chroma(image)),
    ], np.float64)


@dataclass(frozen=True)
class OldPrintGate:
    """A logistic regression on the standardised measures; a score above ``threshold`` reads as an old print."""

    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float

    def score(self, features: np.ndarray) -> float:
        """0..1: how much the measures read as an old print's scan (compared with ``threshold``)."""
        z = (np.asarray(features, np.float64) - np.asarray(self.mean)) / np.asarray(self.scale)
        return float(1.0 / (1.0 + np.exp(-(z @ np.asarray(self.weights) + self.bias))))

    def is_old_print(self, image: np.ndarray, L: np.ndarray | None = None) -> bool:
        return self.score(measures(image, L)) > self.threshold

    def to_json(self) -> str:
        return json.dumps({"names": list(NAMES), "mean": self.mean, "scale": self.scale, "weights": self.weights,
                           "bias": self.bias, "threshold": self.threshold}, indent=2)

    @classmethod
    def read(cls, path: Path) -> OldPrintGate:
        d = json.loads(path.read_text())
        if tuple(d["names"]) != NAMES:
            raise ValueError(f"{path}: fitted on other measures ({d['names']})")
        return cls(tuple(d["mean"]), tuple(d["scale"]), tuple(d["weights"]), float(d["bias"]), float(d["threshold"]))


@cache
def default_gate() -> OldPrintGate | None:
    """The gate that comes with the app; None (and nothing flagged) where its file is missing or unreadable."""
    try:
        return OldPrintGate.read(GATE_FILE)
    except (OSError, ValueError, KeyError):
        return None


def looks_like_old_print(image: np.ndarray, L: np.ndarray | None = None) -> bool:
    """Whether the gate that comes with the app reads this input as an old print's scan. A measure, never a reason
    to fail a photo: anything odd reads as not.
    """
    gate = default_gate()
    if gate is None or min(image.shape[:2]) < MIN_SIDE:
        return False
    try:
        return gate.is_old_print(image, L)
    except Exception:  # noqa: BLE001 - advice only
        return False


def looks_due(index: int) -> bool:
    """Whether the run's photo at ``index`` is looked at for the advice."""
    return index < LOOK_FIRST or index % LOOK_EVERY == 0


def old_print_advice(looks_old: int, looked: int, uses_old_prints: bool, name: str = "old-prints") -> str | None:
    """A line suggesting the old-prints model when most photos looked at look like old prints' scans and another
    model coloured them; None otherwise. Photo by photo, this gate sent too many clean photos to it to choose for
    each one (``docs/experiments``, "an old-print gate"); a folder's majority is what "auto" goes by.
    """
    if uses_old_prints or looks_old < ADVICE_MIN_PHOTOS or looks_old < ADVICE_SHARE * looked:
        return None
    return (f"{looks_old} of {looked} photos looked at look like scans of old prints (grain, fading, toning): "
            f"the \"{name}\" model may colour them better")
