"""The main window: a shell that builds the models, views and presenters and realises the actions table.

Everything engine-related arrives through the injected ``backend`` (``gui.presenters.backend.Backend``, made by
``gui.app``), so this module imports neither torch nor the engine's model code.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import (
    QCloseEvent,
    QDragEnterEvent,
    QDragLeaveEvent,
    QDragMoveEvent,
    QDropEvent,
    QKeySequence,
    QShowEvent,
)
from PySide6.QtWidgets import QMainWindow, QProgressBar, QSplitter

from engine.options import Status
from gui.actions import (
    ActionSpec,
    ActionState,
    build_actions,
    build_menus,
    build_toolbar,
    shortcut_text,
    update_actions,
)
from gui.model.hint_store import HintStore
from gui.model.queue_model import QueueModel
from gui.model.queue_undo import QueueHistory
from gui.presenters.backend import Backend
from gui.presenters.batch import BatchPresenter, BatchViews
from gui.presenters.batch_controller import BatchController
from gui.presenters.help import HelpPresenter
from gui.presenters.hint_files import HintFiles
from gui.presenters.hints import HintEditor
from gui.presenters.live import LiveFigures
from gui.presenters.models import ModelsPresenter
from gui.presenters.preview import PreviewPresenter
from gui.presenters.queue import QueuePresenter
from gui.presenters.queue_menu import QueueMenu
from gui.presenters.settings import SettingsPresenter
from gui.presenters.teach import TeachPresenter
from gui.presenters.unsure import UnsurePresenter
from gui.views.charts import SummaryPanel, TimingChart, UtilizationPlot
from gui.views.docks import build_docks, scrolled
from gui.views.elided_line import ElidedLine
from gui.views.engine_panel import EnginePanel
from gui.views.export_panel import ExportPanel
from gui.views.preview import BeforeAfterView
from gui.views.queue_table import QueueTable
from gui.views.quit_dialog import ask_quit_while_running

SAMPLES_DIR = Path(__file__).resolve().parent.parent / "resources" / "samples"
SPLITTERS = ("central",)  # the queue over the preview; everything else is in docks (gui/views/docks.py)
MENUS = ("&File", "&Edit", "&Queue", "&Batch", "&Model", "&View", "&Help")
Key = QKeySequence.StandardKey
Spec = ActionSpec["MainWindow"]

class MainWindow(QMainWindow):
    ask_quit = staticmethod(ask_quit_while_running)

    def __init__(self, backend: Backend, settings: QSettings | None = None, samples_dir: Path | None = None) -> None:
        super().__init__()
        self.backend = backend
        self.qsettings = settings if settings is not None else QSettings()
        self.setWindowTitle("Colorizer")
        self.setAcceptDrops(True)
        self.queue = QueueModel(self)
        self.controller = BatchController(backend.make_worker, self)
        self.hint_store = HintStore(self.qsettings, self)
        self.history = QueueHistory(self.queue, lambda: self.controller.running, self)
        self.history.stepped.connect(self.set_status)
        self._build_views()
        self.prefs: SettingsPresenter = SettingsPresenter(
            self.qsettings, self, self.engine_panel, self.export_panel, self.preview, self.docks, self.splitters,
            self.set_status)
        self._build_presenters(samples_dir or SAMPLES_DIR)
        self.actions_by_name = build_actions(ACTIONS, self, self)
        self.menus = build_menus(self, MENUS, ACTIONS, self.actions_by_name)
        build_toolbar(self, ACTIONS, self.actions_by_name)
        self._add_panels_menu()
        self._connect()
        self.prefs.restore()
        self.batch.update_compare_columns()
        self.live.start_sampler(self.engine_panel.resolved_device())
        self.update_actions()

    def _build_views(self) -> None:
        self.table = QueueTable(self.queue)
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
        self.status_label = ElidedLine("Ready")
        self.progress = QProgressBar()
        self.progress.setFixedWidth(260)  # a toolbar hint on the status bar hides the label: not widened into its room
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("idle")
        self.statusBar().addWidget(self.status_label, 1)
        self.statusBar().addPermanentWidget(self.progress)

    def _build_presenters(self, samples_dir: Path) -> None:
        self.hint_editor = HintEditor(self.preview, self.hint_store, self.history.stack, self.backend.make_recolourer(),
                                      self.engine_panel.choice, self.set_status, self)
        self.controller.finished.connect(self.hint_editor.follow_batch)
        self.unsure = UnsurePresenter(self.preview, self.hint_editor, self.hint_editor.recolourer,
                                      self.engine_panel.choice, lambda: self.controller.running, self)
        self.hint_files = HintFiles(self.hint_store, self.history.stack,
                                    lambda: [(r.path, r.root) for r in self.queue.rows()], self.set_status, self)
        self.viewer = PreviewPresenter(self.queue, self.table, self.preview, self.hint_editor, self.export_panel,
                                       self.set_status, self)
        self.queue_presenter = QueuePresenter(self.backend, self.queue, self.table, self.history, self.viewer,
                                              self.qsettings, samples_dir, lambda: self.controller.running,
                                              self.set_status, self.shortcut, self,
                                              output_dir=lambda: self.prefs.current().export.output_dir)
        views = BatchViews(self.engine_panel, self.export_panel, self.timing, self.summary, self.progress)
        self.batch: BatchPresenter = BatchPresenter(
            self.controller, self.queue, self.table, self.hint_store, self.viewer, views, self.prefs.current,
            self.prefs.save, self.queue_presenter.selected_keys, self.set_status, self.shortcut,
            self.backend.copies_to_ask_about, self)
        self.live = LiveFigures(self.backend, self.utilization, self.timing, self)
        self.help: HelpPresenter = HelpPresenter(self.backend, lambda: self.actions_by_name, self.set_status, self)
        self.models = ModelsPresenter(self.backend, self.engine_panel, self.set_status, self)
        self.teach = TeachPresenter(self.backend, self.models.refresh, self.set_status, self,
                                    qsettings=self.qsettings, say_kept=lambda text: self.batch.offer.update(lead=text))

    def _add_panels_menu(self) -> None:
        a, view = self.actions_by_name, self.menus["&View"]
        panels = view.addSeparator()
        panels.setText("Panels")
        view.addActions([dock.toggleViewAction() for dock in self.docks.values()])
        view.addAction(a["reset_layout"])
        self.preview.name_strength_shortcuts(self.shortcut("weaker"), self.shortcut("stronger"))
        self.queue_menu = QueueMenu(self.table, self.queue, self.set_status,
                                    extra=[a["run_again"], a["remove"], a["clear"]], parent=self)
        # The panel's button too: a failure to launch a file manager must show in the window, not only on stderr.
        self.export_panel.set_open_handler(self.prefs.open_output_folder)
        self.preview.set_placeholder_action(a["samples"])
        self.batch.pause_action = a["pause"]

    def _connect(self) -> None:
        self.controller.running_changed.connect(self.update_actions)
        self.batch.outputs.busy_changed.connect(self.update_actions)
        self.controller.running_changed.connect(self.history.refresh)
        for changed in (self.engine_panel.changed, self.export_panel.changed, self.preview.strength_changed):
            changed.connect(lambda *_: self.batch.offer.update())
        self.hint_store.changed.connect(lambda _path: self.batch.offer.update())
        self.table.selection_changed.connect(self.batch.offer.selection_changed)
        for changed in (self.engine_panel.changed, self.controller.running_changed):
            changed.connect(self.unsure.refresh)
        self.engine_panel.changed.connect(self.hint_editor.settings_changed)
        for signal in (self.queue.rowsInserted, self.queue.rowsRemoved, self.queue.modelReset):
            signal.connect(self.update_actions)
            signal.connect(self.batch.queue_changed)
        self.engine_panel.device_changed.connect(self.live.start_sampler)
        self.preview.wipe_toggled.connect(self.actions_by_name["wipe"].setChecked)

    def set_status(self, text: str) -> None:
        self.status_label.setText(text)

    def shortcut(self, name: str) -> str:
        return shortcut_text(self.actions_by_name[name])

    def update_actions(self, *_: object) -> None:
        counts = self.queue.counts()
        state = ActionState(running=self.controller.running, has_rows=self.queue.rowCount() > 0,
                            left=counts[Status.QUEUED] + counts[Status.FAILED],
                            finished=counts[Status.DONE] + counts[Status.SKIPPED] + counts[Status.FAILED],
                            counting=self.batch.outputs.busy)
        update_actions(ACTIONS, self.actions_by_name, state)
        self.batch.lock_panels(state.running)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        self.queue_presenter.drag_enter(event)

    def dragLeaveEvent(self, event: QDragLeaveEvent) -> None:
        self.queue_presenter.drag_left()
        super().dragLeaveEvent(event)

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:
        self.queue_presenter.drag_move(event)

    def dropEvent(self, event: QDropEvent) -> None:
        self.queue_presenter.drop(event)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.prefs.shown()

    def closeEvent(self, event: QCloseEvent) -> None:
        """Stop everything that still calls into the plots (timers, the batch thread) before Qt deletes them; a
        quit mid-batch is asked first (``ask_quit``: tests and the app's shutdown answer it).
        """
        counts = self.queue.counts() if self.controller.running else None
        if counts is not None and not self.ask_quit(self, counts[Status.QUEUED] + counts[Status.WORKING]):
            event.ignore()
            return
        self.live.stop()
        self.teach.shutdown()
        self.controller.shutdown()
        self.batch.outputs.stop()
        self.viewer.stop()
        self.prefs.save()
        self.live.release()
        super().closeEvent(event)


# Every command: the order is the one Help lists the shortcuts in. Ctrl+Q is spelled out: StandardKey.Quit is
# empty on Windows and some Linux platform themes.
ACTIONS: tuple[Spec, ...] = (
    Spec("add_files", "Add &Photos…", lambda w: w.queue_presenter.choose_files(), Key.Open, tip="Queue photos",
         menu="&File", toolbar=0),
    Spec("add_folder", "Add &Folder…", lambda w: w.queue_presenter.choose_folder(), "Ctrl+Shift+O",
         tip="Queue every photo in a folder and its subfolders", menu="&File", toolbar=0),
    Spec("samples", "Try the &Sample Photos", lambda w: w.queue_presenter.queue_samples(),
         tip="Queue the grayscale sample photos that come with Colorizer", menu="&File", toolbar=0,
         visible=lambda s: not s.has_rows),  # offered to try the app, not beside a queue of one's own photos
    Spec("output", "Choose &Output Folder…", lambda w: w.export_panel.choose_folder(), "Ctrl+Shift+E",
         tip="Where the colour photos are written", menu="&File", section=1),
    Spec("open_output", "Open Output Fol&der", lambda w: w.prefs.open_output_folder(), "Ctrl+E",
         tip="Show the output folder in the file manager", menu="&File", section=1, toolbar=3),
    Spec("export_comparison", "E&xport Comparison…", lambda w: w.viewer.export_comparison(), "Ctrl+Shift+S",
         tip="Save the photo on screen as one before/after image, captioned", menu="&File", section=1),
    Spec("quit", "&Quit", lambda w: w.close(), "Ctrl+Q", menu="&File", section=3),
    Spec("remove", "&Remove Selected", lambda w: w.queue_presenter.remove_selected(), Key.Delete,
         tip="Take the selected photos off the queue", menu="&Queue", toolbar=2,
         enabled=lambda s: not s.running and s.has_rows),
    Spec("clear", "&Clear Queue", lambda w: w.queue_presenter.clear_queue(), "Ctrl+Shift+Backspace",
         tip="Empty the queue", menu="&Queue", toolbar=2, enabled=lambda s: not s.running and s.has_rows),
    Spec("start", "&Start", lambda w: w.batch.start_batch(), "Ctrl+Return", tip="Colorize the queued photos",
         menu="&Batch", toolbar=1, enabled=lambda s: not s.running and not s.counting and s.left > 0),
    Spec("run_again", "Run &Again", lambda w: w.batch.run_again(), "Ctrl+R",
         tip="Colorize the selected photos (or all) again, with the current settings", menu="&Batch", toolbar=1,
         enabled=lambda s: not s.running and not s.counting and s.finished > 0),
    Spec("pause", "&Pause", toggle=lambda w, on: w.batch.set_paused(on), shortcut="Ctrl+P",
         tip="Pause after the photos in progress", menu="&Batch", toolbar=1, enabled=lambda s: s.running),
    Spec("cancel", "&Cancel", lambda w: w.batch.cancel_batch(), "Esc",
         tip="Stop after the photos in progress; nothing is left half-written", menu="&Batch", toolbar=1,
         enabled=lambda s: s.running or s.counting),
    Spec("teach", "&Teach from Colour Photos…", lambda w: w.teach.open_dialog(),
         tip="Teach the model from your own colour photos, saved under a name (the shipped model stays)",
         menu="&Model"),
    Spec("model_card", "Show Model &Card", lambda w: w.models.show_card(),
         tip="The chosen model's card: what it learned from, and how it measured", menu="&Model", section=1),
    Spec("delete_model", "&Delete Tuned Model…", lambda w: w.models.delete_chosen(),
         tip="Delete the tuned model chosen in the Engine panel", menu="&Model", section=1,
         enabled=lambda s: not s.running),
    Spec("wipe", "&Wipe Between Before and After", toggle=lambda w, on: w.viewer.set_wipe(on), shortcut="Ctrl+T",
         tip="Switch between side by side and a wipe", menu="&View"),
    Spec("zoom_in", "Zoom &In", lambda w: w.preview.zoom_in(), Key.ZoomIn, menu="&View", section=1),
    Spec("zoom_out", "Zoom &Out", lambda w: w.preview.zoom_out(), Key.ZoomOut, menu="&View", section=1),
    Spec("fit", "&Fit to Window", lambda w: w.preview.fit(), "Ctrl+0", menu="&View", section=1),
    Spec("actual", "&Actual Size", lambda w: w.preview.actual_size(), "Ctrl+1", menu="&View", section=1),
    Spec("stronger", "&Stronger Colour", lambda w: w.preview.step_strength(1), "Ctrl+]",
         tip="Raise the colour strength by 10%", menu="&View", section=2),
    Spec("weaker", "W&eaker Colour", lambda w: w.preview.step_strength(-1), "Ctrl+[",
         tip="Lower the colour strength by 10%", menu="&View", section=2),
    Spec("reset_layout", "&Reset Panel Layout", lambda w: w.prefs.reset_layout(),
         tip="Put the panels back where they start"),  # at the end of View, after the panels (_add_panels_menu)
    Spec("help", "Colorizer &Help", lambda w: w.help.show_help(), Key.HelpContents,
         tip="What the panels mean, the keyboard shortcuts, and where the log is", menu="&Help"),
    Spec("log", "Show &Log File", lambda w: w.help.show_log_file(),
         tip="Open the log, to see what went wrong or attach it to a bug report", menu="&Help"),
    Spec("about", "&About Colorizer", lambda w: w.help.show_about(), menu="&Help", section=1),
    Spec("undo", adopt=lambda w: w.history.undo_action, menu="&Edit"),
    Spec("redo", adopt=lambda w: w.history.redo_action, menu="&Edit"),
    Spec("show_hints", adopt=lambda w: w.hint_editor.show_action, menu="&View"),
    Spec("show_unsure", adopt=lambda w: w.unsure.action, menu="&View"),
    Spec("save_hints", adopt=lambda w: w.hint_files.save_action, menu="&File", section=2, order=1),
    Spec("load_hints", adopt=lambda w: w.hint_files.load_action, menu="&File", section=2),
)
