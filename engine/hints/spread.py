"""How far a hint's colour reaches beyond its point: along similar lightness, fading with distance."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from .network_map import fit_chroma
from .point import Hint

SPREAD_GRID = 128  # the spread's weights are worked out on a grid this long, then resized


@dataclass(frozen=True)
class HintSpread:
    """How far a hint's correction reaches (``spread_hints``); chosen on tuning photos, stored with the weights.

    reach: the distance scale, as a share of the photo's shorter side (0: no spread).
    lightness: the lightness scale (L units): pixels much lighter or darker than the hinted one are
        likely another surface and get less of its correction.
    floor: the weight of the network's own colour; far from every hint the colour stays the network's.
    gain: a chroma gain on the network's colour of a photo that has hints, before their corrections. The
        automatic read-out is muted for photos of unknown kinds (``readout``); hints say what the colours
        are and that the user wants them, so a hinted photo may keep more of the network's colour.
    colour: the scale (ab units) of the difference between the network's own colour at a pixel and at
        the hint (its cell of the spread's grid): without it a hint on a grey background also recolours a
        subject of similar lightness beside it (the network itself carries a hint only a little way), where
        the network had told the two apart by their colours.
    fade: the least denominator of the weighted mean. At 0 a pixel takes a lone hint's correction in the share
        w / (floor + w), nearly all of it wherever the weight is well above the floor; at 1 it takes w of it, so
        the correction fades out with the weight, and only where hints together weigh more than 1 is it their mean.
    restraint: the scale (ab units) of a hint's correction past which it reaches less far: its reach is divided by
        sqrt(1 + (|correction| / restraint)²). A hint near the network's colour is a nudge and harms nothing far
        away; one far from it, a strong fix or a mistake, stays nearer its point (0: off, every hint the same reach).
    """

    reach: float = 0.0
    lightness: float = 10.0
    floor: float = 0.05
    gain: float = 1.0
    colour: float = 0.0  # ab units: the scale of the difference in the network's own colour from the hint's (0: off)
    fade: float = 0.0
    restraint: float = 0.0  # ab units (0: off)

    def __post_init__(self) -> None:
        if self.restraint and self.restraint < 1.0:  # below an ab unit every hint is a point: not a spread
            raise ValueError(f"a hint spread's restraint is 0 (off) or at least 1 ab unit, got {self.restraint}")


def _corrections(L: np.ndarray, ab: np.ndarray, hints: Sequence[Hint]) -> np.ndarray:
    """Each hint's correction (n x 2): its colour at its pixel's lightness (as the network was given it) less ``ab``
    there.
    """
    h, w = L.shape
    pixels = [hint.pixel(h, w) for hint in hints]
    L_at = np.array([L[r, c] for r, c in pixels], np.float32)
    want = fit_chroma(L_at, np.array([hint.ab() for hint in hints], np.float32))
    return want - np.array([ab[r, c] for r, c in pixels], np.float32)


def _weights(L: np.ndarray, ab: np.ndarray, hints: Sequence[Hint], spread: HintSpread,
             reference: np.ndarray | None, delta: np.ndarray) -> tuple[list[np.ndarray], tuple[int, int]]:
    """Each hint's weight on the spread's grid (``spread_hints``' formula, without the floor), and the grid's size;
    ``delta``: the hints' corrections (``_corrections``), which the restraint reads.
    """
    h, w = L.shape
    scale = min(1.0, SPREAD_GRID / max(h, w))
    gh, gw = max(1, round(h * scale)), max(1, round(w * scale))

    def to_grid(a: np.ndarray) -> np.ndarray:
        return cv2.resize(a, (gw, gh), interpolation=cv2.INTER_AREA).reshape(gh, gw, *a.shape[2:]) \
            if (gh, gw) != (h, w) else a

    grid_L = to_grid(L)
    ys = (np.arange(gh, dtype=np.float32) + 0.5) * (h / gh)
    xs = (np.arange(gw, dtype=np.float32) + 0.5) * (w / gw)
    reach2 = (spread.reach * min(h, w)) ** 2
    two_l2 = 2.0 * spread.lightness ** 2
    grid_ab = None
    if spread.colour > 0:
        grid_ab = to_grid(ab if reference is None else np.ascontiguousarray(reference, np.float32))
        two_c2 = 2.0 * spread.colour ** 2
    weights = []
    for hint, d in zip(hints, delta, strict=True):
        r, c = hint.pixel(h, w)
        dist = ((ys - (r + 0.5)) ** 2)[:, None] + ((xs - (c + 0.5)) ** 2)[None, :]
        shrink = 1.0 + float(d @ d) / spread.restraint ** 2 if spread.restraint > 0 else 1.0  # the reach, squared, over
        exponent = -dist * shrink / (2.0 * reach2) - (grid_L - L[r, c]) ** 2 / two_l2
        if grid_ab is not None:  # against the hint's own grid cell: weight 1 there, even on a colour edge
            here = grid_ab[min(gh - 1, int(r * gh / h)), min(gw - 1, int(c * gw / w))]
            exponent = exponent - ((grid_ab - here) ** 2).sum(axis=-1) / two_c2
        weights.append(np.exp(exponent).astype(np.float32))
    return weights, (gh, gw)


def _to_full(grid: np.ndarray, h: int, w: int) -> np.ndarray:
    if grid.shape[:2] == (h, w):
        return grid
    full = cv2.resize(grid, (w, h), interpolation=cv2.INTER_LINEAR)
    return np.asarray(full, np.float32).reshape(h, w, *grid.shape[2:])


def spread_hints(L: np.ndarray, ab: np.ndarray, hints: Sequence[Hint], spread: HintSpread,
                 reference: np.ndarray | None = None) -> np.ndarray:
    """The ab (h x w x 2) with each hint's correction carried to the pixels around it of a similar lightness.

    ``L`` is the photo's lightness at ab's size. Each hint's correction is the difference between its
    colour (the chroma that fits at its lightness, as the network was given) and ``ab`` at its pixel;
    a pixel gets the weighted mean of the corrections, ``exp(-d²/2(reach·side)² - ΔL²/2 lightness²
    - Δab²/2 colour²)`` over the hints (Δab: the network's own colour there against at the hint; with a
    restraint, reach over √(1 + |correction|²/restraint²) for each hint), with the
    network's own colour weighted ``floor`` (the denominator at least ``fade``). A hint's pixel gets almost all
    of it. ``reference``: the colours the colour term compares (h x w x 2; default ``ab`` itself;
    docs/experiments/hint_leak_probe.py tries others).
    """
    if not hints or spread.reach <= 0:
        return ab
    h, w = L.shape
    delta = _corrections(L, ab, hints)
    weights, (gh, gw) = _weights(L, ab, hints, spread, reference, delta)
    num = np.zeros((gh, gw, 2), np.float32)
    den = np.full((gh, gw), spread.floor, np.float32)
    for weight, d in zip(weights, delta, strict=True):
        num += weight[..., None] * d
        den += weight
    den = np.maximum(den, np.float32(spread.fade))
    return ab + _to_full((num / den[..., None]).astype(np.float32), h, w)


def hint_share(L: np.ndarray, ab: np.ndarray, hints: Sequence[Hint], spread: HintSpread) -> np.ndarray:
    """How much of each pixel's colour the hints decide (h x w, 0..1): their weights against the network's own
    colour's ``floor`` (and ``fade``) in ``spread_hints``. Where it is near 1 the colour is the hints', not the
    network's guess.
    """
    h, w = L.shape
    if not hints or spread.reach <= 0:
        return np.zeros((h, w), np.float32)
    weights, _ = _weights(L, ab, hints, spread, None, _corrections(L, ab, hints))
    total = np.sum(weights, axis=0)
    share = total / np.maximum(spread.floor + total, np.float32(spread.fade))
    return np.clip(_to_full(share.astype(np.float32), h, w), 0.0, 1.0)
