"""The window's layout and navigation: docks, sizes at 1024 x 700, keyboard, About and Help, drag highlight,
the After pane of the selected photo, broken files, subfolder paths, --output, the memory plot's range.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from helpers import drag_event
from PySide6.QtCore import QMimeData, QPointF, QSettings, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDragLeaveEvent, QDropEvent
from PySide6.QtWidgets import QApplication, QDockWidget, QStyleOptionViewItem

from engine.options import ColorizeSettings
from gui.app import build_window, parse_args
from gui.main_window import MainWindow
from gui.model.queue_model import COL_FILE, COL_MESSAGE
from gui.views.charts import UtilizationPlot, memory_range
from gui.views.docks import PANELS
from gui.views.help_dialogs import MAX_HEIGHT, MAX_WIDTH
from gui.views.queue_table import MIN_FILE, MIN_MESSAGE


def _window(qtbot, backend, tmp_path: Path, width: int = 1024, height: int = 700) -> MainWindow:
    window = MainWindow(backend, QSettings())
    window.engine_panel.set_choice(ColorizeSettings(size=64, batch_size=2))
    window.prefs.set_output_dir(tmp_path / "out")
    qtbot.addWidget(window)
    window.resize(width, height)
    window.show()
    qtbot.waitExposed(window)
    qtbot.waitUntil(lambda: window.docks["engine-dock"].width() <= 400)  # the default layout is in place
    return window


def _run(qtbot, window: MainWindow) -> object:
    with qtbot.waitSignal(window.controller.finished, timeout=60_000) as blocker:
        assert window.batch.start_batch()
    return blocker.args[0]


# -- docks -----------------------------------------------------------------------------------------------------

def test_settings_plots_and_summary_are_docks_listed_in_the_view_menu(make_window, backend):
    window = make_window(backend)
    docks = {d.objectName(): d for d in window.findChildren(QDockWidget)}
    assert set(docks) == {spec.name for spec in PANELS}
    assert docks["engine-dock"].widget().widget() is window.engine_panel  # inside a scroll area
    assert docks["live-dock"].widget() is window.utilization and docks["timing-dock"].widget() is window.timing
    view_menu = window.menus["&View"]
    for dock in docks.values():
        assert dock.toggleViewAction() in view_menu.actions()
        features = dock.features()
        assert features & QDockWidget.DockWidgetFeature.DockWidgetClosable
        assert features & QDockWidget.DockWidgetFeature.DockWidgetFloatable
    assert window.centralWidget() is window.splitters["central"]  # the queue and the preview, nothing else


def test_a_hidden_dock_stays_hidden_after_a_restart_and_comes_back_from_the_view_menu(qtbot, backend, tmp_path):
    window = _window(qtbot, backend, tmp_path)
    assert window.docks["live-dock"].toggleViewAction().isChecked()
    window.docks["live-dock"].toggleViewAction().trigger()  # View > Live off
    window.docks["export-dock"].setFloating(True)
    assert not window.docks["live-dock"].isVisible()
    window.close()

    again = _window(qtbot, backend, tmp_path)
    assert not again.docks["live-dock"].isVisible() and not again.docks["live-dock"].toggleViewAction().isChecked()
    assert again.docks["export-dock"].isFloating()
    assert again.docks["engine-dock"].isVisible()
    again.docks["live-dock"].toggleViewAction().trigger()
    qtbot.waitUntil(lambda: again.docks["live-dock"].isVisible())
    again.actions_by_name["reset_layout"].trigger()
    assert not again.docks["export-dock"].isFloating()


def test_at_1024_by_700_the_previews_are_usable_and_the_message_column_is_in_view(qtbot, backend, tmp_path,
                                                                                   grey_photos):
    window = _window(qtbot, backend, tmp_path, 1024, 700)
    photos = grey_photos(2, folder="album")
    window.queue_presenter.add_paths(photos)
    window.table.selectRow(0)
    qtbot.waitUntil(lambda: window.preview.stack.currentIndex() == 1)
    assert window.preview.before_view.width() >= 300 and window.preview.after_view.width() >= 300
    assert window.preview.before_view.height() >= 250
    header = window.table.horizontalHeader()
    start = header.sectionViewportPosition(COL_MESSAGE)
    assert 0 <= start and start + 150 <= window.table.viewport().width()  # room for the error's first words
    option = QStyleOptionViewItem()
    delegate = window.table.itemDelegateForColumn(COL_FILE)
    delegate.initStyleOption(option, window.queue.index(0, COL_FILE))
    assert option.textElideMode == Qt.TextElideMode.ElideLeft  # "…/IMG_0001.JPG": the end tells photos apart
    assert header.sectionSize(COL_MESSAGE) <= window.table.viewport().width() * 0.4  # not 60% of it, empty
    metrics = window.table.fontMetrics()
    window.engine_panel.compare.setChecked(True)  # the comparison's columns shown too
    for col in range(window.queue.columnCount()):  # every header reads whole ("Difference" was cut)
        title = window.queue.headerData(col, Qt.Orientation.Horizontal)
        assert header.sectionSize(col) >= metrics.horizontalAdvance(title) + 8, title


def test_names_and_messages_share_the_width_the_same_whatever_size_the_window_had_before(qtbot, backend, tmp_path,
                                                                                         grey_photos):
    window = _window(qtbot, backend, tmp_path, 1024, 700)
    window.queue_presenter.add_paths(grey_photos(2))
    header = window.table.horizontalHeader()

    def widths() -> tuple[int, int]:
        return header.sectionSize(COL_FILE), header.sectionSize(COL_MESSAGE)

    small = widths()
    assert small[0] >= MIN_FILE and small[1] >= MIN_MESSAGE
    assert header.length() <= window.table.viewport().width()  # every column in view, no scroll bar
    window.resize(1600, 1000)
    qtbot.waitUntil(lambda: widths()[0] > small[0] + 100 and widths()[1] > small[1] + 50)
    window.resize(1024, 700)  # back: the names are not left wide, pushing the figures out of view
    qtbot.waitUntil(lambda: header.length() <= window.table.viewport().width())
    assert widths()[0] >= MIN_FILE and widths()[1] >= MIN_MESSAGE


def test_at_1600_by_1000_each_preview_side_is_wider_than_the_old_390_px(qtbot, backend, tmp_path, grey_photos):
    window = _window(qtbot, backend, tmp_path, 1600, 1000)
    window.queue_presenter.add_paths(grey_photos(1))
    window.table.selectRow(0)
    qtbot.waitUntil(lambda: window.preview.stack.currentIndex() == 1)
    assert window.preview.before_view.width() >= 550 and window.preview.after_view.width() >= 550


# -- the selected photo, broken files, subfolders ---------------------------------------------------------------

def test_the_selected_photos_after_pane_updates_when_it_finishes(qtbot, backend, tmp_path, grey_photos):
    window = _window(qtbot, backend, tmp_path)
    window.queue_presenter.add_paths(grey_photos(3))
    window.table.selectRow(2)
    qtbot.waitUntil(lambda: window.preview.stack.currentIndex() == 1)
    assert window.preview.after_image().isNull()
    assert "not colorized yet" in window.preview.after_caption.text()
    with qtbot.waitSignal(window.controller.finished, timeout=60_000):
        assert window.batch.start_batch()
    qtbot.waitUntil(lambda: not window.preview.after_image().isNull())
    assert window.table.selectionModel().selectedRows()[0].row() == 2  # still the same row, not re-selected
    assert "strength" in window.preview.after_caption.text()


def test_a_broken_files_preview_shows_its_error_not_the_sample_photos_button(qtbot, backend, tmp_path, grey_photos):
    window = _window(qtbot, backend, tmp_path)
    broken = tmp_path / "in" / "broken.png"
    broken.parent.mkdir(parents=True, exist_ok=True)
    broken.write_bytes(b"\x89PNG\r\n\x1a\nthis is not really a png")
    window.queue_presenter.add_paths([broken, *grey_photos(1)])
    window.table.selectRow(0)
    qtbot.waitUntil(lambda: "cannot show a preview" in window.preview.placeholder.label.text())  # read off-thread
    assert window.preview.stack.currentWidget() is window.preview.placeholder
    assert "broken.png" in window.preview.placeholder.label.text()
    assert not window.preview.placeholder.button.isVisible()

    _run(qtbot, window)
    row = window.queue.row(0)
    assert row.status == "failed" and row.message
    qtbot.waitUntil(lambda: row.message in window.preview.placeholder.label.text())  # the queue's reason shown
    assert not window.preview.placeholder.button.isVisible()


def test_photos_from_subfolders_show_their_path_below_the_dropped_folder(make_window, backend, tmp_path,
                                                                        write_photo):
    window = make_window(backend)
    write_photo(tmp_path / "album" / "2019" / "june" / "a.png")
    write_photo(tmp_path / "album" / "b.png")
    window.queue_presenter.add_paths([tmp_path / "album"])
    shown = {window.queue.data(window.queue.index(i, COL_FILE)) for i in range(window.queue.rowCount())}
    assert shown == {"album/2019/june/a.png", "album/b.png"}  # the folder's own name leads, as in the output


# -- keyboard ---------------------------------------------------------------------------------------------------

def test_tab_leaves_the_queue_table_and_the_view_controls_take_focus(qtbot, make_window, backend, grey_photos):
    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(3))
    assert not window.table.tabKeyNavigation()
    window.activateWindow()
    window.table.setFocus()
    qtbot.waitUntil(window.table.hasFocus)
    qtbot.keyClick(window.table, Qt.Key.Key_Tab)
    qtbot.waitUntil(lambda: not window.table.hasFocus())
    p = window.preview
    # Side by side / Wipe are an exclusive pair: Tab reaches the checked one, the arrow keys the other.
    checked = p.bar.wipe_button if p.bar.wipe_button.isChecked() else p.bar.side_button
    for w in (checked, p.bar.fit_button, p.bar.actual_button, p.bar.strength, p.wipe.slider):
        assert w.focusPolicy() & Qt.FocusPolicy.TabFocus and w.focusPolicy() & Qt.FocusPolicy.ClickFocus, w


def test_tab_stops_only_where_focus_shows_and_reaches_the_export_fields_soon(qtbot, make_window, backend,
                                                                             grey_photos):
    """Charts, the photo views and the panels' scroll areas take no Tab stop: a person cannot see focus there."""
    import pyqtgraph as pg
    from PySide6.QtWidgets import QGraphicsView, QScrollArea

    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(2))
    window.docks["export-dock"].raise_()
    window.activateWindow()
    window.table.setFocus()
    qtbot.waitUntil(window.table.hasFocus)
    stops = []
    for _ in range(40):
        window.focusNextChild()
        stops.append(QApplication.focusWidget())
        if stops[-1] is window.export_panel.folder:
            break
    assert window.export_panel.folder in stops and len(stops) <= 14, [type(w).__name__ for w in stops]
    assert not [w for w in stops if isinstance(w, pg.PlotWidget | QGraphicsView | QScrollArea)]


def test_strength_has_shortcuts_named_in_its_tooltip_and_in_help(make_window, backend):
    window = make_window(backend)
    stronger, weaker = window.actions_by_name["stronger"], window.actions_by_name["weaker"]
    assert stronger.shortcut().toString() == "Ctrl+]" and weaker.shortcut().toString() == "Ctrl+["
    assert "Ctrl+]" in window.preview.bar.strength.toolTip() and "Ctrl+[" in window.preview.bar.strength.toolTip()
    assert "Ctrl+]" in window.help.help_text()
    start = window.preview.bar.strength.value()
    stronger.trigger()
    assert window.preview.bar.strength.value() == start + 10
    weaker.trigger()
    weaker.trigger()
    assert window.preview.bar.strength.value() == start - 10


# -- About and Help ---------------------------------------------------------------------------------------------

def test_about_and_help_are_short_and_fit_on_the_screen(qtbot, make_window, backend):
    window = make_window(backend)
    window.help.show_about()
    qtbot.waitExposed(window.help.about_dialog)
    about = window.help.about_dialog
    assert about.width() <= MAX_WIDTH and about.height() <= MAX_HEIGHT <= 700
    text = window.help.about_text()
    assert "Colorizer 0." in text and "MIT" in text and "LGPL" in text
    assert "colorizer.md" in text and "href='file:" in text  # a link to the model card, not the card itself
    about.accept()

    window.help.show_help()
    qtbot.waitExposed(window.help.help_dialog)
    assert window.help.help_dialog.width() <= MAX_WIDTH and window.help.help_dialog.height() <= MAX_HEIGHT
    text = window.help.help_text()
    assert "Summary" in text and "Ctrl+Return" in text and "colorizer.log" in text
    window.help.help_dialog.accept()


# -- drag highlight ---------------------------------------------------------------------------------------------

def test_the_window_is_highlighted_while_files_are_dragged_over_it(make_window, backend, tmp_path, write_photo):
    window = make_window(backend)
    photo = write_photo(tmp_path / "a.png")
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(photo))])
    centre = QPointF(window.rect().center())
    args = (Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    assert not window.queue_presenter.drop_highlight.isVisible()
    QApplication.sendEvent(window, drag_event(QDragEnterEvent, centre, *args))
    highlight = window.queue_presenter.drop_highlight
    assert highlight.isVisible() and highlight.geometry() == window.rect()
    QApplication.sendEvent(window, QDragLeaveEvent())
    assert not window.queue_presenter.drop_highlight.isVisible()
    QApplication.sendEvent(window, drag_event(QDragEnterEvent, centre, *args))
    QApplication.sendEvent(window, drag_event(QDropEvent, centre, *args))
    assert not window.queue_presenter.drop_highlight.isVisible() and window.queue.rowCount() == 1


# -- the wipe when zoomed ---------------------------------------------------------------------------------------

def test_the_wipe_line_follows_its_slider_when_zoomed_and_panned(before_after):
    view = before_after
    L = np.tile(np.linspace(20, 90, 400, dtype=np.float32), (300, 1))
    view.show_photo(L, np.zeros((300, 400, 2), np.float32))
    view.set_mode("wipe")
    view.before_view.zoom_by(4.0)
    view.before_view.horizontalScrollBar().setValue(view.before_view.horizontalScrollBar().maximum() // 3)
    for fraction in (0.25, 0.5, 0.9):
        view.wipe.slider.setValue(round(fraction * 1000))
        x = view.before_view.mapFromScene(QPointF(view.wipe.line.line().x1(), 0)).x()
        assert x == pytest.approx(fraction * view.before_view.viewport().width(), abs=3)


# -- --output and the memory plot -------------------------------------------------------------------------------

def test_output_on_the_command_line_is_for_that_run_and_keeps_the_saved_folder(qtbot, backend, tmp_path):
    saved = tmp_path / "saved-folder"
    QSettings().setValue("export/output_dir", str(saved))
    window = build_window(parse_args(["--output", str(tmp_path / "this-run")]), backend, QSettings())
    qtbot.addWidget(window)
    assert window.export_panel.choice().output_dir == tmp_path / "this-run"
    window.close()
    assert Path(QSettings().value("export/output_dir")) == saved

    again = build_window(parse_args([]), backend, QSettings())
    qtbot.addWidget(again)
    assert again.export_panel.choice().output_dir == saved
    again.prefs.set_output_dir(tmp_path / "chosen")  # chosen in the window: that one is remembered
    again.close()
    assert Path(QSettings().value("export/output_dir")) == tmp_path / "chosen"


def test_memory_plot_keeps_a_sensible_minimum_span(qtbot):
    low, high = memory_range(np.array([511.52, 511.58, 511.55]))
    assert high - low >= 50 and low <= 511.52 and high >= 511.58
    low, high = memory_range(np.array([20_000.0, 20_001.0]))
    assert high - low >= 2_000  # 10% of the value
    low, high = memory_range(np.array([100.0, 900.0]))
    assert low <= 100 and high >= 900 and low >= 0

    plot = UtilizationPlot()
    qtbot.addWidget(plot)
    for t in range(3):
        plot.add_sample(SimpleNamespace(kind="cpu", label="CPU utilization / process memory MB", time=float(t),
                                        busy_percent=10.0, memory_mb=511.5 + t * 0.03))
    y_low, y_high = plot.memory_plot.getPlotItem().viewRange()[1]
    assert y_high - y_low >= 50


def test_a_toolbar_hint_on_the_status_bar_leaves_the_progress_bar_its_width(qtbot, backend, tmp_path):
    window = _window(qtbot, backend, tmp_path, 1600, 1000)
    qtbot.wait(50)
    before = window.progress.width()
    window.statusBar().showMessage("Colorize the queued photos (Ctrl+R)")  # what hovering a toolbar button does
    qtbot.wait(50)
    assert window.progress.isVisible() and window.progress.width() == before
    window.close()
