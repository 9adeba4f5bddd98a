"""Quitting while a batch runs: asked, since the queue is not kept and its unfinished photos would be added again."""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox, QWidget

from engine.messages import counted


def ask_quit_while_running(parent: QWidget, left: int) -> bool:
    """Whether to quit now, with ``left`` photos of the batch still to colorize (No is the default)."""
    answer = QMessageBox.question(
        parent, "Quit while colorizing?",
        f"Colorizer is still colorizing: {counted(left, 'photo')} to go. Quit now? The photos written so far are "
        "kept; the queue is not, so the rest would have to be added again.",
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, QMessageBox.StandardButton.No)
    return answer == QMessageBox.StandardButton.Yes
