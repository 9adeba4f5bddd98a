"""The settings' presenter: what the panels and the preview hold, as ``AppSettings``, saved and restored with
the window's geometry, docks and splitters; the export folder (``--output`` for one run only) and opening it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QByteArray, QObject, QSettings, QTimer
from PySide6.QtWidgets import QDockWidget, QMainWindow, QSplitter

from gui.model import settings as app_settings
from gui.presenters.queue_menu import open_path
from gui.views.docks import STATE_VERSION, size_default_docks
from gui.views.engine_panel import EnginePanel
from gui.views.export_panel import ExportPanel
from gui.views.preview import BeforeAfterView


class SettingsPresenter(QObject):
    def __init__(self, qsettings: QSettings, window: QMainWindow, engine_panel: EnginePanel,
                 export_panel: ExportPanel, preview: BeforeAfterView, docks: Mapping[str, QDockWidget],
                 splitters: Mapping[str, QSplitter], say: Callable[[str], None]) -> None:
        super().__init__(window)
        self.qsettings, self.window, self.docks, self.splitters, self.say = qsettings, window, docks, splitters, say
        self.engine_panel, self.export_panel, self.preview = engine_panel, export_panel, preview
        self._default_state = window.saveState(STATE_VERSION)
        self._run_only_output: Path | None = None  # --output: used for this run, never saved
        self._saved_output: Path | None = None
        self._size_docks_on_show = False

    def current(self) -> app_settings.AppSettings:
        export = replace(self.export_panel.choice(), strength=self.preview.strength_percent() / 100)
        return app_settings.AppSettings(self.engine_panel.choice(), export,
                                        compare=self.engine_panel.comparing(), preview_mode=self.preview.mode,
                                        model_name=self.engine_panel.chosen_model().name)

    def restore(self) -> None:
        s = app_settings.load(self.qsettings)
        self.engine_panel.set_choice(s.model)
        if not self.engine_panel.select_model(s.model_name):
            self.say(f"The model '{s.model_name}' chosen last time is gone or cannot be used: "
                     "colorizing with the shipped model")
        self.engine_panel.set_comparing(s.compare)
        self.export_panel.set_choice(s.export)
        self.preview.set_strength_percent(round(100 * s.export.strength))
        self._saved_output = s.export.output_dir
        self.preview.set_mode(s.preview_mode)
        window = self.window
        geometry = self.qsettings.value("window/geometry")
        if isinstance(geometry, QByteArray):
            window.restoreGeometry(geometry)
        else:
            screen = window.screen().availableGeometry()
            window.resize(min(1400, screen.width() * 9 // 10), min(860, screen.height() * 9 // 10))
        state = self.qsettings.value("window/state")
        # First run, or a state saved by the old splitter layout: the default dock sizes once shown.
        self._size_docks_on_show = not (isinstance(state, QByteArray) and window.restoreState(state, STATE_VERSION))
        for name, splitter in self.splitters.items():
            value = self.qsettings.value(f"window/splitter/{name}")
            if isinstance(value, QByteArray):
                splitter.restoreState(value)

    def save(self) -> None:
        s = self.current()
        if self._run_only_output is not None and s.export.output_dir == self._run_only_output:
            s = replace(s, export=replace(s.export, output_dir=self._saved_output or s.export.output_dir))
        app_settings.save(self.qsettings, s)
        self.qsettings.setValue("window/geometry", self.window.saveGeometry())
        self.qsettings.setValue("window/state", self.window.saveState(STATE_VERSION))
        for name, splitter in self.splitters.items():
            self.qsettings.setValue(f"window/splitter/{name}", splitter.saveState())
        self.qsettings.sync()

    def shown(self) -> None:
        """The window is shown: on a first run, size the docks once it has been laid out at its real size."""
        if self._size_docks_on_show:
            self._size_docks_on_show = False
            # Once the window has been laid out at its real size: resizeDocks divides that size.
            QTimer.singleShot(0, self.window, lambda: size_default_docks(self.window, dict(self.docks)))

    def reset_layout(self) -> None:
        self.window.restoreState(self._default_state, STATE_VERSION)
        size_default_docks(self.window, dict(self.docks))

    def set_output_dir(self, folder: Path, remember: bool = True) -> None:
        """Export to ``folder``; with ``remember=False`` (``--output``) the saved export folder stays as it was."""
        self._run_only_output = None if remember else folder
        self.export_panel.set_output_dir(folder)

    def open_output_folder(self) -> bool:
        """File > Open Output Folder; says so in the status bar when nothing could be launched."""
        folder = self.export_panel.choice().output_dir
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            self.say(f"Cannot create the output folder {folder}: {err.strerror or err}")
            return False
        return open_path(folder, self.say, f"the output folder {folder}")
