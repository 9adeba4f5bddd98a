"""Plain words for a colour ("dark greyish blue"), so a hint's suggested colours read as more than hex codes."""

from __future__ import annotations

import colorsys
from collections.abc import Sequence

import numpy as np

from engine.color import rgb_to_lab

APART_L = 3.0  # L* units: two like-named colours this much apart in lightness are called lighter and darker
APART_C = 5.0  # chroma (ab units): this much apart, softer and more vivid

# Hue families by the hue angle where each ends (degrees, HLS hue); red wraps round.
_HUES = ((15, "red"), (40, "orange"), (65, "yellow"), (85, "yellow-green"), (160, "green"), (190, "teal"),
         (250, "blue"), (315, "purple"), (345, "pink"), (360, "red"))


def colour_name(rgb: tuple[int, int, int]) -> str:
    """A few words for an sRGB colour: its hue family, with "dark", "light" and "greyish" where they apply."""
    h, light, sat = colorsys.rgb_to_hls(*(c / 255 for c in rgb))
    chroma = (max(rgb) - min(rgb)) / 255
    if chroma < 0.08:  # no hue to speak of
        if light < 0.12:
            return "black"
        if light > 0.92:
            return "white"
        return ("dark " if light < 0.35 else "light " if light > 0.7 else "") + "grey"
    hue = next(name for end, name in _HUES if h * 360 < end)
    if hue in ("orange", "yellow") and light < 0.42:
        hue = "brown"  # a dark orange or yellow is what people call brown
    elif hue == "orange" and light > 0.6 and sat < 0.8:
        hue = "tan"  # a light, soft orange: skin, sand, wood
    elif hue == "red" and light > 0.7:
        return "pink"
    words = ["dark" if light < 0.3 else "light" if light > 0.72 else "", "greyish" if chroma < 0.25 else "", hue]
    return " ".join(w for w in words if w)


def colour_names_apart(colours: Sequence[tuple[int, int, int]]) -> list[str]:
    """A name for each colour of a menu, no two alike. Two colours that share a name are told apart by how they
    differ in CIELAB, where it shows (lighter or darker by ``APART_L``, softer or more vivid by ``APART_C``; a
    hint's suggestions all have its pixel's lightness); otherwise, and for three or more, they are numbered in the
    menu's order.
    """
    names = [colour_name(rgb) for rgb in colours]
    if not colours:
        return names
    lab = rgb_to_lab(np.array(colours, np.uint8).reshape(1, -1, 3))[0]
    chroma = np.hypot(lab[:, 1], lab[:, 2])
    for name in set(names):
        alike = [i for i, n in enumerate(names) if n == name]
        if len(alike) < 2:
            continue
        first, second = alike[0], alike[-1]
        apart = [(lab[second, 0] - lab[first, 0], APART_L, ("darker", "lighter")),
                 (chroma[second] - chroma[first], APART_C, ("softer", "more vivid"))]
        way = next(((d, words) for d, least, words in apart if abs(d) >= least), None) if len(alike) == 2 else None
        if way is None:
            for k, i in enumerate(alike, 1):
                names[i] = f"{name} {k}"
            continue
        low, high = way[1]
        names[first], names[second] = (f"{name}, {low}", f"{name}, {high}") if way[0] > 0 else \
            (f"{name}, {high}", f"{name}, {low}")
    return names
