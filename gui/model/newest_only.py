"""A worker on a thread of its own that keeps only the newest request of each kind: the preview's reads and
the hint service's model runs, where requests that pile up while one runs are stale by the time it ends.
"""

from __future__ import annotations

import threading
from typing import Any

from PySide6.QtCore import QObject, QThread, Signal, Slot


class NewestOnly(QObject):
    """``_post(kind, key, args)`` from the UI thread replaces any pending request of that kind; ``_serve`` runs
    on the service's thread, kinds in ``PRIORITY`` order; ``idle`` once nothing is pending. A request that raises
    goes to ``_failed``. ``stop`` drops what is pending and waits for the request in progress.
    """

    PRIORITY: tuple[str, ...] = ()
    idle = Signal()  # every request so far is answered
    _wake = Signal()

    def __init__(self, name: str) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[int, tuple[Any, ...]]] = {}  # kind -> the newest (key, args)
        self._scheduled = False
        self._thread = QThread()
        self._thread.setObjectName(name)
        self.moveToThread(self._thread)
        self._wake.connect(self._drain)  # queued: _drain runs on the service's thread
        self._thread.start()

    def _post(self, kind: str, key: int, args: tuple[Any, ...]) -> None:
        with self._lock:
            self._pending[kind] = (key, args)
            wake, self._scheduled = not self._scheduled, True
        if wake:
            self._wake.emit()

    @Slot()
    def _drain(self) -> None:
        while True:
            with self._lock:
                if not self._pending:
                    self._scheduled = False
                    self.idle.emit()
                    return
                kind = next(k for k in self.PRIORITY if k in self._pending)
                key, args = self._pending.pop(kind)
            try:
                self._serve(kind, key, args)
            except Exception as err:  # noqa: BLE001 - a failing request must not take the window down
                self._failed(kind, key, err)

    def _serve(self, kind: str, key: int, args: tuple[Any, ...]) -> None:
        raise NotImplementedError

    def _failed(self, kind: str, key: int, err: Exception) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        """End the thread (window closing); a request in progress finishes first."""
        with self._lock:
            self._pending.clear()
        self._thread.quit()
        self._thread.wait()
