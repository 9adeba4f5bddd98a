"""Previews read from disk on their own thread: a photo whose cached preview was dropped is decoded again,
and a 3000 px scan takes up to a second, which must not freeze the window on a click in the queue.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from PySide6.QtCore import Signal

from gui.model.newest_only import NewestOnly
from gui.model.previews import preview_from_files

log = logging.getLogger(__name__)


class PreviewLoader(NewestOnly):
    """Only the newest request is kept: clicking through the queue loads the photo that ends up selected,
    not every one passed on the way. Replies: ``loaded(key, L, ab or None)``, ``failed(key, reason)``.
    """

    PRIORITY = ("read",)
    loaded = Signal(int, object, object)
    failed = Signal(int, str)

    def __init__(self, size: int) -> None:
        super().__init__("preview-loader")
        self.size = size

    def request(self, key: int, path: Path, output: Path | None) -> None:
        """Read ``path`` (and its colour version ``output``, if any) at the preview size; UI thread."""
        self._post("read", key, (path, output))

    def _serve(self, kind: str, key: int, args: tuple[Any, ...]) -> None:
        path, output = args
        L, ab = preview_from_files(path, output, self.size)
        self.loaded.emit(key, L, ab)

    def _failed(self, kind: str, key: int, err: Exception) -> None:  # an unreadable file: say so, browse on
        log.info("no preview: %s", err)
        self.failed.emit(key, str(err) or type(err).__name__)
