"""Before/after previews: two graphics views that zoom and pan together, or one view with a wipe.

The window keeps each photo's small L and predicted ab (``engine.options.Preview``), so the
colour-strength slider recomputes the colour image as join_lab(L, ab * strength) without the model.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPoint, QRectF, Qt, Signal
from PySide6.QtGui import QAction, QImage, QPixmap
from PySide6.QtWidgets import (
    QGraphicsPixmapItem,
    QGraphicsScene,
    QHBoxLayout,
    QLabel,
    QScrollBar,
    QSizePolicy,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from engine.color import grey_rgb
from gui.model.previews import colour_image, shade_unsure, unsure_caption
from gui.views.elided_line import ElidedLine
from gui.views.preview_parts import (
    STRENGTH_STEP,
    Placeholder,
    PreviewBar,
    WipeOverlay,
    ZoomView,
    snapped_step,
    to_qimage,
)

__all__ = ["STRENGTH_STEP", "BeforeAfterView", "ZoomView", "to_qimage"]


def _pixmap_item(scene: QGraphicsScene) -> QGraphicsPixmapItem:
    item = QGraphicsPixmapItem()
    item.setTransformationMode(Qt.TransformationMode.SmoothTransformation)
    scene.addItem(item)
    return item


def photo_columns(before: tuple[QLabel, ZoomView], after: tuple[QLabel, ZoomView], after_box: QWidget) -> QWidget:
    """Each side: its caption over its view, both sides the same width (``after_box`` hides in wipe mode)."""
    views = QHBoxLayout()
    views.setContentsMargins(0, 0, 0, 0)
    for (caption, view), box in ((before, QWidget()), (after, after_box)):
        col = QVBoxLayout(box)
        col.setContentsMargins(0, 0, 0, 0)
        col.setSpacing(2)
        # A long file name in the caption must not widen its side: both sides stay the same size.
        caption.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        col.addWidget(caption)
        col.addWidget(view, 1)
        views.addWidget(box, 1)
    widget = QWidget()
    widget.setLayout(views)
    return widget


class BeforeAfterView(QWidget):
    """The grey original and its colour version, side by side or wiped over each other."""

    strength_changed = Signal(float)
    colour_changed = Signal()  # another photo, or new colour for it: a doubt shown (``set_doubt``) is out of date
    wipe_toggled = Signal(bool)  # the mode buttons switched wipe on or off (the View menu's check follows)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._L: np.ndarray | None = None
        self._ab: np.ndarray | None = None
        self._doubt: np.ndarray | None = None  # where the model is unsure (h x w, 0..1): shaded on the colour
        self._fit = True
        self._syncing = False
        self._caption = ""
        self._missing = "not colorized yet"  # the After caption while there is no colour
        self.mode = "side"
        # Left scene: the grey photo, plus (wipe mode) the colour photo clipped to the right of the wipe line.
        self.before_scene = QGraphicsScene(self)
        self.before_item = _pixmap_item(self.before_scene)
        self.after_scene = QGraphicsScene(self)
        self.after_item = _pixmap_item(self.after_scene)
        self.before_view = ZoomView(self.before_scene)
        self.after_view = ZoomView(self.after_scene)
        self.wipe = WipeOverlay(self.before_scene, self.before_view, self)
        self.before_caption = ElidedLine("Before: grey", mode=Qt.TextElideMode.ElideMiddle)  # whole in its tooltip
        self.after_caption = ElidedLine("After: colour")
        self.after_box = QWidget()
        views_widget = photo_columns((self.before_caption, self.before_view), (self.after_caption, self.after_view),
                                     self.after_box)
        self._sync(self.before_view, self.after_view)
        self._sync(self.after_view, self.before_view)
        self.before_view.resized.connect(self._refit)
        # Zooming and panning move the photo under the wipe line: keep the line where the slider is.
        for bar in (self.before_view.horizontalScrollBar(), self.before_view.verticalScrollBar()):
            bar.valueChanged.connect(self._place_wipe)
            bar.rangeChanged.connect(self._place_wipe)
        self.before_view.resized.connect(self._place_wipe)
        self.bar = PreviewBar()
        self.bar.mode_chosen.connect(self._on_mode_chosen)
        self.bar.fit_button.clicked.connect(self.fit)
        self.bar.actual_button.clicked.connect(self.actual_size)
        self.bar.strength_changed.connect(self._on_strength)
        self.placeholder = Placeholder()
        self.stack = QStackedWidget()
        self.stack.addWidget(self.placeholder)
        self.stack.addWidget(views_widget)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.bar)
        layout.addWidget(self.stack, 1)
        layout.addWidget(self.wipe.slider)
        self.set_mode("side")

    # -- content --------------------------------------------------------------------------------
    def set_placeholder_action(self, action: QAction) -> None:
        """A button on the empty preview (first run: "Try the sample photos")."""
        self.placeholder.set_action(action)

    def clear(self, message: str | None = None, offer_action: bool = True) -> None:
        """The placeholder with ``message``; its button only where ``offer_action`` (not over an error)."""
        self._set_photo(None, None)
        self.placeholder.say(message, offer_action)
        self.stack.setCurrentWidget(self.placeholder)

    def show_error(self, message: str) -> None:
        """Why this photo has no preview (a broken or missing file), in place of the photo."""
        self.clear(message, offer_action=False)
        self.placeholder.say(message, offer_action=False, error=True)

    def _set_photo(self, L: np.ndarray | None, ab: np.ndarray | None) -> None:
        self._L, self._ab, self._doubt = L, ab, None
        self.wipe.has_photo = L is not None

    def show_photo(self, L: np.ndarray, ab: np.ndarray | None, caption: str = "",
                   missing: str = "not colorized yet") -> None:
        """Show a photo: L (h x w float32 0..100) and its ab (h x w x 2), or None before colorizing
        (the After caption then says ``missing``: not colorized yet, or why it failed).
        """
        new_size = self._L is None or self._L.shape != L.shape
        self._set_photo(L, ab)
        self._missing = missing
        self.before_item.setPixmap(QPixmap.fromImage(to_qimage(grey_rgb(L))))
        h, w = L.shape
        rect = QRectF(0, 0, w, h)
        self.before_scene.setSceneRect(rect)
        self.after_scene.setSceneRect(rect)
        self._caption = caption
        self._update_caption()
        self._render_after()
        self.wipe.set_fraction(self.wipe.slider.value() / 1000)
        self.stack.setCurrentIndex(1)
        if new_size or self._fit:
            self.fit()
        self.colour_changed.emit()

    def _render_after(self) -> None:
        if self._L is None:
            return
        if self._ab is None:
            self.after_item.setPixmap(QPixmap())
            self.wipe.set_pixmap(QPixmap())
            self.after_caption.setText(f"After: {self._missing}")
            return
        rgb = colour_image(self._L, self._ab, self.strength_percent() / 100)
        doubt = self._doubt if self._doubt is not None and self._doubt.shape == self._L.shape else None
        pixmap = QPixmap.fromImage(to_qimage(shade_unsure(rgb, doubt) if doubt is not None else rgb))
        self.after_item.setPixmap(pixmap)
        self.wipe.set_pixmap(pixmap)
        self.after_caption.setText(f"After: colour · strength {self.strength_percent()}%"
                                   + (unsure_caption(doubt) if doubt is not None else ""))

    def set_colour(self, ab: np.ndarray) -> None:
        """New colour for the photo on show (re-coloured after its hints changed): same grey, view and zoom."""
        if self._L is None or ab.shape[:2] != self._L.shape:
            return
        self._ab = ab
        self._render_after()
        self.colour_changed.emit()

    def set_doubt(self, doubt: np.ndarray | None) -> None:
        """Stripe the colour where the model is unsure (h x w, 0 sure .. 1, the photo's size), or not (None)."""
        self._doubt = doubt
        self._render_after()

    def grey(self) -> np.ndarray | None:
        """The photo on show's lightness (h x w, 0..100), None on the placeholder."""
        return self._L if self.stack.currentIndex() == 1 else None

    def colour(self) -> np.ndarray | None:
        """The photo on show's ab (h x w x 2), None before it is colorized."""
        return self._ab

    def after_image(self) -> QImage:
        """The colour on show as an export has it: never the stripes of Show Where Unsure (Export Comparison)."""
        if self._doubt is not None and self._L is not None and self._ab is not None:
            return to_qimage(colour_image(self._L, self._ab, self.strength_percent() / 100))
        return self.after_item.pixmap().toImage()

    def before_image(self) -> QImage:
        return self.before_item.pixmap().toImage()

    def photo_views(self) -> tuple[ZoomView, ZoomView]:
        """The before and after views, for the hint editor's rings and clicks."""
        return self.before_view, self.after_view

    def scenes(self) -> tuple[QGraphicsScene, QGraphicsScene]:
        return self.before_scene, self.after_scene

    # -- colour strength ----------------------------------------------------------------------------
    def strength_percent(self) -> int:
        return self.bar.strength.value()

    def set_strength_percent(self, value: int) -> None:
        self.bar.strength.setValue(value)

    def name_strength_shortcuts(self, weaker: str, stronger: str) -> None:
        """Say the keyboard shortcuts in the slider's tooltip."""
        slider = self.bar.strength
        slider.setToolTip(f"{slider.toolTip()} ({weaker} weaker, {stronger} stronger)")

    def step_strength(self, steps: int) -> None:
        """Stronger (steps > 0) or weaker colour, to the next multiple of STRENGTH_STEP (the keyboard shortcuts)."""
        self.set_strength_percent(snapped_step(self.strength_percent(), steps))

    def _on_strength(self, value: int) -> None:
        self._render_after()
        self.strength_changed.emit(value / 100)

    # -- modes ------------------------------------------------------------------------------------
    def _on_mode_chosen(self, mode: str) -> None:
        self.set_mode(mode)
        self.wipe_toggled.emit(mode == "wipe")

    def set_mode(self, mode: str) -> None:
        """"side": two synchronized views; "wipe": one view, grey left of the line and colour right."""
        self.mode = mode
        wipe = mode == "wipe"
        self.bar.show_mode(mode)
        self.after_box.setVisible(not wipe)
        self.wipe.set_visible(wipe)
        self._update_caption()
        if self._fit:
            self._refit()

    def _update_caption(self) -> None:
        text = "Wipe: grey ◀ │ ▶ colour" if self.mode == "wipe" else "Before: grey"
        self.before_caption.setText(f"{text} · {self._caption}" if self._caption else text)

    def near_wipe_line(self, pos: QPoint) -> bool:
        """Whether viewport position ``pos`` of the left view grabs the wipe line (wipe mode only)."""
        return self.mode == "wipe" and self._L is not None and self.wipe.near_line(pos)

    def set_wipe(self, fraction: float) -> None:
        self.wipe.set_fraction(fraction)

    def _place_wipe(self, *_: int) -> None:
        self.wipe.place()

    # -- zoom and pan -----------------------------------------------------------------------------
    def _sync(self, src: ZoomView, dst: ZoomView) -> None:
        src.zoomed.connect(lambda: self._copy_view(src, dst, user_zoom=True))
        src.horizontalScrollBar().valueChanged.connect(lambda v: self._copy_scroll(dst.horizontalScrollBar(), v))
        src.verticalScrollBar().valueChanged.connect(lambda v: self._copy_scroll(dst.verticalScrollBar(), v))

    def _copy_scroll(self, bar: QScrollBar, value: int) -> None:
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
