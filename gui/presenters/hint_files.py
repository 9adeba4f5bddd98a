"""File > Save Hints… and Load Hints…: the queued photos' colour hints as the file ``colorize --hints`` reads;
a loaded file is one undoable step on the window's undo stack.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QUndoStack
from PySide6.QtWidgets import QFileDialog, QWidget

from engine.hints import HintsFileError
from engine.messages import counted
from gui.model.hint_store import HintStore, SetHints, load_summary


class HintFiles(QObject):
    """``photos()`` are the queued photos as (path, root folder); ``status`` says what happened."""

    def __init__(self, store: HintStore, stack: QUndoStack, photos: Callable[[], list[tuple[Path, Path]]],
                 status: Callable[[str], None], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store, self.stack, self.photos, self.status = store, stack, photos, status
        self._parent_widget = parent
        self.save_action = QAction("Save &Hints…", self)
        self.save_action.setStatusTip("Save the queued photos' colour hints as a file (colorize --hints reads it)")
        self.save_action.triggered.connect(self.save_dialog)
        self.load_action = QAction("&Load Hints…", self)
        self.load_action.setStatusTip("Load colour hints from a file, for the queued photos it names")
        self.load_action.triggered.connect(self.load_dialog)

    def save_file(self, path: Path) -> int:
        n = self.store.save_file(path, self.photos())
        self.status(f"Saved the hints of {counted(n, 'photo')} to {path}")
        return n

    def load_file(self, path: Path) -> bool:
        """Load a hints file for the queued photos it names, as one undoable step."""
        photos = self.photos()
        try:
            match = self.store.read_file(path, photos)
        except HintsFileError as err:
            self.status(str(err))
            return False
        changes = {photos[i][0]: (self.store.get(photos[i][0]), hints) for i, hints in match.hints.items()}
        self.stack.push(SetHints(self.store, changes, f"Load Hints from {path.name}"))
        self.status(load_summary(match, path))
        return True

    def folder(self) -> Path:
        """Where the dialogs open: the first queued photo's folder, where a hints file belongs beside its photos (not
        the directory the app was started from); with nothing queued, the home folder.
        """
        photos = self.photos()
        return photos[0][0].parent if photos else Path.home()

    def save_dialog(self) -> None:
        name, _ = QFileDialog.getSaveFileName(self._parent_widget, "Save colour hints",
                                              str(self.folder() / "hints.json"), "Hints files (*.json)")
        if name:
            self.save_file(Path(name))

    def load_dialog(self) -> None:
        name, _ = QFileDialog.getOpenFileName(self._parent_widget, "Load colour hints", str(self.folder()),
                                              "Hints files (*.json)")
        if name:
            self.load_file(Path(name))
