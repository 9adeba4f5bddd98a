"""Developer option ``COLORIZER_SCREENSHOT``: grab the window mid-batch and after it, then quit.

The "done" screenshot is taken with the last photo selected, as a user would look at it.
``COLORIZER_SCREENSHOT_SIZE=WxH`` sizes the window first (the README's 1600x1000 and 1024x700).
Used for the screenshots in docs/ (see tools/gui_screenshots.sh); not part of the user-facing app.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QApplication

from engine.options import BatchSummary, PhotoResult

if TYPE_CHECKING:
    from gui.main_window import MainWindow

log = logging.getLogger(__name__)


def parse_size(text: str | None) -> tuple[int, int] | None:
    """"1600x1000" -> (1600, 1000); None for nothing or nonsense."""
    width, _, height = (text or "").lower().partition("x")
    try:
        return int(width), int(height)
    except ValueError:
        return None


class ScreenshotTaker(QObject):
    """Saves ``PREFIX-mid.png`` once half the batch is done and ``PREFIX-done.png`` after it, then quits."""

    def __init__(self, window: MainWindow, prefix: Path, size: tuple[int, int] | None = None) -> None:
        super().__init__(window)
        self.window = window
        self.prefix = prefix
        self._mid_taken = False
        if size is not None:
            window.resize(*size)
        window.controller.image_done.connect(self._on_image_done)
        window.controller.finished.connect(self._on_finished)

    def _save(self, suffix: str) -> Path:
        path = self.prefix.with_name(f"{self.prefix.name}-{suffix}.png")
        path.parent.mkdir(parents=True, exist_ok=True)
        ok = self.window.grab().save(str(path))
        log.warning("screenshot %s: %s", "saved" if ok else "NOT saved", path)
        return path

    def _on_image_done(self, _result: PhotoResult) -> None:
        p = self.window.controller.progress
        if not self._mid_taken and p is not None and p.processed * 2 >= p.total:
            self._mid_taken = True
            # Let the row and preview updates of this photo paint first.
            QTimer.singleShot(150, lambda: self._save("mid"))

    def _on_finished(self, _summary: BatchSummary) -> None:
        rows = self.window.queue.rowCount()
        if rows:
            self.window.table.selectRow(rows - 1)

        def done() -> None:
            self._save("done")
            self.window.close()
            QApplication.quit()

        QTimer.singleShot(1500, done)  # a few more utilization samples, and the final repaint
