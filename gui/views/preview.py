"""Before/after previews: two graphics views that zoom and pan together, or one view with a wipe.

The window keeps each photo's small L and predicted ab (``engine.options.Preview``), so the
colour-strength slider recomputes the colour image as join_lab(L, ab * strength) without the model.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PySide6.QtCore import QEvent, QObject, QPoint, QRectF, Qt, Signal
from PySide6.QtGui import QAction, QColor, QImage, QPainter, QPen, QPixmap, QResizeEvent, QWheelEvent
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
    QSizePolicy,
    QSlider,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from engine.color import grey_rgb, to_uint8
from gui.model.previews import colour_image

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

    def mouseDoubleClickEvent(self, event: Any) -> None:
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


class BeforeAfterView(QWidget):
    """The grey original and its colour version, side by side or wiped over each other."""

    strength_changed = Signal(float)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._L: np.ndarray | None = None
        self._ab: np.ndarray | None = None
        self._fit = True
        self._syncing = False
        self._caption = ""
        self._wipe = 0.5  # the slider's fraction of the visible part of the photo
        self._missing = "not colorized yet"  # the After caption while there is no colour
        self.mode = "side"

        # Left scene: the grey photo, plus the colour photo clipped to the right of the wipe line.
        self.before_scene = QGraphicsScene(self)
        self.before_item = QGraphicsPixmapItem()
        self.before_item.setTransformationMode(Qt.TransformationMode.SmoothTransformation)
        self.before_scene.addItem(self.before_item)
        self.wipe_clip = QGraphicsRectItem()
        self.wipe_clip.setFlag(QGraphicsItem.GraphicsItemFlag.ItemClipsChildrenToShape)
        self.wipe_clip.setPen(Qt.PenStyle.NoPen)
        self.wipe_after = QGraphicsPixmapItem(self.wipe_clip)
        self.wipe_after.setTransformationMode(Qt.TransformationMode.SmoothTransformation)
        self.wipe_line = QGraphicsLineItem()
        pen = QPen(QColor(255, 255, 255))
        pen.setCosmetic(True)
        pen.setWidth(2)
        self.wipe_line.setPen(pen)
        self.before_scene.addItem(self.wipe_clip)
        self.before_scene.addItem(self.wipe_line)
        self.after_scene = QGraphicsScene(self)
        self.after_item = QGraphicsPixmapItem()
        self.after_item.setTransformationMode(Qt.TransformationMode.SmoothTransformation)
        self.after_scene.addItem(self.after_item)

        self.before_view = ZoomView(self.before_scene)
        self.after_view = ZoomView(self.after_scene)
        self._dragging_wipe = False
        self.before_view.viewport().installEventFilter(self)  # the wipe line is dragged on the photo itself
        self.before_caption = QLabel("Before: grey")
        self.after_caption = QLabel("After: colour")
        self.after_box = QWidget()
        views = QHBoxLayout()
        views.setContentsMargins(0, 0, 0, 0)
        for caption, view, box in ((self.before_caption, self.before_view, QWidget()),
                                   (self.after_caption, self.after_view, self.after_box)):
            col = QVBoxLayout(box)
            col.setContentsMargins(0, 0, 0, 0)
            col.setSpacing(2)
            # A long file name in the caption must not widen its side: both sides stay the same size.
            caption.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
            col.addWidget(caption)
            col.addWidget(view, 1)
            views.addWidget(box, 1)
        self._sync(self.before_view, self.after_view)
        self._sync(self.after_view, self.before_view)
        self.before_view.resized.connect(self._refit)
        # Zooming and panning move the photo under the wipe line: keep the line where the slider is.
        for bar in (self.before_view.horizontalScrollBar(), self.before_view.verticalScrollBar()):
            bar.valueChanged.connect(self._place_wipe)
            bar.rangeChanged.connect(self._place_wipe)
        self.before_view.resized.connect(self._place_wipe)

        self.side_button = QToolButton()
        self.side_button.setText("Side by side")
        self.wipe_button = QToolButton()
        self.wipe_button.setText("Wipe")
        for button in (self.side_button, self.wipe_button):
            button.setCheckable(True)
        self.side_button.setChecked(True)
        self.side_button.setToolTip("Grey and colour next to each other, zoomed and panned together")
        self.wipe_button.setToolTip("One photo: grey left of the line, colour right of it")
        modes = QButtonGroup(self)
        modes.addButton(self.side_button)
        modes.addButton(self.wipe_button)
        self.wipe_button.toggled.connect(lambda on: self.set_mode("wipe" if on else "side"))
        self.fit_button = QToolButton()
        self.fit_button.setText("Fit")
        self.fit_button.clicked.connect(self.fit)
        self.actual_button = QToolButton()
        self.actual_button.setText("100%")
        self.actual_button.clicked.connect(self.actual_size)
        self.strength = StrengthSlider()
        self.strength.setMinimumWidth(80)
        self.strength.setToolTip("Colour strength: rescales the predicted colour without running the model again "
                                 "(double-click: back to 100%)")
        self.strength_label = QLabel("100%")
        self.strength_label.setMinimumWidth(40)
        self.strength.valueChanged.connect(self._on_strength)
        self.wipe_slider = QSlider(Qt.Orientation.Horizontal)
        self.wipe_slider.setRange(0, 1000)
        self.wipe_slider.setValue(500)
        self.wipe_slider.setToolTip("Where the wipe line is")
        self.wipe_slider.valueChanged.connect(lambda v: self.set_wipe(v / 1000))
        self.wipe_slider.hide()
        for w in (self.side_button, self.wipe_button, self.fit_button, self.actual_button, self.strength,
                  self.wipe_slider):
            w.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # reachable with Tab, not only the mouse

        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        for w in (self.side_button, self.wipe_button, self.fit_button, self.actual_button):
            bar.addWidget(w)
        bar.addSpacing(12)
        bar.addWidget(QLabel("Colour"))
        bar.addWidget(self.strength, 1)
        bar.addWidget(self.strength_label)

        self.placeholder = QWidget()
        self.placeholder_label = QLabel("Drop photos or folders here, or add them from the File menu.")
        self.placeholder_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder_label.setWordWrap(True)
        self.placeholder_button = QPushButton()
        self.placeholder_button.hide()
        ph = QVBoxLayout(self.placeholder)
        ph.addStretch(1)
        ph.addWidget(self.placeholder_label)
        ph.addWidget(self.placeholder_button, 0, Qt.AlignmentFlag.AlignHCenter)
        ph.addStretch(1)
        views_widget = QWidget()
        views_widget.setLayout(views)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.placeholder)
        self.stack.addWidget(views_widget)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.stack, 1)
        layout.addWidget(self.wipe_slider)
        self.set_mode("side")

    # -- content --------------------------------------------------------------------------------
    def set_placeholder_action(self, action: QAction) -> None:
        """A button on the empty preview (first run: "Try the sample photos")."""
        self.placeholder_button.setText(action.text().replace("&", ""))
        self.placeholder_button.clicked.connect(action.trigger)
        self.placeholder_button.show()

    def clear(self, message: str | None = None, offer_action: bool = True) -> None:
        """The placeholder with ``message``; its button only where ``offer_action`` (not over an error)."""
        self._L = self._ab = None
        if message:
            self.placeholder_label.setText(message)
        self.placeholder_label.setStyleSheet("")
        self.placeholder_button.setVisible(offer_action and bool(self.placeholder_button.text()))
        self.stack.setCurrentWidget(self.placeholder)

    def show_error(self, message: str) -> None:
        """Why this photo has no preview (a broken or missing file), in place of the photo."""
        self.clear(message, offer_action=False)
        self.placeholder_label.setStyleSheet("color: #c62828")

    def show_photo(self, L: np.ndarray, ab: np.ndarray | None, caption: str = "",
                   missing: str = "not colorized yet") -> None:
        """Show a photo: L (h x w float32 0..100) and its ab (h x w x 2), or None before colorizing
        (the After caption then says ``missing``: not colorized yet, or why it failed).
        """
        new_size = self._L is None or self._L.shape != L.shape
        self._L, self._ab = L, ab
        self._missing = missing
        pixmap = QPixmap.fromImage(to_qimage(grey_rgb(L)))
        self.before_item.setPixmap(pixmap)
        h, w = L.shape
        rect = QRectF(0, 0, w, h)
        self.before_scene.setSceneRect(rect)
        self.after_scene.setSceneRect(rect)
        self._caption = caption
        self._update_caption()
        self._render_after()
        self.set_wipe(self.wipe_slider.value() / 1000)
        self.stack.setCurrentIndex(1)
        if new_size or self._fit:
            self.fit()

    def _render_after(self) -> None:
        if self._L is None:
            return
        if self._ab is None:
            self.after_item.setPixmap(QPixmap())
            self.wipe_after.setPixmap(QPixmap())
            self.after_caption.setText(f"After: {self._missing}")
            self.after_caption.setToolTip(self.after_caption.text())
            return
        pixmap = QPixmap.fromImage(to_qimage(colour_image(self._L, self._ab, self.strength.value() / 100)))
        self.after_item.setPixmap(pixmap)
        self.wipe_after.setPixmap(pixmap)
        self.after_caption.setText(f"After: colour · strength {self.strength.value()}%")

    def set_colour(self, ab: np.ndarray) -> None:
        """New colour for the photo on show (re-coloured after its hints changed): same grey, view and zoom."""
        if self._L is None or ab.shape[:2] != self._L.shape:
            return
        self._ab = ab
        self._render_after()

    def grey(self) -> np.ndarray | None:
        """The photo on show's lightness (h x w, 0..100), None on the placeholder."""
        return self._L if self.stack.currentIndex() == 1 else None

    def colour(self) -> np.ndarray | None:
        """The photo on show's ab (h x w x 2), None before it is colorized."""
        return self._ab

    def step_strength(self, steps: int) -> None:
        """Stronger (steps > 0) or weaker colour, to the next multiple of STRENGTH_STEP (the keyboard shortcuts)."""
        self.strength.setValue(snapped_step(self.strength.value(), steps))

    def _on_strength(self, value: int) -> None:
        self.strength_label.setText(f"{value}%")
        self._render_after()
        self.strength_changed.emit(value / 100)

    def after_image(self) -> QImage:
        return self.after_item.pixmap().toImage()

    def before_image(self) -> QImage:
        return self.before_item.pixmap().toImage()

    # -- modes ------------------------------------------------------------------------------------
    def set_mode(self, mode: str) -> None:
        """"side": two synchronized views; "wipe": one view, grey left of the line and colour right."""
        self.mode = mode
        wipe = mode == "wipe"
        (self.wipe_button if wipe else self.side_button).setChecked(True)
        self.after_box.setVisible(not wipe)
        self.wipe_slider.setVisible(wipe)
        self.wipe_clip.setVisible(wipe)
        self.wipe_line.setVisible(wipe)
        self._update_caption()
        if self._fit:
            self._refit()

    def _update_caption(self) -> None:
        text = "Wipe: grey ◀ │ ▶ colour" if self.mode == "wipe" else "Before: grey"
        self.before_caption.setText(f"{text} · {self._caption}" if self._caption else text)
        self.before_caption.setToolTip(self.before_caption.text())

    def near_wipe_line(self, pos: QPoint) -> bool:
        """Whether viewport position ``pos`` of the left view grabs the wipe line (wipe mode only)."""
        if self.mode != "wipe" or self._L is None:
            return False
        line_x = self.before_view.mapFromScene(self.wipe_line.line().p1()).x()
        return abs(pos.x() - line_x) <= WIPE_GRAB_PX

    def _wipe_fraction_at(self, pos: QPoint) -> float:
        rect = self.before_scene.sceneRect()
        view = self.before_view
        visible = view.mapToScene(view.viewport().rect()).boundingRect().intersected(rect)
        if visible.width() <= 0:
            visible = rect
        return (view.mapToScene(pos).x() - visible.left()) / max(visible.width(), 1e-6)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Drag the wipe line with the mouse; elsewhere the photo pans as before."""
        if watched is not self.before_view.viewport():
            return False
        kind = event.type()
        if kind == QEvent.Type.MouseButtonPress and event.button() == Qt.MouseButton.LeftButton:  # type: ignore[attr-defined]
            if self.near_wipe_line(event.position().toPoint()):  # type: ignore[attr-defined]
                self._dragging_wipe = True
                self.before_view.viewport().setCursor(Qt.CursorShape.SplitHCursor)
                return True
        elif kind == QEvent.Type.MouseMove and self._dragging_wipe:
            fraction = min(max(self._wipe_fraction_at(event.position().toPoint()), 0.0), 1.0)  # type: ignore[attr-defined]
            self.wipe_slider.setValue(round(1000 * fraction))
            return True
        elif kind == QEvent.Type.MouseButtonRelease and self._dragging_wipe:
            self._dragging_wipe = False
            self.before_view.viewport().unsetCursor()
            return True
        return False

    def set_wipe(self, fraction: float) -> None:
        self._wipe = min(max(fraction, 0.0), 1.0)
        self._place_wipe()

    def _place_wipe(self) -> None:
        """The line at the slider's fraction of the part of the photo in view (all of it when fitted)."""
        rect = self.before_scene.sceneRect()
        view = self.before_view
        visible = view.mapToScene(view.viewport().rect()).boundingRect().intersected(rect)
        if visible.width() <= 0:
            visible = rect
        x = visible.left() + visible.width() * self._wipe
        self.wipe_clip.setRect(QRectF(x, 0, rect.width() - x, rect.height()))
        self.wipe_line.setLine(x, 0, x, rect.height())

    # -- zoom and pan -----------------------------------------------------------------------------
    def _sync(self, src: ZoomView, dst: ZoomView) -> None:
        src.zoomed.connect(lambda: self._copy_view(src, dst, user_zoom=True))
        src.horizontalScrollBar().valueChanged.connect(lambda v: self._copy_scroll(dst.horizontalScrollBar(), v))
        src.verticalScrollBar().valueChanged.connect(lambda v: self._copy_scroll(dst.verticalScrollBar(), v))

    def _copy_scroll(self, bar, value: int) -> None:  # noqa: ANN001 - a QScrollBar
        if not self._syncing:
            self._syncing = True
            bar.setValue(value)
            self._syncing = False

    def _copy_view(self, src: ZoomView, dst: ZoomView, user_zoom: bool = False) -> None:
        if user_zoom:
            self._fit = False
        self._syncing = True
        dst.setTransform(src.transform())
        dst.horizontalScrollBar().setValue(src.horizontalScrollBar().value())
        dst.verticalScrollBar().setValue(src.verticalScrollBar().value())
        self._syncing = False
        self._place_wipe()

    def zoom_in(self) -> None:
        self.before_view.zoom_by(1.25)

    def zoom_out(self) -> None:
        self.before_view.zoom_by(0.8)

    def scale(self) -> float:
        return self.before_view.transform().m11()

    def fit(self) -> None:
        self._fit = True
        self._refit()

    def _refit(self) -> None:
        if not self._fit or self._L is None:
            return
        self.before_view.fitInView(self.before_scene.sceneRect(), Qt.AspectRatioMode.KeepAspectRatio)
        self._copy_view(self.before_view, self.after_view)

    def actual_size(self) -> None:
        self._fit = False
        self.before_view.resetTransform()
        self._copy_view(self.before_view, self.after_view)
