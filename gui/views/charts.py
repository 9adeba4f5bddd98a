"""Live figures: processor utilization and memory, per-photo timing, the batch summary, and a tune's loss.

Payloads are the engine's ``Utilization``, ``PhotoResult`` and ``BatchSummary``, used by
attribute only, so this module needs neither torch nor the engine.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QFormLayout, QGroupBox, QLabel, QVBoxLayout, QWidget

from engine.options import BatchSummary, PhotoResult, Status
from gui.model.teach import smoothed
from gui.views.comparison import AB_UNITS, difference_text, difference_tooltip, speedup_text, speedup_tooltip

DECODE, MODEL, ENCODE, BASELINE = "#8e9aaf", "#2e7d32", "#f9a825", "#c62828"
MIN_STEPS = 10  # the loss plot's least step axis
MIN_LOSS_SPAN = 0.2  # and its least loss axis (cross-entropy on the colour bins: about 2 to 4 in a tune)


def _plot(left: str, bottom: str | None = None) -> pg.PlotWidget:
    plot = pg.PlotWidget()
    plot.setMenuEnabled(False)
    plot.setMouseEnabled(x=False, y=False)
    plot.hideButtons()
    plot.showGrid(x=False, y=True, alpha=0.25)
    plot.setLabel("left", left)
    if bottom:
        plot.setLabel("bottom", bottom)
    plot.setMinimumHeight(80)
    plot.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # shows, takes no input: Tab would stop on it with nothing to see
    return plot


def memory_range(values: np.ndarray, min_fraction: float = 0.1, min_mb: float = 50.0) -> tuple[float, float]:
    """A y range around the memory trace at least max(min_fraction x the value, min_mb) tall.

    Autoscaling a nearly flat trace zoomed into noise (511.52-511.58 MB); this keeps small wiggles small.
    """
    lo, hi = float(np.min(values)), float(np.max(values))
    span = max(hi - lo, min_fraction * hi, min_mb) * 1.1
    bottom = max(0.0, (lo + hi) / 2 - span / 2)
    return bottom, bottom + span


def release_plots(*plots: pg.PlotWidget) -> None:
    """Remove every item from the plots while Python and Qt are both still whole (window closing).

    Left in place, the curves were destroyed during interpreter shutdown, where Qt can still call their
    Python ``boundingRect``; see tests/gui/test_gui_quit.py.
    """
    for plot in plots:
        item = plot.getPlotItem()
        if item.legend is not None:
            item.legend.clear()
        item.clear()


class UtilizationPlot(QWidget):
    """Two rolling traces: busy % and memory, labelled GPU or CPU from the samples themselves."""

    def __init__(self, window_s: float = 60.0, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.window_s = window_s
        self.kind: str | None = None
        self._samples: deque[Any] = deque()
        self.title = QLabel("Live: waiting for the first sample")
        self.title.setWordWrap(True)
        self.busy_plot = _plot("%")
        self.busy_plot.setYRange(0, 105, padding=0)  # headroom: a trace at 100% stays visible
        self.busy_curve = self.busy_plot.plot(pen=pg.mkPen(MODEL, width=2), fillLevel=0, fillBrush=(46, 125, 50, 60))
        self.memory_plot = _plot("MB", "seconds ago")
        self.memory_curve = self.memory_plot.plot(pen=pg.mkPen("#1e88e5", width=2))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.busy_plot, 1)
        layout.addWidget(self.memory_plot, 1)

    def add_sample(self, u: Any) -> None:  # engine.devices.Utilization (a torch-backed module: not imported)
        if u.kind != self.kind:  # device changed: the old trace measured something else
            self._samples.clear()
            self.kind = u.kind
            busy, _, memory = u.label.partition(" / ")
            self.busy_plot.setTitle(busy or u.label, size="9pt")
            self.memory_plot.setTitle(memory or "memory MB", size="9pt")
        self._samples.append(u)
        while self._samples and u.time - self._samples[0].time > self.window_s:
            self._samples.popleft()
        t = np.array([s.time - u.time for s in self._samples])
        self.busy_curve.setData(t, np.array([s.busy_percent for s in self._samples]))
        memory = np.array([s.memory_mb for s in self._samples])
        self.memory_curve.setData(t, memory)
        self.memory_plot.setYRange(*memory_range(memory), padding=0)
        self.busy_plot.setXRange(-self.window_s, 0, padding=0)
        self.memory_plot.setXRange(-self.window_s, 0, padding=0)
        where = "GPU (NVML)" if u.kind == "gpu" else "CPU (psutil)"
        self.title.setText(f"<b>Live: {where}</b> · {u.busy_percent:.0f}% busy · {u.memory_mb:.0f} MB")
        self.title.setToolTip(u.label)

    def sample_count(self) -> int:
        return len(self._samples)

    def release(self) -> None:
        """Window closing: drop the traces, so no sample lands in a plot that Qt is tearing down."""
        self._samples.clear()
        release_plots(self.busy_plot, self.memory_plot)


class TimingChart(QWidget):
    """Stacked bars per photo (decode / model / encode) and, when comparing, the baseline model time."""

    def __init__(self, keep: int = 300, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.keep = keep
        self.photo: list[int] = []  # x: running photo number
        self.decode: list[float] = []
        self.model: list[float] = []
        self.encode: list[float] = []
        self.baseline: list[float] = []  # NaN where a photo was not compared
        self.plot = _plot("ms per photo", "photo")
        self.plot.setTitle("Per-photo time", size="9pt")
        # One row of legend at the top left; the y range leaves headroom so it never covers a bar.
        self.legend = legend = self.plot.addLegend(offset=(5, 1), labelTextSize="8pt", colCount=4)
        zeros = np.zeros(0)
        self.bars = {}
        for name, colour in (("decode", DECODE), ("model", MODEL), ("encode", ENCODE)):
            bar = pg.BarGraphItem(x=zeros, height=zeros, y0=zeros, width=0.8, brush=colour, pen=pg.mkPen(None))
            self.plot.addItem(bar)
            legend.addItem(bar, name)
            self.bars[name] = bar
        self.baseline_curve = self.plot.plot(pen=pg.mkPen(BASELINE, width=2), symbol="o", symbolSize=5,
                                             symbolBrush=BASELINE, symbolPen=None, connect="finite")
        self.baseline_curve.hide()  # shown, and put in the legend, only when a batch was compared
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot)

    def clear(self) -> None:
        for series in (self.photo, self.decode, self.model, self.encode, self.baseline):
            series.clear()
        self._redraw()

    def release(self) -> None:
        """Window closing: take the bars and the baseline curve out of the plot before Qt deletes it."""
        self.bars.clear()
        release_plots(self.plot)

    def add_result(self, r: PhotoResult) -> None:
        if r.status != Status.DONE:
            return
        self.photo.append(self.photo[-1] + 1 if self.photo else 1)
        self.decode.append(r.decode_ms)
        self.model.append(r.infer_ms)
        self.encode.append(r.encode_ms)
        self.baseline.append(np.nan if r.compare_infer_ms is None else r.compare_infer_ms)
        if len(self.photo) > self.keep:
            for series in (self.photo, self.decode, self.model, self.encode, self.baseline):
                del series[0]
        self._redraw()

    def _redraw(self) -> None:
        if not self.bars:  # released: the window is closing, a late result has nothing to draw on
            return
        x = np.array(self.photo, float)
        d, m, e = (np.array(s, float) for s in (self.decode, self.model, self.encode))
        self.bars["decode"].setOpts(x=x, height=d, y0=np.zeros_like(x))
        self.bars["model"].setOpts(x=x, height=m, y0=d)
        self.bars["encode"].setOpts(x=x, height=e, y0=d + m)
        b = np.array(self.baseline, float)
        compared = bool(np.isfinite(b).any())
        if compared:
            self.baseline_curve.setData(x, b)
        else:
            self.baseline_curve.setData([], [])
        if compared != self.baseline_curve.isVisible():
            if compared:
                self.legend.addItem(self.baseline_curve, "baseline")
            else:
                self.legend.removeItem(self.baseline_curve)
        self.baseline_curve.setVisible(compared)
        if len(x):
            top = max(float((d + m + e).max()), float(np.nanmax(b)) if compared else 0.0)
            self.plot.setXRange(max(0.0, x[-1] - 60) + 0.4, x[-1] + 0.6, padding=0)
            self.plot.setYRange(0, top * 1.3 or 1, padding=0)


class SummaryPanel(QGroupBox):
    """The batch's figures once it ends: speed, how busy the model kept, and the comparison."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Batch summary", parent)
        self.fields: dict[str, QLabel] = {}
        form = QFormLayout(self)
        for key, label in (("photos", "Photos"), ("mean", "Mean per photo"), ("rate", "Throughput"),
                           ("busy", "Model busy"), ("compared", "Compared"), ("speedup", "Speed-up vs baseline"),
                           ("diff", "Difference"), ("model", "Model")):
            self.fields[key] = QLabel("–")
            self.fields[key].setWordWrap(True)  # "29 done of 31, 1 failed, cancelled": inside a narrow dock
            form.addRow(label, self.fields[key])
        self.fields["mean"].setToolTip("The batch's time per photo done: reading, the model, writing; time paused is "
                                       "not counted. A row's Time is that photo's own")
        self.fields["rate"].setToolTip("Photos done per second; time held paused is not counted")
        self.fields["busy"].setToolTip("Share of the batch's own time the model was computing "
                                       "(time paused and the baseline's time in compare mode are not counted)")
        self.fields["compared"].setToolTip("The engines, precisions and batch size compared on the same photos")
        self.clear()

    def clear(self) -> None:
        for label in self.fields.values():
            label.setText("–")
        self.fields["speedup"].setToolTip("Total baseline model time ÷ total model time of this engine")
        self.fields["diff"].setToolTip(f"|Δab| between the two engines' colour: largest and 99.9th percentile.\n"
                                       f"{AB_UNITS}")

    def show_summary(self, s: BatchSummary) -> None:
        self.fields["photos"].setText(f"{s.done} done of {s.total}{s.outcome_text()}")
        with_baseline = " (with the baseline's run)" if s.done and s.compare_infer_s else ""  # not a row's Time
        self.fields["mean"].setText(f"{s.mean_ms_per_photo:.0f} ms{with_baseline}" if s.done else "–")
        rate = f"{s.photos_per_s:.2f} photos/s{with_baseline}" if s.done else "–"
        if s.done and s.paused_s > 0:
            rate += f" ({s.paused_s:.1f} s paused, not counted)"
        self.fields["rate"].setText(rate)
        self.fields["busy"].setText(f"{100 * s.model_busy_share:.0f}%" if s.done else "–")
        self.fields["compared"].setText(s.comparison() or "–")
        self.fields["speedup"].setText(speedup_text(s))
        self.fields["speedup"].setToolTip(speedup_tooltip(s))
        self.fields["diff"].setText(difference_text(s))
        self.fields["diff"].setToolTip(difference_tooltip(s))

    def show_running(self, processed: int, total: int) -> None:
        """While a batch runs: how far it is (its figures come when it ends)."""
        self.fields["photos"].setText(f"{processed} of {total} so far; the figures come at the end")

    def show_model(self, text: str | None) -> None:
        """The model "auto" chose and why, or the old-prints model suggested
        (``engine.print_look.old_print_advice``), or "–".
        """
        self.fields["model"].setText(text or "–")

    def text(self) -> str:
        return "\n".join(label.text() for label in self.fields.values())


class LossPlot(QWidget):
    """The training loss (cross-entropy on the colour bins) per step, drawn as it arrives: faint, and its smoothed
    trend (``smoothed``) over it.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.plot = _plot("loss", "step")
        for side in ("left", "bottom"):  # an empty plot's 0..1 range must not read "loss (x0.001)"
            self.plot.getAxis(side).enableAutoSIPrefix(False)
        self.plot.setMinimumHeight(150)
        self.plot.addLegend(offset=(-10, 10))  # top right: the loss falls away from it
        self.raw = self.plot.plot(pen=pg.mkPen(QColor(100, 170, 240, 120), width=1), name="each step")
        self.curve = self.plot.plot(pen=pg.mkPen("#1e88e5", width=2.5), name="trend")
        self.waiting = pg.TextItem("Waiting for the first training step…", anchor=(0.5, 0.5))
        self.plot.addItem(self.waiting)
        self.waiting.setPos(0.5, 0.5)
        self.steps: list[float] = []
        self.losses: list[float] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot)

    def add(self, step: float, loss: float) -> None:
        self.steps.append(step)
        self.losses.append(loss)
        self.waiting.setVisible(False)
        self.raw.setData(self.steps, self.losses)
        self.curve.setData(self.steps, smoothed(self.losses))
        self._frame()

    def _frame(self) -> None:
        """Whole steps at least 0..MIN_STEPS, and a loss span of at least MIN_LOSS_SPAN: pyqtgraph's own ranges
        around one point labelled the axes in fractions of a step and 16-digit losses.
        """
        self.plot.setXRange(0, max(MIN_STEPS, self.steps[-1]), padding=0.02)
        low, high = min(self.losses), max(self.losses)
        middle, half = (low + high) / 2, max(high - low, MIN_LOSS_SPAN) / 2
        self.plot.setYRange(middle - half, middle + half, padding=0.05)

    def clear(self) -> None:
        self.steps, self.losses = [], []
        self.raw.setData([], [])
        self.curve.setData([], [])
        self.plot.setRange(xRange=(0, 1), yRange=(0, 1), padding=0)  # the waiting text's frame, not the last run's
        self.waiting.setVisible(True)

    def release(self) -> None:
        release_plots(self.plot)
