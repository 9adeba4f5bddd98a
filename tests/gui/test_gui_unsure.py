"""View > Show Where Unsure: the After side striped where the model is unsure, for the photo and hints on show."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QItemSelectionModel

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


def _shown(qtbot, make_window, backend, grey_photos):
    window = make_window(backend, size=64, precision="fp32")
    window.queue_presenter.add_paths(grey_photos(2, size=(48, 64)))
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS):
        window.batch.start_batch()
    window.table.selectionModel().select(window.queue.index(0, 0), QItemSelectionModel.SelectionFlag.ClearAndSelect
                                         | QItemSelectionModel.SelectionFlag.Rows)
    qtbot.waitUntil(lambda: window.preview.colour() is not None and window.hint_editor.key is not None,
                    timeout=TIMEOUT_MS)
    return window


def test_show_where_unsure_stripes_the_photo_on_show_and_comes_off_again(qtbot, make_window, backend, grey_photos):
    window = _shown(qtbot, make_window, backend, grey_photos)
    view = window.preview
    plain = view.after_image().copy()
    assert "unsure" not in view.after_caption.text()
    window.actions_by_name["show_unsure"].setChecked(True)
    qtbot.waitUntil(lambda: view._doubt is not None, timeout=TIMEOUT_MS)
    assert view._doubt.shape == view.grey().shape
    assert "striped where the model is unsure" in view.after_caption.text()
    colour = colour_image(view.grey(), view.colour(), view.strength_percent() / 100)
    expected = shade_unsure(colour, view._doubt)
    h, w = view._doubt.shape
    between = ((np.arange(h)[:, None] + np.arange(w)[None, :]) // UNSURE_STRIPE) % 2 == 1
    assert np.abs(expected[between].astype(int) - np.round(colour[between] * 255)).max() <= 1  # the colour, not black
    assert view.after_image().convertToFormat(plain.format()) == plain  # what Export Comparison takes: no stripes
    shown = view.after_item.pixmap().toImage().convertToFormat(plain.format().Format_RGB888)
    pixels = np.frombuffer(shown.constBits(), np.uint8).reshape(shown.height(), shown.bytesPerLine())
    assert np.array_equal(pixels[:, : 3 * shown.width()].reshape(shown.height(), shown.width(), 3), expected)
    window.actions_by_name["show_unsure"].setChecked(False)
    assert view._doubt is None and "unsure" not in view.after_caption.text()
    assert view.after_image() == plain


def test_another_photo_on_show_drops_the_stripes_and_asks_for_its_own(qtbot, make_window, backend, grey_photos):
    window = _shown(qtbot, make_window, backend, grey_photos)
    window.actions_by_name["show_unsure"].setChecked(True)
    qtbot.waitUntil(lambda: window.preview._doubt is not None, timeout=TIMEOUT_MS)
    first = window.hint_editor.key
    late = window.preview._doubt.copy()
    window.table.selectionModel().select(window.queue.index(1, 0), QItemSelectionModel.SelectionFlag.ClearAndSelect
                                         | QItemSelectionModel.SelectionFlag.Rows)
    qtbot.waitUntil(lambda: window.hint_editor.key != first, timeout=TIMEOUT_MS)
    window.unsure._on_doubt(first, (), window.engine_panel.choice(), late)  # the first photo's answer, come late
    assert window.preview._doubt is None or window.preview._doubt is not late
    qtbot.waitUntil(lambda: window.preview._doubt is not None, timeout=TIMEOUT_MS)  # its own
    assert window.preview._doubt is not late
