"""View > Show Where Unsure: the After side striped where the model is unsure, for the photo, hints and model on
show, and never in what is exported.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import random_model
from PySide6.QtCore import QItemSelectionModel

from engine.colorizer import Colorizer
from engine.hints import HintSpread
from engine.model import with_hint_channels
from engine.readout import Readout
from gui.bridge.worker import Backend
from gui.model.previews import UNSURE_RGB, UNSURE_STRIPE, colour_image, shade_unsure

TIMEOUT_MS = 60_000


def test_stripes_come_only_where_the_doubt_is_high_and_leave_the_rest_as_it_was():
    rgb = np.full((24, 24, 3), 90, np.uint8)
    doubt = np.zeros((24, 24), np.float32)
    doubt[:, 12:] = 0.9  # the right half: unsure
    out = shade_unsure(rgb, doubt)
    assert np.array_equal(out[:, :12], rgb[:, :12])  # sure: untouched
    right = out[:, 12:].reshape(-1, 3).astype(int)
    pink = np.abs(right - UNSURE_RGB.astype(int)).sum(1) < np.abs(right - 90).sum(1)
    assert 0.3 < pink.mean() < 0.7  # stripes: about half its pixels toward the magenta, the rest as they were
    assert (right[~pink] == 90).all()
    as_float = shade_unsure(rgb.astype(np.float32) / 255, doubt)  # the preview's colour comes as float 0..1
    assert as_float.dtype == np.uint8 and np.abs(as_float.astype(int) - out.astype(int)).max() <= 1


@pytest.fixture(scope="module")
def varied_model():
    """A random model that takes hints, whose doubt varies over a photo, with a spread that reaches a little way."""
    m = with_hint_channels(random_model(seed=3), 3)
    m.readout = Readout(temperature=0.5, doubt_pull=8.0, spread=HintSpread(reach=0.15, lightness=50.0, floor=0.05))
    return m.eval()


@pytest.fixture
def varied_backend(_gentle_torch, varied_model):
    return Backend(factory=lambda settings: Colorizer.create(settings, model=varied_model))


def _select(window, row):
    window.table.selectionModel().select(window.queue.index(row, 0), QItemSelectionModel.SelectionFlag.ClearAndSelect
                                         | QItemSelectionModel.SelectionFlag.Rows)


def _shown(qtbot, make_window, backend, grey_photos):
    window = make_window(backend, size=64, precision="fp32")
    window.queue_presenter.add_paths(grey_photos(2, size=(48, 64)))
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS):
        window.batch.start_batch()
    _select(window, 0)
    qtbot.waitUntil(lambda: window.preview.colour() is not None and window.hint_editor.key is not None,
                    timeout=TIMEOUT_MS)
    return window


def _doubt_after(qtbot, window, change):
    """The doubt on show once ``change()`` has been answered: a map of other values than before."""
    before = None if window.preview._doubt is None else window.preview._doubt.copy()
    change()
    qtbot.waitUntil(lambda: window.preview._doubt is not None and (
        before is None or window.preview._doubt.shape != before.shape
        or not np.allclose(window.preview._doubt, before)), timeout=TIMEOUT_MS)
    return window.preview._doubt.copy()


def test_show_where_unsure_stripes_the_photo_on_show_but_not_its_export_and_comes_off_again(
        qtbot, make_window, varied_backend, grey_photos):
    window = _shown(qtbot, make_window, varied_backend, grey_photos)
    view = window.preview
    plain = view.after_image().copy()
    assert "unsure" not in view.after_caption.text()
    doubt = _doubt_after(qtbot, window, lambda: window.actions_by_name["show_unsure"].setChecked(True))
    assert doubt.shape == view.grey().shape and doubt.max() - doubt.min() > 1e-3  # it varies over the photo
    assert "striped where the model is unsure" in view.after_caption.text()
    colour = colour_image(view.grey(), view.colour(), view.strength_percent() / 100)
    expected = shade_unsure(colour, doubt)
    h, w = doubt.shape
    between = ((np.arange(h)[:, None] + np.arange(w)[None, :]) // UNSURE_STRIPE) % 2 == 1
    assert np.abs(expected[between].astype(int) - np.round(colour[between] * 255)).max() <= 1  # the colour, not black
    assert view.after_image().convertToFormat(plain.format()) == plain  # what Export Comparison takes: no stripes
    shown = view.after_item.pixmap().toImage().convertToFormat(plain.format().Format_RGB888)
    pixels = np.frombuffer(shown.constBits(), np.uint8).reshape(shown.height(), shown.bytesPerLine())
    assert np.array_equal(pixels[:, : 3 * shown.width()].reshape(shown.height(), shown.width(), 3), expected)
    window.actions_by_name["show_unsure"].setChecked(False)
    assert view._doubt is None and "unsure" not in view.after_caption.text()
    assert view.after_image() == plain


def test_another_photo_gets_its_own_doubt_and_a_late_answer_for_the_first_is_dropped(
        qtbot, make_window, varied_backend, grey_photos):
    window = _shown(qtbot, make_window, varied_backend, grey_photos)
    first_key = window.hint_editor.key
    first = _doubt_after(qtbot, window, lambda: window.actions_by_name["show_unsure"].setChecked(True))
    second = _doubt_after(qtbot, window, lambda: _select(window, 1))
    assert window.hint_editor.key != first_key and not np.allclose(first, second)  # the second photo's own map
    window.unsure._on_doubt(first_key, (), window.engine_panel.choice(), first)  # the first photo's, come late
    assert np.array_equal(window.preview._doubt, second)


def test_a_hint_placed_takes_the_stripes_off_where_it_decides_the_colour(
        qtbot, make_window, varied_backend, grey_photos):
    window = _shown(qtbot, make_window, varied_backend, grey_photos)
    before = _doubt_after(qtbot, window, lambda: window.actions_by_name["show_unsure"].setChecked(True))
    after = _doubt_after(qtbot, window, lambda: window.hint_editor.add(0.25, 0.5, (200, 40, 40)))
    h, w = after.shape
    assert after[h // 2, w // 4] < 0.2 * before[h // 2, w // 4]  # the hint's colour there, not a guess
    assert np.allclose(after[:, -8:], before[:, -8:], atol=1e-3)  # beyond its reach: as it was


def test_no_doubt_is_asked_while_a_batch_runs(qtbot, make_window, varied_backend, grey_photos):
    window = _shown(qtbot, make_window, varied_backend, grey_photos)
    _doubt_after(qtbot, window, lambda: window.actions_by_name["show_unsure"].setChecked(True))
    asked = []
    window.unsure.running = lambda: True
    window.unsure.recolourer.doubt = lambda *args: asked.append(args)
    window.unsure.refresh()
    assert not asked and window.preview._doubt is None  # a batch's photos come and go: no stripes of another's


def test_the_caption_says_when_the_model_is_sure_of_every_part():
    from gui.model.previews import UNSURE_FROM, unsure_caption

    assert "striped where the model is unsure" in unsure_caption(np.full((4, 4), UNSURE_FROM + 0.1, np.float32))
    assert "no stripes" in unsure_caption(np.full((4, 4), UNSURE_FROM - 0.1, np.float32))
