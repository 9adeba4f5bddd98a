"""The pieces of the before/after preview (``gui.views.preview.BeforeAfterView``): the zooming view, the bar of
mode buttons and the colour-strength slider, the placeholder shown without a photo, and the wipe line.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEvent, QObject, QPoint, QRectF, Qt, Signal
from PySide6.QtGui import QAction, QColor, QImage, QMouseEvent, QPainter, QPen, QPixmap, QResizeEvent, QWheelEvent
from PySide6.QtWidgets import (
    QButtonGroup,
    QGraphicsItem,
    QGraphicsLineItem,
    QGraphicsPixmapItem,
    QGraphicsRectItem,
    QGraphicsScene,
    QGraphicsView,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSlider,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from engine.color import to_uint8

MIN_SCALE, MAX_SCALE = 0.02, 40.0
STRENGTH_STEP = 10  # percent per press of the strength shortcuts
WIPE_GRAB_PX = 8  # how near the wipe line a press grabs it


def to_qimage(rgb: np.ndarray) -> QImage:
    """H x W x 3 RGB, float 0..1 or uint8 -> a QImage that owns its pixels."""
    if rgb.dtype != np.uint8:
        rgb = to_uint8(rgb)
    rgb = np.ascontiguousarray(rgb)
    h, w, _ = rgb.shape
    return QImage(rgb.data, w, h, 3 * w, QImage.Format.Format_RGB888).copy()


def snapped_step(value: int, steps: int, step: int = STRENGTH_STEP) -> int:
    """``steps`` multiples of ``step`` up or down from ``value``, landing on multiples: 141 -> 150, 141 -> 140."""
    if steps > 0:
        return (value // step + steps) * step
    if steps < 0:
        return (-(-value // step) + steps) * step
    return value


class StrengthSlider(QSlider):
    """0-200%. Page steps (Page Up/Down, a click beside the handle) land on multiples of 10 so 100% is always
    in reach; a double-click puts it back at 100%, the model's own colour.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        self.setRange(0, 200)
        self.setValue(100)
        self.setPageStep(STRENGTH_STEP)
        self.actionTriggered.connect(self._snap)

    def _snap(self, action: int) -> None:
        page = {QSlider.SliderAction.SliderPageStepAdd.value: 1, QSlider.SliderAction.SliderPageStepSub.value: -1}
        steps = page.get(int(action), 0)
        if steps:
            self.setSliderPosition(min(max(snapped_step(self.value(), steps), self.minimum()), self.maximum()))

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:
        self.setValue(100)
        event.accept()


class ZoomView(QGraphicsView):
    """A view that zooms with the wheel around the cursor and pans by dragging."""

    zoomed = Signal()  # the user changed this view's scale: partners copy its transform
    resized = Signal()

    def __init__(self, scene: QGraphicsScene, parent: QWidget | None = None) -> None:
        super().__init__(scene, parent)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
        self.setBackgroundBrush(QColor(40, 40, 40))
        self.setAcceptDrops(False)  # dropped files go to the window's queue, not into the scene
        self.viewport().setAcceptDrops(False)
        self.setFocusPolicy(Qt.FocusPolicy.ClickFocus)  # a click lets the arrows pan; Tab goes on to the controls

    def zoom_by(self, factor: float) -> None:
        current = self.transform().m11()
        factor = min(max(factor, MIN_SCALE / current), MAX_SCALE / current)
        self.scale(factor, factor)
        self.zoomed.emit()

    def wheelEvent(self, event: QWheelEvent) -> None:
        steps = event.angleDelta().y() / 120
        if steps:
            self.zoom_by(1.25**steps)
        event.accept()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.resized.emit()


def _tool_button(text: str, tip: str = "", checkable: bool = False) -> QToolButton:
    button = QToolButton()
    button.setText(text)
    button.setCheckable(checkable)
    if tip:
        button.setToolTip(tip)
    button.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # reachable with Tab, not only the mouse
    return button


class PreviewBar(QWidget):
    """Side by side / Wipe, Fit, 100%, and the colour-strength slider above the photos."""

    mode_chosen = Signal(str)  # "side" or "wipe", by a click on its button
    strength_changed = Signal(int)  # percent

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.side_button = _tool_button("Side by side", "Grey and colour next to each other, zoomed and panned "
                                        "together", checkable=True)
        self.wipe_button = _tool_button("Wipe", "One photo: grey left of the line, colour right of it",
                                        checkable=True)
        self.side_button.setChecked(True)
        modes = QButtonGroup(self)
        modes.addButton(self.side_button)
        modes.addButton(self.wipe_button)
        self.wipe_button.toggled.connect(lambda on: self.mode_chosen.emit("wipe" if on else "side"))
        self.fit_button = _tool_button("Fit")
        self.actual_button = _tool_button("100%")
        self.strength = StrengthSlider()
        self.strength.setMinimumWidth(80)
        self.strength.setToolTip("Colour strength: rescales the predicted colour without running the model again "
                                 "(double-click: back to 100%)")
        self.strength.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.strength_label = QLabel("100%")
        self.strength_label.setMinimumWidth(40)
        self.strength.valueChanged.connect(self._on_strength)
        bar = QHBoxLayout(self)
        bar.setContentsMargins(0, 0, 0, 0)
        for w in (self.side_button, self.wipe_button, self.fit_button, self.actual_button):
            bar.addWidget(w)
        bar.addSpacing(12)
        bar.addWidget(QLabel("Colour"))
        bar.addWidget(self.strength, 1)
        bar.addWidget(self.strength_label)

    def show_mode(self, mode: str) -> None:
        (self.wipe_button if mode == "wipe" else self.side_button).setChecked(True)

    def _on_strength(self, value: int) -> None:
        self.strength_label.setText(f"{value}%")
        self.strength_changed.emit(value)


class Placeholder(QWidget):
    """What the preview shows without a photo: a message, and a button for one action (first run: the samples)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = QLabel("Drop photos or folders here, or add them from the File menu.")
        self.label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.label.setWordWrap(True)
        self.button = QPushButton()
        self.button.hide()
        ph = QVBoxLayout(self)
        ph.addStretch(1)
        ph.addWidget(self.label)
        ph.addWidget(self.button, 0, Qt.AlignmentFlag.AlignHCenter)
        ph.addStretch(1)

    def set_action(self, action: QAction) -> None:
        self.button.setText(action.text().replace("&", ""))
        self.button.clicked.connect(action.trigger)
        self.button.show()

    def say(self, message: str | None, offer_action: bool = True, error: bool = False) -> None:
        if message:
            self.label.setText(message)
        self.label.setStyleSheet("color: #c62828" if error else "")
        self.button.setVisible(offer_action and bool(self.button.text()))


class WipeOverlay(QObject):
    """The colour photo clipped to the right of a line over the grey one (wipe mode), the slider that places the
    line, and dragging the line on the photo itself. The line sits at the slider's fraction of the part of the
    photo in view: the owner calls ``place`` when zooming, panning or resizing moves the photo under it (from a
    slot of its own, so nothing calls in once the owner is being deleted).
    """

    def __init__(self, scene: QGraphicsScene, view: ZoomView, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.scene, self.view = scene, view
        self.fraction = 0.5
        self.dragging = False
        self.has_photo = False  # the view sets it: no line to grab over the placeholder
        self.clip = QGraphicsRectItem()
        self.clip.setFlag(QGraphicsItem.GraphicsItemFlag.ItemClipsChildrenToShape)
        self.clip.setPen(Qt.PenStyle.NoPen)
        self.after = QGraphicsPixmapItem(self.clip)
        self.after.setTransformationMode(Qt.TransformationMode.SmoothTransformation)
        self.line = QGraphicsLineItem()
        pen = QPen(QColor(255, 255, 255))
        pen.setCosmetic(True)
        pen.setWidth(2)
        self.line.setPen(pen)
        scene.addItem(self.clip)
        scene.addItem(self.line)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, 1000)
        self.slider.setValue(500)
        self.slider.setToolTip("Where the wipe line is")
        self.slider.valueChanged.connect(lambda v: self.set_fraction(v / 1000))
        self.slider.hide()
        self.slider.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        view.viewport().installEventFilter(self)  # the wipe line is dragged on the photo itself

    def set_visible(self, on: bool) -> None:
        self.slider.setVisible(on)
        self.clip.setVisible(on)
        self.line.setVisible(on)

    def set_pixmap(self, pixmap: QPixmap) -> None:
        self.after.setPixmap(pixmap)

    def set_fraction(self, fraction: float) -> None:
        self.fraction = min(max(fraction, 0.0), 1.0)
        self.place()

    def _visible_rect(self) -> QRectF:
        rect = self.scene.sceneRect()
        visible = self.view.mapToScene(self.view.viewport().rect()).boundingRect().intersected(rect)
        return visible if visible.width() > 0 else rect

    def place(self) -> None:
        """The line at the slider's fraction of the part of the photo in view (all of it when fitted)."""
        rect = self.scene.sceneRect()
        visible = self._visible_rect()
        x = visible.left() + visible.width() * self.fraction
        self.clip.setRect(QRectF(x, 0, rect.width() - x, rect.height()))
        self.line.setLine(x, 0, x, rect.height())

    def near_line(self, pos: QPoint) -> bool:
        line_x = self.view.mapFromScene(self.line.line().p1()).x()
        return abs(pos.x() - line_x) <= WIPE_GRAB_PX

    def _fraction_at(self, pos: QPoint) -> float:
        visible = self._visible_rect()
        return (self.view.mapToScene(pos).x() - visible.left()) / max(visible.width(), 1e-6)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Drag the wipe line with the mouse; elsewhere the photo pans as before."""
        if watched is not self.view.viewport() or not isinstance(event, QMouseEvent):
            return False
        kind = event.type()
        if kind == QEvent.Type.MouseButtonPress and event.button() == Qt.MouseButton.LeftButton:
            if self.line.isVisible() and self.has_photo and self.near_line(event.position().toPoint()):
                self.dragging = True
                self.view.viewport().setCursor(Qt.CursorShape.SplitHCursor)
                return True
        elif kind == QEvent.Type.MouseMove and self.dragging:
            fraction = min(max(self._fraction_at(event.position().toPoint()), 0.0), 1.0)
            self.slider.setValue(round(1000 * fraction))
            return True
        elif kind == QEvent.Type.MouseButtonRelease and self.dragging:
            self.dragging = False
            self.view.viewport().unsetCursor()
            return True
        return False
