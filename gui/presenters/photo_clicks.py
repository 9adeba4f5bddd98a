"""Clicks on a preview side, told from pans and drags: a left press and release that did not move, and did not
start on a hint's ring or the wipe line.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QPoint, Qt
from PySide6.QtGui import QMouseEvent

from gui.views.hint_rings import Ring
from gui.views.preview import BeforeAfterView, ZoomView

CLICK_SLOP = 4  # a press and release closer than this (px) is a click, not a pan


class PhotoClicks:
    """Feed it the viewports' presses and releases; ``click(view, pos)`` is called for each click."""

    def __init__(self, preview: BeforeAfterView, click: Callable[[ZoomView, QPoint], object]) -> None:
        self.preview, self.click = preview, click
        self._press: dict[QObject, QPoint] = {}

    def mouse(self, viewport: QObject, view: ZoomView, event: QMouseEvent) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            return
        pos = event.position().toPoint()
        if event.type() == QEvent.Type.MouseButtonPress:
            on_ring = isinstance(view.itemAt(pos), Ring)
            grabs_wipe = view is self.preview.photo_views()[0] and self.preview.near_wipe_line(pos)
            self._press[viewport] = pos if not (on_ring or grabs_wipe) else QPoint(-10_000, -10_000)
        else:
            start = self._press.pop(viewport, None)
            if start is not None and (pos - start).manhattanLength() < CLICK_SLOP:
                self.click(view, pos)
