"""The queue's table: the rows of ``gui.model.queue_model.QueueModel``, several selectable at once."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QStyledItemDelegate, QStyleOptionViewItem, QTableView

from gui.model.queue_model import COL_FILE, COMPARE_COLUMNS, QueueModel

COLUMN_WIDTHS = (170, 62, 58, 62, 62, 70, 64, 220)  # at least; wider where the header's title needs it


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
        header.setSectionResizeMode(COL_FILE, QHeaderView.ResizeMode.Stretch)  # the names take what is left
        header.setMinimumSectionSize(40)
        padding = 2 * self.fontMetrics().horizontalAdvance("M")  # the header's margins and sort mark
        for col, width in enumerate(COLUMN_WIDTHS):
            title = str(model.headerData(col, Qt.Orientation.Horizontal))
            header.resizeSection(col, max(width, self.fontMetrics().horizontalAdvance(title) + padding))

    def selected_rows(self) -> list[int]:
        """The selected rows' positions, in the order they were selected."""
        return [i.row() for i in self.selectionModel().selectedRows()]

    def show_compare_columns(self, show: bool) -> None:
        for col in COMPARE_COLUMNS:
            self.setColumnHidden(col, not show)
