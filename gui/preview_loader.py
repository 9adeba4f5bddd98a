"""Previews read from disk on their own thread: a photo whose cached preview was dropped is decoded again,
and a 3000 px scan takes up to a second, which must not freeze the window on a click in the queue.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from PySide6.QtCore import QObject, QThread, Signal, Slot

from .preview import preview_from_files

log = logging.getLogger(__name__)


class PreviewLoader(QObject):
    """Only the newest request is kept: clicking through the queue loads the photo that ends up selected,
    not every one passed on the way. Replies: ``loaded(key, L, ab or None)``, ``failed(key, reason)``.
    """

    loaded = Signal(int, object, object)
    failed = Signal(int, str)
    _wake = Signal()

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size
        self._lock = threading.Lock()
        self._pending: tuple[int, Path, Path | None] | None = None
        self._thread = QThread()
        self._thread.setObjectName("preview-loader")
        self.moveToThread(self._thread)
        self._wake.connect(self._drain)  # queued: runs on the loader's thread
        self._thread.start()

    def request(self, key: int, path: Path, output: Path | None) -> None:
        """Read ``path`` (and its colour version ``output``, if any) at the preview size; UI thread."""
        with self._lock:
            wake = self._pending is None
            self._pending = (key, path, output)
        if wake:
            self._wake.emit()

    @Slot()
    def _drain(self) -> None:
        while True:
            with self._lock:
                if self._pending is None:
                    return
                key, path, output = self._pending
                self._pending = None
            try:
                L, ab = preview_from_files(path, output, self.size)
            except Exception as err:  # noqa: BLE001 - an unreadable file must not break browsing the queue
                log.info("no preview of %s: %s", path, err)
                self.failed.emit(key, str(err) or type(err).__name__)
            else:
                self.loaded.emit(key, L, ab)

    def stop(self) -> None:
        """End the thread (window closing); a read in progress finishes first."""
        with self._lock:
            self._pending = None
        self._thread.quit()
        self._thread.wait()
