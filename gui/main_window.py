"""The main window: queue, previews, options and figures, wired to one ``BatchController``.

Everything engine-related arrives through the injected ``backend`` (``gui.worker.Backend``),
so this module imports neither torch nor the engine's model code.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QSettings, Qt, QUrl, Slot
from PySide6.QtGui import QAction, QCloseEvent, QDesktopServices, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHeaderView,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QScrollArea,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from engine.imageio import IMAGE_EXTENSIONS

from . import settings as app_settings
from .batch import BatchController, format_eta
from .charts import SummaryPanel, TimingChart, UtilizationPlot
from .engine_panel import EnginePanel
from .export_panel import ExportPanel
from .logfile import log_file
from .preview import BeforeAfterView, PreviewCache, preview_from_files
from .queue_model import COMPARE_COLUMNS, QueueModel
from .request import BatchRequest

log = logging.getLogger(__name__)

SAMPLES_DIR = Path(__file__).resolve().parent.parent / "resources" / "samples"
PREVIEW_SIZE = 800  # longest side of the previews the worker sends back
SPLITTERS = ("main", "work", "top", "figures")  # main: work | options; work: top over figures


def local_paths(urls: Iterable[QUrl]) -> list[Path]:
    return [Path(u.toLocalFile()) for u in urls if u.isLocalFile() and u.toLocalFile()]


def about_html(card: dict[str, Any] | None, problem: str | None) -> str:
    """The About text: what the app does and the installed model's card (or why there is none)."""
    parts = ["<h3>Colorizer</h3><p>Brings grayscale photos to colour, one photo or whole folders at a time.</p>"]
    if card is None:
        parts.append(f"<p><b>No trained model is installed.</b><br>{html.escape(problem or '')}</p>")
    else:
        rows = []
        for key, value in card.items():
            text = ", ".join(f"{k}: {v}" for k, v in value.items()) if isinstance(value, dict) else str(value)
            rows.append(f"<tr><td valign='top'><b>{html.escape(str(key))}</b></td><td>{html.escape(text)}</td></tr>")
        parts.append("<p><b>Model card</b></p><table cellspacing='4'>" + "".join(rows) + "</table>")
    return "".join(parts)


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
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        for col, width in enumerate((120, 62, 58, 62, 62, 70, 64)):
            header.resizeSection(col, width)
        self.preview = BeforeAfterView()
        self.engine_panel = EnginePanel(self.backend.available_options())
        self.export_panel = ExportPanel()
        options = QWidget()
        options_column = QVBoxLayout(options)
        options_column.addWidget(self.engine_panel)
        options_column.addWidget(self.export_panel)
        options_column.addStretch(1)
        self.options_scroll = QScrollArea()
        self.options_scroll.setWidget(options)
        self.options_scroll.setWidgetResizable(True)
        self.options_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.options_scroll.setMinimumWidth(options.minimumSizeHint().width()
                                            + self.options_scroll.verticalScrollBar().sizeHint().width() + 4)
        self.utilization = UtilizationPlot()
        self.timing = TimingChart()
        self.summary = SummaryPanel()

        self.splitters = {name: QSplitter() for name in SPLITTERS}
        main, work, top, figures = (self.splitters[name] for name in SPLITTERS)
        top.addWidget(self.table)
        top.addWidget(self.preview)
        top.setStretchFactor(1, 1)
        top.setSizes([465, 475])
        for figure in (self.utilization, self.timing, self.summary):
            figures.addWidget(figure)
        figures.setSizes([300, 380, 260])
        work.setOrientation(Qt.Orientation.Vertical)
        work.addWidget(top)
        work.addWidget(figures)
        work.setStretchFactor(0, 1)
        work.setSizes([540, 250])
        main.addWidget(work)
        main.addWidget(self.options_scroll)
        main.setStretchFactor(0, 1)
        main.setSizes([940, 330])
        for splitter in self.splitters.values():
            splitter.setChildrenCollapsible(False)
        self.setCentralWidget(main)

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
            "open_output": self._action("Open Output Fol&der", self.export_panel.open_folder, "Ctrl+E",
                                        "Show the output folder in the file manager"),
            "quit": self._action("&Quit", self.close, QKeySequence.StandardKey.Quit),
            "remove": self._action("&Remove Selected", self.remove_selected, QKeySequence.StandardKey.Delete,
                                   "Take the selected photos off the queue"),
            "clear": self._action("&Clear Queue", self.clear_queue, "Ctrl+Shift+Backspace", "Empty the queue"),
            "start": self._action("&Start", self.start_batch, "Ctrl+Return", "Colorize the queued photos"),
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
            "log": self._action("Show &Log File", self.show_log_file, None,
                                "Open the log, to see what went wrong or attach it to a bug report"),
            "about": self._action("&About Colorizer", self.show_about),
        }
        menus = {"&File": ("add_files", "add_folder", "samples", None, "output", "open_output", None, "quit"),
                 "&Queue": ("remove", "clear"), "&Batch": ("start", "pause", "cancel"),
                 "&View": ("wipe", None, "zoom_in", "zoom_out", "fit", "actual"), "&Help": ("log", None, "about")}
        for title, names in menus.items():
            menu = self.menuBar().addMenu(title)
            for name in names:
                if name is None:
                    menu.addSeparator()
                else:
                    menu.addAction(a[name])
        toolbar = self.addToolBar("Main")
        toolbar.setObjectName("main-toolbar")
        toolbar.setMovable(False)
        toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        for name in ("add_files", "add_folder", "samples", None, "start", "pause", "cancel", None, "remove",
                     "clear", None, "open_output"):
            if name is None:
                toolbar.addSeparator()
            else:
                toolbar.addAction(a[name])
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        self.table.addActions([a["remove"], a["clear"]])
        self.preview.set_placeholder_action(a["samples"])

    def _connect(self) -> None:
        c = self.controller
        c.started.connect(self._on_started)
        c.image_started.connect(self._on_image_started)
        c.image_done.connect(self._on_image_done)
        c.failed.connect(self._on_failed)
        c.finished.connect(self._on_finished)
        c.running_changed.connect(self._update_actions)
        c.paused_changed.connect(self._on_paused)
        self.table.selectionModel().selectionChanged.connect(self._on_selection)
        self.queue.rowsInserted.connect(self._update_actions)
        self.queue.rowsRemoved.connect(self._update_actions)
        self.queue.modelReset.connect(self._update_actions)
        self.engine_panel.compare.toggled.connect(self._update_compare_columns)
        self.engine_panel.device_changed.connect(self._start_sampler)
        self.preview.wipe_button.toggled.connect(self.actions_by_name["wipe"].setChecked)

    # -- settings -------------------------------------------------------------------------------------
    def current_settings(self) -> app_settings.AppSettings:
        return app_settings.AppSettings(self.engine_panel.choice(), self.export_panel.choice(),
                                        compare=self.engine_panel.compare.isChecked(), preview_mode=self.preview.mode)

    def _restore(self) -> None:
        s = app_settings.load(self.qsettings)
        self.engine_panel.set_choice(s.model)
        self.engine_panel.compare.setChecked(s.compare)
        self.export_panel.set_choice(s.export)
        self.preview.set_mode(s.preview_mode)
        geometry = self.qsettings.value("window/geometry")
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
        else:
            screen = self.screen().availableGeometry()
            self.resize(min(1400, screen.width() * 9 // 10), min(860, screen.height() * 9 // 10))
        state = self.qsettings.value("window/state")
        if isinstance(state, QByteArray):
            self.restoreState(state)
        for name, splitter in self.splitters.items():
            value = self.qsettings.value(f"window/splitter/{name}")
            if isinstance(value, QByteArray):
                splitter.restoreState(value)
        self._update_compare_columns()

    def save_settings(self) -> None:
        app_settings.save(self.qsettings, self.current_settings())
        self.qsettings.setValue("window/geometry", self.saveGeometry())
        self.qsettings.setValue("window/state", self.saveState())
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
        text = f"Queued {added} photo{'s' if added != 1 else ''}"
        if duplicates:
            text += f" ({duplicates} already in the queue)"
        if not items and not problems:
            text = "No photos there: Colorizer reads " + ", ".join(sorted(e.lstrip(".") for e in IMAGE_EXTENSIONS))
        if problems:
            text += f"; {len(problems)} problem{'s' if len(problems) > 1 else ''}: {problems[0]}"
        self.set_status(text)
        if added and self._shown_key is None:
            self.preview.clear(f"{len(self.queue.rows())} photos queued. Press Start ({self._shortcut('start')}).")
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
        removed = self.queue.remove_rows(rows)
        self.set_status(f"Removed {removed} photo{'s' if removed != 1 else ''} from the queue")

    def clear_queue(self) -> None:
        if self.controller.running:
            return
        self.queue.clear()
        self.previews.clear()
        self._latest_key = self._shown_key = None
        self.preview.clear("The queue is empty. Drop photos or folders here.")
        self.set_status("Queue cleared")

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if local_paths(event.mimeData().urls()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event: Any) -> None:
        if local_paths(event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = local_paths(event.mimeData().urls())
        if paths:
            self.add_paths(paths)
            event.acceptProposedAction()

    def set_output_dir(self, folder: Path) -> None:
        self.export_panel.set_output_dir(folder)

    # -- batch ----------------------------------------------------------------------------------------
    def start_batch(self) -> bool:
        """Snapshot the settings and the runnable rows into a request and start the worker."""
        if self.controller.running:
            return False
        problem = self.export_panel.problem()
        if problem:
            self.set_status(f"Cannot start: {problem}")
            return False
        photos = self.queue.runnable()
        if not photos:
            self.set_status("Nothing to colorize: add photos first" if not self.queue.rows()
                            else "Every queued photo is already done or skipped")
            return False
        s = self.current_settings()
        request = BatchRequest(tuple(photos), s.model, s.export, compare=s.compare, preview_size=PREVIEW_SIZE)
        self.queue.begin_run(p.key for p in photos)
        self.timing.clear()
        self.summary.clear()
        self.progress.setRange(0, len(photos))
        self.progress.setValue(0)
        self.progress.setFormat(f"%v / %m · {format_eta(None)}")
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
            self.queue.set_status([req.photos[index].key], "working", only_from=("queued",))

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
        if r.status == "done" and r.preview is not None:
            self.previews.put(key, r.preview.L, r.preview.ab)
            self._latest_key = key
            if not self.table.selectionModel().hasSelection():
                self._show_key(key)
        self.timing.add_result(r)
        p = self.controller.progress
        if p is not None and r.status != "cancelled":
            self.progress.setValue(p.processed)
            self.progress.setFormat(f"%v / %m · {format_eta(p.eta_s())}")
            if not self.controller.paused:
                what = r.message if r.status != "done" else "done"
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
            self.queue.set_status((p.key for p in req.photos), "queued", only_from=("working",))
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

    def _update_actions(self) -> None:
        running = self.controller.running
        has_rows = self.queue.rowCount() > 0
        a = self.actions_by_name
        a["start"].setEnabled(not running and has_rows)
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
    def _on_selection(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        if rows:
            self._show_key(self.queue.row(rows[-1].row()).key)
        elif self._latest_key is not None:
            self._show_key(self._latest_key)

    def _show_key(self, key: int) -> None:
        i = self.queue.row_of(key)
        if i is None:
            return
        row = self.queue.row(i)
        cached = self.previews.get(key)
        try:
            L, ab = cached if cached is not None else preview_from_files(
                row.path, row.output if row.status == "done" else None, PREVIEW_SIZE)
        except Exception as err:  # noqa: BLE001 - an unreadable file must not break browsing the queue
            self.preview.clear(f"{row.path.name}: cannot show a preview ({err})")
            self._shown_key = None
            return
        self._shown_key = key
        self.preview.show_photo(L, ab, row.path.name)

    def _toggle_wipe(self, on: bool) -> None:
        self.preview.set_mode("wipe" if on else "side")

    # -- about and closing ------------------------------------------------------------------------------
    def about_text(self) -> str:
        return about_html(*self.backend.model_card())

    def show_about(self) -> None:
        QMessageBox.about(self, "About Colorizer", self.about_text())

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

    def closeEvent(self, event: QCloseEvent) -> None:
        self.controller.shutdown()
        if self.sampler is not None:
            self.sampler.stop()
        self.save_settings()
        super().closeEvent(event)

