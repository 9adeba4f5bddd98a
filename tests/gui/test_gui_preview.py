"""Before/after previews: colour strength, synchronized zoom and pan, the wipe, previews from disk."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QImage, QPainter, QWheelEvent
from PySide6.QtWidgets import QApplication

from gui.model.previews import PreviewCache


def _photo(h: int = 300, w: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """L ramps left to right; ab is a strong orange everywhere."""
    L = np.tile(np.linspace(20, 90, w, dtype=np.float32), (h, 1))
    ab = np.zeros((h, w, 2), np.float32)
    ab[..., 0], ab[..., 1] = 30.0, 45.0
    return L, ab


def _chroma(img: QImage) -> float:
    """Mean max-min channel spread: 0 for grey pixels."""
    img = img.convertToFormat(QImage.Format.Format_RGB888)
    arr = np.frombuffer(img.constBits(), np.uint8).reshape(img.height(), img.bytesPerLine())[:, : img.width() * 3]
    rgb = arr.reshape(img.height(), img.width(), 3).astype(int)
    return float((rgb.max(-1) - rgb.min(-1)).mean())


@pytest.fixture
def view(before_after):
    before_after.show_photo(*_photo(), caption="test.png")
    return before_after


def test_colour_strength_rescales_the_cached_colour(view):
    normal = _chroma(view.after_image())
    view.bar.strength.setValue(0)
    assert _chroma(view.after_image()) < 1.0  # no colour left: grey
    assert "strength 0%" in view.after_caption.text()
    view.bar.strength.setValue(200)
    assert _chroma(view.after_image()) > 1.5 * normal
    assert _chroma(view.before_image()) < 1.0  # the before side stays grey throughout


def test_colour_strength_in_the_window_does_not_run_the_model_again(qtbot, make_window, backend, grey_photos):
    made = []
    make_worker = backend.make_worker
    backend.make_worker = lambda request: made.append(request) or make_worker(request)
    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(2))
    with qtbot.waitSignal(window.controller.finished, timeout=60_000):
        window.batch.start_batch()
    before = window.preview.after_image()
    window.preview.bar.strength.setValue(150)
    assert window.preview.after_image() != before
    assert len(made) == 1 and not window.controller.running


def _wheel(widget, steps: int) -> None:
    pos = QPointF(widget.width() / 2, widget.height() / 2)
    event = QWheelEvent(pos, widget.mapToGlobal(pos), QPoint(0, 0), QPoint(0, 120 * steps),
                        Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(widget, event)


def test_zoom_and_pan_are_synchronized_between_before_and_after(view):
    fitted = view.scale()
    _wheel(view.before_view.viewport(), 3)
    assert view.scale() == pytest.approx(fitted * 1.25**3)
    assert view.after_view.transform() == view.before_view.transform()

    view.before_view.horizontalScrollBar().setValue(40)
    view.before_view.verticalScrollBar().setValue(25)
    assert view.after_view.horizontalScrollBar().value() == 40
    assert view.after_view.verticalScrollBar().value() == 25
    # ...and the other way round.
    view.after_view.horizontalScrollBar().setValue(10)
    assert view.before_view.horizontalScrollBar().value() == 10
    _wheel(view.after_view.viewport(), -1)
    assert view.before_view.transform() == view.after_view.transform()

    view.fit()
    assert view.scale() == pytest.approx(fitted)
    view.actual_size()
    assert view.scale() == 1.0 and view.after_view.transform().m11() == 1.0


def test_wipe_shows_grey_left_of_the_line_and_colour_right_of_it(view):
    view.set_mode("wipe")
    assert not view.after_box.isVisible() and view.wipe.slider.isVisible()
    view.wipe.slider.setValue(250)
    rect = view.before_scene.sceneRect()
    image = QImage(int(rect.width()), int(rect.height()), QImage.Format.Format_RGB888)
    painter = QPainter(image)
    view.before_scene.render(painter, image.rect(), rect)
    painter.end()
    left = image.copy(0, 0, 90, 300)
    right = image.copy(110, 0, 290, 300)
    assert _chroma(left) < 1.0
    assert _chroma(right) > 10.0
    view.set_mode("side")
    assert view.after_box.isVisible() and not view.wipe.slider.isVisible()


def test_a_photo_not_colorized_yet_shows_only_its_grey_side(view):
    L, _ = _photo(50, 80)
    view.show_photo(L, None, caption="queued.png")
    assert view.after_image().isNull()
    assert "not colorized yet" in view.after_caption.text()
    assert "queued.png" in view.before_caption.text()


def test_selecting_a_done_row_shows_its_preview_even_after_the_cache_dropped_it(qtbot, make_window, backend,
                                                                                grey_photos):
    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(3))
    with qtbot.waitSignal(window.controller.finished, timeout=60_000):
        window.batch.start_batch()
    window.viewer.previews.clear()
    window.preview.clear("nothing")
    window.table.selectRow(0)
    qtbot.waitUntil(lambda: window.preview.stack.currentIndex() == 1)  # read from disk off the UI thread
    assert not window.preview.after_image().isNull()
    assert window.preview.before_image().width() == 60
    assert "photo00.png" in window.preview.before_caption.text()


def test_preview_cache_keeps_only_the_most_recent():
    cache = PreviewCache(capacity=2)
    L, ab = _photo(4, 4)
    for key in range(3):
        cache.put(key, L, ab)
    assert cache.get(0) is None and cache.get(2) is not None


def test_a_long_file_name_does_not_make_one_side_wider_than_the_other(view, qtbot):
    view.show_photo(*_photo(), caption="a-very-long-file-name-" * 8 + ".jpg")
    qtbot.waitUntil(lambda: abs(view.before_view.width() - view.after_view.width()) <= 2, timeout=2000)
    assert "a-very-long-file-name" in view.before_caption.toolTip()


def test_the_wipe_line_is_dragged_on_the_photo_itself(view, qtbot):
    view.set_mode("wipe")
    view.fit()
    viewport = view.before_view.viewport()
    line = view.before_view.mapFromScene(view.wipe.line.line().p1())
    rect = view.before_scene.sceneRect()
    target = view.before_view.mapFromScene(QPointF(rect.width() / 4, rect.height() / 2))  # a quarter across
    qtbot.mousePress(viewport, Qt.MouseButton.LeftButton, pos=QPoint(line.x() + 2, line.y() + 10))
    qtbot.mouseMove(viewport, target)
    qtbot.mouseRelease(viewport, Qt.MouseButton.LeftButton, pos=target)
    assert 230 < view.wipe.slider.value() < 270  # where the mouse let go
    assert abs(view.before_view.mapFromScene(view.wipe.line.line().p1()).x() - target.x()) <= 3
    far = QPoint(viewport.width() - 5, line.y() + 10)
    assert not view.near_wipe_line(far)  # elsewhere a press pans (and places hints) as before


def test_strength_steps_land_on_multiples_of_ten_and_a_double_click_resets_it(view, qtbot):
    from PySide6.QtWidgets import QSlider

    slider = view.bar.strength
    slider.setValue(141)
    view.step_strength(-1)
    assert slider.value() == 140
    view.step_strength(-4)
    assert slider.value() == 100  # reachable again: before, 141 stepped to 101
    slider.setValue(95)
    slider.triggerAction(QSlider.SliderAction.SliderPageStepAdd)  # Page Up, or a click beside the handle
    assert slider.value() == 100
    slider.setValue(173)
    qtbot.mouseDClick(slider, Qt.MouseButton.LeftButton)
    assert slider.value() == 100


def test_a_photo_read_from_disk_does_not_hold_the_window_and_says_loading_when_slow(qtbot, make_window, backend,
                                                                                  grey_photos, monkeypatch):
    import threading

    from gui.model import preview_loader

    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(2))
    release = threading.Event()
    read = preview_loader.preview_from_files

    def slow_read(*args, **kwargs):
        release.wait(10)  # a 3000 px scan on a slow disk
        return read(*args, **kwargs)

    monkeypatch.setattr(preview_loader, "preview_from_files", slow_read)
    window.table.selectRow(1)  # returns at once: the window keeps processing events meanwhile
    qtbot.waitUntil(lambda: "Loading photo01.png" in window.preview.placeholder.label.text())
    assert window.preview.grey() is None and window.hint_editor.key is None  # no hint lands on the last photo
    release.set()
    qtbot.waitUntil(lambda: window.preview.stack.currentIndex() == 1)
    assert "photo01.png" in window.preview.before_caption.text() and window.hint_editor.key is not None


@pytest.mark.parametrize("readable", [True, False])
def test_a_photo_removed_while_it_loads_leaves_no_busy_cursor_and_no_loading_text(readable, qtbot, make_window,
                                                                                 backend, grey_photos, monkeypatch):
    import threading

    from gui.model import preview_loader

    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(2))
    release = threading.Event()
    read = preview_loader.preview_from_files

    def slow_read(*args, **kwargs):
        release.wait(10)
        if not readable:
            raise OSError("unreadable file")
        return read(*args, **kwargs)

    monkeypatch.setattr(preview_loader, "preview_from_files", slow_read)
    window.table.selectRow(1)
    qtbot.waitUntil(lambda: "Loading" in window.preview.placeholder.label.text())
    window.queue_presenter.remove_selected()  # the photo before it is selected in its place
    release.set()
    kept = window.queue.row(0)
    if readable:
        qtbot.waitUntil(lambda: window.viewer.shown_key == kept.key and window.preview.stack.currentIndex() == 1)
    else:
        qtbot.waitUntil(lambda: f"{kept.shown_name}: cannot show a preview" in window.preview.placeholder.label.text())
    assert QApplication.overrideCursor() is None and window.viewer.loading_key is None


def test_the_last_photo_removed_while_it_loads_leaves_the_removed_text(qtbot, make_window, backend, grey_photos,
                                                                       monkeypatch):
    import threading

    from gui.model import preview_loader

    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(1))
    release = threading.Event()
    read = preview_loader.preview_from_files
    monkeypatch.setattr(preview_loader, "preview_from_files", lambda *a, **kw: (release.wait(10), read(*a, **kw))[1])
    window.table.selectRow(0)
    qtbot.waitUntil(lambda: "Loading" in window.preview.placeholder.label.text())
    window.queue_presenter.remove_selected()  # no photo left to take its place
    release.set()
    qtbot.waitUntil(lambda: "Removed from the queue" in window.preview.placeholder.label.text())
    assert QApplication.overrideCursor() is None and window.viewer.loading_key is None


def test_a_caption_too_long_for_its_side_ends_in_an_ellipsis_and_keeps_the_whole_line_in_its_tooltip(
        before_after, qtbot):
    name = "a-very-long-file-name-of-an-old-family-photo-scanned-at-the-library-in-1987-" * 3 + "end.jpg"
    before_after.show_photo(*_photo(), caption=name)
    before_after.resize(600, 400)
    caption = before_after.before_caption
    qtbot.waitUntil(lambda: caption.width() < 400)
    assert name in caption.text() and name in caption.toolTip()  # the whole line, for the tooltip and the tests
    shown = caption.shown_text()
    assert "…" in shown and shown.endswith("end.jpg")  # cut in its middle, the name's end kept
    assert caption.fontMetrics().horizontalAdvance(shown) <= caption.contentsRect().width()
    assert before_after.after_caption.shown_text() == before_after.after_caption.text()  # a short line stays whole
