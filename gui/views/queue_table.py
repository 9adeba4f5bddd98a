"""The queue's table: the rows of ``gui.model.queue_model.QueueModel``, several selectable at once."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QItemSelectionModel, QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QKeyEvent, QResizeEvent
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QStyledItemDelegate, QStyleOptionViewItem, QTableView

from gui.model.queue_model import COL_FILE, COL_MESSAGE, COMPARE_COLUMNS, QueueModel

COLUMN_WIDTHS = (170, 62, 58, 62, 62, 70, 64, 220)  # at least; wider where the header's title needs it
FILE_SHARE = 0.55  # of the room the figures leave: the names; the rest to the messages
MIN_FILE, MIN_MESSAGE = 140, 110  # below these a scroll bar comes, rather than names cut to their last letters


class FileNameDelegate(QStyledItemDelegate):
    """Long names lose their beginning, not their end: "IMG_0001.JPG" and "IMG_0002.JPG" stay told apart."""

    def initStyleOption(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> None:
        super().initStyleOption(option, index)
        option.textElideMode = Qt.TextElideMode.ElideLeft  # type: ignore[attr-defined]


class QueueTable(QTableView):
    selection_changed = Signal()  # rows were selected or deselected

    def __init__(self, model: QueueModel) -> None:
        super().__init__()
        self.setModel(model)
        self.selectionModel().selectionChanged.connect(self.selection_changed)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setAlternatingRowColors(True)
        self.verticalHeader().setDefaultSectionSize(22)
        self.setWordWrap(False)
        self.setTabKeyNavigation(False)  # Tab leaves the table; the arrow keys move between rows
        self.setItemDelegateForColumn(COL_FILE, FileNameDelegate(self))  # "…ding/IMG_0001.JPG"
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(False)
        header.setMinimumSectionSize(40)
        padding = 2 * self.fontMetrics().horizontalAdvance("M")  # the header's margins and sort mark
        for col, width in enumerate(COLUMN_WIDTHS):
            title = str(model.headerData(col, Qt.Orientation.Horizontal))
            header.resizeSection(col, max(width, self.fontMetrics().horizontalAdvance(title) + padding))

    def selectionCommand(self, index: QModelIndex | QPersistentModelIndex,  # noqa: N802 - Qt's name
                         event: QEvent | None = None) -> QItemSelectionModel.SelectionFlag:
        """Ctrl+Home and Ctrl+End select the first and last photo, as in a file manager (Qt's extended selection
        only moves the current row for a key held with Ctrl, so the preview did not follow).
        """
        if isinstance(event, QKeyEvent) and event.key() in (Qt.Key.Key_Home, Qt.Key.Key_End) \
                and event.modifiers() == Qt.KeyboardModifier.ControlModifier:
            return (QItemSelectionModel.SelectionFlag.ClearAndSelect
                    | QItemSelectionModel.SelectionFlag.Rows)
        return super().selectionCommand(index, event)

    def selected_rows(self) -> list[int]:
        """The selected rows' positions, in the order they were selected."""
        return [i.row() for i in self.selectionModel().selectedRows()]

    def show_compare_columns(self, show: bool) -> None:
        for col in COMPARE_COLUMNS:
            self.setColumnHidden(col, not show)
        self.share_width()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self.share_width()

    def share_width(self) -> None:
        """The names and the messages share the room the figures leave, as the window's width changes: on a small
        screen neither is cut to a few letters while the other keeps its width (a Stretch section did that).
        """
        header = self.horizontalHeader()
        figures = sum(header.sectionSize(c) for c in range(header.count())
                      if c not in (COL_FILE, COL_MESSAGE) and not self.isColumnHidden(c))
        room = self.viewport().width() - figures
        names = max(MIN_FILE, int(room * FILE_SHARE))
        header.resizeSection(COL_FILE, names)
        header.resizeSection(COL_MESSAGE, max(MIN_MESSAGE, room - names))
