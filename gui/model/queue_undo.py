"""Undo and Redo for taking photos off the queue (Edit menu): a QUndoStack of remove and clear commands.

A command keeps the removed ``QueueRow`` objects themselves, so Undo brings each photo back at its old
row with its status, output and timings. Nothing is undone while a batch runs: the batch holds row keys.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction, QKeySequence, QUndoCommand, QUndoStack

from engine.messages import counted
from gui.model.queue_model import QueueModel, QueueRow


class RemoveRows(QUndoCommand):
    """Take the given rows off the queue; undo puts them back where they were."""

    def __init__(self, model: QueueModel, rows: Sequence[int], text: str | None = None) -> None:
        wanted = sorted({r for r in rows if 0 <= r < model.rowCount()})
        super().__init__(text or f"Remove {counted(len(wanted), 'photo')}")
        self.model = model
        self.placed: list[tuple[int, QueueRow]] = [(r, model.row(r)) for r in wanted]

    def redo(self) -> None:
        keys = {row.key for _, row in self.placed}
        self.model.remove_rows([i for i, row in enumerate(self.model.rows()) if row.key in keys])

    def undo(self) -> None:
        self.model.insert_rows(self.placed)


class ClearRows(RemoveRows):
    """Empty the queue; undo brings every photo back in its order."""

    def __init__(self, model: QueueModel) -> None:
        super().__init__(model, range(model.rowCount()), f"Clear Queue ({counted(model.rowCount(), 'photo')})")

    def redo(self) -> None:
        self.model.clear()


class QueueHistory(QObject):
    """The undo stack and its Edit-menu actions, which stay disabled while ``busy()`` (a batch running).
    ``stepped(text)`` after an undo or a redo: what the status line says, the line of the step itself being stale.
    """

    stepped = Signal(str)

    def __init__(self, model: QueueModel, busy: Callable[[], bool], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.busy = busy
        self.stack = QUndoStack(self)
        self.undo_action = QAction("&Undo", self)
        self.undo_action.setShortcut(QKeySequence("Ctrl+Z"))  # explicit: some platforms bind no Undo key
        self.undo_action.triggered.connect(self.undo)
        self.undo_action.setProperty("help_name", "Undo")  # the text changes ("Undo Add Hint"); Help lists this
        self.redo_action = QAction("&Redo", self)
        self.redo_action.setProperty("help_name", "Redo")
        self.redo_action.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")])
        self.redo_action.triggered.connect(self.redo)
        for signal in (self.stack.canUndoChanged, self.stack.canRedoChanged, self.stack.indexChanged):
            signal.connect(self.refresh)
        self.refresh()

    def remove(self, rows: Sequence[int]) -> int:
        """Remove rows as one undoable step; returns how many were removed."""
        command = RemoveRows(self.model, rows)
        if not command.placed or self.busy():
            return 0
        self.stack.push(command)
        return len(command.placed)

    def clear(self) -> int:
        """Empty the queue as one undoable step; returns how many photos were removed."""
        n = self.model.rowCount()
        if n == 0 or self.busy():
            return 0
        self.stack.push(ClearRows(self.model))
        return n

    def undo(self) -> None:
        if not self.busy() and self.stack.canUndo():
            text = self.stack.undoText()
            self.stack.undo()
            self.stepped.emit(f"Undone: {text}")

    def redo(self) -> None:
        if not self.busy() and self.stack.canRedo():
            text = self.stack.redoText()
            self.stack.redo()
            self.stepped.emit(f"Redone: {text}")

    def refresh(self, *_: object) -> None:
        """Enable and name the actions after the stack's state (and whether a batch runs)."""
        free = not self.busy()
        self.undo_action.setEnabled(free and self.stack.canUndo())
        self.redo_action.setEnabled(free and self.stack.canRedo())
        undo, redo = self.stack.undoText(), self.stack.redoText()
        self.undo_action.setText(f"&Undo {undo}" if undo else "&Undo")
        self.redo_action.setText(f"&Redo {redo}" if redo else "&Redo")
