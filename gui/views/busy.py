"""The busy cursor shown while the window waits for work done elsewhere (a photo read, the model's answer)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication


class BusyCursor:
    """One holder's share of Qt's override-cursor stack: ``set(True)`` twice pushes once, and ``set(False)`` pops
    once, only after this holder pushed. Qt pops the top of its one stack, so holders pairing their own calls keep
    it balanced; all push the same cursor, so which one's entry goes first does not show. UI thread only.
    """

    def __init__(self) -> None:
        self.on = False

    def set(self, on: bool) -> None:
        if on and not self.on:
            QApplication.setOverrideCursor(Qt.CursorShape.BusyCursor)
        elif not on and self.on:
            QApplication.restoreOverrideCursor()
        self.on = on
