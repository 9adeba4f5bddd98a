"""Runs one batch at a time on its own QThread and keeps the progress figures (count, ETA).

The controller lives on the UI thread. It never imports the engine: it gets a ``make_worker``
callable (``gui.bridge.worker.Backend.make_worker``) and talks to the worker through its signals and
its thread-safe ``pause``/``resume``/``cancel``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, QThread, QTimer, Signal, Slot

from engine.options import BatchSummary, PhotoResult, Status
from gui.model.request import BatchRequest
from gui.presenters.backend import Worker

STEADY_S = 1.0  # seconds of photos coming through before their speed alone gives the ETA
BURST_S = 0.1  # photos through within this of the one before them came out of one batch together


class Progress:
    """Count and ETA of a running batch; paused time counts neither towards the speed nor the countdown, and
    skipped photos (their output exists) move the count but not the speed: a resumed batch's ETA is its work's.
    """

    def __init__(self, total: int) -> None:
        self.total = total
        self.processed = 0
        self.skipped = 0
        self._start = time.monotonic()
        self._paused_at: float | None = None
        self._paused_s = 0.0
        self._at_last = 0.0  # elapsed_s() when the last photo was through
        self._at_first: float | None = None  # ... and the first burst of photos worked on (not skipped)
        self._first_burst = 0  # how many photos came through in that burst (a batch's photos come together)

    @property
    def paused(self) -> bool:
        return self._paused_at is not None

    def photo_done(self, skipped: bool = False) -> None:
        self.processed += 1
        self.skipped += skipped
        self._at_last = self.elapsed_s()
        if skipped:
            return
        if self._at_first is None or (self._first_burst == self.processed - self.skipped - 1
                                      and self._at_last - self._at_first <= BURST_S):
            self._at_first = self._at_last  # the first photo, or one more of its burst
            self._first_burst += 1

    def pause(self) -> None:
        if self._paused_at is None:
            self._paused_at = time.monotonic()

    def resume(self) -> None:
        if self._paused_at is not None:
            self._paused_s += time.monotonic() - self._paused_at
            self._paused_at = None

    def elapsed_s(self) -> float:
        now = self._paused_at if self._paused_at is not None else time.monotonic()
        return now - self._start - self._paused_s

    def eta_s(self) -> float | None:
        """Seconds left at the speed so far, counting down between photos; None before the first photo is through.

        The speed is taken from the first photo through on, once that spans STEADY_S: before it, the model was
        loading and warming up (6 of a 42-photo batch's 13.5 s, in a trial), which would have the ETA five times
        too long for its first seconds.
        """
        worked = self.processed - self.skipped
        if self.processed >= self.total:
            return 0.0
        if worked == 0:
            return None
        since = self._at_last - (self._at_first or 0.0)
        after = worked - self._first_burst  # the photos through since the first burst, in ``since`` seconds
        per = since / after if after > 0 and since >= STEADY_S else self._at_last / worked
        left = per * (self.total - self.processed)
        return max(0.0, left - (self.elapsed_s() - self._at_last))


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "ETA –"
    s = int(round(seconds))
    return f"ETA {s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"ETA {s // 60}:{s % 60:02d}"


def progress_format(progress: Progress | None) -> str:
    """The progress bar's text: count and ETA, or "paused" while paused (the ETA does not run then)."""
    if progress is None:
        return "%v / %m"
    skipped = f" · {progress.skipped} skipped" if progress.skipped else ""
    return f"%v / %m{skipped} · paused" if progress.paused else f"%v / %m{skipped} · {format_eta(progress.eta_s())}"


class BatchController(QObject):
    """Starts the worker thread, relays the worker's signals on the UI thread, stops cleanly.

    ``finished`` is emitted only after the worker thread has ended, so a listener may start the
    next batch (or close the window) at once.
    """

    started = Signal(str)
    image_started = Signal(int)  # the photo's position in request.photos
    image_done = Signal(object)  # PhotoResult
    failed = Signal(str)
    finished = Signal(object)  # BatchSummary
    running_changed = Signal(bool)
    paused_changed = Signal(bool)
    tick = Signal()  # about once a second while a batch runs and is not paused: the ETA counts down

    def __init__(self, make_worker: Callable[[BatchRequest], Worker], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._make_worker = make_worker
        self._thread: QThread | None = None
        self._worker: Worker | None = None
        self.request: BatchRequest | None = None
        self.progress: Progress | None = None
        self._ticker = QTimer(self)
        self._ticker.setInterval(1000)
        self._ticker.timeout.connect(self.tick)

    @property
    def running(self) -> bool:
        return self._thread is not None

    @property
    def paused(self) -> bool:
        return self._worker is not None and self._worker.paused

    def start(self, request: BatchRequest) -> None:
        if self.running:
            raise RuntimeError("a batch is already running")
        worker = self._make_worker(request)
        thread = QThread()
        thread.setObjectName("colorizer-batch")
        worker.moveToThread(thread)
        thread.started.connect(worker.run)
        worker.started.connect(self.started)
        worker.image_started.connect(self.image_started)
        worker.image_done.connect(self._on_image_done)
        worker.failed.connect(self.failed)
        worker.finished.connect(self._on_finished)
        # Quit from the worker thread itself, right after run() emits finished: the thread then
        # ends even while the UI thread is blocked in shutdown().
        worker.finished.connect(thread.quit, Qt.ConnectionType.DirectConnection)
        self._thread, self._worker, self.request = thread, worker, request
        self.progress = Progress(len(request.photos))
        thread.start()
        self._ticker.start()
        self.running_changed.emit(True)

    def pause(self) -> None:
        if self._worker is not None and not self._worker.paused:
            self._worker.pause()
            if self.progress:
                self.progress.pause()
            self._ticker.stop()
            self.paused_changed.emit(True)

    def resume(self) -> None:
        if self._worker is not None and self._worker.paused:
            self._worker.resume()
            if self.progress:
                self.progress.resume()
            self._ticker.start()
            self.paused_changed.emit(False)

    def cancel(self) -> None:
        """Stops after the photos being worked on; their outputs are written whole or not at all."""
        if self._worker is not None:
            self._worker.cancel()
            if self.progress:
                self.progress.resume()

    def shutdown(self) -> None:
        """Cancel and wait for the worker thread to end (window closing)."""
        if self._thread is not None:
            self.cancel()
            self._thread.wait()
            self._release()

    @Slot(object)
    def _on_image_done(self, result: PhotoResult) -> None:
        if self.progress is not None and result.status != Status.CANCELLED:
            self.progress.photo_done(skipped=result.status == Status.SKIPPED)
        self.image_done.emit(result)

    @Slot(object)
    def _on_finished(self, summary: BatchSummary) -> None:
        if self._thread is not None:
            self._thread.wait()  # run() has returned and quit() was called: this is brief
        self._release()
        self.finished.emit(summary)

    def _release(self) -> None:
        self._ticker.stop()
        if self._thread is None:
            return
        self._thread = self._worker = None
        self.running_changed.emit(False)
