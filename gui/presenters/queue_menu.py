"""Opening photos from the queue: double-click a done row for its result, and the right-click menu
(Open Result, Open Original, Show in Folder, Copy Path).

Every open goes through ``open_path``; when the desktop cannot launch anything for it
(``QDesktopServices.openUrl`` returns False: no file manager, no image viewer), the window says so
in its status bar instead of failing silently.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from PySide6.QtCore import QModelIndex, QObject, QPoint, Qt, QUrl
from PySide6.QtGui import QAction, QDesktopServices, QGuiApplication
from PySide6.QtWidgets import QMenu, QTableView

from engine.options import Status
from gui.model.queue_model import QueueModel, QueueRow


def open_path(path: Path, report: Callable[[str], None], what: str = "") -> bool:
    """Open a file or folder with the desktop's default application; report what happened."""
    label = what or path.name
    if not path.exists():
        report(f"Cannot open {label}: {path} does not exist")
        return False
    if not QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))):
        report(f"Could not open {label}: no application is set up to open {path}")
        return False
    report(f"Opened {label}")
    return True


def result_of(row: QueueRow) -> Path | None:
    """The colour photo written for this row, if it is done."""
    return row.output if row.status == Status.DONE and row.output is not None else None


class QueueMenu(QObject):
    """Double-click and context-menu actions on the queue table; ``extra`` actions follow a separator."""

    def __init__(self, table: QTableView, model: QueueModel, report: Callable[[str], None],
                 extra: Sequence[QAction] = (), parent: QObject | None = None) -> None:
        super().__init__(parent or table)
        self.table, self.model, self.report = table, model, report
        self.extra = list(extra)
        self.menu: QMenu | None = None
        table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        table.customContextMenuRequested.connect(self.show_menu)
        table.doubleClicked.connect(self.on_double_click)

    # -- what the actions do ----------------------------------------------------------------------
    def current_row(self) -> QueueRow | None:
        index = self.table.currentIndex()
        if not index.isValid():
            rows = self.table.selectionModel().selectedRows()
            if not rows:
                return None
            index = rows[-1]
        return self.model.row(index.row()) if 0 <= index.row() < self.model.rowCount() else None

    def on_double_click(self, index: QModelIndex) -> bool:
        if not index.isValid():
            return False
        row = self.model.row(index.row())
        output = result_of(row)
        if output is None:
            self.report(f"{row.path.name} is not colorized yet: double-click opens the colour photo once it is done")
            return False
        return open_path(output, self.report, f"{output.name}")

    def open_result(self) -> bool:
        row = self.current_row()
        output = None if row is None else result_of(row)
        return output is not None and open_path(output, self.report, output.name)

    def open_original(self) -> bool:
        row = self.current_row()
        return row is not None and open_path(row.path, self.report, f"the original {row.path.name}")

    def show_in_folder(self) -> bool:
        """The folder holding the result (or, before there is one, the original)."""
        row = self.current_row()
        if row is None:
            return False
        target = result_of(row) or row.path
        return open_path(target.parent, self.report, f"the folder {target.parent}")

    def copy_path(self) -> str:
        """Put the result's path (or the original's, before there is a result) on the clipboard."""
        row = self.current_row()
        if row is None:
            return ""
        text = str(result_of(row) or row.path)
        QGuiApplication.clipboard().setText(text)
        self.report(f"Copied {text}")
        return text

    # -- the menu ---------------------------------------------------------------------------------------
    def build_menu(self) -> QMenu:
        """The menu for the current row: result actions are disabled until the photo is done."""
        row = self.current_row()
        done = row is not None and result_of(row) is not None
        menu = QMenu(self.table)
        for text, slot, enabled in (("Open &Result", self.open_result, done),
                                    ("Open &Original", self.open_original, row is not None),
                                    ("Show in &Folder", self.show_in_folder, row is not None),
                                    ("&Copy Path", self.copy_path, row is not None)):
            action = menu.addAction(text)
            action.triggered.connect(slot)
            action.setEnabled(enabled)
        if self.extra:
            menu.addSeparator()
            menu.addActions(self.extra)
        return menu

    def show_menu(self, pos: QPoint) -> None:
        index = self.table.indexAt(pos)
        if index.isValid() and not self.table.selectionModel().isRowSelected(index.row(), QModelIndex()):
            self.table.selectRow(index.row())
        if index.isValid():
            self.table.setCurrentIndex(index)
        if self.menu is not None:
            self.menu.deleteLater()
        self.menu = self.build_menu()
        self.menu.popup(self.table.viewport().mapToGlobal(pos))
