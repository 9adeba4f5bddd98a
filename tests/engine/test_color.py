import numpy as np
import torch
from helpers import colour_photo, grey_photo

from engine import color
from engine.readout import annealed_mean


def test_lab_round_trip_recovers_rgb():
    rgb = colour_photo(40, 50)
    back = color.lab_to_rgb(color.rgb_to_lab(rgb))
    assert np.abs(back * 255 - rgb).max() < 1.0


def test_lightness_of_grey_image_equals_lab_l_of_same_grey_rgb():
    g = grey_photo(30, 40)
    L = color.lightness(g)
    L_rgb = color.rgb_to_lab(np.repeat(g[..., None], 3, axis=2))[..., 0]
    assert np.abs(L - L_rgb).max() < 0.05


def test_joining_l_with_zero_ab_gives_grey():
    L = color.lightness(grey_photo(20, 20))
    rgb = color.join_lab(L, np.zeros(L.shape + (2,), np.float32))
    assert np.abs(rgb[..., 0] - rgb[..., 1]).max() < 1e-3
    assert np.abs(rgb[..., 1] - rgb[..., 2]).max() < 1e-3


def test_bin_grid_has_neutral_grey_as_a_centre():
    grid = color.ab_grid()
    assert (np.abs(grid).sum(1) == 0).any()
    assert np.allclose(sorted(grid[:, 0]), sorted(-grid[:, 0]))


def test_rebalance_weights_have_unit_mean_and_lift_rare_bins():
    prior = np.array([0.7, 0.2, 0.09, 0.01], np.float32)
    w = color.rebalance_weights(prior, 0.5)
    assert abs(float((prior * w).sum()) - 1.0) < 1e-5
    assert w[3] > w[0]


def test_annealed_mean_sharpens_towards_the_mode_as_temperature_falls():
    centres = torch.tensor([[0.0, 0.0], [60.0, 0.0]])
    logits = torch.tensor([1.0, 2.0])[None, :, None, None]
    cold = annealed_mean(logits, centres, 0.1)[0, 0, 0, 0]
    warm = annealed_mean(logits, centres, 1.0)[0, 0, 0, 0]
    assert 59.0 < cold <= 60.0
    assert 30.0 < warm < 59.0


def test_colourfulness_is_zero_for_grey_and_positive_for_colour():
    assert color.colourfulness(np.repeat(grey_photo(20, 20)[..., None], 3, axis=2)) < 1e-6
    assert color.colourfulness(colour_photo(20, 20)) > 10


def test_lightness_of_a_large_colour_photo_is_the_same_in_strips():
    from engine.color import STRIP_PIXELS, lightness, rgb_to_lab

    rgb = np.random.default_rng(1).integers(0, 256, (STRIP_PIXELS // 500 + 7, 500, 3), dtype=np.uint8)
    assert np.array_equal(lightness(rgb), rgb_to_lab(rgb)[..., 0])
