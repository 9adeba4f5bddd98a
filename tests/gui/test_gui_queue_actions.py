"""What a photo app offers on its queue: Undo/Redo of removing photos, opening a result by double-click or
from the context menu (and saying so when nothing can open it), and exporting a before/after image.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from gui.views.comparison_export import BAND, GAP, compose, qimage_to_rgb


class _Desktop:
    """Stands in for QDesktopServices: records what was opened, answers ``answer``."""

    opened: list[str] = []
    answer = True

    @classmethod
    def openUrl(cls, url):  # noqa: N802 - Qt's name
        cls.opened.append(url.toLocalFile())
        return cls.answer


def _desktop(monkeypatch, answer: bool) -> type[_Desktop]:
    monkeypatch.setattr("gui.presenters.queue_menu.QDesktopServices", _Desktop)
    _Desktop.opened, _Desktop.answer = [], answer
    return _Desktop


def _names(window) -> list[str]:
    return [r.path.name for r in window.queue.rows()]


def _run(qtbot, window) -> None:
    with qtbot.waitSignal(window.controller.finished, timeout=60_000):
        assert window.batch.start_batch()


def _double_click(qtbot, widget, pos) -> None:
    """Press-release then the double-click event, as a mouse sends them (QTest's dclick alone has no press)."""
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton, pos=pos)
    qtbot.mouseDClick(widget, Qt.MouseButton.LeftButton, pos=pos)


def test_removing_photos_then_undo_restores_them_in_place_with_their_state_and_redo_removes_again(
        make_window, backend, grey_photos):
    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(5))
    names = _names(window)
    keys = [r.key for r in window.queue.rows()]
    window.queue.set_status([keys[1]], "failed", message="cannot decode")
    assert [a.text() for a in window.menus["&Edit"].actions()][:2] == ["&Undo", "&Redo"]
    undo, redo = window.actions_by_name["undo"], window.actions_by_name["redo"]
    assert not undo.isEnabled()

    window.table.selectRow(1)
    window.table.selectionModel().select(window.queue.index(3, 0), window.table.selectionModel().SelectionFlag.Select
                                         | window.table.selectionModel().SelectionFlag.Rows)
    window.queue_presenter.remove_selected()
    assert _names(window) == [names[0], names[2], names[4]]
    assert undo.isEnabled() and undo.text() == "&Undo Remove 2 photos"

    undo.trigger()
    assert _names(window) == names
    row = window.queue.row(1)
    assert (row.key, row.status, row.message) == (keys[1], "failed", "cannot decode")
    assert redo.isEnabled()

    redo.trigger()
    assert _names(window) == [names[0], names[2], names[4]]

    window.queue_presenter.clear_queue()
    assert window.queue.rowCount() == 0
    undo.trigger()
    assert _names(window) == [names[0], names[2], names[4]]
    undo.trigger()
    assert _names(window) == names


def test_undo_is_off_while_a_batch_runs(make_window, slow_backend, grey_photos, qtbot):
    window = make_window(slow_backend)
    window.queue_presenter.add_paths(grey_photos(4))
    window.table.selectRow(0)
    window.queue_presenter.remove_selected()
    assert window.actions_by_name["undo"].isEnabled()
    with qtbot.waitSignal(window.controller.finished, timeout=60_000):
        assert window.batch.start_batch()
        assert not window.actions_by_name["undo"].isEnabled()
        window.actions_by_name["undo"].trigger()  # ignored: the batch holds the rows' keys
        assert window.queue.rowCount() == 3
    assert window.actions_by_name["undo"].isEnabled()


def test_double_click_on_a_done_row_opens_its_result_and_says_so_when_nothing_can(
        make_window, backend, grey_photos, qtbot, monkeypatch):
    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(2))
    _run(qtbot, window)
    output = window.queue.row(1).output
    assert output is not None and output.is_file()
    desktop = _desktop(monkeypatch, True)
    rect = window.table.visualRect(window.queue.index(1, 0))
    _double_click(qtbot, window.table.viewport(), rect.center())
    assert desktop.opened == [str(output)]
    assert "Opened" in window.status_label.text()

    desktop.answer = False
    _double_click(qtbot, window.table.viewport(), rect.center())
    assert desktop.opened == [str(output)] * 2
    assert window.status_label.text().startswith(f"Could not open {output.name}")


def test_context_menu_offers_open_show_and_copy_and_copy_path_puts_the_result_on_the_clipboard(
        make_window, backend, grey_photos, qtbot, monkeypatch):
    window = make_window(backend)
    photos = grey_photos(2)
    window.queue_presenter.add_paths(photos)
    window.table.selectRow(0)
    menu = window.queue_menu.build_menu()
    actions = {a.text(): a for a in menu.actions() if a.text()}
    assert {"Open &Result", "Open &Original", "Show in &Folder", "&Copy Path", "&Remove Selected"} <= set(actions)
    assert not actions["Open &Result"].isEnabled()  # not colorized yet
    actions["&Copy Path"].trigger()
    assert QGuiApplication.clipboard().text() == str(photos[0])

    _run(qtbot, window)
    window.table.selectRow(0)
    actions = {a.text(): a for a in window.queue_menu.build_menu().actions() if a.text()}
    output = window.queue.row(0).output
    actions["&Copy Path"].trigger()
    assert QGuiApplication.clipboard().text() == str(output)
    desktop = _desktop(monkeypatch, True)
    actions["Open &Result"].trigger()
    actions["Open &Original"].trigger()
    actions["Show in &Folder"].trigger()
    assert desktop.opened == [str(output), str(photos[0]), str(output.parent)]


def test_open_output_folder_says_in_the_window_when_nothing_could_be_launched(make_window, backend, monkeypatch):
    window = make_window(backend)
    desktop = _desktop(monkeypatch, False)
    window.actions_by_name["open_output"].trigger()
    folder = window.export_panel.choice().output_dir
    assert desktop.opened == [str(folder)]
    assert window.status_label.text().startswith("Could not open the output folder")
    window.set_status("")
    window.export_panel.open_button.click()
    assert len(desktop.opened) == 2 and "Could not open" in window.status_label.text()


def test_compose_puts_before_left_and_after_right_under_their_captions():
    grey = np.full((30, 50, 3), 120, np.uint8)
    colour = np.zeros((40, 60, 3), np.uint8)
    colour[..., 0] = 200
    sheet = qimage_to_rgb(compose(grey, colour, "a.png"))
    assert sheet.shape == (BAND + 40, 50 + GAP + 60, 3)
    photos = sheet[BAND + 6: BAND + 34].astype(int)  # the shorter before side is centred: rows 5..35
    left, right = photos[:, 2:48], photos[:, 50 + GAP + 2:-2]
    assert (left == 120).all()
    assert (right[..., 0] == 200).all() and (right[..., 1] == 0).all()
    assert (photos[:, 50:50 + GAP] == 255).all()  # the white gap between them
    assert (sheet[:BAND, :50] < 128).any() and (sheet[:BAND, 50 + GAP:] < 128).any()  # both captions drawn


def test_a_name_too_long_for_the_captions_is_cut_the_same_way_on_both_sides():
    from PySide6.QtGui import QFont, QFontMetrics

    from gui.views.comparison_export import caption_pair, strength_note

    metrics = QFontMetrics(QFont())
    name = "gcompris_cat-fish1-from-the-attic-box-of-1950s-prints.jpg"
    before, after = caption_pair(name, strength_note(150), metrics, 300)
    assert before.startswith("Before · ") and after.startswith("After · ") and after.endswith(" · strength 150%")
    shown = before.removeprefix("Before · ")
    assert "…" in shown and after == f"After · {shown} · strength 150%"  # one cut, the same on both sides
    assert max(metrics.horizontalAdvance(before), metrics.horizontalAdvance(after)) <= 300
    assert caption_pair("a.png", strength_note(100), metrics, 300) == ("Before · a.png", "After · a.png")
    assert caption_pair(name, strength_note(150), metrics, 20)[0] == "Before · …"  # no room: still said to be cut
    assert caption_pair("", "", metrics, 300) == ("Before", "After")


def test_export_comparison_writes_one_side_by_side_image_grey_left_colour_right(
        make_window, backend, grey_photos, qtbot, monkeypatch, tmp_path):
    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(2, size=(80, 120)))
    _run(qtbot, window)
    window.table.selectRow(1)
    target = tmp_path / "compare.png"
    monkeypatch.setattr("gui.views.comparison_export.QFileDialog.getSaveFileName",
                        lambda *a, **k: (str(target), "PNG image (*.png)"))
    assert window.viewer.export_comparison() == target
    image = cv2.cvtColor(cv2.imread(str(target)), cv2.COLOR_BGR2RGB).astype(int)
    side = window.preview.before_image().width()
    assert abs(image.shape[1] - 2 * side) <= GAP + 2
    photo = image[-side // 2:]  # below the caption band
    left, right = photo[:, : side - 2], photo[:, side + GAP + 2:]
    spread = lambda a: np.abs(a - a.mean(axis=2, keepdims=True)).mean()  # noqa: E731 - 0 for grey
    assert spread(left) < 0.5
    assert spread(right) > 2.0
    assert "Exported the comparison" in window.status_label.text()


def _save_as(monkeypatch, target: Path, pick) -> list[str]:
    """Answers Export Comparison's save dialog with ``target`` and the filter ``pick`` chooses of those offered;
    returns the filters it offered.
    """
    offered: list[str] = []

    def save_dialog(parent, title, start, filters, selected):
        offered.extend(filters.split(";;"))
        return str(target), pick(offered)

    monkeypatch.setattr("gui.views.comparison_export.QFileDialog.getSaveFileName", save_dialog)
    return offered


def test_export_comparison_without_a_colorized_photo_says_so(make_window, backend):
    window = make_window(backend)
    assert window.viewer.export_comparison() is None
    assert window.status_label.text().startswith("Nothing to export")


@pytest.mark.parametrize("size", ["full size", "preview size"])
def test_export_comparison_of_a_large_photo_offers_its_full_size(size, make_window, backend, grey_photos, qtbot,
                                                                  monkeypatch, tmp_path):
    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(1, size=(900, 1200)))  # larger than the 800 px preview
    _run(qtbot, window)
    window.table.selectRow(0)
    target = tmp_path / "compare.png"
    offered = _save_as(monkeypatch, target, lambda filters: next(f for f in filters
                                                                 if f.startswith(f"PNG image, {size}")))
    assert window.viewer.export_comparison() == target
    assert offered[0].startswith("PNG image, full size")  # the default
    image = cv2.imread(str(target)).astype(int)
    height, width = image.shape[:2]
    side = 1200 if size == "full size" else window.preview.before_image().width()
    assert (width, height) == (2 * side + GAP, BAND + side * 3 // 4)
    spread = lambda a: np.abs(a - a.mean(axis=2, keepdims=True)).mean()  # noqa: E731 - 0 for grey
    assert spread(image[BAND:, : side - 2]) < 0.5 and spread(image[BAND:, side + GAP + 2:]) > 2.0


def test_export_comparison_of_a_photo_hinted_since_its_run_offers_only_the_previews_size(
        make_window, backend, grey_photos, qtbot, monkeypatch, tmp_path):
    """The output on disk has not the hints on screen: a full-size export of it would show the colours they fixed."""
    from engine.hints import Hint

    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(1, size=(900, 1200)))
    _run(qtbot, window)
    window.table.selectRow(0)
    window.hint_store.set(window.queue.row(0).path, [Hint(0.5, 0.5, (20, 90, 200))])
    offered = _save_as(monkeypatch, tmp_path / "compare.png", lambda filters: filters[0])
    assert window.viewer.export_comparison() == tmp_path / "compare.png"
    assert not [f for f in offered if "full size" in f]
    assert "at the preview's size: the hints changed since the photo was colorized" in window.status_label.text()


def test_export_comparison_opens_in_the_photos_folder_while_the_output_folder_is_not_made_yet(
        make_window, backend, grey_photos, qtbot, monkeypatch, tmp_path):
    window = make_window(backend)
    photo = grey_photos(1)[0]
    window.queue_presenter.add_paths([photo])
    _run(qtbot, window)
    window.table.selectRow(0)
    window.prefs.set_output_dir(tmp_path / "not made yet")
    starts = []
    monkeypatch.setattr("gui.views.comparison_export.QFileDialog.getSaveFileName",
                        lambda parent, title, start, *a: (starts.append(Path(start)), ("", ""))[1])
    assert window.viewer.export_comparison() is None  # the dialog cancelled
    assert starts[0].parent == photo.parent  # not the program's working folder


def test_ctrl_end_and_ctrl_home_select_the_last_and_first_photo_not_only_move_the_outline(
        make_window, backend, grey_photos, qtbot):
    from PySide6.QtCore import Qt

    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(4))
    table = window.table
    table.setFocus()
    table.selectRow(1)
    try:
        qtbot.keyClick(table, Qt.Key.Key_End, Qt.KeyboardModifier.ControlModifier)
        assert table.selected_rows() == [3]
        qtbot.keyClick(table, Qt.Key.Key_Home, Qt.KeyboardModifier.ControlModifier)
        assert table.selected_rows() == [0]
        qtbot.keyClick(table, Qt.Key.Key_Down, Qt.KeyboardModifier.ShiftModifier)  # the rest as before: Shift extends
        assert table.selected_rows() == [0, 1]
    finally:
        qtbot.keyRelease(table, Qt.Key.Key_Shift)  # Qt keeps the last event's modifiers: a later selectRow read Shift


def test_quitting_while_a_batch_runs_is_asked_and_no_keeps_the_window_and_its_batch(make_window, slow_backend,
                                                                                   grey_photos, qtbot):
    asked: list[int] = []
    answer = [False]
    idle = make_window(slow_backend)
    idle.ask_quit = lambda parent, left: (asked.append(left), answer[0])[1]
    assert idle.close() and asked == []  # nothing running: closed without a question
    window = make_window(slow_backend)
    window.queue_presenter.add_paths(grey_photos(6))
    window.ask_quit = idle.ask_quit
    with qtbot.waitSignal(window.controller.finished, timeout=60_000):
        assert window.batch.start_batch()
        assert not window.close()  # No: the window stays, the batch goes on
        assert len(asked) == 1 and 1 <= asked[0] <= 6 and window.isVisible() and window.controller.running
        answer[0] = True
        assert window.close()  # Yes: it closes, the batch cancelled and joined
        assert len(asked) == 2 and not window.controller.running
