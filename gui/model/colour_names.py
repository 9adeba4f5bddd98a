"""Plain words for a colour ("dark greyish blue"), so a hint's suggested colours read as more than hex codes."""

from __future__ import annotations

import colorsys

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
