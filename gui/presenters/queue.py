"""The queue's presenter: photos added (dialogs, drops, the samples, the command line), removed and cleared
(undoably, ``gui.model.queue_undo``), and the right-click menu on its table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from PySide6.QtCore import QObject, QSettings, QUrl
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent
from PySide6.QtWidgets import QFileDialog, QWidget

from engine.imageio import IMAGE_EXTENSIONS
from engine.messages import counted
from gui.model.queue_model import QueueModel
from gui.model.queue_undo import QueueHistory
from gui.presenters.backend import Backend
from gui.presenters.preview import PreviewPresenter
from gui.views.docks import DropHighlight
from gui.views.queue_table import QueueTable


def local_paths(urls: Iterable[QUrl]) -> list[Path]:
    return [Path(u.toLocalFile()) for u in urls if u.isLocalFile() and u.toLocalFile()]


class QueuePresenter(QObject):
    """Queue editing. ``running()`` says whether a batch runs (the queue is then not edited);
    ``shortcut(name)`` is an action's shortcut as the status bar should name it.
    """

    def __init__(self, backend: Backend, queue: QueueModel, table: QueueTable, history: QueueHistory,
                 viewer: PreviewPresenter, qsettings: QSettings, samples_dir: Path, running: Callable[[], bool],
                 say: Callable[[str], None], shortcut: Callable[[str], str], parent: QWidget,
                 output_dir: Callable[[], Path | None] = lambda: None) -> None:
        super().__init__(parent)
        self.output_dir = output_dir  # Export's folder: never queued from a folder that holds it
        self.backend, self.queue, self.table, self.history, self.viewer = backend, queue, table, history, viewer
        self.qsettings, self.samples_dir = qsettings, samples_dir
        self.running, self.say, self.shortcut, self._parent = running, say, shortcut, parent
        self.drop_highlight = DropHighlight(parent)

    def add_paths(self, paths: Iterable[Path]) -> int:
        """Queue files and folders (walked recursively, non-images ignored, duplicates dropped)."""
        paths = list(paths)
        if not paths:
            return 0
        out = self.output_dir()
        items, problems = self.backend.collect(paths, [(r.path, r.root) for r in self.queue.rows()], out)
        added, duplicates = self.queue.add(items)
        text = f"Queued {counted(added, 'photo')}"
        if duplicates:
            text += f" ({duplicates} already in the queue)"
        holder = self.backend.output_folder_inside(paths, out) if out is not None else None
        if holder is not None:
            text += f"; the outputs inside '{holder.name}' were left out (colour versions of its photos)"
        if not items and not problems:
            text = "No photos there: Colorizer reads " + ", ".join(sorted(e.lstrip(".") for e in IMAGE_EXTENSIONS))
        if problems:
            text += f"; {counted(len(problems), 'problem')}: {problems[0]}"
        self.say(text)
        if added:
            self.viewer.queued(f"{counted(len(self.queue.rows()), 'photo')} queued. "
                               f"Press Start ({self.shortcut('start')}).", offer_action=False)  # not the samples now
        return added

    def choose_files(self) -> None:
        patterns = " ".join(f"*{e}" for e in sorted(IMAGE_EXTENSIONS))
        files, _ = QFileDialog.getOpenFileNames(self._parent, "Add photos", self._last_dir(),
                                                f"Photos ({patterns});;All files (*)")
        if files:
            self.qsettings.setValue("paths/last_input", str(Path(files[0]).parent))
            self.add_paths(Path(f) for f in files)

    def choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self._parent, "Add a folder of photos", self._last_dir(folder=True))
        if folder:
            self.qsettings.setValue("paths/last_input", folder)
            self.add_paths([Path(folder)])

    def _last_dir(self, folder: bool = False) -> str:
        """Where Add Photos and Add Folder open: beside the last queued photo (for a folder, one level up, where
        its neighbours are), however it was queued; with an empty queue, the folder last chosen, else home.
        """
        if self.queue.rowCount():
            here = self.queue.row(self.queue.rowCount() - 1).path.parent
            return str(here.parent if folder else here)
        return str(self.qsettings.value("paths/last_input", "") or Path.home())

    def queue_samples(self) -> int:
        if not any(p for pattern in ("*.jpg", "*.jpeg", "*.png") for p in self.samples_dir.glob(pattern)):
            self.say(f"No sample photos found in {self.samples_dir}")
            return 0
        return self.add_paths([self.samples_dir])  # as a folder: their outputs under its name, not among one's own

    def selected_keys(self) -> list[int]:
        return [self.queue.row(i).key for i in self.table.selected_rows()]

    def remove_selected(self) -> None:
        if self.running():
            return
        rows = self.table.selected_rows()
        removed = self.history.remove(rows)
        if removed and self.queue.rowCount():  # the row after them takes their place, as in a file manager
            self.table.selectRow(min(min(rows), self.queue.rowCount() - 1))
        self.say(f"Removed {counted(removed, 'photo')} from the queue (undo with {self.shortcut('undo')})")

    def clear_queue(self) -> None:
        if self.running():
            return
        self.history.clear()
        self.viewer.queue_cleared()
        self.say(f"Queue cleared (undo with {self.shortcut('undo')})")

    # -- drops on the window ---------------------------------------------------------------------------------
    def drag_enter(self, event: QDragEnterEvent) -> None:
        if local_paths(event.mimeData().urls()):
            event.acceptProposedAction()
            self.drop_highlight.show_over(self._parent)
        else:
            event.ignore()

    def drag_left(self) -> None:
        self.drop_highlight.hide()

    def drag_move(self, event: QDragMoveEvent) -> None:
        if local_paths(event.mimeData().urls()):
            event.acceptProposedAction()

    def drop(self, event: QDropEvent) -> None:
        self.drop_highlight.hide()
        paths = local_paths(event.mimeData().urls())
        if paths:
            self.add_paths(paths)
            event.acceptProposedAction()
