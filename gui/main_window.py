"""The main window: queue, previews, options and figures, wired to one ``BatchController``.

Everything engine-related arrives through the injected ``backend`` (``gui.worker.Backend``),
so this module imports neither torch nor the engine's model code.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QSettings, Qt, QTimer, QUrl, Slot
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QDesktopServices,
    QDragEnterEvent,
    QDragLeaveEvent,
    QDropEvent,
    QKeySequence,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHeaderView,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QSplitter,
    QTableView,
)

from engine.imageio import IMAGE_EXTENSIONS
from engine.messages import counted
from engine.options import Status
from gui.logfile import log_file
from gui.model import settings as app_settings
from gui.model.hint_store import HintStore
from gui.model.preview_loader import PreviewLoader
from gui.model.previews import PreviewCache
from gui.model.queue_model import COL_FILE, COMPARE_COLUMNS, FileNameDelegate, QueueModel
from gui.model.queue_undo import QueueHistory
from gui.model.request import BatchRequest
from gui.model.run_keys import changed_text, nothing_to_run_text, out_of_date, run_key
from gui.presenters.batch_controller import BatchController, progress_format
from gui.presenters.hints import HintEditor
from gui.presenters.queue_menu import QueueMenu, open_path
from gui.views.busy import BusyCursor
from gui.views.charts import SummaryPanel, TimingChart, UtilizationPlot
from gui.views.comparison_export import export_dialog, full_size
from gui.views.docks import PANELS, STATE_VERSION, DropHighlight, build_docks, scrolled, size_default_docks
from gui.views.engine_panel import EnginePanel
from gui.views.export_panel import ExportPanel
from gui.views.help_dialogs import about_html, help_html, text_dialog
from gui.views.preview import BeforeAfterView

log = logging.getLogger(__name__)

SAMPLES_DIR = Path(__file__).resolve().parent.parent / "resources" / "samples"
MODEL_CARD = Path(__file__).resolve().parent.parent / "resources" / "models" / "colorizer.md"
PREVIEW_SIZE = 800  # longest side of the previews the worker sends back
LOADING_AFTER_MS = 250  # a photo read from disk for longer than this shows "Loading…" instead of the last one
SPLITTERS = ("central",)  # the queue over the preview; everything else is in docks (gui/docks.py)


def local_paths(urls: Iterable[QUrl]) -> list[Path]:
    return [Path(u.toLocalFile()) for u in urls if u.isLocalFile() and u.toLocalFile()]


__all__ = ["MainWindow", "about_html", "local_paths"]


class MainWindow(QMainWindow):
    def __init__(self, backend: Any, settings: QSettings | None = None, samples_dir: Path | None = None) -> None:
        super().__init__()
        self.backend = backend
        self.qsettings = settings if settings is not None else QSettings()
        self.samples_dir = samples_dir or SAMPLES_DIR
        self.queue = QueueModel(self)
        self.controller = BatchController(backend.make_worker, self)
        self.previews = PreviewCache()
        self._latest_key: int | None = None
        self._shown_key: int | None = None
        self._batch_failed = False
        self._offering = False  # the status bar offers Run Again for photos whose settings changed
        self._loading_key: int | None = None  # the photo being read from disk to be shown
        self._busy_cursor = BusyCursor()
        self.loader = PreviewLoader(PREVIEW_SIZE)
        self.loader.loaded.connect(self._on_loaded)
        self.loader.failed.connect(self._on_load_failed)
        self._run_only_output: Path | None = None  # --output: used for this run, never saved
        self._saved_output: Path | None = None
        self.sampler: Any = None
        self.setWindowTitle("Colorizer")
        self.setAcceptDrops(True)
        self._build_widgets()
        self._build_actions()
        self._connect()
        self._restore()
        self._start_sampler(self.engine_panel.resolved_device())
        self._update_actions()

    # -- construction -------------------------------------------------------------------------------
    def _build_widgets(self) -> None:
        self.table = QTableView()
        self.table.setModel(self.queue)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.table.setWordWrap(False)
        self.table.setTabKeyNavigation(False)  # Tab leaves the table; the arrow keys move between rows
        self.table.setItemDelegateForColumn(COL_FILE, FileNameDelegate(self.table))  # "…ding/IMG_0001.JPG"
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(False)
        header.setSectionResizeMode(COL_FILE, QHeaderView.ResizeMode.Stretch)  # the names take what is left
        header.setMinimumSectionSize(40)
        padding = 2 * self.table.fontMetrics().horizontalAdvance("M")  # the header's margins and sort mark
        for col, width in enumerate((170, 62, 58, 62, 62, 70, 64, 220)):
            title = str(self.queue.headerData(col, Qt.Orientation.Horizontal))
            header.resizeSection(col, max(width, self.table.fontMetrics().horizontalAdvance(title) + padding))
        self.preview = BeforeAfterView()
        self.engine_panel = EnginePanel(self.backend.available_options())
        self.export_panel = ExportPanel()
        self.utilization = UtilizationPlot()
        self.timing = TimingChart()
        self.summary = SummaryPanel()

        # The queue over the preview in the middle; settings and figures are docks around it.
        self.splitters = {name: QSplitter(Qt.Orientation.Vertical) for name in SPLITTERS}
        central = self.splitters["central"]
        central.addWidget(self.table)
        central.addWidget(self.preview)
        central.setStretchFactor(1, 1)
        central.setSizes([220, 520])
        central.setChildrenCollapsible(False)
        self.setCentralWidget(central)
        self.docks = build_docks(self, {"engine-dock": scrolled(self.engine_panel),
                                        "export-dock": scrolled(self.export_panel),
                                        "summary-dock": scrolled(self.summary), "live-dock": self.utilization,
                                        "timing-dock": self.timing})
        self._default_state = self.saveState(STATE_VERSION)
        self.drop_highlight = DropHighlight(self)

        self.status_label = QLabel("Ready")
        self.progress = QProgressBar()
        self.progress.setMinimumWidth(260)
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("idle")
        self.statusBar().addWidget(self.status_label, 1)
        self.statusBar().addPermanentWidget(self.progress)

    def _action(self, text: str, slot: Any, shortcut: Any = None, tip: str = "", checkable: bool = False) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        if tip:
            action.setStatusTip(tip)
            action.setToolTip(f"{tip} ({action.shortcut().toString()})" if shortcut is not None else tip)
        action.setCheckable(checkable)
        (action.toggled if checkable else action.triggered).connect(slot)
        return action

    def _build_actions(self) -> None:
        a = self.actions_by_name = {
            "add_files": self._action("Add &Photos…", self.choose_files, QKeySequence.StandardKey.Open,
                                      "Queue photos"),
            "add_folder": self._action("Add &Folder…", self.choose_folder, "Ctrl+Shift+O",
                                       "Queue every photo in a folder and its subfolders"),
            "samples": self._action("Try the &Sample Photos", self.queue_samples, None,
                                    "Queue the grayscale sample photos that come with Colorizer"),
            "output": self._action("Choose &Output Folder…", self.export_panel.choose_folder, "Ctrl+Shift+E",
                                   "Where the colour photos are written"),
            "open_output": self._action("Open Output Fol&der", self.open_output_folder, "Ctrl+E",
                                        "Show the output folder in the file manager"),
            "export_comparison": self._action("E&xport Comparison…", self.export_comparison, "Ctrl+Shift+S",
                                              "Save the photo on screen as one before/after image, captioned"),
            # Ctrl+Q spelled out: StandardKey.Quit is empty on Windows and some Linux platform themes.
            "quit": self._action("&Quit", self.close, "Ctrl+Q"),
            "remove": self._action("&Remove Selected", self.remove_selected, QKeySequence.StandardKey.Delete,
                                   "Take the selected photos off the queue"),
            "clear": self._action("&Clear Queue", self.clear_queue, "Ctrl+Shift+Backspace", "Empty the queue"),
            "start": self._action("&Start", lambda: self.start_batch(), "Ctrl+Return", "Colorize the queued photos"),
            "run_again": self._action("Run &Again", self.run_again, "Ctrl+R",
                                      "Colorize the selected photos (or all) again, with the current settings"),
            "pause": self._action("&Pause", self.set_paused, "Ctrl+P", "Pause after the photos in progress",
                                  checkable=True),
            "cancel": self._action("&Cancel", self.cancel_batch, "Esc",
                                   "Stop after the photos in progress; nothing is left half-written"),
            "wipe": self._action("&Wipe Between Before and After", self._toggle_wipe, "Ctrl+T",
                                 "Switch between side by side and a wipe", checkable=True),
            "zoom_in": self._action("Zoom &In", self.preview.zoom_in, QKeySequence.StandardKey.ZoomIn),
            "zoom_out": self._action("Zoom &Out", self.preview.zoom_out, QKeySequence.StandardKey.ZoomOut),
            "fit": self._action("&Fit to Window", self.preview.fit, "Ctrl+0"),
            "actual": self._action("&Actual Size", self.preview.actual_size, "Ctrl+1"),
            "stronger": self._action("&Stronger Colour", lambda: self.preview.step_strength(1), "Ctrl+]",
                                     "Raise the colour strength by 10%"),
            "weaker": self._action("W&eaker Colour", lambda: self.preview.step_strength(-1), "Ctrl+[",
                                   "Lower the colour strength by 10%"),
            "reset_layout": self._action("&Reset Panel Layout", self.reset_layout, None,
                                         "Put the panels back where they start"),
            "help": self._action("Colorizer &Help", self.show_help, QKeySequence.StandardKey.HelpContents,
                                 "What the panels mean, the keyboard shortcuts, and where the log is"),
            "log": self._action("Show &Log File", self.show_log_file, None,
                                "Open the log, to see what went wrong or attach it to a bug report"),
            "about": self._action("&About Colorizer", self.show_about),
        }
        self.history = QueueHistory(self.queue, lambda: self.controller.running, self)
        a["undo"], a["redo"] = self.history.undo_action, self.history.redo_action
        self.hint_store = HintStore(self.qsettings, self)
        self.hint_editor = HintEditor(self.preview, self.hint_store, self.history.stack, self.backend.make_recolourer(),
                                      self.engine_panel.choice, self.set_status,
                                      lambda: [(r.path, r.root) for r in self.queue.rows()], self)
        a["show_hints"] = self.hint_editor.show_action
        a["save_hints"], a["load_hints"] = self.hint_editor.save_action, self.hint_editor.load_action
        menus = {"&File": ("add_files", "add_folder", "samples", None, "output", "open_output", "export_comparison",
                           None, "load_hints", "save_hints",
                           None, "quit"),
                 "&Edit": ("undo", "redo"),
                 "&Queue": ("remove", "clear"), "&Batch": ("start", "run_again", "pause", "cancel"),
                 "&View": ("wipe", "show_hints", None, "zoom_in", "zoom_out", "fit", "actual", None, "stronger",
                           "weaker"),
                 "&Help": ("help", "log", None, "about")}
        self.menus = {}
        for title, names in menus.items():
            menu = self.menus[title] = self.menuBar().addMenu(title)
            for name in names:
                if name is None:
                    menu.addSeparator()
                else:
                    menu.addAction(a[name])
        toolbar = self.addToolBar("Main")
        toolbar.setObjectName("main-toolbar")
        toolbar.setMovable(False)
        toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        for name in ("add_files", "add_folder", "samples", None, "start", "run_again", "pause", "cancel", None,
                     "remove", "clear", None, "open_output"):
            if name is None:
                toolbar.addSeparator()
            else:
                toolbar.addAction(a[name])
        panels = self.menus["&View"].addSeparator()
        panels.setText("Panels")
        self.menus["&View"].addActions([dock.toggleViewAction() for dock in self.docks.values()])
        self.menus["&View"].addAction(a["reset_layout"])
        self.preview.strength.setToolTip(
            f"{self.preview.strength.toolTip()} ({self._shortcut('weaker')} weaker, "
            f"{self._shortcut('stronger')} stronger)")
        self.queue_menu = QueueMenu(self.table, self.queue, self.set_status,
                                    extra=[a["run_again"], a["remove"], a["clear"]], parent=self)
        # The panel's button too: a failure to launch a file manager must show in the window, not only on stderr.
        self.export_panel.open_button.clicked.disconnect(self.export_panel.open_folder)
        self.export_panel.open_button.clicked.connect(self.open_output_folder)
        self.preview.set_placeholder_action(a["samples"])

    def _connect(self) -> None:
        c = self.controller
        c.started.connect(self._on_started)
        c.image_started.connect(self._on_image_started)
        c.image_done.connect(self._on_image_done)
        c.failed.connect(self._on_failed)
        c.finished.connect(self._on_finished)
        c.running_changed.connect(self._update_actions)
        c.running_changed.connect(self.history.refresh)
        c.paused_changed.connect(self._on_paused)
        c.tick.connect(self._show_progress)
        for changed in (self.engine_panel.changed, self.export_panel.changed, self.preview.strength_changed):
            changed.connect(lambda *_: self._offer_run_again())
        self.hint_store.changed.connect(lambda _path: self._offer_run_again("Hints"))
        self.table.selectionModel().selectionChanged.connect(self._on_selection)
        self.queue.rowsInserted.connect(self._update_actions)
        self.queue.rowsRemoved.connect(self._update_actions)
        self.queue.rowsRemoved.connect(self._forget_removed_preview)
        self.queue.modelReset.connect(self._update_actions)
        self.engine_panel.compare.toggled.connect(self._update_compare_columns)
        self.engine_panel.device_changed.connect(self._start_sampler)
        self.preview.wipe_button.toggled.connect(self.actions_by_name["wipe"].setChecked)

    # -- settings -------------------------------------------------------------------------------------
    def current_settings(self) -> app_settings.AppSettings:
        export = replace(self.export_panel.choice(), strength=self.preview.strength.value() / 100)
        return app_settings.AppSettings(self.engine_panel.choice(), export,
                                        compare=self.engine_panel.compare.isChecked(), preview_mode=self.preview.mode)

    def _restore(self) -> None:
        s = app_settings.load(self.qsettings)
        self.engine_panel.set_choice(s.model)
        self.engine_panel.compare.setChecked(s.compare)
        self.export_panel.set_choice(s.export)
        self.preview.strength.setValue(round(100 * s.export.strength))
        self._saved_output = s.export.output_dir
        self.preview.set_mode(s.preview_mode)
        geometry = self.qsettings.value("window/geometry")
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
        else:
            screen = self.screen().availableGeometry()
            self.resize(min(1400, screen.width() * 9 // 10), min(860, screen.height() * 9 // 10))
        state = self.qsettings.value("window/state")
        # First run, or a state saved by the old splitter layout: the default dock sizes once shown.
        self._size_docks_on_show = not (isinstance(state, QByteArray) and self.restoreState(state, STATE_VERSION))
        for name, splitter in self.splitters.items():
            value = self.qsettings.value(f"window/splitter/{name}")
            if isinstance(value, QByteArray):
                splitter.restoreState(value)
        self._update_compare_columns()

    def save_settings(self) -> None:
        s = self.current_settings()
        if self._run_only_output is not None and s.export.output_dir == self._run_only_output:
            s = replace(s, export=replace(s.export, output_dir=self._saved_output or s.export.output_dir))
        app_settings.save(self.qsettings, s)
        self.qsettings.setValue("window/geometry", self.saveGeometry())
        self.qsettings.setValue("window/state", self.saveState(STATE_VERSION))
        for name, splitter in self.splitters.items():
            self.qsettings.setValue(f"window/splitter/{name}", splitter.saveState())
        self.qsettings.sync()

    def _start_sampler(self, device: str) -> None:
        if self.sampler is not None:
            self.sampler.stop()
            self.sampler.deleteLater()
        self.sampler = self.backend.make_sampler(device, self)
        self.sampler.stats.connect(self.utilization.add_sample)
        self.sampler.start()

    # -- queue ----------------------------------------------------------------------------------------
    def set_status(self, text: str) -> None:
        self.status_label.setText(text)

    def add_paths(self, paths: Iterable[Path]) -> int:
        """Queue files and folders (walked recursively, non-images ignored, duplicates dropped)."""
        paths = list(paths)
        if not paths:
            return 0
        items, problems = self.backend.collect(paths)
        added, duplicates = self.queue.add(items)
        text = f"Queued {counted(added, 'photo')}"
        if duplicates:
            text += f" ({duplicates} already in the queue)"
        if not items and not problems:
            text = "No photos there: Colorizer reads " + ", ".join(sorted(e.lstrip(".") for e in IMAGE_EXTENSIONS))
        if problems:
            text += f"; {counted(len(problems), 'problem')}: {problems[0]}"
        self.set_status(text)
        if added and self._shown_key is None:
            self.preview.clear(f"{counted(len(self.queue.rows()), 'photo')} queued. "
                               f"Press Start ({self._shortcut('start')}).")
        return added

    def _shortcut(self, name: str) -> str:
        return self.actions_by_name[name].shortcut().toString(QKeySequence.SequenceFormat.NativeText)

    def choose_files(self) -> None:
        patterns = " ".join(f"*{e}" for e in sorted(IMAGE_EXTENSIONS))
        files, _ = QFileDialog.getOpenFileNames(self, "Add photos", self._last_dir(),
                                                f"Photos ({patterns});;All files (*)")
        if files:
            self.qsettings.setValue("paths/last_input", str(Path(files[0]).parent))
            self.add_paths(Path(f) for f in files)

    def choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Add a folder of photos", self._last_dir())
        if folder:
            self.qsettings.setValue("paths/last_input", folder)
            self.add_paths([Path(folder)])

    def _last_dir(self) -> str:
        return str(self.qsettings.value("paths/last_input", "") or Path.home())

    def queue_samples(self) -> int:
        samples = sorted(p for pattern in ("*.jpg", "*.jpeg", "*.png") for p in self.samples_dir.glob(pattern))
        if not samples:
            self.set_status(f"No sample photos found in {self.samples_dir}")
            return 0
        return self.add_paths(samples)

    def remove_selected(self) -> None:
        if self.controller.running:
            return
        rows = [i.row() for i in self.table.selectionModel().selectedRows()]
        removed = self.history.remove(rows)
        self.set_status(f"Removed {counted(removed, 'photo')} from the queue "
                        f"(undo with {self._shortcut('undo')})")

    def clear_queue(self) -> None:
        if self.controller.running:
            return
        self.history.clear()
        self._latest_key = self._shown_key = None
        self.preview.clear("The queue is empty. Drop photos or folders here.")
        self.hint_editor.show(None, None)
        self.set_status(f"Queue cleared (undo with {self._shortcut('undo')})")

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if local_paths(event.mimeData().urls()):
            event.acceptProposedAction()
            self.drop_highlight.show_over(self)
        else:
            event.ignore()

    def dragLeaveEvent(self, event: QDragLeaveEvent) -> None:
        self.drop_highlight.hide()
        super().dragLeaveEvent(event)

    def dragMoveEvent(self, event: Any) -> None:
        if local_paths(event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        self.drop_highlight.hide()
        paths = local_paths(event.mimeData().urls())
        if paths:
            self.add_paths(paths)
            event.acceptProposedAction()

    def set_output_dir(self, folder: Path, remember: bool = True) -> None:
        """Export to ``folder``; with ``remember=False`` (``--output``) the saved export folder stays as it was."""
        self._run_only_output = None if remember else folder
        self.export_panel.set_output_dir(folder)

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        if self._size_docks_on_show:
            self._size_docks_on_show = False
            # Once the window has been laid out at its real size: resizeDocks divides that size.
            QTimer.singleShot(0, self, lambda: size_default_docks(self, self.docks))

    def reset_layout(self) -> None:
        self.restoreState(self._default_state, STATE_VERSION)
        size_default_docks(self, self.docks)

    # -- batch ----------------------------------------------------------------------------------------
    def start_batch(self, only: set[int] | None = None) -> bool:
        """Snapshot the settings and the runnable rows (of ``only``, the row keys, when given) into a request,
        and start the worker.
        """
        if self.controller.running:
            return False
        problem = self.export_panel.problem()
        if problem:
            self.set_status(f"Cannot start: {problem}")
            return False
        photos = [replace(p, hints=self.hint_store.get(p.path)) for p in self.queue.runnable()
                  if only is None or p.key in only]
        if not photos:
            self.set_status("Nothing to colorize: add photos first" if not self.queue.rows()
                            else nothing_to_run_text(self._shortcut("run_again")))
            return False
        s = self.current_settings()
        request = BatchRequest(tuple(photos), s.model, s.export, compare=s.compare, preview_size=PREVIEW_SIZE)
        for p in photos:  # each photo's run key carries its own hints
            self.queue.begin_run([p.key], run_key(s, p.hints))
        self.timing.clear()
        self.summary.clear()
        self.progress.setRange(0, len(photos))
        self.progress.setValue(0)
        self.progress.setFormat("%v / %m · ETA –")
        self.save_settings()
        self._batch_failed = False
        self.controller.start(request)
        self.set_status(f"Loading the model for {len(photos)} photos…")
        return True

    @Slot(int)
    def _on_image_started(self, index: int) -> None:
        """The engine took up this photo: show it as working until its result comes."""
        req = self.controller.request
        if req is not None and 0 <= index < len(req.photos):
            self.queue.set_status([req.photos[index].key], Status.WORKING, only_from=(Status.QUEUED,))

    def set_paused(self, paused: bool) -> None:
        if paused:
            self.controller.pause()
        else:
            self.controller.resume()

    def cancel_batch(self) -> None:
        if self.controller.running:
            self.controller.cancel()
            self.actions_by_name["pause"].setChecked(False)
            self.set_status("Cancelling: finishing the photos in progress…")

    @Slot(str)
    def _on_started(self, description: str) -> None:
        n = len(self.controller.request.photos) if self.controller.request else 0
        self.set_status(f"Colorizing {n} photos with {description}")

    @Slot(object)
    def _on_image_done(self, r: Any) -> None:
        req = self.controller.request
        if req is None or not 0 <= r.index < len(req.photos):
            return
        key = req.photos[r.index].key
        self.queue.apply_result(key, r)
        selected = self._selected_key()
        if r.status == Status.DONE and r.preview is not None:
            self.previews.put(key, r.preview.L, r.preview.ab)
            self._latest_key = key
        if (selected == key and r.status != Status.CANCELLED) or (
                selected is None and r.status == Status.DONE and r.preview is not None):
            self._show_key(key)  # the photo on show just finished (or failed): show its outcome
        self.timing.add_result(r)
        p = self.controller.progress
        if p is not None and r.status != Status.CANCELLED:
            self.progress.setValue(p.processed)
            self._show_progress()
            if not self.controller.paused:
                what = r.message if r.status != Status.DONE else "done"
                self.set_status(f"{p.processed} of {p.total}: {r.source.name} {what}")

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self._batch_failed = True
        self.set_status(f"Could not run the batch: {message}")
        box = QMessageBox(QMessageBox.Icon.Warning, "Colorizer", f"The batch could not run.\n\n{message}",
                          QMessageBox.StandardButton.Ok, self)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()  # not exec(): the window (and tests) keep running
        self.failure_box = box

    @Slot(object)
    def _on_finished(self, summary: Any) -> None:
        req = self.controller.request
        if req is not None:
            self.queue.set_status((p.key for p in req.photos), Status.QUEUED, only_from=(Status.WORKING,))
        self.actions_by_name["pause"].setChecked(False)
        self.summary.show_summary(summary)
        self.progress.setFormat("%v / %m · done" if not summary.cancelled else "%v / %m · cancelled")
        self._update_compare_columns()
        if self._batch_failed:
            return  # _on_failed already said why
        text = summary.line()
        if summary.stopped_reason:
            text += f" ({summary.stopped_reason})"
        if summary.done:
            text += f" → {self.export_panel.choice().output_dir}"
        self.set_status(text)

    @Slot(bool)
    def _on_paused(self, paused: bool) -> None:
        action = self.actions_by_name["pause"]
        action.setText("&Resume" if paused else "&Pause")
        if action.isChecked() != paused:
            action.setChecked(paused)
        self.set_status("Paused: the photos in progress finish, then it waits. Resume with "
                        f"{self._shortcut('pause')}" if paused else "Resumed")
        self._show_progress()

    @Slot()
    def _show_progress(self) -> None:
        """The count and the ETA (counting down, not while paused) on the progress bar."""
        if self.controller.running:
            self.progress.setFormat(progress_format(self.controller.progress))

    def run_again(self) -> bool:
        """Put the selected photos (or all) back in the queue and start: colorize them again."""
        if self.controller.running:
            return False
        keys = [self.queue.row(i.row()).key for i in self.table.selectionModel().selectedRows()]
        keys = keys or [r.key for r in self.queue.rows()]
        self.queue.requeue(keys)
        return self.start_batch(only=set(keys))  # a failed photo outside the selection waits for Start

    def _offer_run_again(self, what: str = "Settings") -> None:
        """Settings changed: where done photos were made with others, say that Run Again redoes them."""
        if self.controller.running:
            return
        s = self.current_settings()
        stale = [r.key for r in self.queue.rows()
                 if r.status == Status.DONE and out_of_date(r.run_key, run_key(s, self.hint_store.get(r.path)))]
        if stale:
            self.set_status(changed_text(len(stale), self._shortcut("run_again"), what))
        elif self._offering:  # changed back (a hint added, then removed): the offer no longer holds
            self.set_status("The colorized photos are up to date with these settings")
        self._offering = bool(stale)

    def _update_actions(self) -> None:
        running = self.controller.running
        has_rows = self.queue.rowCount() > 0
        counts = self.queue.counts()
        a = self.actions_by_name
        left = counts[Status.QUEUED] + counts[Status.FAILED]  # something left to run
        a["start"].setEnabled(not running and left > 0)
        finished = counts[Status.DONE] + counts[Status.SKIPPED] + counts[Status.FAILED]
        a["run_again"].setEnabled(not running and finished > 0)
        a["samples"].setVisible(not has_rows)  # offered to try the app, not beside a queue of one's own photos
        a["pause"].setEnabled(running)
        a["cancel"].setEnabled(running)
        a["remove"].setEnabled(not running and has_rows)
        a["clear"].setEnabled(not running and has_rows)
        self.engine_panel.setEnabled(not running)
        self.export_panel.set_locked(running)

    def _update_compare_columns(self) -> None:
        show = self.engine_panel.compare.isChecked() or self.queue.has_comparison()
        for col in COMPARE_COLUMNS:
            self.table.setColumnHidden(col, not show)

    # -- preview ---------------------------------------------------------------------------------------
    def _selected_key(self) -> int | None:
        rows = self.table.selectionModel().selectedRows()
        return self.queue.row(rows[-1].row()).key if rows else None

    def _on_selection(self) -> None:
        key = self._selected_key()
        if key is not None:
            self._show_key(key)
        elif self._latest_key is not None:
            self._show_key(self._latest_key)

    def _show_key(self, key: int) -> None:
        """Show a queued photo: from the cache at once, else read from disk off the UI thread (``_on_loaded``)."""
        i = self.queue.row_of(key)
        if i is None:
            return
        row = self.queue.row(i)
        cached = self.previews.get(key)
        if cached is not None:
            self._loading_key = None
            self._busy(False)
            self._present(key, *cached)
            return
        self._loading_key = key
        self.loader.request(key, row.path, row.output if row.status == Status.DONE else None)
        self._busy(True)
        QTimer.singleShot(LOADING_AFTER_MS, self, lambda: self._say_loading(key))

    def _say_loading(self, key: int) -> None:
        i = self.queue.row_of(key)
        if self._loading_key == key and i is not None:
            self._shown_key = None
            self.hint_editor.show(None, None)
            self.preview.clear(f"Loading {self.queue.row(i).shown_name}…", offer_action=False)

    @Slot(int, object, object)
    def _on_loaded(self, key: int, L: Any, ab: Any) -> None:
        if key != self._loading_key:
            return  # another photo was selected meanwhile
        self._loading_key = None
        self._busy(False)
        if self.queue.row_of(key) is None:
            self._removed_while_loading()
        else:
            self._present(key, L, ab)

    @Slot(int, str)
    def _on_load_failed(self, key: int, reason: str) -> None:
        if key != self._loading_key:
            return
        self._loading_key = None
        self._busy(False)
        i = self.queue.row_of(key)
        if i is None:
            self._removed_while_loading()
            return
        row = self.queue.row(i)
        reason = row.message if row.status == Status.FAILED and row.message else reason
        self.preview.show_error(f"{row.shown_name}: cannot show a preview.\n\n{reason}")
        self._shown_key = None
        self.hint_editor.show(None, None)

    def _removed_while_loading(self) -> None:
        self._shown_key = None
        self.hint_editor.show(None, None)
        self.preview.clear("Removed from the queue. Select a photo to see it here.")

    def _present(self, key: int, L: Any, ab: Any) -> None:
        i = self.queue.row_of(key)
        if i is None:
            return
        row = self.queue.row(i)
        self._shown_key = key
        missing = f"failed · {row.message}" if row.status == Status.FAILED else "not colorized yet"
        self.preview.show_photo(L, ab, row.shown_name, missing=missing)
        made_with = (row.run_key.model, row.run_key.hints) if row.status == Status.DONE and row.run_key else None
        self.hint_editor.show(key, row.path, made_with if ab is not None else None)

    def _busy(self, on: bool) -> None:
        """A busy cursor while the window waits for a photo to load (it stays responsive)."""
        self._busy_cursor.set(on)

    def _forget_removed_preview(self) -> None:
        """The photo on show left the queue: show nothing, so no hint is added to a photo no longer queued."""
        if self._shown_key is not None and self.queue.row_of(self._shown_key) is None:
            self._shown_key = None
            self.preview.clear("Removed from the queue. Select a photo to see it here.")
            self.hint_editor.show(None, None)

    def _toggle_wipe(self, on: bool) -> None:
        self.preview.set_mode("wipe" if on else "side")

    # -- about and closing ------------------------------------------------------------------------------
    def about_text(self) -> str:
        weights = getattr(self.backend, "weights", None)
        card_file = Path(weights).with_suffix(".md") if weights else MODEL_CARD
        return about_html(*self.backend.model_card(), card_file=card_file)

    def help_text(self) -> str:
        panels = [("Queue", "the photos to colorize; the Message column says why one failed"),
                  ("Preview", "the selected photo before and after, side by side or with a wipe")]
        panels += [(spec.title, spec.tip) for spec in PANELS]
        keys = [(a.property("help_name") or a.text().replace("&", ""),
                 a.shortcut().toString(QKeySequence.SequenceFormat.NativeText)) for a in self.actions_by_name.values()]
        keys.append(("Move between the queue, the preview's buttons and the panels", "Tab, Shift+Tab"))
        return help_html(panels, keys, log_file())

    def show_about(self) -> None:
        self.about_dialog = text_dialog(self, "About Colorizer", self.about_text(), 520, 340)
        self.about_dialog.open()  # not exec(): the window (and tests) keep running

    def show_help(self) -> None:
        self.help_dialog = text_dialog(self, "Colorizer Help", self.help_text(), 600, 640)
        self.help_dialog.open()

    def show_log_file(self) -> bool:
        """Open the log in the desktop's viewer; where there is none, say where the file is."""
        path = log_file()
        if not path.is_file():
            self.set_status(f"No log file yet (it will be {path})")
            return False
        if not QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))):
            self.set_status(f"Could not open the log file; it is {path}")
            return False
        self.set_status(f"Opened the log file {path}")
        return True

    def open_output_folder(self) -> bool:
        """File > Open Output Folder; says so in the status bar when nothing could be launched."""
        folder = self.export_panel.choice().output_dir
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            self.set_status(f"Cannot create the output folder {folder}: {err.strerror or err}")
            return False
        return open_path(folder, self.set_status, f"the output folder {folder}")

    def export_comparison(self) -> Path | None:
        """File > Export Comparison…: the photo on screen, before and after, as one captioned image."""
        i = None if self._shown_key is None else self.queue.row_of(self._shown_key)
        after = self.preview.after_image()
        if i is None or after.isNull():
            self.set_status("Nothing to export: select a colorized photo first")
            return None
        row = self.queue.row(i)
        strength = self.preview.strength.value()
        full = None
        if row.status == Status.DONE and row.output is not None and row.run_key is not None:
            made_at = row.run_key.export.strength

            def full() -> tuple[Any, Any]:  # the exported photo at its own size, at the strength on screen
                self._busy(True)  # a large scan takes seconds to decode and join
                try:
                    return full_size(row.path, row.output, strength / 100 / made_at if made_at > 0 else 0.0)
                finally:
                    self._busy(False)

        written = export_dialog(self, self.preview.before_image(), after, row.path,
                                self.export_panel.choice().output_dir, strength, full_size=full)
        if written is not None:
            self.set_status(f"Exported the comparison to {written}")
        return written

    def closeEvent(self, event: QCloseEvent) -> None:
        """Stop everything that still calls into the plots (timers, the batch thread) before Qt deletes them."""
        if self.sampler is not None:
            self.sampler.stop()
            self.sampler.stats.disconnect(self.utilization.add_sample)
            self.sampler = None
        self.controller.shutdown()
        self.loader.stop()
        self._busy(False)
        self.hint_editor.close()
        self.save_settings()
        self.utilization.release()
        self.timing.release()
        super().closeEvent(event)

