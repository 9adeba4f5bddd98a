"""Full-resolution output: any photo size in, the same size out, with the photo's own L."""

import numpy as np
import pytest
from helpers import colour_photo, grey_photo, random_model

from engine.color import lightness, rgb_to_lab
from engine.colorizer import Colorizer, padded, working_shape
from engine.options import ColorizeSettings


@pytest.fixture(scope="module")
def colorizer():
    return Colorizer.create(ColorizeSettings(device="cpu", size=96, batch_size=4), model=random_model())


@pytest.mark.parametrize("h,w", [(1, 1), (1, 300), (300, 1), (37, 53), (200, 120), (97, 97)])
def test_output_size_equals_input_size(colorizer, h, w):
    out = colorizer.colorize(grey_photo(h, w))
    assert out.shape == (h, w, 3) and out.dtype == np.uint8


def test_output_keeps_the_photos_own_lightness(colorizer):
    g = grey_photo(150, 210)
    out = colorizer.colorize(g)
    L_out = rgb_to_lab(out)[..., 0]
    # Gamut clipping may move L a little where colours are strong; on average it stays put.
    assert np.abs(L_out - lightness(g)).mean() < 1.5


def test_output_is_not_the_grey_input(colorizer):
    out = colorizer.colorize(grey_photo(80, 80)).astype(int)
    assert np.abs(out[..., 0] - out[..., 2]).max() > 3


def test_colour_photo_is_colorized_from_its_luminance(colorizer):
    rgb = colour_photo(64, 80)
    out = colorizer.colorize(rgb)
    assert out.shape == rgb.shape
    assert np.abs(rgb_to_lab(out)[..., 0] - rgb_to_lab(rgb)[..., 0]).mean() < 1.5


def test_working_shape_keeps_aspect_and_never_upscales_big_photos():
    assert working_shape(1000, 2000, 512) == (256, 512)
    assert working_shape(100, 50, 512) == (100, 50)  # small photos stay at their size
    assert working_shape(1, 1, 512) == (64, 64)  # ...but at least 64
    assert padded(33) == 64 and padded(64) == 64 and padded(1) == 32


def test_batched_prediction_equals_one_by_one(colorizer):
    from engine.colorizer import prepare

    items = [prepare(grey_photo(h, w, i), 96) for i, (h, w) in enumerate([(60, 90), (90, 60), (96, 96)])]
    together = colorizer.predict(items)
    for item, ab in zip(items, together, strict=True):
        alone = colorizer.predict([item])[0]
        # Padding differs between the two canvases; only pixels near the padding may change.
        assert np.median(np.abs(alone - ab)) < 0.5


def test_settings_are_validated():
    with pytest.raises(ValueError):
        ColorizeSettings(batch_size=0).validated()
    with pytest.raises(ValueError):
        ColorizeSettings(size=10).validated()
    with pytest.raises(ValueError):
        ColorizeSettings(engine="fast").validated()
