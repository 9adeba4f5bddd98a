"""Plain words for a colour ("dark greyish blue"), so a hint's suggested colours read as more than hex codes."""

from __future__ import annotations

import colorsys
from collections.abc import Sequence

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
    """A name for each colour of a menu, no two alike: colours that share a name are told apart by how they
    differ most (lighter or darker, more vivid or softer, or else their order), so two "tan"s read as a choice.
    """
    names = [colour_name(rgb) for rgb in colours]
    for name in set(names):
        alike = [i for i, n in enumerate(names) if n == name]
        if len(alike) < 2:
            continue
        hls = {i: colorsys.rgb_to_hls(*(c / 255 for c in colours[i])) for i in alike}
        lights, sats = [hls[i][1] for i in alike], [hls[i][2] for i in alike]
        by_light = max(lights) - min(lights) >= max(sats) - min(sats)
        words = ("darker", "lighter") if by_light else ("softer", "more vivid")
        ranked = [i for _, i in sorted(zip(lights if by_light else sats, alike, strict=True))]
        names[ranked[0]], names[ranked[-1]] = f"{name}, {words[0]}", f"{name}, {words[1]}"
        middle = ranked[1:-1]
        for k, i in enumerate(middle, 2):  # one between keeps the plain name; more are numbered in order
            names[i] = name if len(middle) == 1 else f"{name} {k}"
    return names
