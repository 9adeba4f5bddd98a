"""The live figures' sampler: device utilization read on the UI thread, twice a second."""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, QTimer, Signal, Slot

from engine.devices import UtilizationMonitor, resolve_device

log = logging.getLogger(__name__)


class UtilizationSampler(QObject):
    """Polls ``UtilizationMonitor`` about twice a second on the UI thread (a sample is a cheap,
    non-blocking NVML or psutil read) and emits ``stats(Utilization)``.
    """

    stats = Signal(object)  # engine.devices.Utilization

    def __init__(self, device: str = "auto", interval_ms: int = 500, parent: QObject | None = None) -> None:
        super().__init__(parent)
        try:
            dev = resolve_device(device)
        except ValueError:  # a saved "cuda" on a machine without one
            dev = resolve_device("cpu")
        self._monitor = UtilizationMonitor(dev)
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.sample)
        self._stopped = False

    @property
    def kind(self) -> str:
        return self._monitor.kind

    def start(self) -> None:
        self._timer.start()

    def stop(self) -> None:
        """Stop for good (device change, window closing): no sample is taken or emitted after this."""
        self._stopped = True
        self._timer.stop()
        self._monitor.close()

    @Slot()
    def sample(self) -> None:
        if self._stopped:  # a timeout already queued when stop() ran
            return
        try:
            self.stats.emit(self._monitor.sample())
        except Exception:  # noqa: BLE001 - a failing sensor must not take the window down
            log.exception("utilization sample failed; stopping the live figures")
            self._timer.stop()
