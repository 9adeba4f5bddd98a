"""Colour hints in the app (#13): click to add, the preview re-colours toward the hint, Undo restores the
previous result, hints survive a restart and a save/load round trip, exports use them, and weights without
hint inputs leave everything inert and say so.

A random hinted model reacts only weakly to hints: most tests check the hint reached the model and that the
result changed; one test runs the shipped model v2 and pins that the colour near a hint moves toward it.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from helpers import random_model
from PySide6.QtCore import QItemSelectionModel, QPoint, QRect, QSize, Qt

from engine.colorizer import Colorizer
from engine.hints import Hint, load_hints_file, save_hints_file
from engine.model import with_hint_channels
from engine.options import ColorizeSettings
from gui.bridge.worker import Backend, Recolourer
from gui.model.colour_names import colour_name
from gui.model.hint_store import NO_HINTS_TEXT
from gui.views.hint_rings import MENU_GAP

TIMEOUT_MS = 60_000
GREEN = (20, 200, 20)


@pytest.fixture(scope="module")
def hinted_model():
    m = with_hint_channels(random_model(), 3)
    with torch.no_grad():  # hint inputs that matter: their stem weights drawn large
        m.encoder._conv_stem.weight[:, 1:].normal_(0, 2.0, generator=torch.Generator().manual_seed(1))
    return m.eval()


def _two_done_then_a_hint_on_the_first(qtbot, make_window, backend, photo, tmp_path):
    """Two photos colorized, then a hint placed on the first (selected): Run Again is on offer."""
    other = tmp_path / "elsewhere" / "other.png"
    other.parent.mkdir()
    other.write_bytes(photo.read_bytes())
    window = _window(qtbot, make_window, backend, photo)
    window.queue_presenter.add_paths([other])
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS):
        window.batch.start_batch()
    _add(qtbot, window, 0.5, 0.5, GREEN)
    return window


def _select_row(window, row):
    window.table.selectionModel().select(window.queue.index(row, 0), QItemSelectionModel.SelectionFlag.ClearAndSelect
                                         | QItemSelectionModel.SelectionFlag.Rows)


@pytest.fixture
def hinted_backend(_gentle_torch, hinted_model):
    """A Backend on the random hinted model that records the hints every model call was given."""
    seen: list = []

    def factory(settings):
        c = Colorizer.create(settings, model=hinted_model)
        predict, infer_photos = c.predict, c.infer_photos

        def recording_predict(items, hints=None):
            seen.append(("preview", hints))
            return predict(items, hints)

        def recording_infer(items, hints=None):
            seen.append(("batch", hints))
            return infer_photos(items, hints)

        c.predict, c.infer_photos = recording_predict, recording_infer
        return c

    backend = Backend(factory=factory)
    backend.seen = seen
    return backend


def _window(qtbot, make_window, backend, photo):
    window = make_window(backend, size=64, precision="fp32")
    window.queue_presenter.add_paths([photo])
    window.table.selectionModel().select(window.queue.index(0, 0), QItemSelectionModel.SelectionFlag.ClearAndSelect
                                         | QItemSelectionModel.SelectionFlag.Rows)
    qtbot.waitUntil(lambda: window.preview.grey() is not None and window.hint_editor.key is not None)  # read off-thread
    return window


def _recolour(qtbot, window):
    with qtbot.waitSignal(window.hint_editor.preview_updated, timeout=TIMEOUT_MS):
        window.hint_editor.recolour()
    return window.preview.colour().copy()


def _add(qtbot, window, x, y, rgb):
    with qtbot.waitSignal(window.hint_editor.preview_updated, timeout=TIMEOUT_MS):
        window.hint_editor.add(x, y, rgb)
    return window.preview.colour().copy()


@pytest.fixture
def photo(write_photo, tmp_path):
    return write_photo(tmp_path / "in" / "photo00.png", (64, 96))


def test_a_click_on_the_preview_offers_the_models_colours_and_picking_one_adds_a_hint(qtbot, make_window,
                                                                                     hinted_backend, photo):
    window = _window(qtbot, make_window, hinted_backend, photo)
    editor, view = window.hint_editor, window.preview.after_view
    centre = view.viewport().rect().center()
    point = view.mapToScene(centre)
    with qtbot.waitSignal(editor.suggestions_shown, timeout=TIMEOUT_MS):
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=centre)
    colours = [a for a in editor.menu.actions() if "#" in a.text()]
    assert colours and editor.menu.actions()[-1].text() == "Other…"
    clicked = view.viewport().mapToGlobal(centre)  # the menu opens beside the spot, not over it
    spot = QRect(clicked - QPoint(MENU_GAP - 1, MENU_GAP - 1), QSize(2 * MENU_GAP - 1, 2 * MENU_GAP - 1))
    qtbot.waitUntil(editor.menu.isVisible)
    assert not editor.menu.geometry().intersects(spot)
    with qtbot.waitSignal(editor.preview_updated, timeout=TIMEOUT_MS):
        colours[0].trigger()
    (hint,) = window.hint_store.get(photo)
    h, w = window.preview.grey().shape
    assert hint.x == pytest.approx(point.x() / w, abs=0.02) and hint.y == pytest.approx(point.y() / h, abs=0.02)
    words, hex_code = colours[0].text().split("  ")  # words (told apart from a like-named colour's) and hex
    assert words.startswith(colour_name(hint.rgb)) and hex_code == "#{:02x}{:02x}{:02x}".format(*hint.rgb)
    assert ("preview", [(hint,)]) in hinted_backend.seen  # the hint reached the model
    assert len(editor._rings) == 2  # a ring on each side


def test_a_window_goes_right_of_the_spot_else_left_else_above_or_below_and_always_on_the_screen(qtbot):
    from PySide6.QtGui import QGuiApplication

    from gui.views.hint_rings import beside

    room = QGuiApplication.primaryScreen().availableGeometry()
    mid = room.center()
    small, wide = QSize(200, 150), QSize(room.width() - 60, 150)
    assert beside(small, mid).x() == mid.x() + MENU_GAP  # room on the right
    right_edge = QPoint(room.right() - 50, mid.y())
    assert beside(small, right_edge).x() == right_edge.x() - MENU_GAP - 200  # no room there: on the left
    low = QPoint(mid.x(), room.bottom() - 50)
    assert beside(wide, low).y() == low.y() - MENU_GAP - 150  # too wide for either side: above the spot
    high = QPoint(mid.x(), room.top() + 50)
    assert beside(wide, high).y() == high.y() + MENU_GAP  # ...or below it
    huge = beside(QSize(room.width() + 100, room.height() + 100), mid)  # fits nowhere: its corner on the screen
    assert (huge.x(), huge.y()) == (room.x(), room.y())


def test_other_colours_dialog_opens_beside_the_clicked_spot_and_its_colour_becomes_the_hint(qtbot, make_window,
                                                                                           hinted_backend, photo):
    from PySide6.QtGui import QColor
    from PySide6.QtWidgets import QApplication, QColorDialog

    window = _window(qtbot, make_window, hinted_backend, photo)
    editor, view = window.hint_editor, window.preview.after_view
    centre = view.viewport().rect().center()
    with qtbot.waitSignal(editor.suggestions_shown, timeout=TIMEOUT_MS):
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=centre)
    editor.menu.actions()[-1].trigger()  # Other…
    (dialog,) = [w for w in QApplication.topLevelWidgets() if isinstance(w, QColorDialog) and w.isVisible()]
    clicked = view.viewport().mapToGlobal(centre)
    spot = QRect(clicked - QPoint(MENU_GAP - 1, MENU_GAP - 1), QSize(2 * MENU_GAP - 1, 2 * MENU_GAP - 1))
    assert not dialog.frameGeometry().intersects(spot)  # the spot stays in sight while the colour is chosen
    with qtbot.waitSignal(editor.preview_updated, timeout=TIMEOUT_MS):
        dialog.setCurrentColor(QColor(10, 120, 200))
        dialog.accept()
    (hint,) = window.hint_store.get(photo)
    assert hint.rgb == (10, 120, 200)


def test_the_model_is_loaded_when_the_mouse_comes_onto_the_photo_and_a_click_shows_a_busy_cursor_until_answered(
        qtbot, make_window, hinted_backend, photo, monkeypatch):
    import threading

    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication

    built = threading.Event()
    make = hinted_backend._make

    def recording_make(settings):
        built.set()
        return make(settings)

    monkeypatch.setattr(hinted_backend, "_make", recording_make)
    window = _window(qtbot, make_window, hinted_backend, photo)
    editor, view = window.hint_editor, window.preview.after_view
    qtbot.wait(200)
    assert not built.is_set()  # a photo on show alone loads no second model: a user may never hint
    QApplication.sendEvent(view.viewport(), QEvent(QEvent.Type.Enter))
    assert built.wait(30)  # the mouse on the photo: loaded before the first click, which then does not wait
    with qtbot.waitSignal(editor.suggestions_shown, timeout=TIMEOUT_MS):
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.viewport().rect().center())
        cursor = QApplication.overrideCursor()
        assert cursor is not None and cursor.shape() == Qt.CursorShape.BusyCursor  # the wait is seen
    qtbot.waitUntil(lambda: QApplication.overrideCursor() is None)  # and ends with the answer
    editor.menu.close()


def test_a_quick_answer_never_leaves_the_busy_cursor_on(qtbot, make_window, backend, photo):
    from PySide6.QtWidgets import QApplication

    window = _window(qtbot, make_window, backend, photo)  # weights without hint inputs: refused at once
    view = window.preview.after_view
    for _ in range(20):
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.viewport().rect().center())
    qtbot.waitUntil(lambda: QApplication.overrideCursor() is None, timeout=10_000)
    assert not window.hint_editor._busy_cursor.on


def test_the_colour_near_a_hint_changes_and_undo_restores_the_previous_result(
        qtbot, make_window, hinted_backend, photo):
    window = _window(qtbot, make_window, hinted_backend, photo)
    before = _recolour(qtbot, window)
    after = _add(qtbot, window, 0.5, 0.5, GREEN)
    # A random model's colour does not follow the hint's hue (the shipped-model test below pins that); what
    # can be pinned here: the hint, with its chroma, reached the model, and the colour near it changed.
    (hints,) = next(h for kind, h in reversed(hinted_backend.seen) if kind == "preview" and h)
    assert hints == (Hint(0.5, 0.5, GREEN),)
    h, w = before.shape[:2]
    near = (slice(h // 2 - 3, h // 2 + 4), slice(w // 2 - 3, w // 2 + 4))
    assert np.abs(after[near] - before[near]).max() > 1.0  # ab units

    with qtbot.waitSignal(window.hint_editor.preview_updated, timeout=TIMEOUT_MS):
        window.history.undo_action.trigger()
    assert window.hint_store.get(photo) == ()
    assert np.array_equal(window.preview.colour(), before)
    with qtbot.waitSignal(window.hint_editor.preview_updated, timeout=TIMEOUT_MS):
        window.history.redo_action.trigger()
    assert window.hint_store.get(photo) == (Hint(0.5, 0.5, GREEN),)
    assert np.array_equal(window.preview.colour(), after)


@pytest.fixture
def shipped_backend(_gentle_torch):
    """The real engine bridge with the shipped model v2 (it reads hints and spreads their corrections)."""
    from engine.weights import DEFAULT_WEIGHTS

    if not DEFAULT_WEIGHTS.exists():
        pytest.skip("the shipped weights are not installed")
    return Backend(factory=lambda settings: Colorizer.create(settings))


def test_with_the_shipped_model_the_colour_near_a_hint_moves_toward_the_chosen_colour(
        qtbot, make_window, shipped_backend, photo):
    from engine.color import rgb_to_lab

    window = _window(qtbot, make_window, shipped_backend, photo)
    window.engine_panel.set_choice(ColorizeSettings(size=128, batch_size=2, precision="fp32"))
    before = _recolour(qtbot, window)
    after = _add(qtbot, window, 0.5, 0.5, GREEN)
    h, w = before.shape[:2]
    near = (slice(h // 2 - 4, h // 2 + 5), slice(w // 2 - 4, w // 2 + 5))
    want = rgb_to_lab(np.array([[GREEN]], np.uint8))[0, 0, 1:]
    ab_before = before[near].reshape(-1, 2).mean(axis=0)  # the preview's colour is its ab
    ab_after = after[near].reshape(-1, 2).mean(axis=0)
    # Green is negative a: the patch turns greener, and its chroma comes closer to the hint's.
    assert ab_after[0] < ab_before[0] - 10
    assert np.linalg.norm(ab_after - want) < 0.6 * np.linalg.norm(ab_before - want)


def test_delete_and_right_click_remove_a_hint_and_show_hints_hides_the_rings(qtbot, make_window, hinted_backend,
                                                                            photo):
    window = _window(qtbot, make_window, hinted_backend, photo)
    editor = window.hint_editor
    _add(qtbot, window, 0.3, 0.3, GREEN)
    _add(qtbot, window, 0.7, 0.6, (200, 30, 30))
    assert len(editor._rings) == 4
    editor.show_action.setChecked(False)
    assert editor._rings == []
    editor.show_action.setChecked(True)

    view = window.preview.before_view
    ring = next(r for r in editor._rings if r.scene() is window.preview.before_scene and r.index == 0)
    ring.setSelected(True)
    view.setFocus()
    with qtbot.waitSignal(editor.preview_updated, timeout=TIMEOUT_MS):
        qtbot.keyClick(view, Qt.Key.Key_Delete)
    assert window.hint_store.get(window.queue.row(0).path) == (Hint(0.7, 0.6, (200, 30, 30)),)
    assert window.queue.rowCount() == 1  # Delete took the hint, not the photo

    ring = next(r for r in editor._rings if r.scene() is window.preview.before_scene)
    at = view.mapFromScene(ring.scenePos())
    with qtbot.waitSignal(editor.preview_updated, timeout=TIMEOUT_MS):
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.RightButton, pos=at)
    assert window.hint_store.get(photo) == ()


def test_a_double_click_on_a_hint_offers_colours_and_picking_one_changes_only_its_colour(
        qtbot, make_window, hinted_backend, photo):
    window = _window(qtbot, make_window, hinted_backend, photo)
    editor = window.hint_editor
    _add(qtbot, window, 0.3, 0.3, GREEN)
    _add(qtbot, window, 0.7, 0.6, (200, 30, 30))
    view = window.preview.before_view
    ring = next(r for r in editor._rings if r.scene() is window.preview.before_scene and r.index == 0)
    with qtbot.waitSignal(editor.suggestions_shown, timeout=TIMEOUT_MS):
        qtbot.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.mapFromScene(ring.scenePos()))
    assert len(window.hint_store.get(photo)) == 2  # no hint added by the double-click
    green = "#{:02x}{:02x}{:02x}".format(*GREEN)
    pick = next(a for a in editor.menu.actions() if "#" in a.text() and green not in a.text())
    with qtbot.waitSignal(editor.preview_updated, timeout=TIMEOUT_MS):
        pick.trigger()
    first, second = window.hint_store.get(photo)
    assert (first.x, first.y) == (0.3, 0.3) and first.rgb != GREEN  # the same place, the colour picked
    assert second == Hint(0.7, 0.6, (200, 30, 30))
    assert window.history.stack.undoText() == "Change Hint Colour"


def test_dragging_a_hint_moves_it(qtbot, make_window, hinted_backend, photo):
    window = _window(qtbot, make_window, hinted_backend, photo)
    _add(qtbot, window, 0.3, 0.3, GREEN)
    view = window.preview.before_view
    ring = next(r for r in window.hint_editor._rings if r.scene() is window.preview.before_scene)
    start = view.mapFromScene(ring.scenePos())
    qtbot.mousePress(view.viewport(), Qt.MouseButton.LeftButton, pos=start)
    for step in range(1, 6):
        qtbot.mouseMove(view.viewport(), pos=start + QPoint(8 * step, 4 * step))
    with qtbot.waitSignal(window.hint_editor.preview_updated, timeout=TIMEOUT_MS):
        qtbot.mouseRelease(view.viewport(), Qt.MouseButton.LeftButton, pos=start + QPoint(40, 20))
    (hint,) = window.hint_store.get(photo)
    assert hint.x > 0.35 and hint.y > 0.32 and hint.rgb == GREEN


def test_the_preview_follows_a_hint_while_it_is_dragged_and_the_drag_is_one_undo_step(qtbot, make_window,
                                                                                    hinted_backend, photo):
    window = _window(qtbot, make_window, hinted_backend, photo)
    _add(qtbot, window, 0.3, 0.3, GREEN)
    steps, before = window.history.stack.count(), window.hint_store.get(photo)
    qtbot.waitUntil(lambda: window.preview.colour() is not None, timeout=TIMEOUT_MS)
    shown = window.preview.colour().copy()
    view = window.preview.before_view
    ring = next(r for r in window.hint_editor._rings if r.scene() is window.preview.before_scene)
    start = view.mapFromScene(ring.scenePos())
    seen = len(hinted_backend.seen)
    qtbot.mousePress(view.viewport(), Qt.MouseButton.LeftButton, pos=start)
    for step in range(1, 6):
        qtbot.mouseMove(view.viewport(), pos=start + QPoint(8 * step, 4 * step))

    def moved_asked() -> bool:
        return any(kind == "preview" and hints and hints[0] and hints[0][0] != before[0] and hints[0][0].rgb == GREEN
                   for kind, hints in hinted_backend.seen[seen:])

    qtbot.waitUntil(moved_asked, timeout=TIMEOUT_MS)  # asked before the release
    qtbot.waitUntil(lambda: not np.array_equal(window.preview.colour(), shown), timeout=TIMEOUT_MS)
    assert window.hint_store.get(photo) == before and window.history.stack.count() == steps  # nothing kept yet
    twin = next(r for r in window.hint_editor._rings if r.scene() is window.preview.after_scene)
    assert twin.pos() == ring.pos() != twin.hint_pos()  # the hint on the other side follows
    with qtbot.waitSignal(window.hint_editor.preview_updated, timeout=TIMEOUT_MS):
        qtbot.mouseRelease(view.viewport(), Qt.MouseButton.LeftButton, pos=start + QPoint(40, 20))
    assert window.history.stack.count() == steps + 1 and window.history.stack.undoText() == "Move Hint"
    assert window.hint_store.get(photo)[0].x > 0.35


def test_a_drag_let_go_where_it_began_shows_the_hints_colour_again_and_keeps_nothing(qtbot, make_window,
                                                                                    hinted_backend, photo):
    window = _window(qtbot, make_window, hinted_backend, photo)
    shown = _add(qtbot, window, 0.3, 0.3, GREEN)
    steps, before = window.history.stack.count(), window.hint_store.get(photo)
    view = window.preview.before_view
    ring = next(r for r in window.hint_editor._rings if r.scene() is window.preview.before_scene)
    start = view.mapFromScene(ring.scenePos())
    qtbot.mousePress(view.viewport(), Qt.MouseButton.LeftButton, pos=start)
    for step in (1, 2, 3):
        qtbot.mouseMove(view.viewport(), pos=start + QPoint(10 * step, 0))
    qtbot.waitUntil(lambda: not np.array_equal(window.preview.colour(), shown), timeout=TIMEOUT_MS)
    for step in (2, 1, 0):
        qtbot.mouseMove(view.viewport(), pos=start + QPoint(10 * step, 0))
    qtbot.mouseRelease(view.viewport(), Qt.MouseButton.LeftButton, pos=start)
    qtbot.waitUntil(lambda: np.array_equal(window.preview.colour(), shown), timeout=TIMEOUT_MS)
    qtbot.wait(300)  # answers to the drag's places still coming in change nothing
    assert np.array_equal(window.preview.colour(), shown)
    assert window.hint_store.get(photo) == before and window.history.stack.count() == steps
    assert all(r.pos() == r.hint_pos() for r in window.hint_editor._rings)


def test_undo_in_the_middle_of_a_drag_takes_the_drag_back_not_the_hint_placed_before(qtbot, make_window,
                                                                                    hinted_backend, photo):
    window = _window(qtbot, make_window, hinted_backend, photo)
    _add(qtbot, window, 0.7, 0.7, (200, 30, 30))
    shown = _add(qtbot, window, 0.3, 0.3, GREEN)
    steps, before = window.history.stack.count(), window.hint_store.get(photo)
    view = window.preview.before_view
    ring = next(r for r in window.hint_editor._rings if r.scene() is window.preview.before_scene and r.index == 1)
    start = view.mapFromScene(ring.scenePos())
    view.setFocus()
    qtbot.mousePress(view.viewport(), Qt.MouseButton.LeftButton, pos=start)
    for step in (1, 2, 3):
        qtbot.mouseMove(view.viewport(), pos=start + QPoint(10 * step, 5 * step))
    qtbot.waitUntil(lambda: not np.array_equal(window.preview.colour(), shown), timeout=TIMEOUT_MS)
    qtbot.keyClick(view, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert window.history.stack.count() == steps and window.hint_store.get(photo) == before  # nothing undone
    qtbot.mouseMove(view.viewport(), pos=start + QPoint(40, 20))
    qtbot.mouseRelease(view.viewport(), Qt.MouseButton.LeftButton, pos=start + QPoint(40, 20))
    qtbot.waitUntil(lambda: np.array_equal(window.preview.colour(), shown), timeout=TIMEOUT_MS)
    assert window.history.stack.count() == steps and window.hint_store.get(photo) == before  # nor moved after
    assert all(r.pos() == r.hint_pos() for r in window.hint_editor._rings)


def test_hints_survive_a_restart_and_a_save_load_round_trip(qtbot, make_window, hinted_backend, photo, tmp_path):
    window = _window(qtbot, make_window, hinted_backend, photo)
    hints = (Hint(0.25, 0.5, GREEN), Hint(0.75, 0.2, (180, 60, 40)))
    _add(qtbot, window, hints[0].x, hints[0].y, hints[0].rgb)
    _add(qtbot, window, hints[1].x, hints[1].y, hints[1].rgb)
    window.close()

    seen_before = len(hinted_backend.seen)
    again = _window(qtbot, make_window, hinted_backend, photo)  # a new window on the same settings: a restart
    assert again.hint_store.get(photo) == hints
    assert len(again.hint_editor._rings) == 4
    # nothing cached shows these hints' colour: showing the photo asks the model for it
    qtbot.waitUntil(lambda: ("preview", [hints]) in hinted_backend.seen[seen_before:], timeout=TIMEOUT_MS)

    file = tmp_path / "hints.json"
    assert again.hint_files.save_file(file) == 1
    assert load_hints_file(file).photos == {"photo00.png": hints}  # the CLI's format and key
    again.hint_editor.clear()
    assert again.hint_store.get(photo) == ()
    assert again.hint_files.load_file(file)
    assert again.hint_store.get(photo) == hints
    assert "Loaded hints for 1 photo" in again.status_label.text()


def test_export_uses_the_hints_and_changing_them_afterwards_offers_run_again(qtbot, make_window, hinted_backend,
                                                                           photo):
    window = _window(qtbot, make_window, hinted_backend, photo)
    _add(qtbot, window, 0.5, 0.5, GREEN)
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS):
        window.batch.start_batch()
    assert ("batch", [(Hint(0.5, 0.5, GREEN),)]) in hinted_backend.seen
    assert window.queue.row(0).status == "done"
    window.set_status("")
    window.batch.offer.update()
    assert "colorized with other" not in window.status_label.text()  # made with these hints: nothing to offer
    _add(qtbot, window, 0.2, 0.2, (200, 30, 30))
    assert "The photo was colorized with other settings or hints" in window.status_label.text()


def test_weights_without_hint_inputs_add_no_hint_and_say_so(qtbot, make_window, backend, photo):
    window = _window(qtbot, make_window, backend, photo)
    view = window.preview.after_view
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.viewport().rect().center())
    qtbot.waitUntil(lambda: window.status_label.text() == NO_HINTS_TEXT, timeout=TIMEOUT_MS)
    assert window.hint_editor.menu is None and window.hint_store.get(photo) == ()


def test_changing_the_working_size_makes_undo_and_recolour_ask_the_model_again(qtbot, make_window, hinted_backend,
                                                                               photo):
    window = _window(qtbot, make_window, hinted_backend, photo)
    _add(qtbot, window, 0.5, 0.5, GREEN)
    window.engine_panel.work_size.setValue(window.engine_panel.work_size.value() + 32)
    seen_before = len(hinted_backend.seen)
    _recolour(qtbot, window)  # not the preview kept from the old size
    assert ("preview", [(Hint(0.5, 0.5, GREEN),)]) in hinted_backend.seen[seen_before:]


def test_removing_the_photo_on_show_unbinds_the_editor_so_a_click_adds_nothing(qtbot, make_window, hinted_backend,
                                                                               photo):
    window = _window(qtbot, make_window, hinted_backend, photo)
    window.queue_presenter.remove_selected()
    assert window.queue.rowCount() == 0
    assert window.hint_editor.key is None and window.hint_editor.path is None
    view = window.preview.after_view
    assert not window.hint_editor.click(view, view.viewport().rect().center())
    window.hint_editor.add(0.5, 0.5, GREEN)
    assert window.hint_store.get(photo) == ()


def test_loading_hints_for_several_photos_is_one_undo_step_and_one_change(qtbot, make_window, hinted_backend,
                                                                           write_photo, tmp_path):
    photos = [write_photo(tmp_path / "in" / f"p{i}.png", (48, 64)) for i in range(3)]
    window = make_window(hinted_backend, size=64, precision="fp32")
    window.queue_presenter.add_paths(photos)
    file = tmp_path / "hints.json"
    save_hints_file(file, {p.name: (Hint(0.1 * i, 0.5, GREEN),) for i, p in enumerate(photos)})
    changes: list[str] = []
    window.hint_store.changed.connect(changes.append)
    steps = window.history.stack.count()
    assert window.hint_files.load_file(file)
    assert changes == [""] and window.history.stack.count() == steps + 1
    assert all(window.hint_store.get(p) == (Hint(0.1 * i, 0.5, GREEN),) for i, p in enumerate(photos))
    window.history.undo_action.trigger()
    assert all(window.hint_store.get(p) == () for p in photos)


def test_the_preview_service_runs_the_newest_request_suggestions_first_and_never_compiles(qtbot, _gentle_torch,
                                                                                         hinted_model):
    entered, release, made = threading.Event(), threading.Event(), []

    def factory(settings):
        made.append(settings)
        entered.set()
        release.wait(TIMEOUT_MS / 1000)
        return Colorizer.create(settings, model=hinted_model)

    recolourer = Recolourer(factory)
    done: list = []
    recolourer.recoloured.connect(lambda key, *_: done.append(("colour", key)))
    recolourer.suggestions.connect(lambda key, *_: done.append(("suggest", key)))
    recolourer.refused.connect(lambda key, reason: done.append(("refused", key, reason)))
    L = np.random.default_rng(0).uniform(0, 100, (48, 64)).astype(np.float32)
    settings = ColorizeSettings(size=64, precision="fp32", compile=True)
    hint = (Hint(0.5, 0.5, GREEN),)
    try:
        recolourer.request(1, L, hint, settings)
        assert entered.wait(TIMEOUT_MS / 1000)  # the first request is running; these wait behind it
        recolourer.request(2, L, hint, settings)
        recolourer.request(3, L, hint, settings)
        recolourer.suggest(3, L, 0.5, 0.5, hint, settings)
        release.set()
        qtbot.waitUntil(lambda: len(done) >= 3, timeout=TIMEOUT_MS)
    finally:
        release.set()
        recolourer.stop()
    assert done == [("colour", 1), ("suggest", 3), ("colour", 3)]  # photo 2's stale request never ran
    assert made and not any(s.compile for s in made)


def test_with_auto_a_hint_reaches_the_preview(qtbot, make_window, hinted_backend, photo):
    window = make_window(hinted_backend, size=64, precision="fp32", by_look=True)
    assert window.engine_panel.choice().by_look
    window.queue_presenter.add_paths([photo])
    window.table.selectionModel().select(window.queue.index(0, 0), QItemSelectionModel.SelectionFlag.ClearAndSelect
                                         | QItemSelectionModel.SelectionFlag.Rows)
    qtbot.waitUntil(lambda: window.preview.grey() is not None and window.hint_editor.key is not None)
    before = window.preview.colour()
    _add(qtbot, window, 0.5, 0.5, GREEN)  # answered for the settings asked ("auto"), so it is shown
    assert window.preview.colour() is not None and (before is None or not np.array_equal(before,
                                                                                         window.preview.colour()))
    assert any(kind == "preview" and hints for kind, hints in hinted_backend.seen)  # the model got the hint


def test_the_run_again_offer_follows_the_selection_away_from_the_photo_whose_hints_changed(
        qtbot, make_window, hinted_backend, photo, tmp_path):
    window = _two_done_then_a_hint_on_the_first(qtbot, make_window, hinted_backend, photo, tmp_path)
    assert "redoes the selected photo" in window.status_label.text()
    _select_row(window, 1)
    text = window.status_label.text()
    assert "the selected photo was not. To redo it, select it, then Run Again" in text


def test_the_colour_menu_offers_the_colours_of_the_hints_placed_last_after_the_likeliest(qtbot, tmp_path):
    from PySide6.QtCore import QSettings

    from gui.model.hint_store import HintStore
    from gui.views.hint_rings import colour_menu

    store = HintStore(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    first, second = tmp_path / "a.png", tmp_path / "b.png"
    for path in (first, second):
        path.write_bytes(b"")  # hints are remembered for photos that exist
    store.set(first, [Hint(0.1, 0.1, (1, 2, 3)), Hint(0.2, 0.2, (4, 5, 6))])
    store.set(second, [Hint(0.3, 0.3, (7, 8, 9))])
    store.set(first, [*store.get(first), Hint(0.5, 0.5, (10, 11, 12))])  # the first photo again, a new colour
    assert store.recent_colours() == [(10, 11, 12), (7, 8, 9), (4, 5, 6), (1, 2, 3)]
    store.set(second, [Hint(0.9, 0.9, (7, 8, 9))])  # a hint moved: no colour given, the order stays
    assert store.recent_colours() == [(10, 11, 12), (7, 8, 9), (4, 5, 6), (1, 2, 3)]
    many = [Hint(0.01 * i, 0.1, (i, i, i)) for i in range(20, 27)]
    store.set(first, many)
    store.set(first, [*many[:2], Hint(0.22, 0.1, (30, 30, 30)), *many[3:]])  # one hint's colour changed with Other…
    assert store.recent_colours()[0] == (30, 30, 30) and len(store.recent_colours()) == 6
    store.flush()
    again = HintStore(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))  # a restart
    assert again.recent_colours() == store.recent_colours()  # as they were, in their order
    store.set(first, [])  # every hint of a colour deleted, then a restart: the colour is still offered
    store.flush()
    assert (30, 30, 30) in HintStore(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)).recent_colours()
    picked = []
    recent = [(10, 11, 12), (4, 5, 6), (1, 2, 3)]
    menu = colour_menu(None, [(4, 5, 6), (200, 0, 0)], picked.append, recent)
    swatches = [a for a in menu.actions() if not a.isSeparator() and "#" in a.text()]
    assert [a.text().split("#")[1] for a in swatches] == ["040506", "c80000", "0a0b0c", "010203"]
    assert any(a.isSeparator() and a.text() == "Used before" for a in menu.actions())
    swatches[2].trigger()
    assert picked == [(10, 11, 12)]
    menu.deleteLater()


def test_after_run_again_a_selection_change_leaves_the_run_summary_on_the_status_line(
        qtbot, make_window, hinted_backend, photo, tmp_path):
    window = _two_done_then_a_hint_on_the_first(qtbot, make_window, hinted_backend, photo, tmp_path)
    assert "colorized with other settings or hints" in window.status_label.text()
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS):
        assert window.batch.run_again()
    summary = window.status_label.text()
    assert "colorized with other settings or hints" not in summary
    _select_row(window, 1)
    assert window.status_label.text() == summary  # not "up to date", not an offer: the run's own line stays


def test_another_working_size_recolours_the_hinted_photo_on_show_and_a_kept_models_line_says_what_run_again_redoes(
        qtbot, make_window, hinted_backend, photo):
    window = _window(qtbot, make_window, hinted_backend, photo)
    _add(qtbot, window, 0.5, 0.5, GREEN)
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS):
        window.batch.start_batch()
    asked = len([s for s in hinted_backend.seen if s[0] == "preview"])
    with qtbot.waitSignal(window.hint_editor.preview_updated, timeout=TIMEOUT_MS):
        window.engine_panel.work_size.setValue(96)  # as a kept model would: the live colour is made anew
    assert len([s for s in hinted_backend.seen if s[0] == "preview"]) == asked + 1
    window.engine_panel.batch_size.setValue(window.engine_panel.batch_size.value() + 1)  # changes no pixel
    qtbot.wait(300)
    assert len([s for s in hinted_backend.seen if s[0] == "preview"]) == asked + 1  # so no model run for it
    window.teach.say_kept("Kept 'Family': it colorizes from now on.")
    line = window.status_label.text()
    assert line.startswith("Kept 'Family': it colorizes from now on. ")  # the change, then what it leaves to do
    assert "The photo was colorized with other settings or hints" in line and "Run Again" in line
    window.engine_panel.work_size.setValue(64)  # back to what the photo was made with: nothing left to offer
    window.teach.say_kept("Kept 'Family': it colorizes from now on.")
    assert window.status_label.text() == "Kept 'Family': it colorizes from now on."


def test_damaged_used_before_colours_in_the_settings_are_left_out_not_a_failed_start(tmp_path):
    from PySide6.QtCore import QSettings

    from gui.model.hint_store import RECENT_KEY, saved_colours

    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    for damaged in ("not json", "[[1, 2]]", '{"a": 1}', "[[300, 0, 0]]", "7"):
        settings.setValue(RECENT_KEY, damaged)
        assert saved_colours(settings) == []
    settings.setValue(RECENT_KEY, "[[1, 2, 3], [250, 0, 9]]")
    assert saved_colours(settings) == [(1, 2, 3), (250, 0, 9)]


def test_save_and_load_hints_open_in_the_queues_folder_not_where_the_app_was_started(
        make_window, backend, photo, monkeypatch):
    from pathlib import Path

    window = make_window(backend)
    asked: list[str] = []
    monkeypatch.setattr("gui.presenters.hint_files.QFileDialog.getSaveFileName",
                        lambda parent, title, start, filters: (asked.append(start), ("", ""))[1])
    monkeypatch.setattr("gui.presenters.hint_files.QFileDialog.getOpenFileName",
                        lambda parent, title, start, filters: (asked.append(start), ("", ""))[1])
    window.hint_files.save_dialog()  # nothing queued: the home folder
    window.queue_presenter.add_paths([photo.parent])
    window.hint_files.save_dialog()
    window.hint_files.load_dialog()
    assert asked == [str(Path.home() / "hints.json"), str(photo.parent / "hints.json"), str(photo.parent)]


def test_after_run_again_of_one_changed_photo_the_line_still_offers_it_for_the_other(
        qtbot, make_window, hinted_backend, photo, tmp_path):
    window = _two_done_then_a_hint_on_the_first(qtbot, make_window, hinted_backend, photo, tmp_path)
    _select_row(window, 1)
    _add(qtbot, window, 0.3, 0.3, GREEN)  # both photos changed now
    assert "All 2 photos were colorized with other settings or hints" in window.status_label.text()
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS):
        assert window.batch.run_again()  # the second alone
    line = window.status_label.text()
    assert line.startswith("1 photo") and "1 of the 2 photos was colorized with other settings or hints" in line
