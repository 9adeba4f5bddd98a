"""One hint's harm: the measure the hint spread is chosen by beside the accuracy of many hints."""

from dataclasses import replace

import cv2
import numpy as np
import pytest
import torch
from helpers import random_model

from engine.colorizer import Colorizer, prepare
from engine.hints import Hint, HintSpread
from engine.model import with_hint_channels
from engine.options import ColorizeSettings
from engine.training.hint_locality import (
    OFF_COLOURS,
    ONE_HINT_DRAWS,
    OneHint,
    _hint_where_wrong,
    _off_colour,
    least_harm,
    one_hint_cases,
    one_hint_figures,
)


def two_colour_case(hint_x: float = 0.2) -> OneHint:
    """A flat grey photo whose truth is red on the left and blue on the right; the network gave grey everywhere
    (so neither the lightness nor the network's colour tells the halves apart: only distance can).
    """
    item = prepare(np.full((64, 128), 128, np.uint8), 128)
    h2, w2 = 32, 64
    truth = np.zeros((h2, w2, 2), np.float32)
    truth[:, : w2 // 2] = (40.0, 30.0)
    truth[:, w2 // 2 :] = (10.0, -45.0)
    auto = np.zeros((h2, w2, 2), np.float32)
    apart = np.hypot(*(truth - truth[16, int(hint_x * w2)]).transpose(2, 0, 1))
    yy, xx = np.mgrid[0:h2, 0:w2]
    far = np.hypot(yy - 16, xx - hint_x * w2) > 0.35 * h2
    return OneHint(item, Hint(hint_x, 0.5, (200, 90, 80)), np.zeros((2, h2, w2), np.float32), auto, truth,
                   np.hypot(truth[..., 0], truth[..., 1]), apart > 20, apart < 10, far,
                   Hint(hint_x, 0.5, OFF_COLOURS[0]), np.zeros((2, h2, w2), np.float32))


def test_a_spread_that_reaches_further_harms_the_other_colour_more_and_no_spread_harms_nothing():
    case = two_colour_case()
    harms = [one_hint_figures([case], HintSpread(reach=r, lightness=10.0, floor=0.02))["harm"]
             for r in (0.0, 0.1, 0.3, 0.6)]
    assert harms[0] == 0.0  # without a spread the network's output is all there is (here: unmoved)
    assert harms[1] < harms[2] < harms[3]
    assert harms[3] > 5.0  # the blue half is pulled well toward the red hint
    near = one_hint_figures([case], HintSpread(reach=0.1, lightness=10.0, floor=0.02))
    assert near["help"] > 10.0  # while the hint still colours its own half
    assert 0.0 <= near["far_moved"] < one_hint_figures([case], HintSpread(reach=0.6, floor=0.02))["far_moved"] <= 1.0


def test_an_off_colour_hint_leaks_onto_the_other_colour_less_where_the_spread_heeds_the_networks_colour():
    """The network got both halves right (red, blue); a green hint on the red half should not reach the blue one."""
    case = two_colour_case()
    network = case.truth.transpose(2, 0, 1).copy()
    right = replace(case, auto=case.truth.copy(), hinted=network, off_hinted=network, wrong=np.zeros_like(case.wrong))
    leaks = [one_hint_figures([right], HintSpread(reach=0.6, lightness=10.0, floor=0.02, colour=c))["off_leak"]
             for c in (0.0, 10.0)]
    assert leaks[0] > 5.0  # no heed of the network's colour: the green crosses to the blue half
    assert leaks[1] < 0.5 * leaks[0]
    assert one_hint_figures([right], HintSpread(reach=0.0))["off_leak"] == 0.0


def test_the_off_colour_is_the_strong_colour_farthest_from_the_true_one():
    from engine.color import rgb_to_lab

    def ab(c):
        return rgb_to_lab(np.array([[c]], np.float32) / 255.0)[0, 0, 1:]

    for true in [*OFF_COLOURS, (128, 128, 128), (200, 150, 120)]:
        off = _off_colour(true)
        assert off in OFF_COLOURS and off != true
        assert np.hypot(*(ab(off) - ab(true))) == pytest.approx(max(np.hypot(*(ab(c) - ab(true))) for c in OFF_COLOURS))


def test_the_contained_rule_weighs_the_off_colour_leak_beside_the_harm_near_the_best_accuracy():
    rows = [{"psnr": 25.0, "one_hint_harm": 0.3, "one_hint_off_leak": 4.0, "k": 1},
            {"psnr": 24.9, "one_hint_harm": 0.5, "one_hint_off_leak": 2.0, "k": 2},
            {"psnr": 24.5, "one_hint_harm": 0.1, "one_hint_off_leak": 0.5, "k": 3}]
    assert least_harm(rows, 0.3)["k"] == 1  # the true-colour harm alone
    assert least_harm(rows, 0.3, off_colour=True)["k"] == 2  # 0.3 + 4.0 against 0.5 + 2.0; 3 is 0.5 dB below
    assert least_harm(rows, 0.6, off_colour=True)["k"] == 3


def test_a_photo_whose_hints_meet_no_other_colour_has_no_harm_figure():
    case = two_colour_case()
    alone = replace(case, other=np.zeros_like(case.other))
    assert np.isnan(one_hint_figures([alone], HintSpread(reach=0.3))["harm"])
    assert one_hint_figures([alone, case], HintSpread(reach=0.3))["harm"] == \
        one_hint_figures([case], HintSpread(reach=0.3))["harm"]


def test_the_least_harm_is_chosen_only_among_spreads_near_the_best_accuracy():
    rows = [{"psnr": 25.0, "one_hint_harm": 2.0, "k": 1}, {"psnr": 24.8, "one_hint_harm": 0.5, "k": 2},
            {"psnr": 24.6, "one_hint_harm": 0.1, "k": 3}, {"psnr": 24.8, "one_hint_harm": 0.5, "k": 4}]
    assert least_harm(rows, 0.3)["k"] == 2  # 3 is less harmful but 0.4 dB below the best; 2 and 4 tie
    assert least_harm(rows, 0.5)["k"] == 3
    assert least_harm(rows, 0.0)["k"] == 1


def test_a_users_hint_goes_where_the_automatic_colour_is_wrong_and_takes_the_originals_colour_there():
    original = np.zeros((80, 120, 3), np.uint8)
    original[...] = (90, 90, 90)
    original[:40, 60:] = (30, 160, 40)  # a green quarter the model missed
    wrong = np.random.default_rng(0).uniform(0.0, 5.0, (40, 60)).astype(np.float32)  # small errors elsewhere
    wrong[:20, 30:] = 30.0
    for seed in range(5):
        hint = _hint_where_wrong(original, wrong, seed)
        assert 0.5 <= hint.x < 1.0 and 0.0 <= hint.y < 0.5
        r, c = hint.pixel(80, 120)
        if r < 38 and c > 61:  # its 5-pixel square inside the quarter
            assert hint.rgb == (30, 160, 40)
    assert _hint_where_wrong(original, wrong, 3) == _hint_where_wrong(original, wrong, 3)


@pytest.fixture(scope="module")
def hinted_colorizer():
    model = with_hint_channels(random_model(seed=2))
    with torch.no_grad():  # hint inputs that matter (they start at zero): the network's answer depends on the hint
        model.encoder._conv_stem.weight[:, 1:].normal_(0, 2.0, generator=torch.Generator().manual_seed(1))
    return Colorizer.create(ColorizeSettings(device="cpu", precision="fp32", size=64), model=model.eval())


def test_cases_are_seeded_by_the_photos_name_and_judge_the_scan_by_the_originals_colours(hinted_colorizer):
    rng = np.random.default_rng(0)
    original = rng.integers(0, 255, (48, 72, 3), dtype=np.uint8)
    scan = (original * 0.6 + 60).astype(np.uint8)
    cases = one_hint_cases(hinted_colorizer, "a.jpg", scan, original)
    assert len(cases) == ONE_HINT_DRAWS
    for case in cases:  # the user knows the true colours: the hint is the original's colour, not the scan's
        r, c = case.hint.pixel(48, 72)
        block = original[max(0, r - 2) : r + 3, max(0, c - 2) : c + 3].reshape(-1, 3).mean(axis=0)
        assert np.abs(np.array(case.hint.rgb) - block).max() <= 0.5
    from engine.color import rgb_to_lab
    h2, w2 = cases[0].truth.shape[:2]
    true_ab = cv2.resize(rgb_to_lab(original.astype(np.float32) / 255.0)[..., 1:], (w2, h2),
                         interpolation=cv2.INTER_AREA)
    assert np.allclose(cases[0].truth, true_ab, atol=1e-3)  # judged on the original's colours
    assert all((c.off_hint.x, c.off_hint.y) == (c.hint.x, c.hint.y) for c in cases)  # the same point, ...
    assert all(c.off_hint.rgb == _off_colour(c.hint.rgb) for c in cases)  # ... a wrong colour, read by the network
    assert all(c.off_hinted is not None and c.off_hinted.shape == c.hinted.shape
               and not np.allclose(c.off_hinted, c.hinted) for c in cases)
    plain = one_hint_cases(hinted_colorizer, "a.jpg", scan, original, off_colour=False)  # the "local" rule's cases
    assert all(c.off_hinted is None for c in plain) and np.isnan(one_hint_figures(plain, HintSpread())["off_leak"])
    again = one_hint_cases(hinted_colorizer, "a.jpg", scan, original)
    assert [c.hint for c in cases] == [c.hint for c in again]
    assert [c.hint for c in one_hint_cases(hinted_colorizer, "b.jpg", scan, original)] != [c.hint for c in cases]
    h, w = cases[0].item.small.shape
    assert cases[0].truth.shape == cases[0].auto.shape == ((h + 1) // 2, (w + 1) // 2, 2)  # the network's half size
    with pytest.raises(ValueError, match="the original is"):
        one_hint_cases(hinted_colorizer, "a.jpg", scan[:40], original)


def test_the_model_card_says_which_rule_chose_the_spread():
    from engine.training.card import _hint_lines

    spread = {"one_hint_harm": 0.3, "one_hint_off_leak": 5.1, "hints": 10, "gain_over_no_spread_db": 3.1}
    card = {"model": {"hint_channels": 3, "hint_spread": 0.6, "hint_spread_lightness": 10.0,
                      "hint_spread_floor": 0.02}, "readout": {"hint_spread": spread}}
    local = _hint_lines(card)[-1]
    assert "lone hint least changes the parts of another colour (0.30" in local and "wrong one" not in local
    card["readout"]["hint_spread"] = {**spread, "off_colour": 1.0}
    contained = _hint_lines(card)[-1]
    assert "of the true colour or a wrong one" in contained and "harm 0.30 and leak 5.10 ab units" in contained
    assert "restraint" not in contained
    card["model"]["hint_spread_restraint"] = 80.0
    assert "restraint 80.0 (a hint reaches less far the farther its colour is from the network's there: 1/√2 as " \
           "far at 80.0 ab units)" in _hint_lines(card)[-1]
