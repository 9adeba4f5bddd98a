"""Colour hints: a few user points, each an sRGB colour, as the hint map a hinted model reads.

A hinted model (``ModelConfig.hint_channels == 3``) reads L plus a 3-channel hint map, as in
Zhang et al. 2017: the hint's ab (/ AB_RANGE) and a mask of 1 at the hinted pixels, zero elsewhere.
Only a hint colour's chroma is used: the photo's own lightness stays. Training draws hints from the
original photo (``sample_hints``); evaluation and benchmarks simulate a user (``simulate_hints``).

The hints file (``colorize --hints FILE``, and the app's save and load of hints) is JSON:
``{"version": 1, "photos": {"scan07.png": [{"x": 0.25, "y": 0.40, "rgb": [200, 150, 120]}]}}``.
Each key names an input by its path relative to the input folder it was found in, or by its file
name when that is unique among the inputs (``match_hints``).

numpy only (no torch): the GUI can build hints without the model's libraries.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import NamedTuple

import cv2
import numpy as np

from .atomic import atomic_write
from .color import AB_RANGE, lab_to_rgb, rgb_to_lab
from .options import Job

HINT_CHANNELS = 3  # a/AB_RANGE, b/AB_RANGE, mask
HINT_RADIUS = 2  # a hint covers a (2r+1)^2 square at the working size
TRAIN_PATCHES = (1, 3, 5, 7)  # side of a training hint's patch, drawn uniformly (Zhang et al.: 1..9)


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
    """

    reach: float = 0.0
    lightness: float = 10.0
    floor: float = 0.05
    gain: float = 1.0
    colour: float = 0.0  # ab units: the scale of the difference in the network's own colour from the hint's (0: off)


def spread_hints(L: np.ndarray, ab: np.ndarray, hints: Sequence[Hint], spread: HintSpread,
                 reference: np.ndarray | None = None) -> np.ndarray:
    """The ab (h x w x 2) with each hint's correction carried to the pixels around it of a similar lightness.

    ``L`` is the photo's lightness at ab's size. Each hint's correction is the difference between its
    colour (the chroma that fits at its lightness, as the network was given) and ``ab`` at its pixel;
    a pixel gets the weighted mean of the corrections, ``exp(-d²/2(reach·side)² - ΔL²/2 lightness²
    - Δab²/2 colour²)`` over the hints (Δab: the network's own colour there against at the hint), with the
    network's own colour weighted ``floor``. A hint's pixel gets almost all of it. ``reference``: the colours the
    colour term compares (h x w x 2; default ``ab`` itself; docs/experiments/hint_leak_probe.py tries others).
    """
    if not hints or spread.reach <= 0:
        return ab
    h, w = L.shape
    pixels = [hint.pixel(h, w) for hint in hints]
    L_at = np.array([L[r, c] for r, c in pixels], np.float32)
    want = fit_chroma(L_at, np.array([hint.ab() for hint in hints], np.float32))
    delta = want - np.array([ab[r, c] for r, c in pixels], np.float32)
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
    num = np.zeros((gh, gw, 2), np.float32)
    den = np.full((gh, gw), spread.floor, np.float32)
    grid_ab = None
    if spread.colour > 0:
        grid_ab = to_grid(ab if reference is None else np.ascontiguousarray(reference, np.float32))
        two_c2 = 2.0 * spread.colour ** 2
    for (r, c), Lk, d in zip(pixels, L_at, delta, strict=True):
        dist = ((ys - (r + 0.5)) ** 2)[:, None] + ((xs - (c + 0.5)) ** 2)[None, :]
        exponent = -dist / two_d2 - (grid_L - Lk) ** 2 / two_l2
        if grid_ab is not None:  # against the hint's own grid cell: weight 1 there, even on a colour edge
            here = grid_ab[min(gh - 1, int(r * gh / h)), min(gw - 1, int(c * gw / w))]
            exponent = exponent - ((grid_ab - here) ** 2).sum(axis=-1) / two_c2
        weight = np.exp(exponent)
        num += weight[..., None] * d
        den += weight
    correction = (num / den[..., None]).astype(np.float32)
    if (gh, gw) != (h, w):
        correction = np.asarray(cv2.resize(correction, (w, h), interpolation=cv2.INTER_LINEAR),
                                np.float32).reshape(h, w, 2)
    return ab + correction


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
        r, c = relative_pixel(x, y, h, w)
        half = patch // 2
        block = rgb_original[max(0, r - half) : r + half + 1, max(0, c - half) : c + half + 1].reshape(-1, 3)
        mean = np.clip(np.rint(block.astype(np.float64).mean(axis=0)), 0, 255).astype(int)
        hints.append(Hint(x, y, (int(mean[0]), int(mean[1]), int(mean[2]))))
    return hints


HINTS_FILE_VERSION = 1


class HintsFileError(ValueError):
    """A hints file that cannot be used; the message is one line naming the file and why."""


@dataclass(frozen=True)
class HintsFile:
    """A hints file's content: each key (as written in the file) and its photo's hints, in file order."""

    photos: Mapping[str, tuple[Hint, ...]] = field(default_factory=dict)


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _point(raw: object, where: str) -> Hint:
    if not isinstance(raw, dict):
        raise HintsFileError(f"{where}: a point is an object with x, y and rgb")
    missing = [k for k in ("x", "y", "rgb") if k not in raw]
    if missing:
        raise HintsFileError(f"{where}: no {' or '.join(missing)}")
    x, y, rgb = raw["x"], raw["y"], raw["rgb"]
    for name, v in (("x", x), ("y", y)):
        if not _number(v) or not 0.0 <= v <= 1.0:
            raise HintsFileError(f"{where}: {name} must be a number from 0 to 1 (relative to the photo), got {v!r}")
    if not (isinstance(rgb, list) and len(rgb) == 3
            and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 255 for v in rgb)):
        raise HintsFileError(f"{where}: rgb must be three integers from 0 to 255, got {json.dumps(rgb)}")
    return Hint(float(x), float(y), (rgb[0], rgb[1], rgb[2]))


def parse_hints(doc: object, source: str = "hints file") -> HintsFile:
    """A hints file's decoded JSON -> ``HintsFile``; ``HintsFileError`` (one line, naming ``source``) if malformed."""
    if not isinstance(doc, dict):
        raise HintsFileError(f"{source}: not a hints file (expected a JSON object with version and photos)")
    version = doc.get("version")
    if version != HINTS_FILE_VERSION or isinstance(version, bool):
        raise HintsFileError(f"{source}: version must be {HINTS_FILE_VERSION}, got {json.dumps(version)}")
    photos = doc.get("photos")
    if not isinstance(photos, dict):
        raise HintsFileError(f"{source}: photos must be an object of photo name -> list of points")
    out: dict[str, tuple[Hint, ...]] = {}
    for key, points in photos.items():
        if not key.strip():
            raise HintsFileError(f"{source}: an empty photo name")
        if not isinstance(points, list):
            raise HintsFileError(f"{source}: {json.dumps(key)}: expected a list of points")
        out[key] = tuple(_point(p, f"{source}: {json.dumps(key)} point {i + 1}") for i, p in enumerate(points))
    return HintsFile(out)


def load_hints_file(path: Path | str) -> HintsFile:
    """Read a hints file; ``HintsFileError`` with a one-line reason if it cannot be read or is malformed."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise HintsFileError(f"{path}: cannot read the hints file ({err.strerror or err})") from None
    except UnicodeDecodeError:
        raise HintsFileError(f"{path}: not a hints file (not UTF-8 text)") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise HintsFileError(f"{path}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})") from None
    return parse_hints(doc, str(path))


def hints_document(mapping: Mapping[str, Sequence[Hint]]) -> dict:
    """The JSON document of a hints file (what ``save_hints_file`` writes)."""
    return {"version": HINTS_FILE_VERSION,
            "photos": {key: [{"x": h.x, "y": h.y, "rgb": [int(v) for v in h.rgb]} for h in hints]
                       for key, hints in mapping.items()}}


def save_hints_file(path: Path | str, mapping: Mapping[str, Sequence[Hint]] | HintsFile) -> None:
    """Write a hints file atomically: photo key -> its hints (keys as ``match_hints`` reads them)."""
    photos = mapping.photos if isinstance(mapping, HintsFile) else mapping
    data = json.dumps(hints_document(photos), indent=2, ensure_ascii=False) + "\n"
    with atomic_write(Path(path)) as f:
        f.write(data.encode("utf-8"))


def photo_key(job: Job) -> str:
    """The key that names ``job`` in a hints file: its path relative to its input folder, with ``/``."""
    try:
        return job.path.relative_to(job.root).as_posix()
    except ValueError:
        return job.path.name


class HintMatch(NamedTuple):
    """``match_hints``' answer: hints by job index, keys that name no input, keys that name several."""

    hints: dict[int, tuple[Hint, ...]]
    unmatched: list[str]
    ambiguous: list[str]


def match_hints(hints_file: HintsFile, jobs: Sequence[Job]) -> HintMatch:
    """Each key's input: the one whose path relative to its input folder is the key, else the one input whose
    path, with its input folder's own name in front, ends with the key on whole names (a file name, or
    ``beach/scan07.png``, or ``1952/beach/scan07.png``: the app keeps a queued folder's name, the command line
    walks inside it, and a file saved by either reads in the other). A key naming several inputs is
    ambiguous and not used (never guessed); two keys naming the same input add up, in file order.
    """
    by_path: dict[str, list[Job]] = {}
    by_tail: dict[tuple[str, ...], list[Job]] = {}
    for job in jobs:
        key = photo_key(job)
        by_path.setdefault(key, []).append(job)
        parts = (Path(os.path.abspath(job.root)).name, *PurePosixPath(key).parts)  # "." has a name too
        for k in range(1, len(parts) + 1):
            by_tail.setdefault(parts[-k:], []).append(job)
    hints: dict[int, tuple[Hint, ...]] = {}
    unmatched: list[str] = []
    ambiguous: list[str] = []
    for key, points in hints_file.photos.items():
        norm = PurePosixPath(key.replace("\\", "/"))
        found = by_path.get(norm.as_posix()) or by_tail.get(norm.parts, [])
        if not found:
            unmatched.append(key)
        elif len(found) > 1:
            ambiguous.append(key)
        else:
            index = found[0].index
            hints[index] = hints.get(index, ()) + points
    return HintMatch(hints, unmatched, ambiguous)
