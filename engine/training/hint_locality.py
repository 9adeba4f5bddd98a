"""One hint's harm: how much a lone hint worsens the colours of the parts of a photo that are something else.

Why: the 10-hint PSNR that chose the hint spread before rewards carrying a true colour far, and cannot see a
hint on a parrot's belly turning its perch green (docs/experiments, "A hint spread that stays near its hint").
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace

import cv2
import numpy as np

from .. import color
from ..colorizer import Colorizer, Prepared, pack, pack_hints, prepare, spread_on_half
from ..hints import Hint, HintSpread
from ..hints.draws import patch_colour

ONE_HINT_DRAWS = 3  # single hints per photo
WRONG_SHARE = 0.25  # a hint goes where the automatic colour is among this share of the photo's most wrong
OTHER_COLOUR = 20.0  # ab units from the hint's true colour: a pixel this far belongs to something else
OWN_COLOUR = 10.0  # ab units: a pixel this near is of the hint's own colour
FAR = 0.35  # of the shorter side: "far from the hint", for the share of pixels it moves
MOVED = 10.0  # ab units: a pixel moved this much has visibly changed colour
# Strong colours a person may hint that are wrong for the spot: each off-colour hint is the one of these farthest
# in ab from the original's colour there (docs/experiments, "Old prints' spread held against an off-colour hint")
OFF_COLOURS = ((60, 170, 60), (30, 50, 120), (200, 40, 40), (230, 200, 50))


@dataclass(frozen=True)
class OneHint:
    """A photo given one hint, at the network's half working size: what each spread is tried on."""

    item: Prepared
    hint: Hint
    hinted: np.ndarray  # the network's output with the hint (2 x H/2 x W/2 canvas)
    auto: np.ndarray  # h2 x w2 x 2: the automatic colours, no hint
    truth: np.ndarray  # h2 x w2 x 2: the original's ab
    wrong: np.ndarray  # h2 x w2: how far the automatic colours are from the original's (ab units)
    other: np.ndarray  # h2 x w2 bool: pixels of another colour than the hint's
    own: np.ndarray  # h2 x w2 bool: pixels of the hint's own colour
    far: np.ndarray  # h2 x w2 bool
    off_hint: Hint | None = None  # the same point given a strong colour far from the original's there
    off_hinted: np.ndarray | None = None  # the network's output with ``off_hint`` (None: not asked for)


def hint_seed(name: str, draw: int) -> int:
    """The same photo gets the same hints in any order and on any machine."""
    return zlib.crc32(f"one-hint:{draw}:{name}".encode())


def _off(ab: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Per pixel, how far apart two ab images are (ab units)."""
    return np.hypot(ab[..., 0] - other[..., 0], ab[..., 1] - other[..., 1])


def _half(item: Prepared) -> tuple[int, int]:
    h, w = item.small.shape
    return (h + 1) // 2, (w + 1) // 2


def _hint_where_wrong(original: np.ndarray, wrong: np.ndarray, seed: int, patch: int = 5) -> Hint:
    """A user's hint: at a seeded point among the WRONG_SHARE of pixels whose automatic colour is furthest from
    the original's (``wrong``: ab error at the half size), the original's mean colour in a patch x patch square.
    A person hints where the model went wrong; a random point is mostly where it was near right already.
    """
    h2, w2 = wrong.shape
    rows, cols = np.nonzero(wrong >= np.quantile(wrong, 1.0 - WRONG_SHARE))
    k = int(np.random.default_rng(seed).integers(len(rows)))
    x, y = float((cols[k] + 0.5) / w2), float((rows[k] + 0.5) / h2)
    return Hint(x, y, patch_colour(original, x, y, patch))


def _off_colour(rgb: tuple[int, int, int]) -> tuple[int, int, int]:
    """The one of OFF_COLOURS farthest in ab from ``rgb``."""
    def ab(c: tuple[int, int, int]) -> np.ndarray:
        return color.rgb_to_lab(np.array([[c]], np.float32) / 255.0)[0, 0, 1:]

    return max(OFF_COLOURS, key=lambda c: float(np.hypot(*(ab(c) - ab(rgb)))))


def one_hint_cases(colorizer: Colorizer, name: str, photo: np.ndarray, original: np.ndarray | None = None,
                   off_colour: bool = True) -> list[OneHint]:
    """``photo`` (uint8 RGB, what the user colours: a grey copy or a scan) with each of ONE_HINT_DRAWS single
    hints at ``original``'s true colour (default: ``photo`` itself) where the automatic colour is wrong, and with
    ``off_colour`` the same points at a wrong colour; the network run once for all of them.
    """
    original = photo if original is None else original
    if original.shape[:2] != photo.shape[:2]:
        raise ValueError(f"{name}: the original is {original.shape[:2]}, the photo {photo.shape[:2]}")
    item = prepare(photo, colorizer.settings.size)
    h2, w2 = _half(item)
    lab = color.rgb_to_lab(original.astype(np.float32) / 255.0)
    truth = cv2.resize(np.ascontiguousarray(lab[..., 1:]), (w2, h2), interpolation=cv2.INTER_AREA).reshape(h2, w2, 2)
    auto = colorizer.infer(pack([item]))[0][:, :h2, :w2].transpose(1, 2, 0)
    wrong = _off(auto, truth)
    hints = [_hint_where_wrong(original, wrong, hint_seed(name, k)) for k in range(ONE_HINT_DRAWS)]
    off = [replace(hint, rgb=_off_colour(hint.rgb)) for hint in hints] if off_colour else []
    items = [item] * (len(hints) + len(off))
    outs = colorizer.infer(pack(items), pack_hints(items, [[hint] for hint in [*hints, *off]]))
    yy, xx = np.mgrid[0:h2, 0:w2]
    cases = []
    for k, (hint, out) in enumerate(zip(hints, outs[:len(hints)], strict=True)):
        r, c = hint.pixel(h2, w2)
        here = truth[max(0, r - 1) : r + 2, max(0, c - 1) : c + 2].reshape(-1, 2).mean(axis=0)
        apart = np.hypot(*(truth - here).transpose(2, 0, 1))
        far = np.hypot(yy - r, xx - c) > FAR * min(h2, w2)
        cases.append(OneHint(item, hint, out, auto, truth, wrong, apart > OTHER_COLOUR, apart < OWN_COLOUR, far,
                             *((off[k], outs[len(hints) + k]) if off else ())))
    return cases


def one_hint_figures(cases: Sequence[OneHint], spread: HintSpread) -> dict[str, float]:
    """One photo's figures under ``spread``: ``harm`` (mean ab error added on the pixels of another colour,
    over its hints that have such pixels; nan if none has), ``help`` (error taken off the pixels of the hint's
    own colour), ``far_moved`` (share of far pixels moved more than MOVED) and ``off_leak`` (mean ab movement of
    the pixels of another colour under the same point's off-colour hint; nan for cases made without one).

    Against the automatic colours without the spread's ``gain``: a gain other than 1 counts in the harm too
    (what a hinted photo looks like against the unhinted one). The "other" and "own" pixels are told by the
    original's colour around the hint's pixel at the half size, which near an edge can differ a little from the
    hint's own colour (a 5-pixel square at full size).
    """
    harm, help_, moved, leak = [], [], [], []
    for case in cases:
        h2, w2 = case.auto.shape[:2]
        out = spread_on_half(case.hinted, case.item, [case.hint], spread)[:, :h2, :w2].transpose(1, 2, 0)
        worse = _off(out, case.truth) - case.wrong
        if case.other.any():
            harm.append(float(worse[case.other].mean()))
            if case.off_hinted is not None and case.off_hint is not None:
                off = spread_on_half(case.off_hinted, case.item, [case.off_hint], spread)[:, :h2, :w2]
                leak.append(float(_off(off.transpose(1, 2, 0), case.auto)[case.other].mean()))
        if case.own.any():
            help_.append(float(-worse[case.own].mean()))
        if case.far.any():
            moved.append(float((_off(out, case.auto)[case.far] > MOVED).mean()))

    def mean(values: list[float]) -> float:
        return float(np.mean(values)) if values else float("nan")

    return {"harm": mean(harm), "help": mean(help_), "far_moved": mean(moved), "off_leak": mean(leak)}


def least_harm(rows: Sequence[dict[str, float]], slack_db: float, off_colour: bool = False) -> dict[str, float]:
    """The row of the least one-hint harm among those whose 10-hint PSNR is within ``slack_db`` of the best (the
    best, where no photo had pixels of another colour to harm). With ``off_colour`` (the "contained" rule), the
    harm plus the off-colour leak: what a hint of the true colour and one of a wrong colour do to other surfaces
    (the harm a change of error, the leak a movement, both in ab units on those pixels).
    """
    keys = ("one_hint_harm", "one_hint_off_leak") if off_colour else ("one_hint_harm",)
    best = max(rows, key=lambda r: r["psnr"])
    near = [r for r in rows if r["psnr"] >= best["psnr"] - slack_db and all(np.isfinite(r[k]) for k in keys)]
    return min(near, key=lambda r: (sum(r[k] for k in keys), -r["psnr"])) if near else best
