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


def test_colours_of_one_menu_that_share_a_name_are_told_apart_by_how_they_differ():
    from gui.model.colour_names import colour_names_apart

    light_tan, tan, blue = (226, 180, 125), (214, 160, 100), (0, 0, 255)
    assert colour_name(light_tan) == colour_name(tan) == "tan"  # the case the trial met: two "tan"s
    assert colour_names_apart([light_tan, blue, tan]) == ["tan, lighter", "blue", "tan, darker"]
    vivid, soft = (240, 40, 40), (200, 80, 80)  # about equally light reds, one greyer
    assert colour_names_apart([soft, vivid]) == ["red, softer", "red, more vivid"]
    # a hint's suggestions share its pixel's lightness: one unit of red apart is no "lighter", only another entry
    assert colour_names_apart([(114, 92, 0), (115, 92, 0)]) == ["dark brown 1", "dark brown 2"]
    three = colour_names_apart([(224, 172, 105), (226, 180, 125), (214, 160, 100)])
    assert three == ["tan 1", "tan 2", "tan 3"]  # three or more: numbered in the menu's order
    assert colour_names_apart([blue, (255, 0, 0)]) == ["blue", "red"]  # names already apart are left alone
    assert colour_names_apart([]) == []
