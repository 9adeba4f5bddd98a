"""Help > Colorizer Help, Show Log File and About: the texts, from the window's actions and the model card."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from PySide6.QtCore import QObject, QUrl
from PySide6.QtGui import QAction, QDesktopServices
from PySide6.QtWidgets import QDialog, QWidget

from gui.actions import shortcut_text
from gui.logfile import log_file
from gui.presenters.backend import Backend
from gui.views.docks import PANELS
from gui.views.help_dialogs import about_html, help_html, text_dialog

MODEL_CARD = Path(__file__).resolve().parents[2] / "resources" / "models" / "colorizer.md"


class HelpPresenter(QObject):
    def __init__(self, backend: Backend, actions: Callable[[], Mapping[str, QAction]], say: Callable[[str], None],
                 parent: QWidget) -> None:
        super().__init__(parent)
        self.backend, self.actions, self.say, self._parent = backend, actions, say, parent
        self.about_dialog: QDialog | None = None
        self.help_dialog: QDialog | None = None

    def about_text(self) -> str:
        weights = getattr(self.backend, "weights", None)
        card_file = Path(weights).with_suffix(".md") if weights else MODEL_CARD
        card, problem = self.backend.model_card()
        return about_html(card, problem, card_file=card_file)

    def help_text(self) -> str:
        panels = [("Queue", "the photos to colorize; the Message column says why one failed"),
                  ("Preview", "the selected photo before and after, side by side or with a wipe")]
        panels += [(spec.title, spec.tip) for spec in PANELS]
        keys = [(a.property("help_name") or a.text().replace("&", ""), shortcut_text(a))
                for a in self.actions().values()]
        keys.append(("Move between the queue, the preview's buttons and the panels", "Tab, Shift+Tab"))
        return help_html(panels, keys, log_file())

    def show_about(self) -> None:
        self.about_dialog = text_dialog(self._parent, "About Colorizer", self.about_text(), 520, 340)
        self.about_dialog.open()  # not exec(): the window (and tests) keep running

    def show_help(self) -> None:
        self.help_dialog = text_dialog(self._parent, "Colorizer Help", self.help_text(), 600, 640)
        self.help_dialog.open()

    def show_log_file(self) -> bool:
        """Open the log in the desktop's viewer; where there is none, say where the file is."""
        path = log_file()
        if not path.is_file():
            self.say(f"No log file yet (it will be {path})")
            return False
        if not QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))):
            self.say(f"Could not open the log file; it is {path}")
            return False
        self.say(f"Opened the log file {path}")
        return True
