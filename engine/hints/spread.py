"""How far a hint's colour reaches beyond its point: along similar lightness, fading with distance."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
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
    edges: the lightness change (L units) a path from the hint crosses (``lightness_path_cost``), as a scale: the
        weight falls by e for each ``edges`` of it, so a hint stays on its own surface where an edge parts it from
        another of the same lightness and colour (0: off).
    fade: the least denominator of the weighted mean. At 0 a pixel takes a lone hint's correction in the share
        w / (floor + w), nearly all of it wherever the weight is well above the floor; at 1 it takes w of it, so
        the correction fades out with the weight, and only where hints together weigh more than 1 is it their mean.
    """

    reach: float = 0.0
    lightness: float = 10.0
    floor: float = 0.05
    gain: float = 1.0
    colour: float = 0.0  # ab units: the scale of the difference in the network's own colour from the hint's (0: off)
    fade: float = 0.0
    edges: float = 0.0


def lightness_path_cost(L: np.ndarray, seeds: Sequence[tuple[int, int]], sweeps: int = 2) -> np.ndarray:
    """For each seed pixel, every pixel's least total lightness change along a 4-connected path from it: K x h x w.

    Raster sweeps down and up (each row relaxed both ways at once by running minima over its cumulative steps)
    find every path that turns back at most ``sweeps`` times: an edge between surfaces costs its step, a smooth
    surface almost nothing.
    """
    h, w = L.shape
    L = L.astype(np.float32)
    cost = np.full((len(seeds), h, w), np.inf, np.float32)
    for k, (r, c) in enumerate(seeds):
        cost[k, r, c] = 0.0
    along = np.concatenate([np.zeros((h, 1), np.float32), np.cumsum(np.abs(np.diff(L, axis=1)), axis=1)], axis=1)
    down = np.abs(np.diff(L, axis=0))  # (h-1) x w: the step from row r to r+1

    def relax_row(r: int) -> None:
        c = along[r]
        row = np.minimum(cost[:, r], c + np.minimum.accumulate(cost[:, r] - c, axis=1))  # from the left
        cost[:, r] = np.minimum(row, np.minimum.accumulate((row + c)[:, ::-1], axis=1)[:, ::-1] - c)  # the right

    for _ in range(sweeps):
        relax_row(0)
        for r in range(1, h):
            np.minimum(cost[:, r], cost[:, r - 1] + down[r - 1], out=cost[:, r])
            relax_row(r)
        for r in range(h - 2, -1, -1):
            np.minimum(cost[:, r], cost[:, r + 1] + down[r], out=cost[:, r])
            relax_row(r)
    return cost


_PATHS: OrderedDict[tuple[bytes, tuple[int, ...], tuple[int, int]], np.ndarray] = OrderedDict()
_PATHS_LOCK = threading.Lock()
PATHS_KEPT = 64  # path-cost maps kept (about 50 kB each at the 128-cell grid): a hint added or moved pays for itself


def _path_cost(grid_L: np.ndarray, cells: list[tuple[int, int]]) -> np.ndarray:
    """``lightness_path_cost`` per hint cell, each map kept for the photo's grid (it depends on nothing else), so
    adding or moving one hint works out that hint's map alone. K x gh x gw, read-only.
    """
    digest = hashlib.blake2b(np.ascontiguousarray(grid_L).tobytes(), digest_size=16).digest()
    keys = [(digest, grid_L.shape, cell) for cell in cells]
    with _PATHS_LOCK:
        found = {key: _PATHS[key] for key in keys if key in _PATHS}
        for key in found:
            _PATHS.move_to_end(key)
    missing = list(dict.fromkeys(key for key in keys if key not in found))
    if missing:
        for key, cost in zip(missing, lightness_path_cost(grid_L, [key[2] for key in missing]), strict=True):
            cost.flags.writeable = False
            found[key] = cost
        with _PATHS_LOCK:
            for key in missing:
                _PATHS[key] = found[key]
            while len(_PATHS) > PATHS_KEPT:
                _PATHS.popitem(last=False)
    return np.stack([found[key] for key in keys])


def _weights(L: np.ndarray, ab: np.ndarray, hints: Sequence[Hint], spread: HintSpread,
             reference: np.ndarray | None) -> tuple[list[np.ndarray], tuple[int, int]]:
    """Each hint's weight on the spread's grid (``spread_hints``' formula, without the floor), and the grid's size."""
    h, w = L.shape
    scale = min(1.0, SPREAD_GRID / max(h, w))
    gh, gw = max(1, round(h * scale)), max(1, round(w * scale))

    def to_grid(a: np.ndarray) -> np.ndarray:
        return cv2.resize(a, (gw, gh), interpolation=cv2.INTER_AREA).reshape(gh, gw, *a.shape[2:]) \
            if (gh, gw) != (h, w) else a

    grid_L = to_grid(L)
    ys = (np.arange(gh, dtype=np.float32) + 0.5) * (h / gh)
    xs = (np.arange(gw, dtype=np.float32) + 0.5) * (w / gw)
    two_d2 = 2.0 * (spread.reach * min(h, w)) ** 2
    two_l2 = 2.0 * spread.lightness ** 2
    grid_ab = None
    if spread.colour > 0:
        grid_ab = to_grid(ab if reference is None else np.ascontiguousarray(reference, np.float32))
        two_c2 = 2.0 * spread.colour ** 2
    pixels = [hint.pixel(h, w) for hint in hints]
    cells = [(min(gh - 1, int(r * gh / h)), min(gw - 1, int(c * gw / w))) for r, c in pixels]
    crossed = _path_cost(grid_L, cells) / np.float32(spread.edges) if spread.edges > 0 else None
    weights = []
    for k, ((r, c), cell) in enumerate(zip(pixels, cells, strict=True)):
        dist = ((ys - (r + 0.5)) ** 2)[:, None] + ((xs - (c + 0.5)) ** 2)[None, :]
        exponent = -dist / two_d2 - (grid_L - L[r, c]) ** 2 / two_l2
        if grid_ab is not None:  # against the hint's own grid cell: weight 1 there, even on a colour edge
            exponent = exponent - ((grid_ab - grid_ab[cell]) ** 2).sum(axis=-1) / two_c2
        if crossed is not None:
            exponent = exponent - crossed[k]
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
    - Δab²/2 colour²)`` over the hints (Δab: the network's own colour there against at the hint), with the
    network's own colour weighted ``floor`` (the denominator at least ``fade``). A hint's pixel gets almost all
    of it. ``reference``: the colours the colour term compares (h x w x 2; default ``ab`` itself;
    docs/experiments/hint_leak_probe.py tries others).
    """
    if not hints or spread.reach <= 0:
        return ab
    h, w = L.shape
    pixels = [hint.pixel(h, w) for hint in hints]
    L_at = np.array([L[r, c] for r, c in pixels], np.float32)
    want = fit_chroma(L_at, np.array([hint.ab() for hint in hints], np.float32))
    delta = want - np.array([ab[r, c] for r, c in pixels], np.float32)
    weights, (gh, gw) = _weights(L, ab, hints, spread, reference)
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
    weights, _ = _weights(L, ab, hints, spread, None)
    total = np.sum(weights, axis=0)
    share = total / np.maximum(spread.floor + total, np.float32(spread.fade))
    return np.clip(_to_full(share.astype(np.float32), h, w), 0.0, 1.0)
