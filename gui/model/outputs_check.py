"""The count behind the question before a run whose photos have outputs already. It reads the disk once per photo:
0.7 s for 10,000 photos on a local disk and many seconds on a network share, too long to freeze the window for,
so a large queue is counted on a thread of its own.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import QObject, Signal, Slot

from engine.options import ExportOptions
from gui.model.newest_only import NewestOnly
from gui.model.request import QueuedPhoto

log = logging.getLogger(__name__)

COUNT_HERE = 300  # photos counted at once, on the UI thread: a few ms on a local disk, under a second on a share
CopiesToAsk = Callable[..., int]  # ``Backend.copies_to_ask_about(photos, export, stop=...)``


class _Counter(NewestOnly):
    PRIORITY = ("count",)
    counted = Signal(int, int)  # ticket, photos whose outputs exist (0 where fewer than half)

    def __init__(self, count: CopiesToAsk) -> None:
        super().__init__("outputs-check")
        self.count = count
        self.wanted = 0  # the ticket whose answer is still wanted: an older count stops at its next photo
        self._stopping = threading.Event()

    def request(self, ticket: int, photos: tuple[QueuedPhoto, ...], export: ExportOptions) -> None:
        self._post("count", ticket, (photos, export))

    def _serve(self, kind: str, key: int, args: tuple[Any, ...]) -> None:
        self.counted.emit(key, self.count(*args, stop=lambda: self._stopping.is_set() or key != self.wanted))

    def stop(self) -> None:
        """A count in progress ends at its next photo: closing the window waits for no network share."""
        self._stopping.set()
        super().stop()

    def _failed(self, kind: str, key: int, err: Exception) -> None:  # the run itself says what is wrong with a folder
        log.info("outputs not counted: %s", err)
        self.counted.emit(key, 0)


class OutputsCheck(QObject):
    """``count`` answers at once for a small queue; for a large one it returns None and calls ``then(taken)`` on
    the UI thread when the count is done (``busy`` till then, or till ``drop``).
    """

    busy_changed = Signal(bool)

    def __init__(self, count: CopiesToAsk, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._count = count
        self._counter: _Counter | None = None  # started with the first large queue
        self._ticket = 0
        self._then: Callable[[int], None] | None = None

    @property
    def busy(self) -> bool:
        return self._then is not None

    def count(self, photos: Sequence[QueuedPhoto], export: ExportOptions,
              then: Callable[[int], None]) -> int | None:
        if len(photos) <= COUNT_HERE or export.if_exists != "new_name":  # Replace or Skip: nothing to ask or read
            return self._count(photos, export)
        if self._counter is None:
            self._counter = _Counter(self._count)
            self._counter.counted.connect(self._on_counted)  # queued: this object lives on the UI thread
        self._ticket += 1
        self._then = then
        self._counter.wanted = self._ticket
        self._counter.request(self._ticket, tuple(photos), export)
        self.busy_changed.emit(True)
        return None

    def drop(self) -> None:
        """Forget the count in progress: it stops at its next photo, its answer going nowhere (Cancel before the run
        started).
        """
        self._ticket += 1
        if self._counter is not None:
            self._counter.wanted = self._ticket
        if self._then is not None:
            self._then = None
            self.busy_changed.emit(False)

    @Slot(int, int)
    def _on_counted(self, ticket: int, taken: int) -> None:
        if ticket == self._ticket and (then := self._then) is not None:
            self._then = None
            self.busy_changed.emit(False)
            then(taken)

    def stop(self) -> None:
        """The window is closing: a count in progress stops at its next photo, and its answer goes nowhere."""
        self._then = None
        if self._counter is not None:
            self._counter.stop()
