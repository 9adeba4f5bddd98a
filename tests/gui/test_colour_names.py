"""A hint's suggested colours in words: the hue family, and dark, light or greyish where they apply."""

import pytest

from gui.model.colour_names import colour_name


@pytest.mark.parametrize(("rgb", "words"), [
    ((255, 0, 0), "red"), ((0, 0, 255), "blue"), ((34, 139, 34), "green"), ((255, 255, 0), "yellow"),
    ((128, 128, 128), "grey"), ((20, 20, 20), "black"), ((250, 250, 250), "white"), ((200, 200, 204), "light grey"),
    ((139, 69, 19), "brown"), ((224, 172, 105), "tan"), ((255, 192, 203), "pink"), ((135, 206, 235), "light blue"),
    ((72, 88, 111), "greyish blue"), ((60, 90, 40), "dark greyish green"), ((0, 128, 128), "dark teal"),
])
def test_a_colour_is_named_by_its_hue_lightness_and_greyness(rgb, words):
    assert colour_name(rgb) == words
