"""The live figures: the utilization sampler for the chosen device (a new one when the device changes), and
releasing the plots before Qt deletes them.
"""

from __future__ import annotations

from PySide6.QtCore import QObject

from gui.presenters.backend import Backend, Sampler
from gui.views.charts import TimingChart, UtilizationPlot


class LiveFigures(QObject):
    def __init__(self, backend: Backend, utilization: UtilizationPlot, timing: TimingChart,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.backend, self.utilization, self.timing = backend, utilization, timing
        self.sampler: Sampler | None = None

    def start_sampler(self, device: str) -> None:
        if self.sampler is not None:
            self.sampler.stop()
            self.sampler.deleteLater()
        self.sampler = self.backend.make_sampler(device, self.parent())
        self.sampler.stats.connect(self.utilization.add_sample)
        self.sampler.start()

    def stop(self) -> None:
        """Nothing calls into the plots after this (the window is closing)."""
        if self.sampler is not None:
            self.sampler.stop()
            self.sampler.stats.disconnect(self.utilization.add_sample)
            self.sampler = None

    def release(self) -> None:
        self.utilization.release()
        self.timing.release()
